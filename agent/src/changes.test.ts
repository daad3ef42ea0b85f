import { describe, expect, test } from "@jest/globals";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { changeOf } from "./changes.js";
import { toWireNode, toWireService } from "./convert.js";

const node: V1Node = {
  metadata: { name: "n1", uid: "u-n1", resourceVersion: "7", labels: { a: "b" } },
  spec: { providerID: "simulated://r/i-1" },
};
const service: V1Service = {
  metadata: { namespace: "shop", name: "web", uid: "u-web", resourceVersion: "9" },
  spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
};

describe("changeOf", () => {
  test("an upsert is keyed by uid and converted only when asked, from the cached object", () => {
    const n = changeOf({ kind: "node", type: "upsert", obj: node });
    expect(n.key).toBe("u-n1");
    expect(n.wire()).toEqual({ $case: "node", value: toWireNode(node) });
    const s = changeOf({ kind: "service", type: "upsert", obj: service });
    expect(s.key).toBe("u-web");
    expect(s.wire()).toEqual({ $case: "service", value: toWireService(service) });
  });

  test("a deletion has the object's key, so it replaces the object's pending upsert", () => {
    const d = changeOf({ kind: "node", type: "delete", obj: node });
    expect(d.key).toBe("u-n1");
    expect(d.wire()).toEqual({ $case: "nodeDeleted", value: { namespace: "", name: "n1", uid: "u-n1" } });
    const sd = changeOf({ kind: "service", type: "delete", obj: service });
    expect(sd.wire()).toEqual({
      $case: "serviceDeleted",
      value: { namespace: "shop", name: "web", uid: "u-web" },
    });
  });
});
