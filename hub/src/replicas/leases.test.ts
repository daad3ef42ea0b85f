import { fleetNatsUsers, type NatsServer, startNatsServer, startTcpProxy, waitFor } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import pino from "pino";
import { DEFAULT_LEASE_BUCKET } from "../config/schema.js";
import { createNatsAuth, natsServerAuthConfig } from "../nats/decentralized.js";
import { KvLeaseStore } from "./lease-store.js";
import { ClusterLeases, type LossReason } from "./leases.js";

const PASSWORD = "hub-password-for-leases";
const logger = pino({ level: "silent" });
const SETTINGS = {
  ttlMs: 2000,
  marginMs: 500,
  renewIntervalMs: 400,
  pollIntervalMs: 100,
  deletionWindowMs: 600_000,
};
/** How late a waitFor may notice a change on a loaded machine. */
const SLACK_MS = 250;
let nats: NatsServer;
let bucketSeq = 0;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  nats = await startNatsServer({ users: fleetNatsUsers(PASSWORD, []), jetstream: true });
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await nats.stop();
});

interface Replica {
  readonly leases: ClusterLeases;
  readonly acquired: { cluster: string; from: string | undefined; atMs: number }[];
  readonly lost: { cluster: string; reason: LossReason; atMs: number }[];
  readonly store: KvLeaseStore;
}

function replica(id: string, bucket: string, servers = [nats.url], requestTimeoutMs = 300): Replica {
  const store = new KvLeaseStore({
    nats: { servers, user: "hub", password: PASSWORD },
    bucket,
    streamReplicas: 1,
    requestTimeoutMs,
    replicaId: id,
    logger,
  });
  store.start();
  const acquired: Replica["acquired"] = [];
  const lost: Replica["lost"] = [];
  const leases = new ClusterLeases(
    { replicaId: id, ...SETTINGS },
    {
      store,
      logger,
      events: {
        onAcquired: (cluster, from) => acquired.push({ cluster, from, atMs: performance.now() }),
        onLost: (cluster, reason) => lost.push({ cluster, reason, atMs: performance.now() }),
      },
    },
  );
  cleanups.push(async () => {
    leases.stop();
    await store.close();
  });
  return { leases, acquired, lost, store };
}

function bucket(): string {
  return `leases-test-${++bucketSeq}`;
}

/** Samples every few ms that no two replicas hold the cluster at once. */
function watchExclusive(cluster: string, replicas: readonly Replica[]): { stop: () => number } {
  let overlaps = 0;
  const t = setInterval(() => {
    if (replicas.filter((r) => r.leases.holds(cluster)).length > 1) overlaps++;
  }, 2);
  return {
    stop: () => {
      clearInterval(t);
      return overlaps;
    },
  };
}

test("a free lease is taken at once by exactly one of two replicas racing for it (compare-and-set)", async () => {
  const b = bucket();
  const [a, c] = [replica("a", b), replica("c", b)];
  const ex = watchExclusive("cl-1", [a, c]);
  a.leases.want("cl-1");
  c.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1") || c.leases.holds("cl-1"), 5000)).toBe(true);
  await new Promise((r) => setTimeout(r, 600));
  expect([a, c].filter((r) => r.leases.holds("cl-1"))).toHaveLength(1);
  expect(ex.stop()).toBe(0);
});

test("a released lease is free at once: the next replica takes it without waiting", async () => {
  const b = bucket();
  const [a, c] = [replica("a", b), replica("c", b)];
  a.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1"), 5000)).toBe(true);
  await a.leases.unwant("cl-1");
  expect(a.leases.holds("cl-1")).toBe(false);
  expect(a.lost.map((l) => l.reason)).toEqual(["released"]);
  const released = performance.now();
  c.leases.want("cl-1");
  expect(await waitFor(() => c.leases.holds("cl-1"), 3000, 5)).toBe(true);
  expect(performance.now() - released).toBeLessThan(SETTINGS.ttlMs);
  expect(c.acquired[0]?.from).toBeUndefined();
});

