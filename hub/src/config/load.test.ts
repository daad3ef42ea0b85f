import { describe, expect, test } from "@jest/globals";
import { isControllerEnabled, parseControllerList } from "../controllers.js";
import { ConfigError, parseHubConfig } from "./load.js";

const valid = {
  grpc: { listen: "127.0.0.1:7443", insecure: true },
  nats: { servers: ["nats://127.0.0.1:4222"] },
  accounts: [{ name: "main", provider: "simulated", region: "r1", credentials: { env: "KEY" } }],
  clusters: [{ name: "alpha", token: { file: "/run/alpha" }, account: "main", controllers: ["*", "-route"] }],
};

function errorOf(cfg: unknown): string {
  try {
    parseHubConfig(JSON.stringify(cfg), "hub.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("hub config", () => {
  test("a valid config gets its defaults and canonical controller names", () => {
    const cfg = parseHubConfig(JSON.stringify(valid));
    expect(cfg.limits.maxMessageBytes).toBe(4 * 1024 * 1024);
    // No rateLimit: the provider's published limit, else DEFAULT_RATE_LIMIT, when the account is bound.
    expect(cfg.accounts[0]?.rateLimit).toBeUndefined();
    expect(cfg.clusters[0]?.controllers).toEqual(["*", "-node-route-controller"]);
    expect(cfg.controllers).toEqual(["*"]);
  });

  test("errors name the field", () => {
    expect(errorOf({ ...valid, clusters: [{ ...valid.clusters[0], account: "nope" }] })).toContain(
      'clusters[0].account: unknown account "nope"',
    );
    expect(errorOf({ ...valid, clusters: [{ ...valid.clusters[0], name: "Bad.Name" }] })).toContain(
      "clusters[0].name",
    );
    expect(errorOf({ ...valid, clusters: [{ ...valid.clusters[0], token: "inline-secret" }] })).toContain(
      "clusters[0].token",
    );
    expect(errorOf({ ...valid, grpc: { listen: "7443" } })).toContain("grpc.listen");
    expect(errorOf({ ...valid, bogus: 1 })).toContain("bogus");
    expect(errorOf({ ...valid, controllers: ["cloud-node", "ipam"] })).toContain(
      'controllers: "ipam" is not in the list of known controllers',
    );
  });

  test("clusters[].adoptFrom: optional, one vendor CCM cluster name, nothing else", () => {
    expect(parseHubConfig(JSON.stringify(valid)).clusters[0]?.adoptFrom).toBeUndefined();
    const withAdopt = {
      ...valid,
      clusters: [{ ...valid.clusters[0], adoptFrom: { vendorCcmClusterName: "lke123" } }],
    };
    expect(parseHubConfig(JSON.stringify(withAdopt)).clusters[0]?.adoptFrom).toEqual({
      vendorCcmClusterName: "lke123",
    });
    for (const adoptFrom of [
      {},
      { vendorCcmClusterName: "" },
      { vendorCcmClusterName: "a", extra: 1 },
      "lke123",
    ])
      expect(errorOf({ ...valid, clusters: [{ ...valid.clusters[0], adoptFrom }] })).toContain(
        "clusters[0].adoptFrom",
      );
  });

  test("every problem is reported in one pass, one line each, cross-field checks included", () => {
    const msg = errorOf({
      ...valid,
      grpc: { listen: "7443" },
      limits: { maxObjectsPerChunk: 0 },
      accounts: [
        { ...valid.accounts[0], name: "main" },
        { ...valid.accounts[0], name: "main" },
      ],
      clusters: [
        { ...valid.clusters[0], account: "nope" },
        { ...valid.clusters[0], name: "Bad.Name", account: "missing", token: "inline" },
      ],
    });
    const lines = msg.split("\n").slice(1);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^grpc\.listen: /),
        expect.stringMatching(/^limits\.maxObjectsPerChunk: /),
        'accounts[1].name: duplicate account "main"',
        'clusters[0].account: unknown account "nope"',
        expect.stringMatching(/^clusters\[1\]\.name: /),
        'clusters[1].account: unknown account "missing"',
        expect.stringMatching(/^clusters\[1\]\.token: a secret is given by reference/),
      ]),
    );
    expect(lines.length).toBeGreaterThanOrEqual(7);
    // A missing section does not hide the rest either.
    const noNats = errorOf({ ...valid, nats: undefined, clusters: [{ ...valid.clusters[0], account: "x" }] });
    expect(noNats).toContain("nats: ");
    expect(noNats).toContain('clusters[0].account: unknown account "x"');
  });

  test("an inline credential names the accepted forms and never echoes the secret", () => {
    const msg = errorOf({
      ...valid,
      accounts: [{ ...valid.accounts[0], credentials: "abc-secret-123" }],
      clusters: [{ ...valid.clusters[0], token: "tok-secret-456" }],
      nats: { ...valid.nats, password: { value: "pw-secret-789" } },
    });
    expect(msg).toContain("accounts[0].credentials: ");
    expect(msg).toContain("clusters[0].token: ");
    expect(msg).toContain("nats.password: ");
    expect(msg).toContain("{file: /path}");
    expect(msg).toContain("{env: NAME}");
    expect(msg).not.toMatch(/secret-123|secret-456|secret-789|Invalid input/);
  });

  test("snapshotHold is validated and defaulted", () => {
    expect(parseHubConfig(JSON.stringify(valid)).snapshotHold).toEqual({
      maxObjects: 10,
      maxPercent: 10,
      confirmAfterMs: 60_000,
    });
    expect(errorOf({ ...valid, snapshotHold: { maxPercent: 150 } })).toContain("snapshotHold.maxPercent");
  });

  test("TLS is required unless grpc.insecure is set", () => {
    expect(errorOf({ ...valid, grpc: { listen: "0.0.0.0:7443" } })).toContain("grpc.tls: TLS is required");
  });

  test("not YAML at all", () => {
    expect(() => parseHubConfig("a: [", "x.yaml")).toThrow(/x.yaml: not valid YAML/);
  });
});

describe("--controllers semantics (upstream)", () => {
  test("star, names, negations and aliases; first match wins", () => {
    const list = parseControllerList(["*", "-route"]);
    expect(isControllerEnabled(list, "cloud-node-controller")).toBe(true);
    expect(isControllerEnabled(list, "node-route-controller")).toBe(false);
    const only = parseControllerList(["cloud-node", "service"]);
    expect(isControllerEnabled(only, "cloud-node-controller")).toBe(true);
    expect(isControllerEnabled(only, "service-lb-controller")).toBe(true);
    expect(isControllerEnabled(only, "cloud-node-lifecycle-controller")).toBe(false);
    const first = parseControllerList(["-cloud-node", "cloud-node", "*"]);
    expect(isControllerEnabled(first, "cloud-node-controller")).toBe(false);
    expect(() => parseControllerList(["bogus"])).toThrow('"bogus" is not in the list of known controllers');
  });
});
