import { describe, expect, test } from "@jest/globals";
import { addClusterEntry, removeClusterEntry } from "./edit.js";
import { ConfigError, parseHubConfig } from "./load.js";

const text = `# the fleet's hub
grpc:
  listen: 127.0.0.1:7443
  insecure: true # loopback only
nats:
  servers: [nats://127.0.0.1:4222]
accounts:
  - name: main
    provider: simulated
    region: r1
    credentials: {env: KEY}
# every member cluster
clusters:
  - name: alpha # the first one
    token: {file: /run/alpha}
    account: main
`;

const hash = `sha256:${"a".repeat(64)}`;

describe("config edits", () => {
  test("adding a cluster keeps every comment and the existing entries as written", () => {
    const { text: out, config } = addClusterEntry(text, { name: "beta", account: "main", tokenHash: hash });
    expect(out.startsWith(text)).toBe(true);
    expect(out.slice(text.length)).toBe(`  - name: beta\n    account: main\n    tokenHash: ${hash}\n`);
    expect(config.clusters.map((c) => c.name)).toEqual(["alpha", "beta"]);
  });

  test("removing a cluster removes its entry only", () => {
    const two = addClusterEntry(text, { name: "beta", account: "main", tokenHash: hash }).text;
    const { text: out, config } = removeClusterEntry(two, "beta");
    expect(out).toBe(text);
    expect(config.clusters.map((c) => c.name)).toEqual(["alpha"]);
    const without = removeClusterEntry(text, "alpha").text;
    expect(without).toContain("# the fleet's hub");
    expect(parseHubConfig(without).clusters).toEqual([]);
  });

  test("an empty flow list becomes a block list", () => {
    const empty = text.replace(/clusters:\n[\s\S]*$/, "clusters: []\n");
    const { text: out } = addClusterEntry(empty, { name: "beta", account: "main", tokenHash: hash });
    expect(out).toContain("clusters:\n  - name: beta\n");
  });

  test("an edit that would make the configuration invalid is refused, naming the field", () => {
    expect(() => addClusterEntry(text, { name: "beta", account: "nope", tokenHash: hash })).toThrow(
      'clusters[1].account: unknown account "nope"',
    );
    expect(() => addClusterEntry(text, { name: "alpha", account: "main", tokenHash: hash })).toThrow(
      'duplicate cluster "alpha"',
    );
    expect(() => removeClusterEntry(text, "gamma")).toThrow(ConfigError);
  });
});
