// The four scenarios. Each builds a BenchFleet, drives it, and returns one flat JSON object.

import { readdirSync, readFileSync } from "node:fs";
import { join as joinPath } from "node:path";
import { CLUSTER_TAG } from "@fleet-ccm/sim";
import { BenchFleet, type Delta, type Snapshot } from "./fleet.js";
import { ACCOUNT, type HubSettings, REGION } from "./hub-process.js";
import type { NodeRef, ServiceSpecRef } from "./protocol.js";
import {
  hasMetric,
  histogramQuantile,
  mainThreadWakeups,
  metricDelta,
  metricSum,
  type Pinning,
  percentile,
  prng,
  round,
  rssBytes,
  type Sample,
  sleep,
  tcpBytesAcked,
  until,
  untilQuiet,
} from "./util.js";

export type ScenarioName = "join" | "steady" | "churn" | "chaos" | "restart" | "failover";

export interface BenchOptions {
  readonly scenario: ScenarioName;
  /** restart: also restart into this hub (another tree's bin/fleet-ccm.js), side by side. */
  readonly baselineHubBin?: string;
  /** The baseline hub's V8 flags, where they differ from hubNodeArgs (--baseline-hub-node-args). */
  readonly baselineHubNodeArgs?: readonly string[];
  /**
   * The hub the scenario starts first (another tree's bin/fleet-ccm.js; default this tree's):
   * two trees' hubs measured by the same bench, fleet and agents.
   */
  readonly hubBin?: string;
  readonly clusters: number;
  /** Per cluster. */
  readonly nodes: number;
  /** Per cluster. */
  readonly services: number;
  readonly cloudLatencyMs: number;
  readonly workers: number;
  readonly rateLimitPerSecond: number;
  readonly timeoutS: number;
  /** join: nodes joining one at a time after the storm. */
  readonly probes: number;
  /** steady: each phase's measured window; churn: the churn window; chaos: the longest fault phase. */
  readonly durationS: number;
  /** steady: the idle window of a hub at its default periods (0: no idle phase). */
  readonly idleS: number;
  /** steady --idle-s: seconds between the fresh hub's quiet and the window. */
  readonly idleSettleS: number;
  /** steady: only the idle phase, not the two cache-scope phases at refreshPeriodMs. */
  readonly idleOnly: boolean;
  readonly refreshPeriodMs: number;
  /** churn: operations per second across the fleet. */
  readonly churnRate: number;
  readonly seed: number;
  readonly hubLogLevel: string;
  readonly agentLogLevel: string;
  readonly cpuProfDir: string | undefined;
  readonly fleetCpuProfDir: string | undefined;
  readonly pinning: Pinning;
  readonly separateAgent: boolean;
  /** NODE_OPTIONS and MALLOC_* of the separate agent process (from deploy/agent). */
  readonly agentEnv: Readonly<Record<string, string>>;
  /** NODE_OPTIONS and MALLOC_* of the hub process (from deploy/hub). */
  readonly hubEnv: Readonly<Record<string, string>>;
  /** V8 flags on the hub's node command line (--hub-node-args). */
  readonly hubNodeArgs: readonly string[];
  readonly keep: boolean;
  /** chaos */
  readonly notReady: number;
  readonly gone: number;
  readonly minChecks: number;
  readonly monitorPeriodMs: number;
  readonly deleteAfterMs: number;
  readonly extraInstances: number;
  readonly log: (line: string) => void;
}

export type Result = Record<string, unknown>;

export function fleetFor(o: BenchOptions, watchServices: boolean, jetstream = false): BenchFleet {
  return new BenchFleet({
    clusters: o.clusters,
    cloudLatencyMs: o.cloudLatencyMs,
    watchServices,
    separateAgent: o.separateAgent,
    agentEnv: o.agentEnv,
    hubEnv: o.hubEnv,
    hubNodeArgs: o.hubNodeArgs,
    pinning: o.pinning,
    logLevel: o.agentLogLevel,
    watchHistory: Math.max(10_000, o.nodes * 8 + o.services * 4),
    cpuProfDir: o.fleetCpuProfDir,
    log: o.log,
    jetstream,
  });
}

export function serviceRefs(fleet: BenchFleet, perCluster: number): ServiceSpecRef[] {
  const out: ServiceSpecRef[] = [];
  for (const cluster of fleet.names)
    for (let i = 0; i < perCluster; i++)
      out.push({ cluster, name: `svc-${String(i).padStart(5, "0")}`, variant: 0 });
  return out;
}

interface JoinFigures {
  readonly converged: boolean;
  readonly nodesInitialized: number;
  readonly allInitializedMs: number | null;
  readonly nodeInitP50Ms: number | null;
  readonly nodeInitP99Ms: number | null;
  readonly nodeInitMaxMs: number | null;
  readonly hubOverheadP50Ms: number | null;
  readonly hubOverheadP99Ms: number | null;
  readonly cloudMsPerNodeP50: number | null;
  readonly cloudMsPerNodeP99: number | null;
  /** Direct lookups by name per node (node-init without coalescing does one). */
  readonly directLookupsPerNode: number | null;
  /** Account-wide paged lists (and their pages) the cloud answered in the window. */
  readonly accountLists: number;
  readonly accountListPages: number;
  readonly cloudMaxLookupsInFlight: number;
  /** p50 / p99 of each leg of a node's initialization (see README). */
  readonly legsP50Ms: Record<string, number | null>;
  readonly legsP99Ms: Record<string, number | null>;
}

/** One initialized node's times: created, first patched, taint gone; latency and its cloud part. */
function nodeTimes(
  fleet: BenchFleet,
  r: NodeRef,
):
  | { created: number; patched: number | undefined; done: number; latency: number; cloud: number }
  | undefined {
  const created = fleet.createdAt.get(`${r.cluster}/${r.name}`);
  const obs = fleet.observer.clusters.get(r.cluster);
  const done = obs?.initializedAt.get(r.name);
  if (created === undefined || done === undefined) return undefined;
  const patched = obs?.firstModifiedAt.get(r.name);
  const latency = done - created;
  return {
    created,
    patched,
    done,
    latency,
    cloud: Math.min(latency, fleet.timer.nodeCloudMs(r.name, created, patched)),
  };
}

/**
 * Node-init latency (creation → taint removal), and the same minus the cloud's time on that
 * node's lookups (CloudCallTimer.nodeCloudMs). The legs split each node's latency at its first
 * patch: `toFirstPatch` (agent report, hub ingest and queue, cloud, publish, NATS, the agent's
 * first write), its `cloud` part, and `toTaintGone` (the rest of the agent's apply).
 */
