import { NodeDesired, type ServiceDesired } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { nodeDesiredSlot, specPatch, statusPatch } from "./node.js";
import { serviceStatusPatch } from "./service.js";

const UNINIT = "node.cloudprovider.kubernetes.io/uninitialized";

function node(): V1Node {
  return {
    metadata: { name: "n1", uid: "u1", resourceVersion: "7", labels: { "kubernetes.io/hostname": "n1" } },
    spec: {
      taints: [
        { key: UNINIT, value: "true", effect: "NoSchedule" },
        { key: "dedicated", value: "gpu", effect: "NoSchedule" },
      ],
    },
    status: { addresses: [{ type: "Hostname", address: "n1" }] },
  };
}

function desired(over: Partial<NodeDesired> = {}): NodeDesired {
  return {
    name: "n1",
    uid: "u1",
    generation: 1,
    providerId: "simulated://r/i-1",
    labels: { "topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "n1" },
    addresses: {
      items: [
        { type: "InternalIP", address: "10.0.0.1" },
        { type: "Hostname", address: "n1" },
      ],
    },
    addTaints: [],
    removeTaintKeys: [UNINIT],
    delete: false,
    conditions: [],
    podCidrs: [],
    ...over,
  };
}

describe("node patches", () => {
  test("spec: providerID from empty, only changed labels, taint removed and others kept, uid+resourceVersion preconditions", () => {
    expect(specPatch(node(), desired())).toEqual({
      metadata: { uid: "u1", resourceVersion: "7", labels: { "topology.kubernetes.io/zone": "z1" } },
      spec: {
        providerID: "simulated://r/i-1",
        taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }],
      },
    });
  });

  test("spec: an existing providerID is never changed; nothing to do gives null", () => {
    const n = node();
    n.spec = {
      providerID: "simulated://r/i-1",
      taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }],
    };
    n.metadata = {
      ...n.metadata,
      labels: { "topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "n1" },
    };
    expect(specPatch(n, desired({ providerId: "simulated://r/other" }))).toBeNull();
  });

  test("spec: pod CIDRs (podCIDR the first) only onto a node without any, with uid+resourceVersion preconditions", () => {
    const want = desired({
      labels: {},
      providerId: "",
      removeTaintKeys: [],
      podCidrs: ["10.1.2.0/24", "fd00:0:0:2::/64"],
    });
    expect(specPatch(node(), want)).toEqual({
      metadata: { uid: "u1", resourceVersion: "7" },
      spec: { podCIDR: "10.1.2.0/24", podCIDRs: ["10.1.2.0/24", "fd00:0:0:2::/64"] },
    });
    for (const spec of [{ podCIDR: "10.9.0.0/24" }, { podCIDRs: ["10.9.0.0/24"] }]) {
      const n = node();
      n.spec = { ...n.spec, ...spec };
      expect(specPatch(n, want)).toBeNull();
    }
  });

  test("spec: adding a taint that exists with another value replaces it; same key other effect is separate", () => {
    const patch = specPatch(
      node(),
      desired({
        labels: {},
        providerId: "",
        removeTaintKeys: [],
        addTaints: [
          { key: "dedicated", value: "cpu", effect: "NoSchedule" },
          { key: "dedicated", value: "", effect: "NoExecute" },
        ],
      }),
    );
    expect(patch?.["spec"]).toEqual({
      taints: [
        { key: UNINIT, value: "true", effect: "NoSchedule" },
        { key: "dedicated", value: "cpu", effect: "NoSchedule" },
        { key: "dedicated", effect: "NoExecute" },
      ],
    });
  });

  test("status: addresses replaced wholesale when different, null when equal", () => {
    expect(statusPatch(node(), desired())).toEqual({
      metadata: { uid: "u1", resourceVersion: "7" },
      status: {
        addresses: [
          { type: "InternalIP", address: "10.0.0.1" },
          { type: "Hostname", address: "n1" },
        ],
      },
    });
    expect(
      statusPatch(node(), desired({ addresses: { items: [{ type: "Hostname", address: "n1" }] } })),
    ).toBeNull();
    expect(statusPatch(node(), desired({ addresses: undefined }))).toBeNull();
  });

  test("status: a condition is merged by type, transition time kept when the status does not change", () => {
    const n = node();
    n.status = {
      conditions: [
        { type: "Ready", status: "True", reason: "KubeletReady" },
        {
          type: "NetworkUnavailable",
          status: "True",
          reason: "NoRouteCreated",
          lastTransitionTime: new Date(0),
        },
      ],
    };
    const p = statusPatch(
      n,
      desired({
        addresses: undefined,
        conditions: [
          {
            type: "NetworkUnavailable",
            status: "False",
            reason: "RouteCreated",
            message: "RouteController created a route",
          },
        ],
      }),
    );
    const status = p?.["status"] as
      | { conditions: { type: string; status: string; reason: string }[] }
      | undefined;
    const conds = status?.conditions ?? [];
    expect(conds.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Ready", "True", "KubeletReady"],
      ["NetworkUnavailable", "False", "RouteCreated"],
    ]);
  });
});

