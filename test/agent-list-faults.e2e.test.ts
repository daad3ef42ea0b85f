/**
 * An agent (as a process) whose API server fails the LIST of Nodes: it reports nothing to the
 * hub until every list succeeded, backs off, says so, and the cluster's routes are untouched.
 * Faults come from a proxy in front of the Kubernetes API simulator.
 */
import type { ChildProcess } from "node:child_process";
import { type FaultProxy, startFaultProxy } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { waitForReconciles } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const OWNER = "fleet-ccm.io/cluster";
const LIST_NODES = { method: "GET", path: "/api/v1/nodes", watch: false } as const;

let fleet: LocalFleet;
let proxy: FaultProxy;
let cluster: string;
let agent: ChildProcess | undefined;
let output: string[] = [];
/** Node counts of every snapshot the hub applied for the cluster, with when. */
const snapshots: { atMs: number; nodes: number }[] = [];

beforeAll(async () => {
  fleet = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    configureCloudRoutes: true,
    hubConfig: { routes: { periodMs: 500, maxConcurrentPerAccount: 4 } },
  });
  cluster = [...fleet.clusters.keys()][0] ?? "";
  await fleet.startHub();
  fleet.hub?.fleet.subscribe({
    onSynced(c, view) {
      if (c === cluster) snapshots.push({ atMs: Date.now(), nodes: view.nodes.size });
    },
  });
  proxy = await startFaultProxy({ target: fleet.cluster(cluster).kube.url });
});

afterAll(async () => {
  agent?.kill("SIGKILL");
  await fleet?.stop();
  await proxy?.close();
});

function spawnAgent(): ChildProcess {
  output = [];
  agent = fleet.spawnAgentProcess(cluster, { kubeServer: proxy.url, output, logLevel: "info" });
  return agent;
}

async function stopAgent(): Promise<void> {
  const a = agent;
  if (a === undefined || a.exitCode !== null) return;
  const exited = new Promise((r) => a.once("exit", r));
  a.kill("SIGTERM");
  await exited;
}

function ownedRoutes(): string[] {
  return fleet.cloud
    .routes()
    .filter((r) => r.tags[OWNER] === cluster)
    .map((r) => `${r.destinationCidr} -> ${r.targetInstanceId}`)
    .sort();
}

/** The agent's log lines whose message contains `msg` (logged at `sinceMs` or later). */
function logged(msg: string, sinceMs = 0): { msg: string; [k: string]: unknown }[] {
  return output
    .map((l) => {
      try {
        return JSON.parse(l) as { msg: string; time?: string };
      } catch {
        return { msg: l };
      }
    })
    .filter((l) => l.msg.includes(msg) && (sinceMs === 0 || Date.parse(l.time ?? "") >= sinceMs));
}

