/**
 * Nothing is destroyed because something is absent: an empty report (an agent whose lists
 * failed) keeps every route, the load balancer and its backends; a restarted hub keeps every
 * route, and a node deleted while the hub was away loses its route only after the confirmation
 * time; a node deleted normally loses its route and its backend at once; a Service deleted
 * normally loses its load balancer. The hub runs as its own process; the empty report comes
 * over real gRPC from a client speaking the agent's protocol.
 */
import type { ChildProcess } from "node:child_process";
import { HubClient, type HubMessage } from "@fleet-ccm/proto";
import { credentials, Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum, waitForReconciles } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const OWNER = "fleet-ccm.io/cluster";
const PERIOD_MS = 300;
const DELETE_AFTER_MS = 8000;

let fleet: LocalFleet;
let cluster: string;
let hub: ChildProcess;
let port: number;
let httpPort: number;
let names: string[];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  fleet = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    configureCloudRoutes: true,
    hubConfig: {
      routes: { periodMs: PERIOD_MS, maxConcurrentPerAccount: 4 },
      lifecycle: {
        deleteAfterChecks: 3,
        deleteAfterMs: DELETE_AFTER_MS,
        blastRadius: { maxPercent: 0, maxNodes: 1, windowMs: 600_000 },
      },
    },
  });
  cluster = [...fleet.clusters.keys()][0] ?? "";
  ({ child: hub, grpcPort: port, httpPort } = await fleet.spawnHubProcess());
  await fleet.startAgent(cluster, port);
  names = fleet.addNodes(cluster, 4);
  names.forEach((n, i) => {
    fleet.cluster(cluster).kube.patch("Node", undefined, n, "merge", {
      spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
    });
  });
  expect(await waitFor(() => ownedRoutes().length === 4, 30_000)).toBe(true);
  fleet.addServices(cluster, 1);
  expect(await waitFor(() => members().length === 4, 30_000)).toBe(true);
}, 60_000);

afterAll(async () => {
  await fleet?.stop();
});

function ownedRoutes(): string[] {
  return fleet.cloud
    .routes()
    .filter((r) => r.tags[OWNER] === cluster)
    .map((r) => r.destinationCidr)
    .sort();
}

/** Instance ids in the cluster's load balancer pools (one Service, one port: one pool). */
function members(): string[] {
  return fleet.cloud
    .pools()
    .filter((p) => p.tags[OWNER] === cluster)
    .flatMap((p) => [...p.members])
    .sort();
}

function instanceIds(nodeNames: string[]): string[] {
  return nodeNames
    .map((n) => fleet.cloud.listInstances().find((i) => i.name === n && i.state !== "terminated")?.id ?? "")
    .sort();
}

/** Speaks the agent's protocol: Hello, then a complete snapshot with nothing in it, then heartbeats. */
async function emptyReport(): Promise<() => void> {
  const client = new HubClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${fleet.cluster(cluster).token}`);
  const call = client.sync(md);
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    call.on("error", reject);
    call.on("data", (m: HubMessage) => {
      if (m.body?.$case !== "welcome") return;
      call.write({
        body: {
          $case: "snapshot",
          value: { snapshotId: 1, nodes: [], services: [], persistentVolumes: [], last: true, seq: 0 },
        },
      });
      timer = setInterval(
        () =>
          call.write({
            body: { $case: "heartbeat", value: { seq: 0, sentAt: new Date(), receivedGeneration: 0 } },
          }),
        1000,
      );
      resolve();
    });
    call.write({
      body: {
        $case: "hello",
        value: { cluster, agentVersion: "empty-lister", kubernetesVersion: "v1.31.0" },
      },
    });
  });
  return () => {
    clearInterval(timer);
    call.removeAllListeners("error");
    call.on("error", () => undefined);
    call.cancel();
    client.close();
  };
}

describe("route deletion needs positive evidence", () => {
  test("an agent reporting an empty, synced cluster deletes no route and drains no load balancer", async () => {
    const before = ownedRoutes();
    const backends = members();
    expect(backends).toEqual(instanceIds(names));
    await fleet.stopAgent(cluster);
    const src = { httpPort };
    const routeOps = () => metricSum(src, "fleet_ccm_route_operations_total");
    const opsBefore = await routeOps();
    const drops = () => metricSum(src, "fleet_ccm_snapshot_drops_total", { kind: "node" });
    const dropsBefore = await drops();
    const close = await emptyReport();
    try {
      // The hub took the empty snapshot (every node dropped from the report).
      expect(await waitFor(async () => (await drops()) >= dropsBefore + 4, 10_000)).toBe(true);
      // deleteAfterMs is a minimum time, so only a wait past it can show it holds; then many route syncs.
      await sleep(DELETE_AFTER_MS);
      expect(await waitForReconciles(src, "route", 10)).toBe(true);
      expect(await routeOps()).toBe(opsBefore);
      expect(ownedRoutes()).toEqual(before);
      expect(members()).toEqual(backends);
      expect(fleet.cloud.loadBalancers().filter((lb) => lb.tags[OWNER] === cluster)).toHaveLength(1);
    } finally {
      close();
    }
    const agent = await fleet.startAgent(cluster, port);
    expect(await waitFor(() => agent.connectedToHub, 10_000)).toBe(true);
    expect(await waitForReconciles(src, "route", 6)).toBe(true);
    expect(await routeOps()).toBe(opsBefore);
    expect(ownedRoutes()).toEqual(before);
    expect(members()).toEqual(backends);
  }, 40_000);

  test("hub restarted, a node deleted while it was down: that route is held, then removed; the rest stay", async () => {
    hub.kill("SIGKILL");
    await new Promise((r) => hub.once("exit", r));
    const gone = names[3] ?? "";
    fleet.cluster(cluster).kube.delete("Node", undefined, gone);
    ({ child: hub, httpPort } = await fleet.spawnHubProcess(port));
    const started = Date.now();
    expect(await waitFor(() => ownedRoutes().length === 3, DELETE_AFTER_MS + 20_000)).toBe(true);
    // Not from absence at once: only after consecutive checks over deleteAfterMs.
    expect(Date.now() - started).toBeGreaterThanOrEqual(DELETE_AFTER_MS);
    expect(ownedRoutes()).toEqual(["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"]);
  }, 60_000);

  test("a node deleted normally (the agent sees the deletion) loses its route and backend at once", async () => {
    // The restarted hub is serving the cluster (its view claims the remaining CIDRs).
    const started = Date.now();
    fleet.cluster(cluster).kube.delete("Node", undefined, names[2] ?? "");
    expect(await waitFor(() => ownedRoutes().length === 2, DELETE_AFTER_MS)).toBe(true);
    expect(Date.now() - started).toBeLessThan(DELETE_AFTER_MS);
    expect(ownedRoutes()).toEqual(["10.244.0.0/24", "10.244.1.0/24"]);
    expect(await waitFor(() => members().join() === instanceIds(names.slice(0, 2)).join(), 10_000)).toBe(
      true,
    );
  }, 30_000);

  test("a Service deleted normally loses its load balancer", async () => {
    fleet.cluster(cluster).kube.delete("Service", "default", "web-0000");
    expect(
      await waitFor(
        () => fleet.cloud.loadBalancers().filter((lb) => lb.tags[OWNER] === cluster).length === 0,
        20_000,
      ),
    ).toBe(true);
    expect(members()).toEqual([]);
  }, 30_000);
});
