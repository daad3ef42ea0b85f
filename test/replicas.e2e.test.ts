/**
 * Hub replicas sharing the fleet, end to end: real nats-server with JetStream (the leases), hub
 * replicas and agents as separate processes, the agents behind a TCP proxy standing for the
 * Kubernetes Service, the Kubernetes API simulator and the simulated cloud, which records which
 * replica made each call (User-Agent).
 */
import { afterEach, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum } from "./hub-metrics.js";
import { mutationsBy, ReplicaSet, TEST_REPLICAS } from "./replicas-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

let fleet: LocalFleet | undefined;
let set: ReplicaSet | undefined;
afterEach(async () => {
  await set?.stop();
  set = undefined;
  await fleet?.stop();
  fleet = undefined;
});

async function start(
  clusters: number,
  rate?: { perSecond: number; burst: number },
  replicas: Partial<typeof TEST_REPLICAS> = {},
): Promise<{ f: LocalFleet; s: ReplicaSet }> {
  fleet = await LocalFleet.start({
    clusters,
    nodesPerCluster: 0,
    logger,
    jetstream: true,
    hubConfig: { replicas: { ...TEST_REPLICAS, ...replicas } },
    ...(rate !== undefined && { rateLimitPerSecond: rate.perSecond, rateLimitBurst: rate.burst }),
  });
  set = await ReplicaSet.start(fleet);
  return { f: fleet, s: set };
}

function startAgents(f: LocalFleet, s: ReplicaSet): void {
  for (const c of f.clusters.keys()) f.spawnAgentProcess(c, { hubPort: s.service.port });
}

/** Every LoadBalancer Service has an ingress, and the cloud holds exactly one LB for each. */
function servicesDone(f: LocalFleet): boolean {
  const p = f.serviceProgress();
  return p.services > 0 && p.withIngress === p.services;
}

/** Adds `nodes` Nodes and `services` LoadBalancer Services to every cluster of the fleet. */
function addToEveryCluster(f: LocalFleet, nodes: number, services: number): void {
  for (const c of f.clusters.keys()) {
    f.addNodes(c, nodes);
    f.addServices(c, services);
  }
}

/** Waits for `nodes` initialized nodes in all, then for `services` Services with one load balancer each. */
async function convergedOn(
  f: LocalFleet,
  nodes: number,
  services: number,
  timeoutMs: number,
): Promise<boolean> {
  return (
    (await waitFor(() => f.progress().initialized === nodes, timeoutMs, 100)) &&
    (await waitFor(() => servicesDone(f) && f.serviceProgress().services === services, timeoutMs, 100))
  );
}

function assertCloudClean(f: LocalFleet, services: number): void {
  const audit = f.cloud.auditLoadBalancers();
  expect(audit.duplicates).toEqual([]);
  expect(audit.orphans).toEqual([]);
  const byUid = new Map<string, number>();
  for (const lb of f.cloud.loadBalancers()) {
    const uid = lb.tags["fleet-ccm.io/service-uid"] ?? "";
    byUid.set(uid, (byUid.get(uid) ?? 0) + 1);
  }
  expect(byUid.size).toBe(services);
  expect([...byUid.values()].every((n) => n === 1)).toBe(true);
}