describe("agent start while the API server fails the LIST of Nodes", () => {
  let routes: string[] = [];

  beforeAll(async () => {
    spawnAgent();
    const names = fleet.addNodes(cluster, 3);
    expect(await waitFor(() => fleet.progress().initialized === 3, 30_000)).toBe(true);
    names.forEach((name, i) => {
      fleet
        .cluster(cluster)
        .kube.patch("Node", undefined, name, "merge", { spec: { podCIDR: `10.244.${i + 1}.0/24` } });
    });
    expect(await waitFor(() => ownedRoutes().length === 3, 30_000)).toBe(true);
    routes = ownedRoutes();
  });

  test.each([500, 403])(
    "HTTP %i: no snapshot reaches the hub, routes untouched, backoff logged; converges after healing",
    async (status) => {
      await stopAgent();
      proxy.setFaults([{ ...LIST_NODES, status }]);
      const since = Date.now();
      spawnAgent();
      // Three failed lists: with backoff (0.5 s, 1 s, 2 s, jittered) this is 1.75 s at least,
      // several route-controller periods.
      expect(await waitFor(() => proxy.count(LIST_NODES, since) >= 3, 20_000)).toBe(true);
      await waitFor(() => proxy.count(LIST_NODES, since) >= 4, 5_000);

      expect(snapshots.filter((s) => s.atMs >= since)).toEqual([]);
      expect(logged("caches synced")).toEqual([]);
      expect(ownedRoutes()).toEqual(routes);
      const retrying = logged("initial list of nodes");
      expect(retrying.length).toBeGreaterThanOrEqual(1);
      expect(retrying[0]?.msg).toMatch(/retrying with backoff/);
      expect(retrying[0]?.["status"]).toBe(status);
      // A summary, not a line per try.
      expect(retrying.length).toBeLessThan(proxy.count(LIST_NODES, since));
      // Backoff: the gaps between tries grow.
      const tries = proxy.requests.filter(
        (r) => r.atMs >= since && r.method === "GET" && r.path === "/api/v1/nodes" && !r.watch,
      );
      const gaps = tries.slice(1).map((r, i) => r.atMs - (tries[i]?.atMs ?? 0));
      expect(gaps[gaps.length - 1] ?? 0).toBeGreaterThan(gaps[0] ?? 0);

      proxy.clearFaults();
      expect(await waitFor(() => snapshots.some((s) => s.atMs >= since && s.nodes === 3), 40_000)).toBe(true);
      // The agent logs this before it sends the snapshot, but its stdout pipe may deliver the line
      // after the hub has the snapshot.
      await waitFor(() => logged("caches synced").length > 0, 5_000);
      expect(logged("caches synced")).toHaveLength(1);
      expect(logged("caches synced")[0]?.["nodes"]).toBe(3);
      expect(snapshots.filter((s) => s.atMs >= since && s.nodes !== 3)).toEqual([]);
      expect(ownedRoutes()).toEqual(routes);
    },
  );

  test("a failed relist after the first sync never looks like an empty list", async () => {
    await waitFor(() => logged("caches synced").length === 1, 30_000);
    const since = Date.now();
    // Every watch cut and answered 410 Gone, so the informer relists, and every LIST refused.
    proxy.setFaults([
      { ...LIST_NODES, status: 500 },
      { method: "GET", path: "/api/v1/nodes", watch: true, status: 410 },
    ]);
    await waitFor(() => proxy.count({ method: "GET", path: "/api/v1/nodes" }, since) >= 3, 20_000);
    // A new node meanwhile: the agent cannot see it; the old view stands.
    const added = Date.now();
    fleet.addNodes(cluster, 1);
    // The agent listed again (refused) since the node exists, and the hub synced routes since.
    expect(await waitFor(() => proxy.count(LIST_NODES, added) >= 1, 20_000)).toBe(true);
    const hub = fleet.hub;
    if (hub === undefined) throw new Error("no hub");
    expect(await waitForReconciles(hub, "route", 3)).toBe(true);
    expect(ownedRoutes()).toEqual(routes);
    expect(snapshots.filter((s) => s.atMs >= since && s.nodes < 3)).toEqual([]);
    expect(fleet.hub?.fleet.view(cluster)?.nodes.size).toBe(3);
    proxy.clearFaults();
    expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.nodes.size === 4, 40_000)).toBe(true);
    expect(await waitFor(() => fleet.progress().initialized === 4, 30_000)).toBe(true);
    expect(ownedRoutes()).toEqual(routes);
  });

  test("watches refused: restarts back off (each gap at least twice the last's floor) instead of retrying every 500 ms", async () => {
    await waitFor(() => logged("caches synced").length === 1, 30_000);
    const WATCH = { method: "GET", path: "/api/v1/nodes", watch: true } as const;
    // Before the faults: setting them cuts the open watch, which the agent may log at once.
    const since = Date.now();
    proxy.setFaults([{ ...WATCH, status: 500 }]);
    const tries = () => proxy.requests.filter((r) => r.atMs >= since && r.watch && r.path === WATCH.path);
    expect(await waitFor(() => tries().length >= 4, 30_000)).toBe(true);
    // 0.5 s doubling, jittered into [d/2, d]: after the first restart the gaps are at least 0.5 s,
    // 1 s, 2 s (about 6 s in all); a fixed 500 ms rate fails the second.
    const [t0 = 0, t1 = 0, t2 = 0, t3 = 0] = tries().map((r) => r.atMs);
    expect(t1 - t0).toBeGreaterThanOrEqual(500);
    expect(t2 - t1).toBeGreaterThanOrEqual(1000);
    expect(t3 - t2).toBeGreaterThanOrEqual(2000);
    expect(logged("watch of nodes", since).length).toBeGreaterThanOrEqual(1);
    expect(logged("watch of nodes", since).length).toBeLessThanOrEqual(2);
    proxy.clearFaults();
    fleet.addNodes(cluster, 1);
    expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.nodes.size === 5, 40_000)).toBe(true);
  });
});
