import { Node } from "@fleet-ccm/proto";
import { expect, test } from "@jest/globals";
import { FleetState } from "../../fleet/state.js";
import { FakeClock } from "../../util/clock.js";
import { testControllerContext, testHubConfig } from "../context.testkit.js";
import { nodeLifecycleController } from "./index.js";
import { NODE_LIFECYCLE_SCAN } from "./reconcile.js";

const node = (name: string, ready: "True" | "False") =>
  Node.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    providerId: `simulated://r1/i-${name}`,
    conditions: [{ type: "Ready", status: ready }],
  });

test("a scan enqueues the nodes that are not Ready, the same ones every period, and follows changes of the node set", async () => {
  const clock = new FakeClock();
  const fleet = new FleetState();
  const config = testHubConfig();
  const ctx = testControllerContext({ config, fleet, clock, cloudFor: () => undefined });
  const c = nodeLifecycleController(ctx);
  const scan = async () => {
    await c.reconcile({ cluster: "c1", kind: NODE_LIFECYCLE_SCAN, name: "" });
    const keys: string[] = [];
    for (let k = ctx.queue.tryGet(); k !== undefined; k = ctx.queue.tryGet()) {
      keys.push(k.name);
      ctx.queue.done(k);
    }
    return keys.sort();
  };
  fleet.replace("c1", [node("a", "True"), node("b", "False"), node("c", "False")], []);
  expect(await scan()).toEqual([]); // a disconnected view is not judged
  fleet.setConnected("c1", true);
  expect(await scan()).toEqual(["b", "c"]);
  expect(await scan()).toEqual(["b", "c"]); // unchanged: the same nodes again
  fleet.upsertNode("c1", node("a", "False"));
  fleet.upsertNode("c1", node("b", "True"));
  expect(await scan()).toEqual(["a", "c"]);
  fleet.deleteNode("c1", "c");
  expect(await scan()).toEqual(["a"]);
  fleet.replace("c1", [node("d", "False")], []);
  expect(await scan()).toEqual(["d"]);
});
