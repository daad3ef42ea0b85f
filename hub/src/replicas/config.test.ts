import { describe, expect, test } from "@jest/globals";
import { ConfigError, parseHubConfig } from "../config/load.js";
import { hubHeartbeatIntervalMs, replicaIdOf } from "./index.js";

const base = {
  grpc: { listen: "127.0.0.1:7443", insecure: true },
  nats: { servers: ["nats://127.0.0.1:4222"] },
  accounts: [{ name: "main", provider: "simulated", region: "r1", credentials: { env: "KEY" } }],
  clusters: [{ name: "alpha", token: { file: "/run/alpha" }, account: "main" }],
};

function parse(replicas: unknown) {
  return parseHubConfig(JSON.stringify({ ...base, replicas }), "hub.yaml");
}

describe("replicas config", () => {
  test("absent: one hub, no leases", () => {
    expect(parseHubConfig(JSON.stringify(base)).replicas).toBeUndefined();
  });

  test("empty: the defaults (10 s TTL, 2 s margin, 2.5 s renewals)", () => {
    expect(parse({})).toMatchObject({
      replicas: {
        bucket: "fleet-ccm-leases",
        streamReplicas: 1,
        leaseTtlMs: 10_000,
        marginMs: 2000,
        renewIntervalMs: 2500,
        pollIntervalMs: 1000,
      },
    });
  });

  test.each([
    [{ leaseTtlMs: 2000, marginMs: 2000 }, /replicas\.marginMs.*below leaseTtlMs/],
    [{ leaseTtlMs: 5000, marginMs: 1000, renewIntervalMs: 4000 }, /replicas\.renewIntervalMs/],
    [{ id: "has space" }, /replicas\.id/],
    [{ bucket: "a.b" }, /replicas\.bucket/],
  ])("%j is refused, naming the field", (replicas, message) => {
    expect(() => parse(replicas)).toThrow(ConfigError);
    expect(() => parse(replicas)).toThrow(message);
  });

  test("the replica id: the config's, else HOSTNAME (the pod name)", () => {
    const cfg = parse({}).replicas;
    if (cfg === undefined) throw new Error("replicas expected");
    expect(replicaIdOf({ ...cfg, id: "hub-1" }, { HOSTNAME: "pod-x" })).toBe("hub-1");
    expect(replicaIdOf(cfg, { HOSTNAME: "pod-x" })).toBe("pod-x");
  });

  test("the hub's heartbeat interval: a fifth after the agents' alone (its Acks answer them), a tenth of the lease TTL with replicas", () => {
    expect(hubHeartbeatIntervalMs(10_000, undefined)).toBe(12_000);
    expect(hubHeartbeatIntervalMs(10_000, parse({}).replicas)).toBe(1000);
    expect(hubHeartbeatIntervalMs(1000, parse({ leaseTtlMs: 60_000, marginMs: 2000 }).replicas)).toBe(1200);
  });
});
