import { Node as WireNode, Service as WireService } from "@fleet-ccm/proto";
import { expect, test } from "@jest/globals";
import { toWireNode, toWireService } from "./convert.js";
import { sizeBound } from "./hub-stream.js";

test("sizeBound never underestimates the encoded size (ASCII, multi-byte, empty, dates)", () => {
  let seed = 7;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const str = (n: number) =>
    Array.from({ length: n }, () => (rnd() < 0.2 ? "é€😀"[Math.floor(rnd() * 3)] : "a")).join("");
  for (let i = 0; i < 200; i++) {
    const labels: Record<string, string> = {};
    for (let j = 0; j < rnd() * 20; j++) labels[`k${j}${str(5)}`] = str(Math.floor(rnd() * 60));
    const n = toWireNode({
      metadata: {
        name: str(10),
        uid: str(36),
        resourceVersion: String(i),
        labels,
        creationTimestamp: new Date(),
        annotations: { "lb.fleet-ccm.io/x": str(Math.floor(rnd() * 5000)) },
      },
      spec: { providerID: str(20), taints: [{ key: str(5), effect: "NoSchedule", value: "" }] },
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.1" }] },
    });
    expect(sizeBound(n)).toBeGreaterThanOrEqual(WireNode.encode(n).finish().length);
    const s = toWireService({
      metadata: {
        name: str(8),
        namespace: str(4),
        uid: str(36),
        annotations: { "lb.fleet-ccm.io/y": str(300) },
      },
      spec: {
        type: "LoadBalancer",
        ports: [{ port: 80, nodePort: 30000, protocol: "TCP" }],
        loadBalancerSourceRanges: [str(18)],
      },
    });
    expect(sizeBound(s)).toBeGreaterThanOrEqual(WireService.encode(s).finish().length);
  }
});