function joinFigures(fleet: BenchFleet, refs: readonly NodeRef[], converged: boolean): JoinFigures {
  const latency: number[] = [];
  const overhead: number[] = [];
  const cloudMs: number[] = [];
  let lookups = 0;
  const legs: Record<string, number[]> = { toFirstPatch: [], cloud: [], toTaintGone: [] };
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const r of refs) {
    const created = fleet.createdAt.get(`${r.cluster}/${r.name}`);
    if (created === undefined) continue;
    first = Math.min(first, created);
    const t = nodeTimes(fleet, r);
    if (t === undefined) continue;
    const { done, patched, latency: l, cloud: c } = t;
    last = Math.max(last, done);
    lookups += fleet.timer.calls(`name:${r.name}`);
    latency.push(l);
    cloudMs.push(c);
    overhead.push(l - c);
    if (patched !== undefined) {
      legs["toFirstPatch"]?.push(patched - created);
      legs["cloud"]?.push(c);
      legs["toTaintGone"]?.push(done - patched);
    }
  }
  const chains = fleet.timer.chains;
  return {
    converged,
    nodesInitialized: latency.length,
    allInitializedMs: converged && latency.length > 0 ? last - first : null,
    nodeInitP50Ms: round(percentile(latency, 50)),
    nodeInitP99Ms: round(percentile(latency, 99)),
    nodeInitMaxMs: round(percentile(latency, 100)),
    hubOverheadP50Ms: round(percentile(overhead, 50)),
    hubOverheadP99Ms: round(percentile(overhead, 99)),
    cloudMsPerNodeP50: round(percentile(cloudMs, 50), 1),
    cloudMsPerNodeP99: round(percentile(cloudMs, 99), 1),
    directLookupsPerNode: latency.length === 0 ? null : round(lookups / latency.length, 2),
    accountLists: chains.length,
    accountListPages: chains.reduce((n, c) => n + c.pages, 0),
    cloudMaxLookupsInFlight: fleet.timer.maxInFlight,
    legsP50Ms: Object.fromEntries(Object.entries(legs).map(([k, v]) => [k, round(percentile(v, 50))])),
    legsP99Ms: Object.fromEntries(Object.entries(legs).map(([k, v]) => [k, round(percentile(v, 99))])),
  };
}

function msOrNull(seconds: number | null): number | null {
  return seconds === null || !Number.isFinite(seconds) ? null : round(seconds * 1000);
}

function perUpdate(bytes: number | null, updates: number): number | null {
  return bytes === null || updates <= 0 ? null : round(bytes / updates);
}

/**
 * Which side bounded the window: the hub's core or the other one (fleet, separate agent, NATS,
 * this process: what runs on core 1 when pinned). Busy shares are CPU seconds over the window's
 * length; the busier core is the bound once it is near saturation, else neither was.
 */
function boundFigures(d: Delta): Result {
  if (d.hubCpu === null || d.workerCpu === null || d.ms <= 0) return { bound: null };
  const seconds = d.ms / 1000;
  const hub = d.hubCpu / seconds;
  const rest = (d.workerCpu + (d.agentCpu ?? 0) + (d.natsCpu ?? 0) + d.selfCpu) / seconds;
  const busier = hub >= rest ? "hub" : "fleet";
  return {
    hubCoreBusyPercent: round(hub * 100, 1),
    fleetCoreBusyPercent: round(rest * 100, 1),
    bound: Math.max(hub, rest) >= 0.8 ? busier : "neither (both cores below 80 % busy)",
  };
}

/** Resource and wire figures of one measured window. */
function windowFigures(d: Delta): Result {
  return {
    ...boundFigures(d),
    hubCpuSeconds: round(d.hubCpu, 2),
    fleetCpuSeconds: round(d.workerCpu, 2),
    agentProcessCpuSeconds: round(d.agentCpu, 2),
    natsCpuSeconds: round(d.natsCpu, 2),
    benchProcessCpuSeconds: round(d.selfCpu, 2),
    grpcBytesPerNodeUpdate: perUpdate(d.grpcWire, d.nodeEvents),
    grpcPayloadBytesPerNodeUpdate: perUpdate(d.grpcPayloadInProcess, d.nodeEventsInProcess),
    natsBytesPerNodeUpdate: perUpdate(d.natsWire ?? d.natsPayload, d.nodePatches),
    natsPayloadBytesPerNodeUpdate: perUpdate(d.natsPayload, d.nodePatches),
    natsBytesPerDesiredPatch: perUpdate(d.natsWire ?? d.natsPayload, d.nodePatches + d.servicePatches),
    nodeUpdates: d.nodeEvents,
    // Deltas the hub received per node watch event (in-process agents): 1 when every event is
    // sent; fewer when an agent folds its own writes' echoes into one (Outbox.hold).
    agentDeltasPerNodeUpdate:
      d.nodeEventsInProcess > 0 ? round(d.deltasInProcess / d.nodeEventsInProcess, 2) : null,
    nodePatchesPublished: d.nodePatches,
    servicePatchesPublished: d.servicePatches,
    grpcBytes: d.grpcWire,
    natsBytes: d.natsWire,
    cloudCalls: d.cloudCalls,
    cloudCallsByOperation: d.cloudByOperation,
    // The hub's own part of node-init (first report → patch published, minus the cloud lookup),
    // from its fleet_ccm_node_init_hub_overhead_seconds histogram: bucket upper bounds.
    hubInternalOverheadP50Ms: msOrNull(d.quantile("fleet_ccm_node_init_hub_overhead_seconds", 0.5)),
    hubInternalOverheadP99Ms: msOrNull(d.quantile("fleet_ccm_node_init_hub_overhead_seconds", 0.99)),
    windowMs: d.ms,
  };
}

function memoryFigures(fleet: BenchFleet, hubPeak: number | null): Result {
  return {
    hubPeakRssBytes: hubPeak,
    agentPeakRssBytes: fleet.agentPeakRssBytes(),
    fleetPeakRssBytes: fleet.workerPeakRssBytes(),
  };
}

export function header(o: BenchOptions, fleet: BenchFleet): Result {
  return {
    scenario: o.scenario,
    clusters: o.clusters,
    nodes: o.clusters * o.nodes,
    services: o.clusters * o.services,
    nodesPerCluster: o.nodes,
    servicesPerCluster: o.services,
    cloudLatencyMs: o.cloudLatencyMs,
    hubWorkers: o.workers,
    accountRateLimitPerSecond: o.rateLimitPerSecond,
    separateAgentCluster: fleet.separateCluster ?? null,
    agentRuntimeEnv: fleet.separateCluster === undefined ? null : o.agentEnv,
    hubRuntimeEnv: o.hubEnv,
    hubNodeArgs: o.hubNodeArgs,
    pinning: o.pinning.description,
    ...(o.hubBin === undefined ? {} : { hubBin: o.hubBin }),
  };
}

