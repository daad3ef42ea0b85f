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

test("a cluster whose nodes are all Ready is not scanned every period; a node that stops being Ready schedules a scan within one", async () => {
  const clock = new FakeClock();
  const fleet = new FleetState({ now: () => clock.now() });
  const config = testHubConfig();
  const period = config.lifecycle.monitorPeriodMs;
  const ctx = testControllerContext({ config, fleet, clock, cloudFor: () => undefined });
  const c = nodeLifecycleController(ctx);
  fleet.subscribe(c.triggers);
  const scanKey = { cluster: "c1", kind: NODE_LIFECYCLE_SCAN, name: "" };
  fleet.replace("c1", [node("a", "True"), node("b", "True")], []);
  fleet.setConnected("c1", true);
  // The snapshot asked for a scan; all Ready: it finds nothing and asks for no next period.
  expect(ctx.queue.tryGet()).toEqual(scanKey);
  expect(await c.reconcile(scanKey)).toEqual({ requeue: { kind: "done" } });
  ctx.queue.done(scanKey);
  clock.advance(10 * period);
  expect(ctx.queue.len()).toBe(0);
  // A Ready node's update schedules nothing; one that is not Ready schedules a scan one period on.
  fleet.upsertNode("c1", { ...node("a", "True"), resourceVersion: "2" });
  clock.advance(period);
  expect(ctx.queue.len()).toBe(0);
  fleet.upsertNode("c1", { ...node("b", "False"), resourceVersion: "2" });
  clock.advance(period - 1);
  expect(ctx.queue.len()).toBe(0);
  clock.advance(1);
  expect(ctx.queue.tryGet()).toEqual(scanKey);
  // While a node needs a check, the scan runs every period.
  expect(await c.reconcile(scanKey)).toEqual({ requeue: { kind: "after", ms: period } });
});
