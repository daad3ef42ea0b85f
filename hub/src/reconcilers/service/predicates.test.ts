import { Node, Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { parseLbAnnotations } from "./annotations.js";
import {
  backendFacts,
  backendSubset,
  ingressEqual,
  loadBalancerSpec,
  sourceRanges,
  specKey,
  toWireIngress,
  vendorNodeAnnotations,
} from "./predicates.js";

describe("backendSubset", () => {
  const ids = Array.from({ length: 50 }, (_, i) => `i-${String(i).padStart(3, "0")}`);

  test("everything when under the limit; exactly max, sorted, otherwise", () => {
    expect(backendSubset(ids.slice(0, 5), "svc", 10)).toEqual(ids.slice(0, 5));
    const s = backendSubset(ids, "svc", 10);
    expect(s).toHaveLength(10);
    expect([...s].sort()).toEqual(s);
    expect(new Set(s).size).toBe(10);
  });

  test("stable: a node joining or leaving changes at most one member", () => {
    const before = backendSubset(ids, "svc", 10);
    const joined = backendSubset([...ids, "i-new"], "svc", 10);
    expect(joined.filter((x) => !before.includes(x)).length).toBeLessThanOrEqual(1);
    const left = backendSubset(
      ids.filter((x) => x !== before[0]),
      "svc",
      10,
    );
    expect(left.filter((x) => !before.includes(x)).length).toBeLessThanOrEqual(1);
  });

  test("different Services spread over different nodes", () => {
    expect(backendSubset(ids, "svc-a", 10)).not.toEqual(backendSubset(ids, "svc-b", 10));
  });
});

describe("lb annotations", () => {
  test("defaults, per-port protocol, and errors that name the annotation and the form", () => {
    const s = parseLbAnnotations({
      "lb.fleet-ccm.io/protocol.443": "https",
      "lb.fleet-ccm.io/proxy-protocol": "true",
    });
    expect(s.portProtocols.get(443)).toBe("HTTPS");
    expect(s.proxyProtocol).toBe(true);
    expect(s.idleTimeoutSeconds).toBe(60);
    expect(() => parseLbAnnotations({ "lb.fleet-ccm.io/internal": "yes" })).toThrow(
      'invalid annotation lb.fleet-ccm.io/internal="yes": expected "true" or "false"',
    );
    expect(() => parseLbAnnotations({ "lb.fleet-ccm.io/protcol": "tcp" })).toThrow(
      /expected a known annotation/,
    );
    expect(() =>
      parseLbAnnotations({
        "lb.fleet-ccm.io/health-check-interval": "5",
        "lb.fleet-ccm.io/health-check-timeout": "9",
      }),
    ).toThrow(/at most the interval/);
  });
});

describe("backend facts of a node", () => {
  const n = (annotations: Record<string, string>) =>
    Node.fromPartial({ name: "a", uid: "u", resourceVersion: "1", providerId: "linode://1", annotations });

  test("labels are backend facts only where the provider selects backends by label", () => {
    const labelled = (labels: Record<string, string>) =>
      Node.fromPartial({ name: "a", uid: "u", resourceVersion: "1", providerId: "hcloud://1", labels });
    expect(backendFacts(labelled({ pool: "a" }))).toBe(backendFacts(labelled({ pool: "b" })));
    expect(backendFacts(labelled({ pool: "a" }), true)).not.toBe(backendFacts(labelled({ pool: "b" }), true));
    expect(backendFacts(labelled({ x: "1", y: "2" }), true)).toBe(
      backendFacts(Node.fromPartial({ ...labelled({}), labels: { y: "2", x: "1" } }), true),
    );
  });

  test("a vendor annotation is a backend fact; the hub's own keys are not", () => {
    const plain = backendFacts(n({}));
    expect(backendFacts(n({ "lifecycle.fleet-ccm.io/confirm-deletion": "true" }))).toBe(plain);
    expect(backendFacts(n({ "alpha.kubernetes.io/provided-node-ip": "10.0.0.1" }))).toBe(plain);
    const one = backendFacts(n({ "node.k8s.linode.com/private-ip": "192.168.0.1" }));
    expect(one).not.toBe(plain);
    expect(backendFacts(n({ "node.k8s.linode.com/private-ip": "192.168.0.2" }))).not.toBe(one);
    expect(vendorNodeAnnotations(n({ "lifecycle.fleet-ccm.io/x": "1" }))).toBeUndefined();
    expect(
      vendorNodeAnnotations(
        n({ "node.k8s.linode.com/public-ipv6": "2600::1/128", "lifecycle.fleet-ccm.io/x": "1" }),
      ),
    ).toEqual({ "node.k8s.linode.com/public-ipv6": "2600::1/128" });
  });
});

describe("Secrets in the spec", () => {
  const svc = (key: string) =>
    Service.fromPartial({
      namespace: "shop",
      name: "web",
      uid: "u1",
      type: "LoadBalancer",
      ports: [{ name: "https", protocol: "TCP", port: 443, nodePort: 30443 }],
      annotations: { "service.beta.kubernetes.io/vendor-port-443": '{"tls-secret-name":"web-tls"}' },
      secrets: [
        {
          name: "web-tls",
          data: { "tls.crt": Buffer.from("CERT"), "tls.key": Buffer.from(key) },
          problem: "",
        },
        { name: "gone", data: {}, problem: "Secret shop/gone not found" },
      ],
    });

  test("arrive as UTF-8 data or a problem; the change key follows them and holds only hashes", () => {
    const settings = parseLbAnnotations({});
    const a = loadBalancerSpec(svc("PRIVATE-KEY-ONE"), settings, ["1"]);
    expect(a.secrets).toEqual({
      "web-tls": { data: { "tls.crt": "CERT", "tls.key": "PRIVATE-KEY-ONE" } },
      gone: { problem: "Secret shop/gone not found" },
    });
    const b = loadBalancerSpec(svc("PRIVATE-KEY-TWO"), settings, ["1"]);
    expect(specKey(a)).not.toBe(specKey(b));
    expect(specKey(a)).toBe(specKey(loadBalancerSpec(svc("PRIVATE-KEY-ONE"), settings, ["2"])));
    for (const k of [specKey(a), specKey(b)]) expect(k).not.toMatch(/PRIVATE-KEY|CERT"/);
    // No Secrets: no field, the digest as before.
    expect(loadBalancerSpec(Service.fromPartial({ ports: [] }), settings, []).secrets).toBeUndefined();
  });
});

describe("ingress ipMode", () => {
  const shown = (ipMode: string) => [{ ip: "198.18.0.1", hostname: "", ipMode }];

  test("Proxy is carried with an ip only; the default is left to the API server", () => {
    expect(toWireIngress([{ ip: "198.18.0.1", ipMode: "Proxy" }, { hostname: "lb.example" }])).toEqual([
      { ip: "198.18.0.1", hostname: "", ipMode: "Proxy" },
      { ip: "", hostname: "lb.example", ipMode: "" },
    ]);
    expect(toWireIngress([{ ip: "198.18.0.1" }])).toEqual(shown(""));
  });

  test("a Service showing VIP differs from Proxy and matches the default; one showing none matches both", () => {
    const proxy = toWireIngress([{ ip: "198.18.0.1", ipMode: "Proxy" }]);
    const vip = toWireIngress([{ ip: "198.18.0.1" }]);
    expect(ingressEqual(shown("VIP"), proxy)).toBe(false);
    expect(ingressEqual(shown("VIP"), vip)).toBe(true);
    expect(ingressEqual(shown("Proxy"), vip)).toBe(false);
    expect(ingressEqual(shown("Proxy"), proxy)).toBe(true);
    // No LoadBalancerIPMode feature on the API server: the field is dropped, never patched again.
    expect(ingressEqual(shown(""), proxy)).toBe(true);
    expect(ingressEqual(shown(""), vip)).toBe(true);
  });
});

describe("sourceRanges", () => {
  const svc = (loadBalancerSourceRanges: string[]) => Service.fromPartial({ loadBalancerSourceRanges });

  test("0.0.0.0/0 alone, or with ::/0, is open (no rule); ::/0 alone stays an IPv6 range", () => {
    expect(sourceRanges(svc(["0.0.0.0/0"]))).toEqual([]);
    expect(sourceRanges(svc(["::/0", "0.0.0.0/0"]))).toEqual([]);
    expect(sourceRanges(svc(["::/0"]))).toEqual(["::/0"]);
    expect(sourceRanges(svc(["::/0", "203.0.113.0/24"]))).toEqual(["203.0.113.0/24", "::/0"]);
  });
});