test("a live holder hands the lease over when another replica asks, without a TTL wait", async () => {
  const b = bucket();
  const [a, c] = [replica("a", b), replica("c", b)];
  const ex = watchExclusive("cl-1", [a, c]);
  a.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1"), 5000)).toBe(true);
  const asked = performance.now();
  c.leases.want("cl-1");
  expect(await waitFor(() => c.leases.holds("cl-1"), 5000, 5)).toBe(true);
  // Handed over at the holder's next renewal, not after a TTL (generous bound: CI shares its cores).
  expect(performance.now() - asked).toBeLessThan(SETTINGS.ttlMs * 2);
  expect(a.lost.map((l) => l.reason)).toEqual(["handover"]);
  expect(a.leases.holds("cl-1")).toBe(false);
  expect(ex.stop()).toBe(0);
});

test("a crashed holder's lease is taken over only after a whole TTL unchanged, and the deletions it recorded carry over", async () => {
  const b = bucket();
  const a = replica("a", b);
  a.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1"), 5000)).toBe(true);
  expect(await a.leases.recordDeletions("cl-1", 2)).toBe(true);
  // Crash: no release, no more renewals.
  a.leases.stop();
  const crashed = performance.now();
  const c = replica("c", b);
  c.leases.want("cl-1");
  expect(await waitFor(() => c.leases.holds("cl-1"), 8000, 5)).toBe(true);
  const waited = performance.now() - crashed;
  expect(waited).toBeGreaterThanOrEqual(SETTINGS.ttlMs);
  expect(waited).toBeLessThan(SETTINGS.ttlMs + 2000);
  expect(c.acquired[0]?.from).toBe("a");
  expect(c.leases.recordedDeletions("cl-1")).toHaveLength(2);
});

test("a replica watching the bucket takes a crashed holder's lease a TTL after the last renewal it saw, though the agent reached it later", async () => {
  const b = bucket();
  const [a, c] = [replica("a", b), replica("c", b)];
  a.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1"), 5000)).toBe(true);
  await new Promise((r) => setTimeout(r, 2 * SETTINGS.renewIntervalMs));
  a.leases.stop();
  const crashed = performance.now();
  // The agent reaches c most of a TTL later (after its own deadline on the dead stream).
  await new Promise((r) => setTimeout(r, SETTINGS.ttlMs - 500));
  c.leases.want("cl-1");
  expect(await waitFor(() => c.leases.holds("cl-1"), 8000, 5)).toBe(true);
  const waited = performance.now() - crashed;
  // a's last renewal was at most one renew interval before the crash; c saw it on its watch.
  expect(waited).toBeGreaterThanOrEqual(SETTINGS.ttlMs - SETTINGS.renewIntervalMs);
  expect(waited).toBeLessThan(SETTINGS.ttlMs + 1000);
  expect(c.acquired[0]?.from).toBe("a");
});

test("a holder cut off from NATS stops acting at TTL minus margin, before anyone may take over", async () => {
  const b = bucket();
  const proxy = await startTcpProxy({ targets: [`127.0.0.1:${nats.port}`] });
  cleanups.push(() => proxy.close());
  const a = replica("a", b, [`nats://${proxy.address}`]);
  const c = replica("c", b);
  a.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1"), 5000)).toBe(true);
  c.leases.want("cl-1");
  // c asks for a handover; a hands over before the partition if it sees it: so partition now.
  proxy.blackhole();
  const cut = performance.now();
  expect(await waitFor(() => !a.leases.holds("cl-1"), 5000, 5)).toBe(true);
  const fencedAfter = performance.now() - cut;
  expect(fencedAfter).toBeLessThanOrEqual(SETTINGS.ttlMs - SETTINGS.marginMs + SLACK_MS);
  expect(await waitFor(() => c.leases.holds("cl-1"), 8000, 5)).toBe(true);
  expect(await waitFor(() => a.lost.length > 0, 1000, 5)).toBe(true);
  const aLost = a.lost[0];
  const cGot = c.acquired[0];
  expect(aLost?.reason === "renew-failed" || aLost?.reason === "handover").toBe(true);
  // The holder had stopped before the other replica acted.
  expect(aLost?.atMs ?? Infinity).toBeLessThan(cGot?.atMs ?? 0);
  expect(a.leases.holds("cl-1")).toBe(false);
  proxy.restore();
});