/** Runs a scenario on its fleet and always stops the fleet, keeping its files when the run failed. */
export async function onFleet(
  o: BenchOptions,
  fleet: BenchFleet,
  run: () => Promise<Result>,
): Promise<Result> {
  let failed = false;
  try {
    return await run();
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    await stopFleet(o, fleet, failed);
  }
}

/** Stops everything; keeps the run directory (configs and logs) when asked or when the run failed. */
async function stopFleet(o: BenchOptions, fleet: BenchFleet, failed: boolean): Promise<void> {
  if (failed) {
    o.log(`run failed; configs and logs kept in ${fleet.dir}`);
    for (const f of [
      "fleet-worker.log",
      ...readdirSync(fleet.dir).filter((x) => x.startsWith("hub-") && x.endsWith(".log")),
    ]) {
      try {
        const tail = readFileSync(joinPath(fleet.dir, f), "utf8").split("\n").slice(-8).join("\n").trim();
        if (tail !== "") o.log(`last lines of ${f}:\n${tail}`);
      } catch {
        // not written
      }
    }
  }
  try {
    await fleet.stop(o.keep || failed);
  } catch (err) {
    o.log(`stopping the fleet: ${(err as Error).message}`);
  }
}

/** The hub settings every scenario takes from its options, for each hub it starts. */
export function hubBase(o: BenchOptions): Pick<HubSettings, "workers" | "rateLimitPerSecond" | "logLevel"> {
  return { workers: o.workers, rateLimitPerSecond: o.rateLimitPerSecond, logLevel: o.hubLogLevel };
}

/** Starts the fleet and a hub, connects every agent; the common first half of every scenario. */
async function bringUp(
  o: BenchOptions,
  fleet: BenchFleet,
  extra: Partial<HubSettings> | undefined,
  label: string,
): Promise<void> {
  o.log(`starting nats-server, the simulated cloud and ${o.clusters} simulated API servers…`);
  await fleet.start();
  await fleet.startHub(
    fleet.hubSettings({
      ...hubBase(o),
      ...(o.cpuProfDir === undefined ? {} : { cpuProfDir: o.cpuProfDir }),
      ...(o.hubBin === undefined ? {} : { hubBin: o.hubBin }),
      ...extra,
    }),
    label,
  );
  o.log(`hub pid ${fleet.hub?.pid} on ${fleet.hub?.address}; starting ${o.clusters} agents…`);
  await fleet.startAgents();
  if (!(await fleet.waitSynced(120_000))) throw new Error("not every agent synced with the hub within 120 s");
}

/** How often the join asks the hub whether it has counted every node initialized (see join). */
const HUB_SEEN_POLL_MS = 1000;

/** Creates machines and nodes (and Services) everywhere at once; waits for every taint to go. */
async function join(
  o: BenchOptions,
  fleet: BenchFleet,
): Promise<{
  refs: NodeRef[];
  converged: boolean;
  before: Snapshot;
  after: Snapshot;
  hubSawAllMs: number | null;
}> {
  const refs: NodeRef[] = [];
  for (const c of fleet.names) refs.push(...fleet.addMachines(c, o.nodes));
  const total = refs.length;
  const before = await fleet.snapshot();
  fleet.timer.reset();
  o.log(
    `registering ${total} nodes with the uninitialized taint${o.services > 0 ? " and the Services" : ""}…`,
  );
  const services = o.services > 0 ? fleet.upsertServices(serviceRefs(fleet, o.services)) : undefined;
  await fleet.createNodes(refs);
  await services;
  let lastLog = Date.now();
  const converged = await until(
    () => {
      const n = fleet.observer.initializedCount();
      if (Date.now() - lastLog >= 5000) {
        lastLog = Date.now();
        o.log(`  ${n}/${total} initialized`);
      }
      return n >= total;
    },
    o.timeoutS * 1000,
    100,
  );
  o.log(
    converged ? `all ${total} nodes initialized` : `timed out: ${fleet.observer.initializedCount()}/${total}`,
  );
  // The hub learns that a patch landed from the agent's next report; on a saturated fleet core
  // the reports lag behind the API servers. Read the counters once the hub has seen every node
  // converge (fleet_ccm_nodes_initialized_total), so every byte of the join is in the window.
  // Each scrape is charged to the hub's window (~5 ms of its CPU at 100 clusters, ~20 ms at 500:
  // prom-client writes every per-cluster series), a second of waiting ~10 ms at most: hence a
  // scrape a second, not four (a Prometheus scrapes every 15-30 s).
  const seen = () => metricSum(before.metrics, "fleet_ccm_nodes_initialized_total");
  let hubSawAllMs: number | null = null;
  if (converged && fleet.hub !== undefined) {
    const hub = fleet.hub;
    const first = refs.reduce(
      (m, r) => Math.min(m, fleet.createdAt.get(`${r.cluster}/${r.name}`) ?? m),
      Date.now(),
    );
    const ok = await until(
      async () => {
        const m = await hub.metrics().catch(() => []);
        return metricSum(m, "fleet_ccm_nodes_initialized_total") - seen() >= total;
      },
      60_000,
      HUB_SEEN_POLL_MS,
    );
    if (ok) hubSawAllMs = Date.now() - first;
  }
  await sleep(500);
  const after = await fleet.snapshot();
  return { refs, converged, before, after, hubSawAllMs };
}

/**
 * After the storm, while the hub holds the whole fleet: `--probes` nodes join one at a time,
 * 100 ms apart, spread over the clusters. In a storm every node waits behind the others (its
 * p99 is the storm's length); a probe's latency is what one new node of a running fleet sees.
 * Same figures as the storm's (creation to taint removal, and that minus its cloud calls).
 */
