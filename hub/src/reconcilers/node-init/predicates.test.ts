import { Node } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { InitError, needsInit, nodeAddresses } from "./predicates.js";

function node(
  annotations: Record<string, string> = {},
  addresses = [{ type: "Hostname", address: "h" }],
): Node {
  return Node.fromPartial({ name: "n", uid: "u", resourceVersion: "1", annotations, addresses });
}

const cloud = [
  { type: "InternalIP", address: "10.0.0.1" },
  { type: "InternalIP", address: "10.0.0.2" },
  { type: "ExternalIP", address: "100.64.0.1" },
];

describe("needsInit", () => {
  test("matches the uninitialized taint by key, whatever its effect or value", () => {
    expect(
      needsInit({
        ...node(),
        taints: [{ key: "node.cloudprovider.kubernetes.io/uninitialized", value: "", effect: "NoExecute" }],
      }),
    ).toBe(true);
    expect(needsInit({ ...node(), taints: [{ key: "other", value: "", effect: "NoSchedule" }] })).toBe(false);
  });
});

describe("nodeAddresses", () => {
  test("no cloud addresses: leave the node's alone", () => {
    expect(nodeAddresses(node(), [])).toBeUndefined();
  });

  test("keeps the kubelet Hostname when the cloud has none", () => {
    expect(nodeAddresses(node(), cloud)?.map((a) => a.address)).toEqual([
      "10.0.0.1",
      "10.0.0.2",
      "100.64.0.1",
      "h",
    ]);
  });

  test("provided-node-ip: that IP first, the other IPs of its type dropped", () => {
    const out = nodeAddresses(node({ "alpha.kubernetes.io/provided-node-ip": "10.0.0.2" }), cloud);
    expect(out).toEqual([
      { type: "InternalIP", address: "10.0.0.2" },
      { type: "ExternalIP", address: "100.64.0.1" },
      { type: "Hostname", address: "h" },
    ]);
  });

  test("provided-node-ip that the cloud does not know is an error", () => {
    expect(() => nodeAddresses(node({ "alpha.kubernetes.io/provided-node-ip": "10.9.9.9" }), cloud)).toThrow(
      new InitError("failed to get node address from cloud provider that matches ip: 10.9.9.9"),
    );
  });

  test("two IPs of one family are not a valid dual-stack pair", () => {
    expect(() =>
      nodeAddresses(node({ "alpha.kubernetes.io/provided-node-ip": "10.0.0.1,10.0.0.2" }), cloud),
    ).toThrow(InitError);
  });
});