test("renewals that fail (NATS gone) fence the lease at TTL minus margin after the last renewal sent", async () => {
  const b = bucket();
  const proxy = await startTcpProxy({ targets: [`127.0.0.1:${nats.port}`] });
  cleanups.push(() => proxy.close());
  const a = replica("a", b, [`nats://${proxy.address}`]);
  a.leases.want("cl-1");
  expect(await waitFor(() => a.leases.holds("cl-1"), 5000)).toBe(true);
  proxy.cut();
  const cut = performance.now();
  expect(await waitFor(() => !a.leases.holds("cl-1"), 5000, 5)).toBe(true);
  expect(performance.now() - cut).toBeLessThanOrEqual(SETTINGS.ttlMs - SETTINGS.marginMs + SLACK_MS);
  // holds() says no at the deadline itself; the event follows on the fence timer.
  expect(await waitFor(() => a.lost.length > 0, 1000, 5)).toBe(true);
  expect(a.lost.map((l) => l.reason)).toEqual(["renew-failed"]);
  expect(a.store.problem()).not.toBeNull();
  // Back on NATS, nobody else took it: the same replica gets it again.
  proxy.restore();
  expect(await waitFor(() => a.leases.holds("cl-1"), 10_000, 20)).toBe(true);
});

test("a NATS without JetStream, or a hub user without the lease permissions, is named in the problem (readiness)", async () => {
  const plain = await startNatsServer({ users: fleetNatsUsers(PASSWORD, []) });
  cleanups.push(() => plain.stop());
  const noJs = replica("a", bucket(), [plain.url]);
  expect(await waitFor(() => /JetStream is not enabled/.test(noJs.store.problem() ?? ""), 10_000)).toBe(true);
  const narrow = await startNatsServer({
    users: [{ user: "hub", password: PASSWORD, publish: ["fleet.v1.>"], subscribe: ["_INBOX_hub.>"] }],
    jetstream: true,
  });
  cleanups.push(() => narrow.stop());
  const denied = replica("a", bucket(), [narrow.url]);
  expect(
    await waitFor(
      () => /must also be allowed to publish \$JS\.API\.>/.test(denied.store.problem() ?? ""),
      10_000,
    ),
  ).toBe(true);
  expect(noJs.leases.holds("cl-1")).toBe(false);
});

test("under nats-init's decentralized auth the hub's credential can keep leases (JetStream on in the fleet account, KV allowed)", async () => {
  const setup = await createNatsAuth();
  const secured = await startNatsServer({
    users: [],
    authConfig: natsServerAuthConfig(setup, "{dir}/jwt"),
    jetstream: true,
  });
  cleanups.push(() => secured.stop());
  const store = new KvLeaseStore({
    nats: { servers: [secured.url], creds: setup.hubCreds },
    bucket: DEFAULT_LEASE_BUCKET,
    streamReplicas: 1,
    requestTimeoutMs: 2000,
    replicaId: "hub-jwt",
    logger,
  });
  store.start();
  const leases = new ClusterLeases(
    { replicaId: "hub-jwt", ...SETTINGS },
    { store, logger, events: { onAcquired: () => {}, onLost: () => {} } },
  );
  cleanups.push(async () => {
    leases.stop();
    await store.close();
  });
  leases.want("c1");
  expect(await waitFor(() => leases.holds("c1"), 10_000)).toBe(true);
});