async function probe(o: BenchOptions, fleet: BenchFleet): Promise<Result> {
  if (o.probes === 0) return {};
  await sleep(2000);
  const before = await fleet.hub?.metrics().catch(() => []);
  o.log(`${o.probes} probe nodes join one at a time…`);
  const refs: NodeRef[] = [];
  for (let i = 0; i < o.probes; i++) {
    const cluster = fleet.names[(i * 7919) % fleet.names.length] as string;
    const added = fleet.addMachines(cluster, 1);
    refs.push(...added);
    await fleet.createNodes(added);
    await sleep(100);
  }
  const initialized = (r: NodeRef) => fleet.observer.clusters.get(r.cluster)?.initializedAt.has(r.name);
  const done = await until(() => refs.every(initialized), 60_000, 50);
  const f = joinFigures(fleet, refs, done);
  const after = await fleet.hub?.metrics().catch(() => []);
  return {
    ...slowestProbes(fleet, refs),
    ...gcPauses(before ?? [], after ?? []),
    // The hub's own part of each probe (first report → patch published, minus the cloud), from
    // its histogram over the probes alone: what the rest of probeHubOverhead* is not.
    probeHubInternalOverheadP99Ms: msOrNull(
      histogramQuantile(before ?? [], after ?? [], "fleet_ccm_node_init_hub_overhead_seconds", 0.99),
    ),
    // Since the scrape before the probes (prom-client resets the delay histogram on each scrape).
    probeHubEventLoopDelayMaxMs: msOrNull(
      after === undefined || !hasMetric(after, "nodejs_eventloop_lag_max_seconds")
        ? null
        : metricSum(after, "nodejs_eventloop_lag_max_seconds"),
    ),
    probeNodes: refs.length,
    probeNodesInitialized: f.nodesInitialized,
    probeNodeInitP50Ms: f.nodeInitP50Ms,
    probeNodeInitP99Ms: f.nodeInitP99Ms,
    probeHubOverheadP50Ms: f.hubOverheadP50Ms,
    probeHubOverheadP99Ms: f.hubOverheadP99Ms,
    probeCloudMsPerNodeP99: f.cloudMsPerNodeP99,
  };
}

/** The hub's GC pauses between two scrapes, from prom-client's nodejs_gc_duration_seconds. */
function gcPauses(before: readonly Sample[], after: readonly Sample[]): Result {
  const name = "nodejs_gc_duration_seconds";
  if (!hasMetric(after, `${name}_count`)) return {};
  const d = (metric: string, ...labels: string[]) => metricDelta(before, after, metric, ...labels);
  const count = d(`${name}_count`);
  return {
    probeHubGcPauses: count,
    probeHubGcPausesOver10Ms: count - d(`${name}_bucket`, 'le="0.01"'),
    probeHubGcPausesOver100Ms: count - d(`${name}_bucket`, 'le="0.1"'),
    probeHubGcMs: round(d(`${name}_sum`) * 1000),
  };
}

/**
 * The three probes with the most hub overhead, each with when it was created in the hub's
 * life (to match against the hub's --trace-gc lines or a profile).
 */
function slowestProbes(fleet: BenchFleet, refs: readonly NodeRef[]): Result {
  const startedAt = fleet.hub?.startedAt ?? 0;
  const rows: { atHubS: number | null; overheadMs: number | null }[] = [];
  for (const r of refs) {
    const t = nodeTimes(fleet, r);
    if (t !== undefined)
      rows.push({ atHubS: round((t.created - startedAt) / 1000, 2), overheadMs: round(t.latency - t.cloud) });
  }
  rows.sort((a, b) => (b.overheadMs ?? 0) - (a.overheadMs ?? 0));
  return { probeSlowest: rows.slice(0, 3) };
}

/** What the cloud holds after the run: load balancers, and orphans or duplicates among them (should be 0). */
function lbAudit(fleet: BenchFleet): Result {
  const cloud = fleet.cloud;
  if (cloud === undefined) return {};
  const audit = cloud.auditLoadBalancers({ account: ACCOUNT });
  return {
    cloudLoadBalancers: cloud.loadBalancers(ACCOUNT).length,
    cloudLbOrphans: audit.orphans.length,
    cloudLbDuplicates: audit.duplicates.length,
  };
}

function serviceFigures(o: BenchOptions, fleet: BenchFleet, since: number): Result {
  if (o.services === 0) return {};
  let last = 0;
  for (const obs of fleet.observer.clusters.values())
    for (const t of obs.serviceReadyAt.values()) last = Math.max(last, t);
  const ready = fleet.observer.servicesReady();
  return {
    servicesWithIngress: ready,
    allServicesReadyMs: ready === o.services * o.clusters && ready > 0 ? last - since : null,
    ...lbAudit(fleet),
  };
}

/**
 * The join's window extended until the cloud has been quiet for 2 s after every Service got its
 * ingress (the node window ends when the nodes converged, often before the Services did): the
 * hub's CPU and the load-balancer calls of the whole storm, per Service.
 */
async function serviceWindow(o: BenchOptions, fleet: BenchFleet, before: Snapshot): Promise<Result> {
  const QUIET_MS = 2000;
  const cloud = fleet.cloud;
  if (cloud === undefined) return {};
  await untilQuiet(() => cloud.stats().totalCalls, QUIET_MS, o.timeoutS * 1000);
  const d = BenchFleet.delta(before, await fleet.snapshot());
  const services = o.services * o.clusters;
  let lbCalls = 0;
  for (const [op, n] of Object.entries(d.cloudByOperation)) if (!op.startsWith("instances.")) lbCalls += n;
  return {
    servicesWindowMs: d.ms - QUIET_MS,
    servicesWindowHubCpuSeconds: round(d.hubCpu, 2),
    servicesWindowCloudCallsByOperation: d.cloudByOperation,
    lbCloudCallsPerService: round(lbCalls / services, 2),
  };
}

export async function runJoin(o: BenchOptions): Promise<Result> {
  const fleet = fleetFor(o, o.services > 0);
  return onFleet(o, fleet, async () => {
    await bringUp(o, fleet, undefined, "join");
    const { refs, converged, before, after, hubSawAllMs } = await join(o, fleet);
    if (o.services > 0) {
      const want = o.services * o.clusters;
      o.log(`waiting for ${want} Services to get a load-balancer ingress (at most ${o.timeoutS} s)…`);
      await until(() => fleet.observer.servicesReady() >= want, o.timeoutS * 1000, 250);
      o.log(`${fleet.observer.servicesReady()}/${want} Services have an ingress`);
    }
    const withServices = o.services > 0 ? await serviceWindow(o, fleet, before) : {};
    const d = BenchFleet.delta(before, after);
    // Figures of the storm first: the probes' cloud calls must not count in them.
    const storm = joinFigures(fleet, refs, converged);
    const services = serviceFigures(o, fleet, before.t);
    const probes = converged ? await probe(o, fleet) : {};
    const hubPeak = fleet.hubPeakRssBytes();
    const hubTotalCpu = fleet.hub?.cpuSeconds() ?? null;
    return {
      ...header(o, fleet),
      ...storm,
      hubSawAllInitializedMs: hubSawAllMs,
      ...services,
      ...probes,
      ...windowFigures(d),
      ...withServices,
      hubCpuSecondsTotal: round(hubTotalCpu, 2),
      ...memoryFigures(fleet, hubPeak),
      observerWatchRestarts: fleet.observer.restarts(),
      benchDir: o.keep ? fleet.dir : undefined,
    };
  });
}

