/**
 * An agent (as a process) whose API server answers every watch with 410 Gone, in either form:
 * HTTP 410 on the watch request, or HTTP 200 and an in-stream `ERROR` event carrying the 410
 * Status. The first 410 after a watch that served relists at once; the 410s that follow back
 * off (0.5 s doubling, jittered) instead of relisting in a tight loop, with one log line.
 * Faults come from a proxy in front of the Kubernetes API simulator.
 */
import type { ChildProcess } from "node:child_process";
import { type FaultProxy, type FaultRule, type ProxiedRequest, startFaultProxy } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const KINDS = ["nodes", "services"] as const;
const WATCHES = { method: "GET", path: /^\/api\/v1\/(nodes|services)$/, watch: true } as const;
/** How long the 410s go on. */
const WINDOW_MS = 4000;

let fleet: LocalFleet;
let proxy: FaultProxy;
let cluster: string;
let agent: ChildProcess | undefined;
const output: string[] = [];

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
  cluster = [...fleet.clusters.keys()][0] ?? "";
  await fleet.startHub();
  proxy = await startFaultProxy({ target: fleet.cluster(cluster).kube.url });
  agent = fleet.spawnAgentProcess(cluster, { kubeServer: proxy.url, output, logLevel: "info" });
  fleet.addNodes(cluster, 3);
  expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.nodes.size === 3, 30_000)).toBe(true);
});

afterAll(async () => {
  agent?.kill("SIGKILL");
  await fleet?.stop();
  await proxy?.close();
});

/** The agent's log lines whose message contains `msg`, logged at `sinceMs` or later. */
function logged(msg: string, sinceMs: number): { msg: string; [k: string]: unknown }[] {
  return output
    .map((l) => {
      try {
        return JSON.parse(l) as { msg: string; time?: string };
      } catch {
        return { msg: l };
      }
    })
    .filter((l) => l.msg.includes(msg) && Date.parse(l.time ?? "") >= sinceMs);
}

function requests(kind: string, watch: boolean, sinceMs: number): ProxiedRequest[] {
  return proxy.requests.filter(
    (r) => r.atMs >= sinceMs && r.method === "GET" && r.path === `/api/v1/${kind}` && r.watch === watch,
  );
}

/** The last request of each kind is a watch the server answered: no LIST comes before an event. */
function watching(): boolean {
  return KINDS.every((kind) => {
    const last = proxy.requests.filter((r) => r.method === "GET" && r.path === `/api/v1/${kind}`).at(-1);
    return last?.watch === true && !last.faulted && last.status === 200;
  });
}

/** One event on each kind's watch, seen by the hub: both watches have served since their list. */
async function watchesServe(): Promise<void> {
  expect(await waitFor(watching, 30_000)).toBe(true);
  const since = Date.now();
  const view = () => fleet.hub?.fleet.view(cluster);
  const nodes = view()?.nodes.size ?? 0;
  const services = view()?.services.size ?? 0;
  fleet.addNodes(cluster, 1);
  fleet.addServices(cluster, 1);
  expect(
    await waitFor(() => view()?.nodes.size === nodes + 1 && view()?.services.size === services + 1, 30_000),
  ).toBe(true);
  // Through the watches, not a relist.
  for (const kind of KINDS) expect(requests(kind, false, since)).toEqual([]);
}

describe.each<[string, FaultRule]>([
  ["HTTP 410 answering the watch request", { ...WATCHES, status: 410 }],
  ["an in-stream ERROR event with a 410 Status", { ...WATCHES, watchError: 410 }],
])("every watch answered with %s", (_, rule) => {
  test("the first 410 relists at once; those that follow back off, with one log line; heals", async () => {
    await watchesServe();
    const since = Date.now();
    proxy.setFaults([rule]);
    // The number of LISTs over a fixed window is the thing under test.
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    proxy.clearFaults();

    for (const kind of KINDS) {
      const lists = requests(kind, false, since);
      // At once, then after at least 0.25 s, 0.5 s, 1 s, 2 s (the HTTP form also backs off once
      // for the watch the fault cut): at most 5 LISTs in 4 s. A tight loop made thousands, the
      // in-stream form ~10 (2.6 a second).
      expect(lists.length).toBeGreaterThanOrEqual(1);
      expect(lists.length).toBeLessThanOrEqual(5);
    }

    // Nodes' watch served (an event) since its list: its first 410 relists at once. Each later
    // one waits its backoff (0.25 s at least) after the 410 before the LIST.
    const lists = requests("nodes", false, since);
    const expired = [
      ...("watchError" in rule ? [since] : []),
      ...requests("nodes", true, since)
        .filter((w) => w.faulted)
        .map((w) => w.atMs),
    ];
    const gaps = lists.map((l) => l.atMs - Math.max(...expired.filter((t) => t <= l.atMs)));
    const [first, ...later] = gaps;
    for (const g of later) expect(g).toBeGreaterThanOrEqual(250);
    expect(first).toBeLessThan(Math.min(250, ...later));

    // One warning for the 410s that came too soon (a summary follows only after 30 s), not a
    // line or two per relist.
    for (const kind of KINDS) {
      const lines = logged(`watch of ${kind}`, since);
      expect(lines.filter((l) => l.msg.includes("retrying with backoff")).length).toBe(1);
      expect(lines.length).toBeLessThanOrEqual(3);
    }

    // Healed: the agent relists, watches again, and sees what changed.
    await watchesServe();
  });
});