describe("service status patch", () => {
  const svc = (): V1Service => ({
    metadata: {
      name: "web",
      namespace: "default",
      uid: "s1",
      resourceVersion: "3",
      finalizers: ["example.com/keep"],
    },
    status: { loadBalancer: {} },
  });
  const d = (over: Partial<ServiceDesired>): ServiceDesired => ({
    namespace: "default",
    name: "web",
    uid: "s1",
    generation: 1,
    addFinalizers: [],
    removeFinalizers: [],
    ingress: undefined,
    setAnnotations: {},
    ...over,
  });

  test("adds our finalizer next to others", () => {
    expect(
      serviceStatusPatch(svc(), d({ addFinalizers: ["service.kubernetes.io/load-balancer-cleanup"] })),
    ).toEqual({
      metadata: {
        uid: "s1",
        resourceVersion: "3",
        finalizers: ["example.com/keep", "service.kubernetes.io/load-balancer-cleanup"],
      },
    });
  });

  test("writes the ingress; clearing it removes the field (null); unchanged gives null", () => {
    expect(
      serviceStatusPatch(svc(), d({ ingress: { items: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }] } })),
    ).toEqual({
      metadata: { uid: "s1", resourceVersion: "3" },
      status: { loadBalancer: { ingress: [{ ip: "198.18.0.1" }] } },
    });
    const withIngress = svc();
    withIngress.status = { loadBalancer: { ingress: [{ ip: "198.18.0.1", ipMode: "VIP" }] } };
    expect(serviceStatusPatch(withIngress, d({ ingress: { items: [] } }))?.["status"]).toEqual({
      loadBalancer: { ingress: null },
    });
    expect(
      serviceStatusPatch(
        withIngress,
        d({ ingress: { items: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }] } }),
      ),
    ).toBeNull();
  });

  test("ipMode Proxy is written with the ip; a VIP shown is changed; a Service showing none matches", () => {
    const proxy = d({ ingress: { items: [{ ip: "198.18.0.1", hostname: "", ipMode: "Proxy" }] } });
    expect(serviceStatusPatch(svc(), proxy)?.["status"]).toEqual({
      loadBalancer: { ingress: [{ ip: "198.18.0.1", ipMode: "Proxy" }] },
    });
    const vip = svc();
    vip.status = { loadBalancer: { ingress: [{ ip: "198.18.0.1", ipMode: "VIP" }] } };
    expect(serviceStatusPatch(vip, proxy)?.["status"]).toEqual({
      loadBalancer: { ingress: [{ ip: "198.18.0.1", ipMode: "Proxy" }] },
    });
    // Back to the default: the entry without ipMode, which the API server shows as VIP.
    const shownProxy = svc();
    shownProxy.status = { loadBalancer: { ingress: [{ ip: "198.18.0.1", ipMode: "Proxy" }] } };
    expect(
      serviceStatusPatch(
        shownProxy,
        d({ ingress: { items: [{ ip: "198.18.0.1", hostname: "", ipMode: "" }] } }),
      )?.["status"],
    ).toEqual({ loadBalancer: { ingress: [{ ip: "198.18.0.1" }] } });
    expect(serviceStatusPatch(shownProxy, proxy)).toBeNull();
    // An API server without the LoadBalancerIPMode feature drops the field: no patch again and again.
    const dropped = svc();
    dropped.status = { loadBalancer: { ingress: [{ ip: "198.18.0.1" }] } };
    expect(serviceStatusPatch(dropped, proxy)).toBeNull();
  });

  test("sets the vendor CCM's annotations beside the others, only those that differ", () => {
    const id = "kubernetes.digitalocean.com/load-balancer-id";
    const withOthers = svc();
    withOthers.metadata = { ...withOthers.metadata, annotations: { "example.com/mine": "x" } };
    expect(serviceStatusPatch(withOthers, d({ setAnnotations: { [id]: "lb-1" } }))).toEqual({
      metadata: { uid: "s1", resourceVersion: "3", annotations: { [id]: "lb-1" } },
    });
    const already = svc();
    already.metadata = { ...already.metadata, annotations: { [id]: "lb-1" } };
    expect(serviceStatusPatch(already, d({ setAnnotations: { [id]: "lb-1" } }))).toBeNull();
    expect(serviceStatusPatch(already, d({ setAnnotations: { [id]: "lb-2" } }))?.["metadata"]).toEqual({
      uid: "s1",
      resourceVersion: "3",
      annotations: { [id]: "lb-2" },
    });
  });
});

describe("nodeDesiredSlot", () => {
  const base = NodeDesired.fromPartial({ name: "n1", uid: "u1", generation: 1 });

  test("the hub's controllers' desired states of one node get slots of their own", () => {
    const init = nodeDesiredSlot({
      ...base,
      providerId: "simulated://r/i-1",
      labels: { "topology.kubernetes.io/zone": "z" },
      addresses: { items: [] },
      removeTaintKeys: ["node.cloudprovider.kubernetes.io/uninitialized"],
    });
    const ipam = nodeDesiredSlot({ ...base, podCidrs: ["10.244.1.0/24"] });
    const route = nodeDesiredSlot({
      ...base,
      conditions: [{ type: "NetworkUnavailable", status: "False", reason: "RouteCreated", message: "" }],
    });
    const del = nodeDesiredSlot({ ...base, delete: true, labels: { a: "b" } });
    expect(new Set([init, ipam, route, del]).size).toBe(4);
    expect(del).toBe("delete");
    // The same fields, later values: the same slot (the newer replaces the waiting one).
    expect(nodeDesiredSlot({ ...base, podCidrs: ["10.244.2.0/24"] })).toBe(ipam);
  });
});