/**
 * steady: the same fleet, twice: first with one instance cache per account (what the hub is
 * for), then a fresh hub with one cache per cluster (what N per-cluster CCMs do). After every
 * node is initialized and one refresh period has passed, count cloud calls over the window.
 */
export async function runSteady(o: BenchOptions): Promise<Result> {
  const fleet = fleetFor(o, o.services > 0);
  return onFleet(o, fleet, async () => {
    const refresh = (cacheScope: "account" | "cluster") => ({
      refresh: { periodMs: o.refreshPeriodMs, cacheScope },
    });
    const idleFirst = o.idleS > 0;
    await bringUp(o, fleet, idleFirst ? undefined : refresh("account"), "steady-join");
    const { refs, converged, before, after } = await join(o, fleet);
    const joinDelta = BenchFleet.delta(before, after);
    const joinFigs = joinFigures(fleet, refs, converged);
    const nodes = refs.length;
    const want = o.services * o.clusters;
    if (!converged || !(await until(() => fleet.observer.servicesReady() >= want, o.timeoutS * 1000, 250)))
      throw new Error("the fleet did not converge before the steady state");
    const ports = { grpcPort: fleet.hub?.grpcPort ?? 0, httpPort: fleet.hub?.httpPort ?? 0 };
    /** A fresh hub on the same ports (the agents reconnect and resync). */
    const restartHub = async (label: string, extra: Partial<HubSettings>) => {
      await fleet.stopHub();
      await fleet.startHub(
        fleet.hubSettings({
          ...hubBase(o),
          ...ports,
          ...extra,
        }),
        label,
      );
      if (!(await fleet.waitSynced(120_000))) throw new Error(`${label}: the agents did not resync`);
    };
    const idle = idleFirst ? await idleFigures(o, fleet, nodes, restartHub) : {};
    if (o.idleOnly)
      return {
        ...header(o, fleet),
        ...joinFigs,
        ...windowFigures(joinDelta),
        ...idle,
        ...memoryFigures(fleet, fleet.hubPeakRssBytes()),
      };
    if (idleFirst) await restartHub("steady-account", refresh("account"));
    const settleMs = o.refreshPeriodMs + 2000;

    const measure = async (scope: string) => {
      o.log(`[${scope}] settling ${settleMs} ms, then measuring ${o.durationS} s of steady state…`);
      await sleep(settleMs);
      const a = await fleet.snapshot();
      await sleep(o.durationS * 1000);
      const b = await fleet.snapshot();
      const d = BenchFleet.delta(a, b);
      const hours = d.ms / 3_600_000;
      const instanceCalls = Object.entries(d.cloudByOperation)
        .filter(([op]) => op.startsWith("instances."))
        .reduce((sum, [, n]) => sum + n, 0);
      return {
        d,
        perNodeHour: nodes === 0 ? null : d.cloudCalls / nodes / hours,
        instancePerNodeHour: nodes === 0 ? null : instanceCalls / nodes / hours,
        hubCpuPercent: d.hubCpu === null ? null : (100 * d.hubCpu) / (d.ms / 1000),
        peak: fleet.hubPeakRssBytes(),
      };
    };
    const shared = await measure("account");
    o.log("restarting the hub with refresh.cacheScope: cluster…");
    await restartHub("steady-cluster", refresh("cluster"));
    const isolated = await measure("cluster");
    const scaleToDefault = o.refreshPeriodMs / 300_000;
    const ratio =
      shared.perNodeHour !== null && isolated.perNodeHour !== null && shared.perNodeHour > 0
        ? isolated.perNodeHour / shared.perNodeHour
        : null;
    return {
      ...header(o, fleet),
      ...joinFigs,
      ...windowFigures(joinDelta),
      ...idle,
      refreshPeriodMs: o.refreshPeriodMs,
      steadyWindowMs: shared.d.ms,
      cloudCallsPerNodeHour: round(shared.perNodeHour, 2),
      cloudCallsPerNodeHourIsolated: round(isolated.perNodeHour, 2),
      cloudCallsRatio: round(ratio, 2),
      cloudCallsPerNodeHourAtDefaultPeriod: round(
        shared.perNodeHour === null ? null : shared.perNodeHour * scaleToDefault,
        3,
      ),
      cloudCallsPerNodeHourIsolatedAtDefaultPeriod: round(
        isolated.perNodeHour === null ? null : isolated.perNodeHour * scaleToDefault,
        3,
      ),
      instanceCallsPerNodeHour: round(shared.instancePerNodeHour, 2),
      instanceCallsPerNodeHourIsolated: round(isolated.instancePerNodeHour, 2),
      steadyCloudCalls: shared.d.cloudCalls,
      steadyCloudCallsIsolated: isolated.d.cloudCalls,
      steadyCloudCallsByOperation: shared.d.cloudByOperation,
      steadyCloudCallsByOperationIsolated: isolated.d.cloudByOperation,
      hubIdleCpuPercent: round(shared.hubCpuPercent, 2),
      hubIdleCpuPercentIsolated: round(isolated.hubCpuPercent, 2),
      grpcBytesPerSecondIdle:
        shared.d.grpcWire === null ? null : round(shared.d.grpcWire / (shared.d.ms / 1000)),
      natsBytesPerSecondIdle:
        shared.d.natsWire === null ? null : round(shared.d.natsWire / (shared.d.ms / 1000)),
      ...memoryFigures(fleet, Math.max(shared.peak ?? 0, isolated.peak ?? 0) || null),
      hubPeakRssBytesShared: shared.peak,
      hubPeakRssBytesIsolated: isolated.peak,
    };
  });
}

/** How often the idle window scrapes the hub's /metrics, as a Prometheus would. */
const IDLE_SCRAPE_MS = 30_000;
/** The cloud quiet this long after a resync: the fresh hub's start-up work is done. */
const IDLE_QUIET_MS = 5_000;

/**
 * The idle hub at its default periods (refresh, lifecycle monitor, heartbeats): a fresh hub
 * after the join (the same start as the baseline's), once it has resynced and the cloud has
 * been quiet for IDLE_QUIET_MS, measured over `--idle-s` while nothing changes, its /metrics
 * scraped every IDLE_SCRAPE_MS. The same into `--baseline-hub-bin`, side by side. A window of
 * one refresh period (300 s) holds exactly one refresh. `idleWindowFromHubStartS` places the
 * window in the hub's CPU profile (`--cpu-prof`; `profile-top.js FILE N FROM_S TO_S`).
 */
