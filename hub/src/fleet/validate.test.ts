import { Node, PersistentVolume, Service } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { invalidNode, invalidPersistentVolume, invalidService } from "./validate.js";

const long = "x".repeat(4097);
const many = (n: number) => Array.from({ length: n }, (_, i) => `10.0.${i}.0/24`);

function node(extra: Partial<Node> = {}): Node {
  return Node.fromPartial({
    name: "n-1.example",
    uid: "uid-1",
    resourceVersion: "7",
    providerId: "sim://i-1",
    labels: { "kubernetes.io/hostname": "n-1", "example.com/role": "" },
    annotations: { "example.com/note": "a b c" },
    taints: [{ key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" }],
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }],
    podCidrs: ["10.1.0.0/24"],
    finalizers: ["example.com/keep"],
    ...extra,
  });
}

function service(extra: Partial<Service> = {}): Service {
  return Service.fromPartial({
    namespace: "default",
    name: "web",
    uid: "uid-s",
    resourceVersion: "3",
    type: "LoadBalancer",
    ports: [{ name: "http", port: 80, protocol: "TCP", nodePort: 30080 }],
    ...extra,
  });
}

describe("invalidNode", () => {
  test("a node a real API server accepts passes", () => {
    expect(invalidNode(node())).toBeNull();
  });

  // Every check, each with its limit and its message naming the node (the Event and log say it).
  test.each<[string, Partial<Node>, string, string]>([
    ["name", { name: "Bad_Name" }, "name", 'node "Bad_Name": the name is not a valid DNS-1123 subdomain'],
    ["uid", { uid: "" }, "uid", 'node "n-1.example" has no valid uid'],
    [
      "taints",
      { taints: Array(10_001).fill({ key: "k", value: "", effect: "NoSchedule" }) },
      "list-length",
      'node "n-1.example": 10001 taints; the limit is 10000',
    ],
    [
      "pod CIDRs",
      { podCidrs: many(10_001) },
      "list-length",
      'node "n-1.example": 10001 podCIDRs; the limit is 10000',
    ],
    [
      "resourceVersion",
      { resourceVersion: long },
      "field-size",
      'node "n-1.example": a field is longer than 4096 characters',
    ],
    [
      "providerID",
      { providerId: long },
      "field-size",
      'node "n-1.example": a field is longer than 4096 characters',
    ],
    [
      "a pod CIDR",
      { podCidrs: [long] },
      "field-size",
      'node "n-1.example": a field is longer than 4096 characters',
    ],
    [
      "a taint value",
      { taints: [{ key: "k", value: long, effect: "NoSchedule" }] },
      "field-size",
      'node "n-1.example": a field is longer than 4096 characters',
    ],
    [
      "an address",
      { addresses: [{ type: "InternalIP", address: long }] },
      "field-size",
      'node "n-1.example": a field is longer than 4096 characters',
    ],
    [
      "a condition reason",
      { conditions: [{ type: "Ready", status: "True", reason: long, message: "" }] },
      "field-size",
      'node "n-1.example": a field is longer than 4096 characters',
    ],
    [
      "a finalizer",
      { finalizers: ["-bad"] },
      "field-size",
      `node "n-1.example" finalizer key "-bad": the name must be at most 63 alphanumeric characters, '-', '_' or '.'`,
    ],
    [
      "a label key prefix",
      { labels: { "Bad_Prefix/x": "v" } },
      "label",
      'node "n-1.example" label key "Bad_Prefix/x": the prefix must be a DNS-1123 subdomain of at most 253 characters',
    ],
    [
      "a label value",
      { labels: { ok: "no spaces" } },
      "label",
      `node "n-1.example" label "ok": the value must be at most 63 alphanumeric characters, '-', '_' or '.'`,
    ],
    [
      "an annotation key",
      { annotations: { "": "v" } },
      "annotation",
      `node "n-1.example" annotation key "": the name must be at most 63 alphanumeric characters, '-', '_' or '.'`,
    ],
    [
      "annotations' size",
      { annotations: { a: "x".repeat(256 * 1024) } },
      "annotations-size",
      `node "n-1.example": annotations total 262145 bytes; the limit is 262144 (Kubernetes' own)`,
    ],
  ])("refuses a bad %s", (_what, extra, limit, message) => {
    expect(invalidNode(node(extra))).toEqual({ limit, message });
  });

  test("names a long node clipped", () => {
    const name = `${"a".repeat(70)}.x`;
    expect(invalidNode(node({ name, uid: "" }))?.message).toBe(`node "${"a".repeat(64)}…" has no valid uid`);
  });
});

describe("invalidService", () => {
  test("a Service a real API server accepts passes", () => {
    expect(invalidService(service())).toBeNull();
  });

  test.each<[string, Partial<Service>, string, string]>([
    [
      "namespace",
      { namespace: "Default" },
      "name",
      'service "Default/web": the namespace is not a valid DNS-1123 label',
    ],
    ["uid", { uid: "" }, "uid", 'service "default/web" has no valid uid'],
    [
      "source ranges count",
      { loadBalancerSourceRanges: many(10_001) },
      "list-length",
      'service "default/web": 10001 source ranges; the limit is 10000',
    ],
    [
      "ingress hostname",
      { ingress: [{ ip: "", hostname: long, ipMode: "" }] },
      "field-size",
      'service "default/web": a field is longer than 4096 characters',
    ],
    [
      "port",
      { ports: [{ name: "", port: 0, protocol: "TCP", nodePort: 0 }] },
      "ports",
      'service "default/web": port 0 is not in 1-65535',
    ],
    [
      "annotation size",
      { annotations: { a: "x".repeat(256 * 1024) } },
      "annotations-size",
      `service "default/web": annotations total 262145 bytes; the limit is 262144 (Kubernetes' own)`,
    ],
  ])("refuses a bad %s", (_what, extra, limit, message) => {
    expect(invalidService(service(extra))).toEqual({ limit, message });
  });
});

describe("invalidPersistentVolume", () => {
  test("refuses a long field and passes a good volume", () => {
    const pv = PersistentVolume.fromPartial({ name: "pv-1", uid: "u", volumeHandle: "vol-1" });
    expect(invalidPersistentVolume(pv)).toBeNull();
    expect(invalidPersistentVolume({ ...pv, volumeHandle: long })).toEqual({
      limit: "field-size",
      message: 'persistentVolume "pv-1": a field is longer than 4096 characters',
    });
  });
});
