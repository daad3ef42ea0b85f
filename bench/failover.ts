// failover: hub replicas sharing the fleet by leases (default replicas settings), agents behind a
// TCP proxy standing for the Kubernetes Service. Once the fleet has converged, the replica
// holding the most clusters is killed with SIGKILL. Measured: the time from the kill until the
// survivors hold every cluster again, and until a node joining each affected cluster right after
// the kill is initialized (its agent streams to the new owner, which published its first
// patch). The simulated cloud enforces the account's rate limit itself: every 429 it answered
// means the replicas together went over it.

import { startTcpProxy, type TcpProxy } from "@fleet-ccm/sim";
import type { BenchFleet } from "./fleet.js";
import { ACCOUNT, HubProcess } from "./hub-process.js";
import type { NodeRef } from "./protocol.js";
import {
  type BenchOptions,
  fleetFor,
  header,
  hubBase,
  onFleet,
  type Result,
  serviceRefs,
} from "./scenarios.js";
import { metricSum, percentile, round, until } from "./util.js";

const REPLICAS = 3;

async function owned(hub: HubProcess): Promise<number> {
  try {
    return metricSum(await hub.metrics(), "fleet_ccm_hub_owned_clusters");
  } catch {
    return 0;
  }
}

async function totalOwned(hubs: readonly HubProcess[]): Promise<number> {
  return (await Promise.all(hubs.map(owned))).reduce((a, b) => a + b, 0);
}

/** Clusters whose agent streams to this replica. */
async function streamingTo(hub: HubProcess, names: readonly string[]): Promise<string[]> {
  const m = await hub.metrics();
  return names.filter((c) => metricSum(m, "fleet_ccm_cluster_agent_connected", `cluster="${c}"`) > 0);
}

/** The busiest second of cloud calls since `from`, and the 429s among them. */
function cloudRate(fleet: BenchFleet, from: number): { peakPerSecond: number; throttled: number } {
  const calls = fleet.cloud?.requests({ account: ACCOUNT }).filter((r) => r.atMs >= from) ?? [];
  const perSecond = new Map<number, number>();
  for (const r of calls) {
    const s = Math.floor(r.atMs / 1000);
    perSecond.set(s, (perSecond.get(s) ?? 0) + 1);
  }
  return {
    peakPerSecond: Math.max(0, ...perSecond.values()),
    throttled: calls.filter((r) => r.outcome === "429").length,
  };
}

export async function runFailover(o: BenchOptions): Promise<Result> {
  const fleet = fleetFor(o, o.services > 0, true);
  const hubs: HubProcess[] = [];
  let service: TcpProxy | undefined;
  return onFleet(o, fleet, async () => {
    try {
      return await measure(o, fleet, hubs, (s) => {
        service = s;
      });
    } finally {
      await Promise.all(hubs.map((h) => h.stop()));
      await service?.close();
    }
  });
}

