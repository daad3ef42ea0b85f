import { AgentMessage, type Node, StringCache } from "@fleet-ccm/proto";
import { describe, expect, it } from "@jest/globals";
import { CachingReader, guardedHubService } from "./wire.js";

function node(name: string): Node {
  return {
    name,
    uid: "3f1c2a9e-0000-4000-8000-000000000001",
    resourceVersion: "12345",
    providerId: "simulated://sim-east-1/i-1",
    labels: {
      "topology.kubernetes.io/region": "sim-east-1",
      "kubernetes.io/os": "linux",
      "example.com/städte": "zürich",
      "example.com/emoji": "🚀 ready",
      "example.com/long": "v".repeat(300),
      "example.com/empty": "",
    },
    annotations: {},
    taints: [{ key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" }],
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    conditions: [],
    podCidrs: ["10.244.0.0/24"],
    finalizers: [],
  };
}

function delta(n: Node, seq: number): Buffer {
  const msg = AgentMessage.fromPartial({
    body: { $case: "delta", value: { seq, change: { $case: "node", value: n } } },
  });
  return Buffer.from(AgentMessage.encode(msg).finish());
}

describe("CachingReader", () => {
  it("decodes every message exactly as the default reader does", () => {
    const cache = new StringCache();
    for (let i = 0; i < 50; i++) {
      const bytes = delta(node(`node-${i % 5}`), i);
      expect(AgentMessage.decode(new CachingReader(bytes, cache))).toEqual(AgentMessage.decode(bytes));
    }
  });

  it("fails on a truncated message as the default reader does", () => {
    const bytes = delta(node("node-1"), 1);
    const cut = bytes.subarray(0, bytes.length - 40);
    expect(() => AgentMessage.decode(cut)).toThrow();
    expect(() => AgentMessage.decode(new CachingReader(cut, new StringCache()))).toThrow();
  });

  it("is what the hub's service decodes with, malformed input still answered as malformed", () => {
    const service = guardedHubService(1 << 20);
    const bytes = delta(node("node-7"), 7);
    expect(service.sync.requestDeserialize(bytes)).toEqual(AgentMessage.decode(bytes));
    expect(service.sync.requestDeserialize(bytes.subarray(0, bytes.length - 40))).toMatchObject({
      malformed: "decode",
    });
  });
});