async function idleFigures(
  o: BenchOptions,
  fleet: BenchFleet,
  nodes: number,
  restartHub: (label: string, extra: Partial<HubSettings>) => Promise<void>,
): Promise<Result> {
  const one = async (label: string, hubBin: string | undefined, nodeArgs?: readonly string[]) => {
    await restartHub(label, {
      ...(hubBin === undefined ? {} : { hubBin }),
      ...(nodeArgs === undefined ? {} : { nodeArgs }),
      ...(o.cpuProfDir === undefined ? {} : { cpuProfDir: o.cpuProfDir }),
    });
    const hub = fleet.hub;
    if (hub === undefined) throw new Error("no hub");
    const startedAt = hub.startedAt;
    const cloudCalls = () => fleet.cloud?.stats().totalCalls ?? 0;
    const quiet = await untilQuiet(cloudCalls, IDLE_QUIET_MS, o.timeoutS * 1000, 250);
    if (!quiet) throw new Error(`${label}: the cloud never went quiet after the resync`);
    // The resync's garbage (every cluster's snapshot) is collected in the minutes after it, in
    // one or two major collections: start-up, not what an idle hub costs by the hour.
    if (o.idleSettleS > 0) {
      o.log(`[${label}] settling ${o.idleSettleS} s after the resync…`);
      await sleep(o.idleSettleS * 1000);
    }
    o.log(`[${label}] idle at the hub's default periods: measuring ${o.idleS} s…`);
    // What the hub writes to the agents (Acks, HubHeartbeats), beside what they write to it.
    const hubSent = () => tcpBytesAcked(`( sport = :${hub.grpcPort} )`);
    const sentBefore = hubSent();
    const wakeupsBefore = mainThreadWakeups(hub.pid);
    const a = await fleet.snapshot();
    const end = Date.now() + o.idleS * 1000;
    // Each scrape's nodejs_eventloop_lag_max_seconds covers the time since the one before.
    const lagMax: number[] = [];
    const lag = (samples: readonly Sample[]) => {
      if (hasMetric(samples, "nodejs_eventloop_lag_max_seconds"))
        lagMax.push(metricSum(samples, "nodejs_eventloop_lag_max_seconds"));
    };
    while (Date.now() + IDLE_SCRAPE_MS < end) {
      await sleep(IDLE_SCRAPE_MS);
      lag(await hub.metrics().catch(() => []));
    }
    await sleep(Math.max(0, end - Date.now()));
    const b = await fleet.snapshot();
    const sentAfter = hubSent();
    const wakeupsAfter = mainThreadWakeups(hub.pid);
    lag(b.metrics);
    const d = BenchFleet.delta(a, b);
    const seconds = d.ms / 1000;
    const cpuMs = d.hubCpu === null ? null : d.hubCpu * 1000;
    // Collections in the window by kind (prom-client's nodejs_gc_duration_seconds): count, seconds.
    const gc = (kind: string) => [
      metricDelta(a.metrics, b.metrics, "nodejs_gc_duration_seconds_count", `kind="${kind}"`),
      round(metricDelta(a.metrics, b.metrics, "nodejs_gc_duration_seconds_sum", `kind="${kind}"`), 3),
    ];
    return {
      hubPid: hub.pid,
      windowFromHubStartS: [round((a.t - startedAt) / 1000, 1), round((b.t - startedAt) / 1000, 1)],
      hubCpuPercent: cpuMs === null ? null : round(cpuMs / 10 / seconds, 3),
      hubCpuMsPerNodeHour:
        cpuMs === null || nodes === 0 ? null : round((cpuMs / nodes) * (3600 / seconds), 3),
      cloudCalls: d.cloudCalls,
      cloudCallsByOperation: d.cloudByOperation,
      nodePatchesPublished: d.nodePatches,
      servicePatchesPublished: d.servicePatches,
      grpcBytesPerSecond: d.grpcWire === null ? null : round(d.grpcWire / seconds),
      grpcHubBytesPerSecond:
        sentBefore === null || sentAfter === null ? null : round((sentAfter - sentBefore) / seconds),
      hubEventLoopDelayMaxMs: lagMax.length === 0 ? null : round(Math.max(...lagMax) * 1000, 1),
      hubWakeupsPerSecond:
        wakeupsBefore === null || wakeupsAfter === null
          ? null
          : round((wakeupsAfter - wakeupsBefore) / seconds, 1),
      natsBytesPerSecond: d.natsWire === null ? null : round(d.natsWire / seconds),
      hubRssBytes: rssBytes(hub.pid),
      gcMajor: gc("major"),
      gcMinor: gc("minor"),
      gcIncremental: gc("incremental"),
    };
  };
  const current = await one("steady-idle", undefined);
  const baseline =
    o.baselineHubBin === undefined
      ? undefined
      : await one("steady-idle-baseline", o.baselineHubBin, o.baselineHubNodeArgs);
  const prefixed = (prefix: string, r: Result) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [`${prefix}${k[0]?.toUpperCase()}${k.slice(1)}`, v]),
    );
  const cpu = (r: Result | undefined) => r?.["hubCpuPercent"] as number | null | undefined;
  return {
    idleWindowS: o.idleS,
    idleSettleS: o.idleSettleS,
    idleScrapeEveryS: IDLE_SCRAPE_MS / 1000,
    ...prefixed("idle", current),
    ...(baseline !== undefined && {
      baselineHubBin: o.baselineHubBin,
      baselineHubNodeArgs: o.baselineHubNodeArgs ?? o.hubNodeArgs,
      ...prefixed("baselineIdle", baseline),
      idleHubCpuRatio: (cpu(current) ?? 0) > 0 ? round((cpu(baseline) ?? 0) / (cpu(current) ?? 1), 2) : null,
    }),
  };
}