async function measure(
  o: BenchOptions,
  fleet: BenchFleet,
  hubs: HubProcess[],
  keep: (s: TcpProxy) => void,
): Promise<Result> {
  o.log(`starting nats-server (JetStream), the simulated cloud and ${o.clusters} simulated API servers…`);
  await fleet.start();
  // The cloud throttles at the account's configured rate: the replicas must share it.
  const burst = Math.max(1, Math.round(o.rateLimitPerSecond));
  fleet.cloud?.setAccountRateLimit(ACCOUNT, o.rateLimitPerSecond, burst);
  const service = await startTcpProxy({ targets: [] });
  keep(service);
  for (let i = 0; i < REPLICAS; i++) {
    const settings = fleet.hubSettings({
      ...hubBase(o),
      replicas: {},
      replicaId: `hub-${i}`,
    });
    hubs.push(await HubProcess.start(settings, `replica-${i}`));
  }
  service.setTargets(hubs.map((h) => h.address));
  o.log(`${REPLICAS} hub replicas behind ${service.address}; starting ${o.clusters} agents…`);
  await fleet.startAgents(service.address);
  if (!(await until(async () => (await totalOwned(hubs)) >= o.clusters, 120_000, 250)))
    throw new Error("the replicas did not take every cluster within 120 s");
  const start = Date.now();
  const refs: NodeRef[] = [];
  for (const c of fleet.names) refs.push(...fleet.addMachines(c, o.nodes));
  const services = o.services > 0 ? fleet.upsertServices(serviceRefs(fleet, o.services)) : undefined;
  await fleet.createNodes(refs);
  await services;
  const converged = await until(
    () =>
      fleet.observer.initializedCount() >= refs.length &&
      fleet.observer.servicesReady() >= o.services * o.clusters,
    o.timeoutS * 1000,
    100,
  );
  if (!converged) throw new Error("the fleet did not converge before the kill");
  const joinRate = cloudRate(fleet, start);
  const perReplica = await Promise.all(hubs.map(owned));
  const victimIndex = perReplica.indexOf(Math.max(...perReplica));
  const victim = hubs[victimIndex] as HubProcess;
  const affected = await streamingTo(victim, fleet.names);
  const survivors = hubs.filter((h) => h !== victim);
  o.log(`kill -9 of hub-${victimIndex}, holding ${affected.length} clusters…`);
  const exited = new Promise((r) => victim.child.once("exit", r));
  const killedAt = Date.now();
  victim.child.kill("SIGKILL");
  await exited;
  service.setTargets(survivors.map((h) => h.address));
  // One node joins each affected cluster at once: initialized only once its new owner acts.
  const probes = affected.flatMap((c) => fleet.addMachines(c, 1));
  await fleet.createNodes(probes);
  let ownedAgainMs: number | null = null;
  const ownedAgain = until(
    async () => {
      if ((await totalOwned(survivors)) < o.clusters) return false;
      ownedAgainMs = Date.now() - killedAt;
      return true;
    },
    120_000,
    100,
  );
  const initialized = (r: NodeRef) => fleet.observer.clusters.get(r.cluster)?.initializedAt.get(r.name);
  const probesDone = await until(() => probes.every((r) => initialized(r) !== undefined), 120_000, 50);
  await ownedAgain;
  const failover = probes.map((r) => (initialized(r) ?? Number.NaN) - killedAt).filter(Number.isFinite);
  // What the takeover cost the cloud: the new owners' calls until the cloud has been quiet 3 s.
  const callsSince = () =>
    fleet.cloud?.requests({ account: ACCOUNT }).filter((r) => r.atMs >= killedAt) ?? [];
  await until(() => (callsSince().at(-1)?.atMs ?? 0) < Date.now() - 3000, 60_000, 250);
  const takeoverCalls = callsSince();
  const takeoverServices = affected.length * o.services;
  const afterRate = cloudRate(fleet, killedAt);
  const audit = fleet.cloud?.auditLoadBalancers({ account: ACCOUNT });
  return {
    ...header(o, fleet),
    replicas: REPLICAS,
    leaseSettings: "defaults (leaseTtlMs 10000, marginMs 2000, renewIntervalMs 2500)",
    converged: probesDone,
    clustersPerReplicaBeforeKill: perReplica,
    clustersFailedOver: affected.length,
    ownedAgainMs,
    failoverFirstPatchP50Ms: round(percentile(failover, 50)),
    failoverFirstPatchMaxMs: failover.length === 0 ? null : Math.max(...failover),
    cloudPeakCallsPerSecondJoin: joinRate.peakPerSecond,
    cloudThrottledJoin: joinRate.throttled,
    takeoverCloudCalls: takeoverCalls.length,
    takeoverCloudCallsPerService:
      takeoverServices === 0 ? null : round((takeoverCalls.length - probes.length) / takeoverServices, 1),
    takeoverCloudCallsByOperation: countBy(takeoverCalls.map((r) => r.operation)),
    cloudPeakCallsPerSecondAfterKill: afterRate.peakPerSecond,
    cloudThrottledAfterKill: afterRate.throttled,
    cloudLbDuplicates: audit?.duplicates.length ?? null,
    cloudLbOrphans: audit?.orphans.length ?? null,
  };
}

function countBy(keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}
