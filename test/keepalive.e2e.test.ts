/**
 * A connection between an agent and the hub that goes silent without closing (a frozen process,
 * a dropped path: no FIN, no RST) is found by HTTP/2 pings, in either direction, long before the
 * heartbeats' deadline. The path runs through the project's TCP proxy, whose blackhole keeps
 * every connection open while nothing passes.
 */
import { startTcpProxy, type TcpProxy } from "@fleet-ccm/sim";
import { afterEach, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
/** Heartbeats this far apart: three of them are far beyond every wait below. */
const HEARTBEAT_MS = 60_000;
const PING_MS = 300;

let f: LocalFleet | undefined;
let proxy: TcpProxy | undefined;

afterEach(async () => {
  await f?.stop();
  await proxy?.close();
  f = undefined;
  proxy = undefined;
}, 30_000);

async function fleetThroughProxy(hubPingMs: number, agentPingMs: number) {
  f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    hubConfig: { reconcile: { heartbeatIntervalMs: HEARTBEAT_MS, pingIntervalMs: hubPingMs } },
  });
  await f.startHub();
  const hub = `127.0.0.1:${f.hubPort}`;
  proxy = await startTcpProxy({ targets: [hub] });
  const [cluster = ""] = [...f.clusters.keys()];
  await f.startAgent(cluster, proxy.port, agentPingMs);
  const fleet = f;
  expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.connected === true, 15_000)).toBe(true);
  const through = proxy;
  return { fleet, proxy: through, cluster, connections: () => through.connections.get(hub) ?? 0 };
}

test("the hub's pings close a connection whose agent stopped answering, long before three heartbeats", async () => {
  const { fleet, proxy, cluster } = await fleetThroughProxy(PING_MS, HEARTBEAT_MS);
  proxy.blackhole();
  const silencedAt = Date.now();
  // One interval to the next ping, its timeout (one interval here), and the session's close.
  expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.connected === false, 5_000)).toBe(true);
  const ms = Date.now() - silencedAt;
  process.stdout.write(`keepalive: the hub closed the silent agent's stream after ${ms} ms\n`);
  expect(ms).toBeLessThan(3 * HEARTBEAT_MS);
  expect(await fleet.hub?.metrics.streamsConnected.get()).toMatchObject({ values: [{ value: 0 }] });
}, 30_000);

test("the agent's pings find a hub that stopped answering: it dials again and the cluster converges", async () => {
  const { fleet, proxy, cluster, connections } = await fleetThroughProxy(HEARTBEAT_MS, PING_MS);
  expect(connections()).toBe(1);
  proxy.blackhole();
  const silencedAt = Date.now();
  expect(await waitFor(() => connections() >= 2, 5_000)).toBe(true);
  const ms = Date.now() - silencedAt;
  process.stdout.write(`keepalive: the agent left the silent connection after ${ms} ms\n`);
  // The path works again; the agent has closed the connection it gave up on.
  proxy.restore();
  // The new stream carries the cluster: a node registered now is initialized through it.
  const [name = ""] = fleet.addNodes(cluster, 1);
  const initialized = () =>
    fleet
      .nodes(cluster)
      .some((n) => n.metadata?.name === name && !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED));
  expect(await waitFor(initialized, 15_000)).toBe(true);
  expect(fleet.hub?.fleet.view(cluster)?.connected).toBe(true);
}, 30_000);