/** churn: after the join, a fixed rate of node joins, node leaves and Service changes. */
export async function runChurn(o: BenchOptions): Promise<Result> {
  const fleet = fleetFor(o, true);
  const random = prng(o.seed);
  const pick = <T>(xs: readonly T[]): T | undefined => xs[Math.floor(random() * xs.length)];
  return onFleet(o, fleet, async () => {
    await bringUp(o, fleet, undefined, "churn");
    const initial = await join(o, fleet);
    if (!initial.converged) throw new Error("the initial join did not converge");
    const live = new Map<string, string[]>(fleet.names.map((c) => [c, []]));
    for (const r of initial.refs) live.get(r.cluster)?.push(r.name);
    const svcs = new Map<string, { name: string; variant: number }[]>(fleet.names.map((c) => [c, []]));
    for (const s of serviceRefs(fleet, o.services)) svcs.get(s.cluster)?.push({ name: s.name, variant: 0 });
    let nextSvc = o.services;
    const joined: NodeRef[] = [];
    const counts = { join: 0, leave: 0, serviceCreate: 0, serviceUpdate: 0, serviceDelete: 0 };
    const intervalMs = 1000 / o.churnRate;
    const kinds = ["join", "leave", "service"] as const;

    o.log(`churn: ${o.churnRate} changes/s for ${o.durationS} s…`);
    const a = await fleet.snapshot();
    const start = Date.now();
    for (let i = 0; Date.now() - start < o.durationS * 1000; i++) {
      const due = start + i * intervalMs;
      if (due > Date.now()) await sleep(due - Date.now());
      const cluster = pick(fleet.names) ?? "";
      const kind = kinds[i % kinds.length];
      if (kind === "join") {
        const refs = fleet.addMachines(cluster, 1);
        await fleet.createNodes(refs);
        joined.push(...refs);
        live.get(cluster)?.push(...refs.map((r) => r.name));
        counts.join++;
      } else if (kind === "leave") {
        // Scale-down: the instance is terminated and the Node deleted (cluster-autoscaler's order).
        const names = live.get(cluster) ?? [];
        const name = pick(names);
        if (name === undefined) continue;
        names.splice(names.indexOf(name), 1);
        const id = fleet.instances.get(`${cluster}/${name}`);
        if (id !== undefined) fleet.cloud?.terminateInstance(id);
        await fleet.deleteNodes([{ cluster, name }]);
        counts.leave++;
      } else {
        const list = svcs.get(cluster) ?? [];
        const r = random();
        const s = pick(list);
        if (s === undefined || r < 0.25) {
          const name = `svc-${String(nextSvc++).padStart(5, "0")}`;
          list.push({ name, variant: 0 });
          await fleet.upsertServices([{ cluster, name, variant: 0 }]);
          counts.serviceCreate++;
        } else if (r < 0.5) {
          list.splice(list.indexOf(s), 1);
          await fleet.deleteServices([{ cluster, name: s.name }]);
          counts.serviceDelete++;
        } else {
          s.variant++;
          await fleet.upsertServices([{ cluster, name: s.name, variant: s.variant }]);
          counts.serviceUpdate++;
        }
      }
    }
    const b = await fleet.snapshot();
    o.log(`churn done; waiting for the ${joined.length} joined nodes…`);
    const converged = await until(
      () => joined.every((r) => fleet.observer.clusters.get(r.cluster)?.initializedAt.has(r.name) ?? false),
      60_000,
      200,
    );
    const d = BenchFleet.delta(a, b);
    const initial_ = joinFigures(fleet, initial.refs, initial.converged);
    const churn = joinFigures(fleet, joined, converged);
    return {
      ...header(o, fleet),
      ...churn,
      allInitializedMs: initial_.allInitializedMs,
      initialJoinNodeInitP99Ms: initial_.nodeInitP99Ms,
      churnJoinsAllInitializedMs: churn.allInitializedMs,
      churnRatePerSecond: o.churnRate,
      churnOps: counts,
      ...windowFigures(d),
      hubCpuPercent: d.hubCpu === null ? null : round((100 * d.hubCpu) / (d.ms / 1000), 2),
      servicesWithIngress: fleet.observer.servicesReady(),
      ...lbAudit(fleet),
      cloudCallsPerChurnOp: round(
        d.cloudCalls /
          Math.max(
            1,
            Object.values(counts).reduce((x, y) => x + y, 0),
          ),
        2,
      ),
      ...memoryFigures(fleet, fleet.hubPeakRssBytes()),
    };
  });
}

export const CHAOS_FAULTS = {
  dropFromListRate: 0.2,
  emptyListRate: 0.3,
  emptyGetRate: 0.3,
  errorRate: 0.3,
  throttleRate: 0.3,
  errorRetryAfterSeconds: 1,
  throttleRetryAfterSeconds: 1,
} as const;

/**
 * chaos: every node initialized, then some nodes NotReady while their instances keep running
 * (a kubelet or network problem, never a reason to delete), a few NotReady whose instance is
 * really gone, and a cloud that drops 20 % of list items and answers 30 % of calls with empty
 * 200s, 5xx or 429. Runs until the hub made at least --min-checks lifecycle checks.
 */
