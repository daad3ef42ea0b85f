// ClusterWatch against the Kubernetes API simulator over real HTTP, behind a fault proxy, with a
// fake clock: a backoff timer fires only when the test advances the clock, so every LIST the
// watch makes without that is one it made at once.

import { AnnotationFilter } from "@fleet-ccm/proto";
import {
  type FaultProxy,
  type FaultRule,
  type KubeApiServer,
  startFaultProxy,
  startKubeApiServer,
  waitFor,
} from "@fleet-ccm/sim";
import { afterEach, beforeEach, describe, expect, test } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { FakeClock } from "./fake-clock.testkit.js";
import { KubeClient } from "./kube-client.js";
import { VolumeFilter } from "./volumes.js";
import { ClusterWatch, type WatchEvent } from "./watch.js";

const NODES = { method: "GET", path: "/api/v1/nodes" } as const;
const NODE_LIST = { ...NODES, watch: false } as const;
const NODE_WATCH = { ...NODES, watch: true } as const;
/** Real time for requests in flight to land (no backoff timer fires meanwhile). */
const SETTLE_MS = 300;
/** The one backoff's first step, 500 ms jittered down to half at most. */
const FIRST_STEP_MS = 500;

let sim: KubeApiServer;
let proxy: FaultProxy;
let clock: FakeClock;
let watch: ClusterWatch;
let lines: { level: number; msg: string; [k: string]: unknown }[];
let events: WatchEvent[];

beforeEach(async () => {
  sim = await startKubeApiServer();
  for (const name of ["n-0", "n-1"]) sim.create("Node", { metadata: { name } });
  proxy = await startFaultProxy({ target: sim.url });
  const kc = new KubeConfig();
  const opts = sim.kubeConfigOptions();
  kc.loadFromOptions({ ...opts, clusters: opts.clusters.map((c) => ({ ...c, server: proxy.url })) });
  lines = [];
  events = [];
  const logger = pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s)) });
  clock = new FakeClock();
  watch = new ClusterWatch(
    kc,
    new KubeClient(kc),
    logger,
    new AnnotationFilter(),
    new VolumeFilter([], []),
    (e) => events.push(e),
    clock,
  );
  expect(await watch.start()).toBe(true);
});

afterEach(async () => {
  await watch.stop();
  await proxy.close();
  await sim.close();
});

const lists = (): number => proxy.count(NODE_LIST);
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, SETTLE_MS));
const logged = (msg: string) => lines.filter((l) => l.msg.includes(msg));

/** The last request for nodes is a watch the server answered: no LIST will be made before an event. */
function watchingNodes(): boolean {
  const last = proxy.requests.filter((r) => r.path === NODES.path).at(-1);
  return last?.watch === true && !last.faulted && last.status === 200;
}

/** A node added and its event seen on the watch: the watch of nodes served since its list. */
async function nodesWatchServes(name: string): Promise<void> {
  expect(await waitFor(watchingNodes, 5000)).toBe(true);
  const before = lists();
  sim.create("Node", { metadata: { name } });
  expect(
    await waitFor(() => events.some((e) => e.kind === "node" && e.obj.metadata?.name === name), 5000),
  ).toBe(true);
  expect(lists()).toBe(before);
}

/** Fires backoff timers until one LIST more than `before` was made (a cut watch backs off once first). */
async function fireUntilListed(before: number): Promise<void> {
  for (let i = 0; i < 3 && lists() === before; i++) {
    await settle();
    if (lists() === before && clock.nextInMs < Number.POSITIVE_INFINITY) clock.fireNext();
    await waitFor(() => lists() > before, 2000);
  }
  expect(lists()).toBe(before + 1);
}

describe.each<[string, FaultRule]>([
  ["HTTP 410 on the watch request", { ...NODE_WATCH, status: 410 }],
  ["an ERROR event with a 410 Status", { ...NODE_WATCH, watchError: 410 }],
])("every watch of nodes answered with %s", (_, rule) => {
  test("a 410 after a watch that served relists at once; then one LIST per growing backoff step", async () => {
    await nodesWatchServes("n-2");
    const before = lists();
    proxy.setFaults([rule]);
    if ("watchError" in rule) {
      // The open watch gets the ERROR event: the relist comes with no timer fired.
      expect(await waitFor(() => lists() === before + 1, 5000)).toBe(true);
    } else {
      // The fault cut the open watch (a failure: one backoff step); the watch again meets the
      // HTTP 410 and relists with no further timer.
      await fireUntilListed(before);
    }

    // The relisted watch meets a 410 again before serving: a LIST per backoff step, each step
    // longer, never one without a timer firing (the old code relisted in a tight loop here).
    const delays: number[] = [];
    // Three steps: the fake time stays under 30 s, when summaries would start.
    for (let step = 0; step < 3; step++) {
      await settle();
      const n = lists();
      expect(n).toBe(before + 1 + step);
      delays.push(clock.nextInMs);
      clock.fireNext();
      expect(await waitFor(() => lists() === n + 1, 5000)).toBe(true);
    }
    await settle();
    expect(lists()).toBe(before + 4);
    const first = "watchError" in rule ? 0 : 1; // the cut already took the first step
    delays.forEach((d, k) => {
      const full = FIRST_STEP_MS * 2 ** (first + k);
      expect(d).toBeGreaterThanOrEqual(full / 2);
      expect(d).toBeLessThanOrEqual(full);
    });
    // The 410 that relisted at once: one info line.
    expect(logged("watch of nodes ended with 410 Gone").map((l) => l.level)).toEqual([30]);
    // One warning for the trouble (the cut, or the first 410 that came too soon), then
    // nothing until a summary after 30 s.
    const warned = logged("watch of nodes failed; retrying with backoff");
    expect(warned).toHaveLength(1);
    if ("watchError" in rule) expect(warned[0]).toMatchObject({ status: 410, reason: "Expired" });
    expect(logged("watch of nodes still failing")).toEqual([]);

    // Healed: the next step lists, the watch serves, and the backoff starts over; a 410 then
    // relists at once again.
    proxy.clearFaults();
    const healed = lists();
    await fireUntilListed(healed);
    await nodesWatchServes("n-3");
    expect(logged("watch of nodes recovered")).toHaveLength(1);
    proxy.setFaults([rule]);
    await fireUntilListed(healed + 1);
    // …and the 410 after it backs off from the first step.
    await settle();
    expect(lists()).toBe(healed + 2);
    expect(clock.nextInMs).toBeLessThanOrEqual(FIRST_STEP_MS * ("watchError" in rule ? 1 : 2));
  });
});

test("a 410 before the watch served (none since its list) backs off at once", async () => {
  const before = lists();
  proxy.setFaults([{ ...NODE_WATCH, watchError: 410 }]);
  await settle();
  // The cut watch had delivered nothing since the initial list: no LIST without a timer.
  expect(lists()).toBe(before);
  expect(clock.nextInMs).toBeLessThanOrEqual(FIRST_STEP_MS);
  expect(logged("watch of nodes failed; retrying with backoff")).toHaveLength(1);
  clock.fireNext();
  expect(await waitFor(() => lists() === before + 1, 5000)).toBe(true);
});
