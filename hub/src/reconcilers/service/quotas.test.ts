import { Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { LoadBalancerCapabilities } from "../../cloud/provider.js";
import { quotaRefusal, quotaUse } from "./quotas.js";

function svc(ports: number, over: Partial<Service> = {}): Service {
  return Service.fromPartial({
    namespace: "default",
    name: "web",
    uid: "u",
    type: "LoadBalancer",
    ports: Array.from({ length: ports }, (_, i) => ({
      protocol: "TCP",
      port: 1000 + i,
      nodePort: 30000 + i,
    })),
    ...over,
  });
}

const CAPS: LoadBalancerCapabilities = {
  sessionAffinity: false,
  proxyProtocol: false,
  internal: false,
  protocols: ["TCP", "UDP"],
  quotas: (a) =>
    a.kind === "small"
      ? [{ name: "listeners per small LB", limit: 2, counts: "listeners" }]
      : [
          { name: "listeners per LB", limit: 50, counts: "listeners" },
          { name: "rules per group", limit: 60, counts: "sourceRules", extraRulesPerSource: 1 },
        ],
};

describe("a Service against its provider's quotas", () => {
  test("listeners: one per distinct port (TCP and UDP on one port share a listener)", () => {
    const both = svc(0, {
      ports: [
        { name: "t", protocol: "TCP", port: 53, nodePort: 30053 },
        { name: "u", protocol: "UDP", port: 53, nodePort: 30053 },
      ],
    });
    expect(quotaUse(both, { name: "l", limit: 1, counts: "listeners" })).toBe(1);
  });

  test("rules: (ports + extra) per source range, one open range without any, IPv4 and IPv6 counted apart", () => {
    const q = { name: "r", limit: 60, counts: "sourceRules", extraRulesPerSource: 1 } as const;
    expect(quotaUse(svc(3), q)).toBe(4);
    expect(quotaUse(svc(3, { loadBalancerSourceRanges: ["10.0.0.0/8", "192.0.2.0/24"] }), q)).toBe(8);
    expect(quotaUse(svc(3, { loadBalancerSourceRanges: ["10.0.0.0/8", "2001:db8::/32"] }), q)).toBe(4);
  });

  test("at the limit passes, one beyond is refused naming the quota; the annotations choose the quotas", () => {
    expect(quotaRefusal(svc(50), CAPS, "p")).toBeUndefined();
    expect(quotaRefusal(svc(51), CAPS, "p")).toBe(
      "the Service needs 51 listeners per LB (one per port); provider p allows 50",
    );
    expect(
      quotaRefusal(svc(30, { loadBalancerSourceRanges: ["10.0.0.0/8", "192.0.2.0/24"] }), CAPS, "p"),
    ).toBe("the Service needs 62 rules per group (one per port and source range); provider p allows 60");
    expect(quotaRefusal(svc(3, { annotations: { kind: "small" } }), CAPS, "p")).toContain("3 listeners");
    expect(
      quotaRefusal(
        svc(1),
        { ...CAPS, quotas: () => [{ name: "groups", limit: 5, counts: "annotations", used: 6 }] },
        "p",
      ),
    ).toBe("the Service needs 6 groups (as its annotations name them); provider p allows 5");
    expect(quotaRefusal(svc(3), { ...CAPS, quotas: undefined }, "p")).toBeUndefined();
  });
});
