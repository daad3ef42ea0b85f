/**
 * A connection between an agent and the hub that goes silent without closing (a frozen process,
 * a dropped path: no FIN, no RST) is found by HTTP/2 pings, in either direction, long before the
 * heartbeats' deadline. The path runs through a TCP relay that can stop forwarding the
 * connections it holds while letting new ones through.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterEach, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
/** Heartbeats this far apart: three of them are far beyond every wait below. */
const HEARTBEAT_MS = 60_000;
const PING_MS = 300;

/** Forwards to `port`; `silence()` stops forwarding on every connection it holds, without closing any. */
class Relay {
  private readonly server: Server;
  private readonly pairs: [Socket, Socket][] = [];
  connections = 0;

  private constructor(port: number) {
    this.server = createServer((inbound) => {
      this.connections++;
      const outbound = createConnection({ host: "127.0.0.1", port });
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      const drop = () => {
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on("error", drop);
      outbound.on("error", drop);
      this.pairs.push([inbound, outbound]);
    });
  }

  static async start(port: number): Promise<{ relay: Relay; port: number }> {
    const relay = new Relay(port);
    await new Promise<void>((resolve) => relay.server.listen(0, "127.0.0.1", resolve));
    const address = relay.server.address();
    if (address === null || typeof address === "string") throw new Error("relay has no port");
    return { relay, port: address.port };
  }

  /** Bytes already sent stay unread in the kernel; no side sees the connection end. */
  silence(): void {
    for (const [a, b] of this.pairs.splice(0)) {
      a.unpipe(b);
      b.unpipe(a);
      a.pause();
      b.pause();
      this.silenced.push(a, b);
    }
  }

  private readonly silenced: Socket[] = [];

  async stop(): Promise<void> {
    for (const s of [...this.silenced, ...this.pairs.flat()]) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let f: LocalFleet | undefined;
let relay: Relay | undefined;

afterEach(async () => {
  await f?.stop();
  await relay?.stop();
  f = undefined;
  relay = undefined;
}, 30_000);

async function fleetThroughRelay(hubPingMs: number, agentPingMs: number) {
  f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    hubConfig: { reconcile: { heartbeatIntervalMs: HEARTBEAT_MS, pingIntervalMs: hubPingMs } },
  });
  await f.startHub();
  const started = await Relay.start(f.hubPort);
  relay = started.relay;
  const [cluster = ""] = [...f.clusters.keys()];
  await f.startAgent(cluster, started.port, agentPingMs);
  const fleet = f;
  expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.connected === true, 15_000)).toBe(true);
  return { fleet, relay: started.relay, cluster };
}

test("the hub's pings close a connection whose agent stopped answering, long before three heartbeats", async () => {
  const { fleet, relay, cluster } = await fleetThroughRelay(PING_MS, HEARTBEAT_MS);
  relay.silence();
  const silencedAt = Date.now();
  // One interval to the next ping, its timeout (one interval here), and the session's close.
  expect(await waitFor(() => fleet.hub?.fleet.view(cluster)?.connected === false, 5_000)).toBe(true);
  const ms = Date.now() - silencedAt;
  process.stdout.write(`keepalive: the hub closed the silent agent's stream after ${ms} ms\n`);
  expect(ms).toBeLessThan(3 * HEARTBEAT_MS);
  expect(await fleet.hub?.metrics.streamsConnected.get()).toMatchObject({ values: [{ value: 0 }] });
}, 30_000);

test("the agent's pings find a hub that stopped answering: it dials again and the cluster converges", async () => {
  const { fleet, relay, cluster } = await fleetThroughRelay(HEARTBEAT_MS, PING_MS);
  expect(relay.connections).toBe(1);
  relay.silence();
  const silencedAt = Date.now();
  expect(await waitFor(() => relay.connections >= 2, 5_000)).toBe(true);
  const ms = Date.now() - silencedAt;
  process.stdout.write(`keepalive: the agent left the silent connection after ${ms} ms\n`);
  // The new stream carries the cluster: a node registered now is initialized through it.
  const [name = ""] = fleet.addNodes(cluster, 1);
  const initialized = () =>
    fleet
      .nodes(cluster)
      .some((n) => n.metadata?.name === name && !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED));
  expect(await waitFor(initialized, 15_000)).toBe(true);
  expect(fleet.hub?.fleet.view(cluster)?.connected).toBe(true);
}, 30_000);