describe("hub replicas", () => {
  test("three replicas, six clusters x 20 nodes and 12 Services; kill -9 one mid-run: its clusters move, everything converges, nothing duplicated", async () => {
    const { f, s } = await start(6);
    for (const id of ["hub-a", "hub-b", "hub-c"]) await s.add(id);
    startAgents(f, s);
    expect(await waitFor(async () => (await s.totalOwned()) === 6, 30_000, 200)).toBe(true);
    const clusters = [...f.clusters.keys()];
    addToEveryCluster(f, 10, 1);
    // Mid-run: some nodes initialized, the rest still coming.
    expect(await waitFor(() => f.progress().initialized >= 20, 60_000, 100)).toBe(true);
    const owned = await s.owned();
    const [victim] = [...owned].sort((x, y) => y[1] - x[1])[0] ?? ["", 0];
    expect(owned.get(victim) ?? 0).toBeGreaterThan(0);
    await s.kill(victim, "SIGKILL");
    const killedAt = Date.now();
    addToEveryCluster(f, 10, 1);
    // The survivors hold every cluster again: the failover.
    expect(await waitFor(async () => (await s.totalOwned()) === 6, 30_000, 100)).toBe(true);
    const failoverMs = Date.now() - killedAt;
    const allInitialized = await waitFor(() => f.progress().initialized === 120, 90_000, 200);
    if (!allInitialized) {
      const per = clusters.map(
        (c) =>
          `${c}: ${f.nodes(c).filter((n) => !(n.spec?.taints ?? []).some((t) => t.key.endsWith("uninitialized"))).length}/${f.nodes(c).length}`,
      );
      process.stdout.write(
        `not initialized: ${per.join(", ")}; owned ${JSON.stringify([...(await s.owned())])}\n${s.outputs()}\n`,
      );
    }
    expect(allInitialized).toBe(true);
    expect(await waitFor(() => servicesDone(f) && f.serviceProgress().services === 12, 90_000, 200)).toBe(
      true,
    );
    assertCloudClean(f, 12);
    // A dead process sends nothing: what the cloud logged after the kill was sent before it.
    expect(mutationsBy(f, victim, killedAt, true)).toEqual([]);
    // Survivors made the cloud calls after the kill, each with its own name.
    const survivors = [...s.replicas.keys()];
    expect(survivors).toHaveLength(2);
    expect(survivors.some((id) => mutationsBy(f, id, killedAt).length > 0)).toBe(true);
    let takenOver = 0;
    for (const r of s.replicas.values())
      takenOver += await metricSum(r, "fleet_ccm_hub_lease_transitions_total", { event: "taken-over" });
    expect(takenOver).toBeGreaterThanOrEqual(owned.get(victim) ?? 1);
    process.stdout.write(`replicas: failover of ${owned.get(victim)} clusters in ${failoverMs} ms\n`);
  }, 240_000);

  test("a replica cut off from NATS steps down within the TTL and acts no more; its clusters are owned again about a TTL after its last renewal", async () => {
    // A longer TTL than the other tests: a new owner counting a whole TTL from the agent's
    // arrival (at the old holder's fence) would take TTL - margin longer than the bound below.
    const ttl = { leaseTtlMs: 8000, marginMs: 1000 };
    const { f, s } = await start(3, undefined, ttl);
    await s.add("hub-a", { natsProxy: true });
    startAgents(f, s);
    expect(await waitFor(async () => (await s.owned()).get("hub-a") === 3, 30_000, 100)).toBe(true);
    await s.add("hub-b");
    const clusters = [...f.clusters.keys()];
    for (const c of clusters) f.addServices(c, 1);
    expect(await waitFor(() => servicesDone(f), 60_000, 100)).toBe(true);
    const a = s.replicas.get("hub-a");
    a?.natsProxy?.blackhole();
    const cutAt = Date.now();
    // New connections reach hub-b only, as the Service sends them once hub-a fails /readyz: the
    // bound below is then the new owner's wait, not the agents' backoff against hub-a's refusals.
    const b = s.replicas.get("hub-b");
    s.service.setTargets([`127.0.0.1:${b?.grpcPort}`]);
    // Fenced within TTL - margin of its last renewal (the renew interval earlier at worst).
    expect(
      await waitFor(
        async () => (await metricSum(a ?? { httpPort: 0 }, "fleet_ccm_hub_owned_clusters")) === 0,
        10_000,
        50,
      ),
    ).toBe(true);
    const fencedAfterMs = Date.now() - cutAt;
    expect(fencedAfterMs).toBeLessThan(ttl.leaseTtlMs);
    const moved = await waitFor(async () => (await s.owned()).get("hub-b") === 3, 30_000, 100);
    const ownedAgainMs = Date.now() - cutAt;
    if (!moved) process.stdout.write(`${JSON.stringify([...(await s.owned())])}\n${s.outputs()}\n`);
    expect(moved).toBe(true);
    process.stdout.write(
      `replicas: NATS cut: fenced after ${fencedAfterMs} ms, owned again after ${ownedAgainMs} ms (TTL ${ttl.leaseTtlMs} ms)\n`,
    );
    // hub-b saw hub-a's last renewal (before the cut) on its watch of the leases: it takes the
    // clusters a TTL after that, not a TTL after their agents reached it.
    expect(ownedAgainMs).toBeLessThan(ttl.leaseTtlMs + 3000);
    // New work after the cut is done by hub-b only.
    addToEveryCluster(f, 5, 1);
    expect(await convergedOn(f, 15, 6, 60_000)).toBe(true);
    // Nothing from hub-a reached the cloud once anyone else could hold its leases.
    // Nothing the cloud acted on after hub-a's fence, and nothing at all once another replica may act.
    expect(mutationsBy(f, "hub-a", cutAt + ttl.leaseTtlMs - ttl.marginMs, true)).toEqual([]);
    expect(mutationsBy(f, "hub-a", cutAt + ttl.leaseTtlMs)).toEqual([]);
    expect(mutationsBy(f, "hub-b", cutAt).length).toBeGreaterThan(0);
    expect(await metricSum(a ?? { httpPort: 0 }, "fleet_ccm_hub_lease_renew_failures_total")).toBeGreaterThan(
      0,
    );
    const ready = await fetch(`http://127.0.0.1:${a?.httpPort}/readyz`);
    expect(ready.status).toBe(503);
    assertCloudClean(f, 6);
  }, 180_000);

  test("a replica frozen (SIGSTOP) for 20 s: its agents leave it within a few hub heartbeats, the others serve its clusters about a TTL after its last renewal; thawed, it acts no more and counts its leases as lost, not released", async () => {
    const { f, s } = await start(3);
    await s.add("hub-a");
    startAgents(f, s);
    expect(await waitFor(async () => (await s.owned()).get("hub-a") === 3, 30_000, 100)).toBe(true);
    const others = ["hub-b", "hub-c"];
    for (const id of others) await s.add(id);
    addToEveryCluster(f, 2, 1);
    expect(await convergedOn(f, 6, 3, 60_000)).toBe(true);
    const a = s.replicas.get("hub-a") ?? { httpPort: 0 };
    const FROZEN_MS = 20_000;
    s.freeze("hub-a", true);
    const frozenAt = Date.now();
    // hub-a's TCP connections stay open: only the hub's silence on the streams tells the agents.
    const taken = await waitFor(async () => (await s.ownedBy(others)) === 3, FROZEN_MS - 2000, 100);
    const takenMs = Date.now() - frozenAt;
    if (!taken) process.stdout.write(`${JSON.stringify([...(await s.owned(others))])}\n${s.outputs()}\n`);
    expect(taken).toBe(true);
    process.stdout.write(`replicas: frozen replica's 3 clusters owned by the others after ${takenMs} ms\n`);
    expect(takenMs).toBeLessThanOrEqual(2 * TEST_REPLICAS.leaseTtlMs);
    // Served while hub-a is still frozen: new nodes are initialized.
    for (const c of f.clusters.keys()) f.addNodes(c, 1);
    expect(
      await waitFor(() => f.progress().initialized === 9, FROZEN_MS - (Date.now() - frozenAt), 100),
    ).toBe(true);
    await new Promise((r) => setTimeout(r, Math.max(0, frozenAt + FROZEN_MS - Date.now())));
    s.freeze("hub-a", false);
    // Thawed: it fenced itself (its renewals were too late) or found its leases taken, and says so.
    const lost = (reason: string) =>
      metricSum(a, "fleet_ccm_hub_lease_transitions_total", { event: "lost", reason });
    expect(
      await waitFor(async () => (await lost("renew-failed")) + (await lost("taken")) >= 3, 10_000, 100),
    ).toBe(true);
    expect(await lost("released")).toBe(0);
    expect(await metricSum(a, "fleet_ccm_hub_owned_clusters")).toBe(0);
    addToEveryCluster(f, 1, 1);
    expect(await convergedOn(f, 12, 6, 60_000)).toBe(true);
    expect(await s.ownedBy(others)).toBe(3);
    // No double action: nothing from hub-a reached the cloud after the freeze (it was idle then).
    expect(mutationsBy(f, "hub-a", frozenAt + 1000)).toEqual([]);
    expect(others.some((id) => mutationsBy(f, id, frozenAt).length > 0)).toBe(true);
    assertCloudClean(f, 6);
  }, 180_000);

  test("an agent's stream moves while its replica lives and still sees the old stream: the lease is handed over at its holder's next renewal, no TTL waited out", async () => {
    const { f, s } = await start(2);
    const a = await s.add("hub-a");
    startAgents(f, s);
    expect(await waitFor(async () => (await s.owned()).get("hub-a") === 2, 30_000, 100)).toBe(true);
    const b = await s.add("hub-b");
    // New connections reach hub-b only; hub-a keeps its old connections open and silent, so it
    // never sees its streams end (nor does it ping idle agents), and renews its leases on.
    s.service.setTargets([`127.0.0.1:${b.grpcPort}`]);
    const movedAt = Date.now();
    s.service.forgetClients();
    const moved = await waitFor(
      async () => {
        const owned = await s.owned();
        return owned.get("hub-b") === 2 && owned.get("hub-a") === 0;
      },
      20_000,
      50,
    );
    const handoverMs = Date.now() - movedAt;
    if (!moved) process.stdout.write(`${JSON.stringify([...(await s.owned())])}\n${s.outputs()}\n`);
    expect(moved).toBe(true);
    process.stdout.write(`replicas: live-owner handover of 2 clusters in ${handoverMs} ms\n`);
    expect(a.child.exitCode).toBeNull();
    // hub-a gave both up because hub-b asked (handover), not because it was fenced or its
    // streams ended; hub-b then took the freed leases.
    expect(
      await metricSum(a, "fleet_ccm_hub_lease_transitions_total", { event: "lost", reason: "handover" }),
    ).toBe(2);
    expect(
      await metricSum(a, "fleet_ccm_hub_lease_transitions_total", { event: "lost", reason: "renew-failed" }),
    ).toBe(0);
    expect(await metricSum(b, "fleet_ccm_hub_lease_transitions_total", { event: "acquired" })).toBe(2);
    // hub-b acts from now on, hub-a not at all.
    addToEveryCluster(f, 3, 1);
    expect(await convergedOn(f, 6, 2, 60_000)).toBe(true);
    expect(mutationsBy(f, "hub-a", movedAt + handoverMs)).toEqual([]);
    expect(mutationsBy(f, "hub-b", movedAt).length).toBeGreaterThan(0);
    assertCloudClean(f, 2);
  }, 120_000);

  test("rolling restart of every replica (SIGTERM): leases handed over at once, no cluster unowned for long", async () => {
    const { f, s } = await start(3);
    for (const id of ["hub-a", "hub-b", "hub-c"]) await s.add(id);
    startAgents(f, s);
    expect(await waitFor(async () => (await s.totalOwned()) === 3, 30_000, 100)).toBe(true);
    const clusters = [...f.clusters.keys()];
    let nodes = 0;
    const gaps: number[] = [];
    for (const [old, next] of [
      ["hub-a", "hub-a2"],
      ["hub-b", "hub-b2"],
      ["hub-c", "hub-c2"],
    ] as const) {
      await s.add(next);
      const moved = (await s.owned()).get(old) ?? 0;
      const t0 = Date.now();
      await s.kill(old, "SIGTERM");
      expect(await waitFor(async () => (await s.totalOwned()) === 3, 15_000, 50)).toBe(true);
      gaps.push(moved > 0 ? Date.now() - t0 : 0);
      for (const c of clusters) f.addNodes(c, 2);
      nodes += 2 * clusters.length;
      expect(await waitFor(() => f.progress().initialized === nodes, 30_000, 100)).toBe(true);
    }
    // Each handover: SIGTERM, leases freed, agents reconnected and their leases taken.
    for (const g of gaps) expect(g).toBeLessThan(5000);
    let expired = 0;
    for (const r of s.replicas.values())
      expired += await metricSum(r, "fleet_ccm_hub_lease_transitions_total", { event: "taken-over" });
    expect(expired).toBe(0);
    process.stdout.write(`replicas: rolling restart handovers ${gaps.join(", ")} ms\n`);
  }, 180_000);

  test("the account's rate limit holds across replicas: the cloud, limiting at the same rate, never throttles them", async () => {
    const limit = { perSecond: 15, burst: 15 };
    const { f, s } = await start(3, limit);
    // The cloud enforces the account's rate itself: any excess is a 429 in its log.
    f.cloud.setAccountRateLimit("sim-main", limit.perSecond, limit.burst);
    for (const id of ["hub-a", "hub-b", "hub-c"]) await s.add(id);
    startAgents(f, s);
    expect(await waitFor(async () => (await s.totalOwned()) === 3, 30_000, 100)).toBe(true);
    const from = Date.now();
    addToEveryCluster(f, 10, 3);
    expect(await convergedOn(f, 30, 9, 120_000)).toBe(true);
    const calls = f.cloud.requests().filter((r) => r.atMs >= from);
    const byReplica = ["hub-a", "hub-b", "hub-c"].map(
      (id) => calls.filter((r) => (r.userAgent ?? "").includes(`replica/${id}`)).length,
    );
    // Every replica worked (each holds one cluster), and none was ever throttled.
    expect(byReplica.every((n) => n > 0)).toBe(true);
    expect(calls.filter((r) => r.outcome === "429")).toEqual([]);
    // The busiest second stays within the account's rate plus its burst.
    const perSecond = new Map<number, number>();
    for (const r of calls)
      perSecond.set(Math.floor(r.atMs / 1000), (perSecond.get(Math.floor(r.atMs / 1000)) ?? 0) + 1);
    const peak = Math.max(...perSecond.values());
    expect(peak).toBeLessThanOrEqual(limit.perSecond + limit.burst);
    process.stdout.write(
      `replicas: ${calls.length} cloud calls (${byReplica.join("/")} by replica), peak ${peak}/s, limit ${limit.perSecond}/s burst ${limit.burst}, 429s 0\n`,
    );
  }, 180_000);

  test("a three-node NATS cluster loses a node mid-run: the leases (3 JetStream replicas) survive, nothing is lost, everything converges", async () => {
    fleet = await LocalFleet.start({
      clusters: 3,
      nodesPerCluster: 0,
      logger,
      natsCluster: true,
      hubConfig: { replicas: { ...TEST_REPLICAS, streamReplicas: 3 } },
    });
    const f = fleet;
    set = await ReplicaSet.start(f);
    const s = set;
    for (const id of ["hub-a", "hub-b", "hub-c"]) await s.add(id);
    startAgents(f, s);
    expect(await waitFor(async () => (await s.totalOwned()) === 3, 60_000, 200)).toBe(true);
    addToEveryCluster(f, 5, 1);
    expect(await waitFor(() => f.progress().initialized >= 5, 60_000, 100)).toBe(true);
    f.natsCluster?.kill(0);
    addToEveryCluster(f, 5, 1);
    const converged = await waitFor(
      () => f.progress().initialized === 30 && servicesDone(f) && f.serviceProgress().services === 6,
      120_000,
      200,
    );
    if (!converged) process.stdout.write(`${JSON.stringify(f.progress())}\n${s.outputs()}\n`);
    expect(converged).toBe(true);
    expect(await waitFor(async () => (await s.totalOwned()) === 3, 30_000, 200)).toBe(true);
    assertCloudClean(f, 6);
  }, 240_000);
});
