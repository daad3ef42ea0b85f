import { describe, expect, test } from "@jest/globals";
import { ConfigError, parseHubConfig } from "./load.js";
import { nextFreePodNetwork, PodNetworkPoolSchema } from "./pod-network.js";

const base = {
  grpc: { insecure: true },
  nats: { servers: ["nats://127.0.0.1:4222"] },
  accounts: [{ name: "main", provider: "simulated", region: "r1", credentials: { env: "KEY" } }],
};

function cluster(name: string, podNetwork?: unknown) {
  return {
    name,
    account: "main",
    token: { env: `T_${name}` },
    ...(podNetwork !== undefined && { podNetwork }),
  };
}

function errorOf(cfg: unknown): string {
  try {
    parseHubConfig(JSON.stringify(cfg), "hub.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("clusters[].podNetwork", () => {
  test("defaults /24 and /64, canonical CIDRs, dual-stack in the order given", () => {
    const cfg = parseHubConfig(
      JSON.stringify({ ...base, clusters: [cluster("a", { cidrs: ["FD00:10:0::/48", "10.1.2.3/16"] })] }),
    );
    expect(cfg.clusters[0]?.podNetwork).toEqual({
      cidrs: ["fd00:10::/48", "10.1.0.0/16"],
      nodeMaskSizeIPv4: 24,
      nodeMaskSizeIPv6: 64,
      overlapAllowed: false,
    });
  });

  test("bad CIDRs, two of one family, masks that do not fit are refused naming the field", () => {
    const msg = errorOf({
      ...base,
      clusters: [
        cluster("a", { cidrs: ["10.0.0.0/16", "10.1.0.0/16"] }),
        cluster("b", { cidrs: ["nope"] }),
        cluster("c", { cidrs: ["10.2.0.0/24"], nodeMaskSizeIPv4: 16 }),
        cluster("d", { cidrs: ["fd00::/32"] }),
      ],
    });
    expect(msg).toContain("clusters[0].podNetwork.cidrs[1]: at most one IPv4 and one IPv6 CIDR (dual-stack)");
    expect(msg).toContain('clusters[1].podNetwork.cidrs[0]: "nope" is not a CIDR');
    expect(msg).toContain("clusters[2].podNetwork.nodeMaskSizeIPv4: /16 cannot be cut from 10.2.0.0/24");
    expect(msg).toContain(
      "clusters[3].podNetwork.nodeMaskSizeIPv6: /64 is more than 16 bits beyond fd00::/32's /32",
    );
  });

  test("two clusters whose pod networks overlap are refused at load, naming both", () => {
    const msg = errorOf({
      ...base,
      clusters: [
        cluster("east", { cidrs: ["10.0.0.0/14"] }),
        cluster("west", { cidrs: ["10.2.0.0/16", "fd00::/48"] }),
        cluster("north", { cidrs: ["10.8.0.0/16", "fd00::/56"] }),
      ],
    });
    expect(msg).toBe(
      [
        "hub.yaml is invalid:",
        'clusters[1].podNetwork.cidrs[0]: pod network 10.2.0.0/16 of cluster "west" overlaps 10.0.0.0/14 of cluster "east" (clusters[0]); give one of them another range, or set podNetwork.overlapAllowed',
        'clusters[2].podNetwork.cidrs[1]: pod network fd00::/56 of cluster "north" overlaps fd00::/48 of cluster "west" (clusters[1]); give one of them another range, or set podNetwork.overlapAllowed',
      ].join("\n"),
    );
  });

  test("overlapAllowed on either cluster lets the pair overlap; disjoint networks load", () => {
    const cfg = parseHubConfig(
      JSON.stringify({
        ...base,
        clusters: [
          cluster("lab", { cidrs: ["10.0.0.0/16"], overlapAllowed: true }),
          cluster("east", { cidrs: ["10.0.0.0/16"] }),
          cluster("west", { cidrs: ["10.1.0.0/16"] }),
          cluster("bare"),
        ],
      }),
    );
    expect(cfg.clusters.map((c) => c.podNetwork?.cidrs[0])).toEqual([
      "10.0.0.0/16",
      "10.0.0.0/16",
      "10.1.0.0/16",
      undefined,
    ]);
  });
});

describe("podNetworkPool", () => {
  const pool = PodNetworkPoolSchema.parse({ cidrs: ["10.64.0.0/14", "fd00:1::/46"] });

  test("the first block of each pool CIDR that no cluster uses, overlapAllowed ones included", () => {
    expect(nextFreePodNetwork(pool, [])).toEqual(["10.64.0.0/16", "fd00:1::/48"]);
    expect(
      nextFreePodNetwork(pool, [
        { name: "a", podNetwork: { cidrs: ["10.64.0.0/16", "fd00:1::/48"] } },
        { name: "b", podNetwork: { cidrs: ["10.65.128.0/17"], overlapAllowed: true } },
        { name: "c", podNetwork: { cidrs: ["fd00:1:1::/64"] } },
      ]),
    ).toEqual(["10.66.0.0/16", "fd00:1:2::/48"]);
  });

  test("a full pool is an error naming the family", () => {
    const small = PodNetworkPoolSchema.parse({ cidrs: ["10.64.0.0/15"] });
    expect(() =>
      nextFreePodNetwork(small, [
        { name: "a", podNetwork: { cidrs: ["10.64.0.0/16"] } },
        { name: "b", podNetwork: { cidrs: ["10.65.0.0/16"] } },
      ]),
    ).toThrow("podNetworkPool 10.64.0.0/15 has no free /16 left for a new cluster's IPv4 pod network");
  });
});