export async function runChaos(o: BenchOptions): Promise<Result> {
  const fleet = fleetFor(o, false);
  const random = prng(o.seed);
  return onFleet(o, fleet, async () => {
    const lifecycle = {
      // The instance cache refreshes every second, so paged lists (with dropped items and empty
      // answers) run all through the fault phase: their omissions must never delete a node.
      refresh: { periodMs: 1000, cacheScope: "account" as const },
      lifecycle: {
        monitorPeriodMs: o.monitorPeriodMs,
        deleteAfterChecks: 3,
        deleteAfterMs: o.deleteAfterMs,
        blastRadius: { maxPercent: 10, maxNodes: 2, windowMs: 600_000 },
      },
    };
    await bringUp(o, fleet, lifecycle, "chaos");
    const cloud = fleet.cloud;
    if (cloud === undefined) throw new Error("no cloud");
    // Other workloads in the same account: lists are several pages long.
    for (let i = 0; i < o.extraInstances; i++)
      cloud.createInstance(ACCOUNT, {
        name: `other-${i}`,
        region: REGION,
        tags: { [CLUSTER_TAG]: "not-a-fleet-cluster" },
      });
    const initial = await join(o, fleet);
    if (!initial.converged) throw new Error("the initial join did not converge");

    const notReady: NodeRef[] = [];
    const gone: NodeRef[] = [];
    for (const c of fleet.names) {
      const names = initial.refs.filter((r) => r.cluster === c).map((r) => r.name);
      for (let i = names.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        const t = names[i] ?? "";
        names[i] = names[j] ?? "";
        names[j] = t;
      }
      for (const n of names.slice(0, o.notReady)) notReady.push({ cluster: c, name: n });
      for (const n of names.slice(o.notReady, o.notReady + o.gone)) gone.push({ cluster: c, name: n });
    }
    const a = await fleet.snapshot();
    cloud.setFaults(CHAOS_FAULTS);
    for (const g of gone) {
      const id = fleet.instances.get(`${g.cluster}/${g.name}`);
      if (id !== undefined) cloud.terminateInstance(id);
    }
    await fleet.setReady([...notReady, ...gone], false);
    o.log(
      `chaos: ${notReady.length} NotReady nodes with running instances, ${gone.length} whose instance is gone; faults on`,
    );

    const start = Date.now();
    let checks = 0;
    let source = "none";
    let lastLog = 0;
    const deleted = (r: NodeRef) => fleet.observer.clusters.get(r.cluster)?.deletedAt.has(r.name) ?? false;
    for (;;) {
      await sleep(1000);
      const b = await fleet.snapshot();
      if (hasMetric(b.metrics, "fleet_ccm_lifecycle_checks_total")) {
        source = "hub metric fleet_ccm_lifecycle_checks_total";
        checks =
          metricSum(b.metrics, "fleet_ccm_lifecycle_checks_total") -
          metricSum(a.metrics, "fleet_ccm_lifecycle_checks_total");
      } else {
        source = "cloud calls instances.get";
        checks = (b.cloud.byOperation["instances.get"] ?? 0) - (a.cloud.byOperation["instances.get"] ?? 0);
      }
      const elapsed = Date.now() - start;
      if (elapsed - lastLog >= 5000) {
        lastLog = elapsed;
        o.log(
          `  ${Math.round(elapsed / 1000)} s: ${checks} checks, ${gone.filter(deleted).length}/${gone.length} gone nodes deleted`,
        );
      }
      const enough = checks >= o.minChecks && elapsed >= 10_000;
      if ((enough && gone.every(deleted)) || (enough && elapsed >= 60_000) || elapsed >= o.durationS * 1000)
        break;
    }
    const end = await fleet.snapshot();
    cloud.resetFaults();
    if (o.cloudLatencyMs > 0) cloud.setFaults({ latencyMs: o.cloudLatencyMs });

    // Ground truth: every node that is gone from its API server, against the cloud.
    const { nodes: present } = await fleet.listNodes();
    let wrongDeletions = 0;
    let correctDeletions = 0;
    const wrong: string[] = [];
    for (const r of initial.refs) {
      if ((present[r.cluster] ?? []).includes(r.name)) continue;
      const id = fleet.instances.get(`${r.cluster}/${r.name}`);
      const inst = id === undefined ? undefined : cloud.getInstance(id);
      if (inst !== undefined && inst.state !== "terminated") {
        wrongDeletions++;
        wrong.push(`${r.cluster}/${r.name}`);
      } else correctDeletions++;
    }
    let wrongShutdownTaints = 0;
    for (const [c, obs] of fleet.observer.clusters)
      for (const name of obs.shutdownTainted) {
        const id = fleet.instances.get(`${c}/${name}`);
        if (cloud.getInstance(id ?? "")?.state === "running") wrongShutdownTaints++;
      }
    const d = BenchFleet.delta(a, end);
    return {
      ...header(o, fleet),
      monitorPeriodMs: o.monitorPeriodMs,
      deleteAfterMs: o.deleteAfterMs,
      faults: CHAOS_FAULTS,
      extraInstances: o.extraInstances,
      notReadyNodes: notReady.length,
      goneNodes: gone.length,
      checks,
      checksSource: source,
      wrongDeletions,
      wrongDeletionNodes: wrong,
      correctDeletions,
      wrongShutdownTaints,
      chaosMs: d.ms,
      cloudCallsByOutcome: d.cloudByOutcome,
      ...windowFigures(d),
      ...memoryFigures(fleet, fleet.hubPeakRssBytes()),
    };
  });
}

/**
 * restart: after the join (nodes and Services converged), the hub is stopped and a fresh one
 * started on the same ports, as after a crash or an upgrade. Figures per restart: cloud calls by
 * operation and the time from start until the hub has made no cloud call for `QUIET_MS`. With
 * `--baseline-hub-bin` the same restart is done into that hub (another tree) in the same run.
 */
export async function runRestart(o: BenchOptions): Promise<Result> {
  const QUIET_MS = 3000;
  const fleet = fleetFor(o, true);
  return onFleet(o, fleet, async () => {
    await bringUp(o, fleet, undefined, "restart-first");
    const { converged } = await join(o, fleet);
    const want = o.services * o.clusters;
    const ready = await until(() => fleet.observer.servicesReady() >= want, o.timeoutS * 1000, 250);
    if (!converged || !ready) throw new Error("the fleet did not converge before the restart");
    o.log(`${want} Services have an ingress; restarting the hub…`);
    const ports = { grpcPort: fleet.hub?.grpcPort ?? 0, httpPort: fleet.hub?.httpPort ?? 0 };
    /** Until the cloud has seen no call for QUIET_MS: the last change's time. */
    const quietSince = async (): Promise<{ quiet: boolean; lastChange: number }> => {
      let calls = (await fleet.snapshot()).cloud.totalCalls;
      let lastChange = Date.now();
      const quiet = await until(
        async () => {
          const now = (await fleet.snapshot()).cloud.totalCalls;
          if (now !== calls) {
            calls = now;
            lastChange = Date.now();
          }
          return Date.now() - lastChange >= QUIET_MS;
        },
        o.timeoutS * 1000,
        250,
      );
      return { quiet, lastChange };
    };
    const restart = async (label: string, hubBin: string | undefined) => {
      // The running hub first finishes what it is doing (backend updates after the join).
      if (!(await quietSince()).quiet)
        throw new Error(`${label}: the hub never went quiet before the restart`);
      await fleet.stopHub();
      const before = await fleet.snapshot();
      const t0 = Date.now();
      await fleet.startHub(
        fleet.hubSettings({
          ...hubBase(o),
          ...ports,
          ...(hubBin === undefined ? {} : { hubBin }),
        }),
        label,
      );
      if (!(await fleet.waitSynced(120_000))) throw new Error(`${label}: agents did not resync`);
      const syncedMs = Date.now() - t0;
      const { quiet, lastChange } = await quietSince();
      const d = BenchFleet.delta(before, await fleet.snapshot());
      o.log(`${label}: ${d.cloudCalls} cloud calls, quiet after ${lastChange - t0} ms`);
      return {
        quiet,
        syncedMs,
        quietAfterMs: lastChange - t0,
        cloudCalls: d.cloudCalls,
        cloudCallsByOperation: d.cloudByOperation,
      };
    };
    const current = await restart("restart-current", undefined);
    const baseline =
      o.baselineHubBin === undefined ? undefined : await restart("restart-baseline", o.baselineHubBin);
    return {
      ...header(o, fleet),
      restartCloudCalls: current.cloudCalls,
      restartCloudCallsByOperation: current.cloudCallsByOperation,
      restartSyncedMs: current.syncedMs,
      restartQuietAfterMs: current.quietAfterMs,
      ...(baseline !== undefined && {
        baselineHubBin: o.baselineHubBin,
        baselineRestartCloudCalls: baseline.cloudCalls,
        baselineRestartCloudCallsByOperation: baseline.cloudCallsByOperation,
        baselineRestartQuietAfterMs: baseline.quietAfterMs,
        restartCloudCallsRatio:
          current.cloudCalls > 0 ? round(baseline.cloudCalls / current.cloudCalls, 2) : null,
      }),
      converged: current.quiet && (baseline?.quiet ?? true),
    };
  });
}
