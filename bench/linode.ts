// The `linode` scenario: Linode API calls per hour for C clusters × M nodes in one Linode
// account, fleet-ccm (measured: a real hub, agents, NATS and API simulators against the fake
// Linode API) against C Linode CCMs (modelled: the Linode CCM's own periods and caches,
// played over one virtual hour), side by side, as a ratio.
//
// Time is compressed by --time-scale K for fleet-ccm: every periodic setting of the hub that
// reaches the cloud (refresh.periodMs, lifecycle.monitorPeriodMs) is divided by K, calls are
// counted over a real window W, and per-hour = calls × 3600 / (W × K).
import { pino } from "pino";
import type * as LinodeCloudModule from "../cli/dist/linode-cloud.js";
import type * as LocalFleetModule from "../cli/dist/local-fleet.js";
import { joinFleet, round, sleep, until } from "./util.js";

export interface LinodeBenchOptions {
  readonly clusters: number;
  readonly nodes: number;
  readonly services: number;
  readonly windowS: number;
  readonly timeScale: number;
  readonly timeoutS: number;
  readonly log: (line: string) => void;
}

/** The Linode CCM's periods (linode/linode-cloud-controller-manager and k8s.io/cloud-provider defaults). */
export const LINODE_CCM = {
  /** LINODE_INSTANCE_CACHE_TTL: the account's instance list is re-read at most this often. */
  instanceCacheTtlS: 15,
  /** Its node controller: Node informer resync; each Node re-read once its metadata is this old (LINODE_METADATA_TTL). */
  nodeControllerResyncS: 60,
  metadataTtlS: 300,
  /** The cloud node controller's UpdateNodeStatus (--node-status-update-frequency). */
  nodeStatusUpdateS: 300,
  /** linodego's page size for the instance list. */
  pageSize: 500,
} as const;

/**
 * One Linode CCM over one virtual hour in steady state (every Node Ready, no change): the
 * instance list (all pages) whenever a lookup finds the cache older than its TTL. Ready nodes
 * cost the lifecycle controller nothing; the service controller calls nothing while the node
 * set stays the same.
 */
export function linodeCcmSteadyCallsPerHour(nodes: number, pages: number, statusOffsetS = 7): number {
  const phaseS = 0;
  let cacheAt = Number.NEGATIVE_INFINITY;
  let calls = 0;
  const lookup = (t: number) => {
    if (t - cacheAt >= LINODE_CCM.instanceCacheTtlS) {
      cacheAt = t;
      calls += pages;
    }
  };
  const lastMeta = new Array<number>(nodes).fill(phaseS);
  const events: { t: number; kind: "resync" | "status" }[] = [];
  for (let t = phaseS; t < phaseS + 3600; t += LINODE_CCM.nodeControllerResyncS)
    events.push({ t, kind: "resync" });
  // The cloud node controller's period runs on its own clock, not aligned with the node controller's.
  for (let t = statusOffsetS; t < 3600; t += LINODE_CCM.nodeStatusUpdateS) events.push({ t, kind: "status" });
  events.sort((a, b) => a.t - b.t);
  for (const e of events) {
    if (e.kind === "status") {
      for (let n = 0; n < nodes; n++) lookup(e.t);
      continue;
    }
    for (let n = 0; n < nodes; n++)
      if (e.t - (lastMeta[n] ?? 0) >= LINODE_CCM.metadataTtlS) {
        lookup(e.t);
        lastMeta[n] = e.t;
      }
  }
  return calls;
}

/**
 * One node joining one Linode CCM's cluster: the instance list for its lookup, then for each
 * LoadBalancer Service UpdateLoadBalancer as the Linode CCM runs it: GET the NodeBalancer,
 * GET its firewalls, GET its configs, and per port GET the nodes and POST a rebuild.
 */
export function linodeCcmCallsPerNodeJoin(pages: number, services: number, portsPerService: number): number {
  return pages + services * (3 + 2 * portsPerService);
}

type Fleet = Awaited<ReturnType<typeof LocalFleetModule.LocalFleet.start>>;

export async function runLinode(o: LinodeBenchOptions): Promise<Record<string, unknown>> {
  const { LocalFleet } = (await import(
    new URL("../../cli/dist/local-fleet.js", import.meta.url).href
  )) as typeof LocalFleetModule;
  const { LinodeLocalCloud } = (await import(
    new URL("../../cli/dist/linode-cloud.js", import.meta.url).href
  )) as typeof LinodeCloudModule;
  const k = o.timeScale;
  const refreshPeriodMs = Math.round(300_000 / k);
  const clusterNames = Array.from(
    { length: o.clusters },
    (_, i) => `cluster-${String(i + 1).padStart(3, "0")}`,
  );
  const cloud = await LinodeLocalCloud.start(clusterNames, {
    rateLimitPerSecond: 1000,
    // One process holds the fake, the hub, every agent and API server: a slow answer is not the point.
    requestTimeoutMs: 30_000,
  });
  const fleet: Fleet = await LocalFleet.start({
    cloud,
    clusters: o.clusters,
    nodesPerCluster: 0,
    logger: pino({ level: "warn" }),
    hubConfig: {
      refresh: { periodMs: refreshPeriodMs, cacheScope: "account" },
      lifecycle: { monitorPeriodMs: Math.max(1, Math.round(5000 / k)) },
    },
  });
  const linode = cloud.fake;
  const calls = () => linode.log.stats().totalCalls;
  try {
    await fleet.startHub();
    await fleet.startAgents();
    o.log(
      `fleet up: ${o.clusters} clusters; registering ${o.clusters * o.nodes} nodes, ${o.clusters * o.services} Services`,
    );
    const { converged, joinMs, joined } = await joinFleet(fleet, o);
    const joinCalls = calls();
    o.log(
      `join ${converged ? "converged" : "did not converge"} in ${joinMs} ms, ${joinCalls} Linode API calls`,
    );
    /** Every Service's NodeBalancer has all `want` nodes of its cluster. */
    const backendsDone = (want: number) => {
      if (!joined()) return false;
      for (const c of fleet.clusters.keys()) {
        const account = cloud.account(c);
        for (const nb of linode.store.nodeBalancersOf(account))
          if (nb.tags.includes(`fccm:c=${c}`) && nb.configs.some((x) => x.nodes.length !== want))
            return false;
      }
      return true;
    };
    const settled = await until(() => backendsDone(o.nodes), o.timeoutS * 1000, 250);
    // Settle: two full refresh periods after the backends are complete, so the window is steady state.
    await sleep(2 * refreshPeriodMs + 2000);
    const before = calls();
    const opsBefore = { ...linode.log.stats().byOperation };
    await sleep(o.windowS * 1000);
    const windowCalls = calls() - before;
    const steadyByOperation: Record<string, number> = {};
    for (const [op, n] of Object.entries(linode.log.stats().byOperation)) {
      const d = n - (opsBefore[op] ?? 0);
      if (d > 0) steadyByOperation[op] = d;
    }
    const fleetPerHour = (windowCalls * 3600) / (o.windowS * k);
    o.log(`steady: ${windowCalls} calls in ${o.windowS} s at ${k}x time`);

    // The account's Linodes as the Linode CCMs would list them in steady state.
    const firstAccount = cloud.account([...fleet.clusters.keys()][0] ?? "");
    const totalLinodes = linode.store.linodesOf(firstAccount).length;

    // One node joins each cluster: its lookups, then every Service's backends.
    const beforeJoin = calls();
    for (const c of fleet.clusters.keys()) fleet.addNodes(c, 1);
    const rebuilt = await until(() => backendsDone(o.nodes + 1), o.timeoutS * 1000, 250);
    const perNodeJoinFleet = (calls() - beforeJoin) / o.clusters;

    // The Linode CCM model, with the page count the account's list really has.
    const pages = Math.max(1, Math.ceil(totalLinodes / LINODE_CCM.pageSize));
    let ccmPerHour = 0;
    // Each CCM's two clocks are offset differently (spread over the 300 s period, deterministic).
    for (let i = 0; i < o.clusters; i++)
      ccmPerHour += linodeCcmSteadyCallsPerHour(o.nodes, pages, (i * 97) % LINODE_CCM.nodeStatusUpdateS);
    const perNodeJoinCcm = linodeCcmCallsPerNodeJoin(pages, o.services, 1);
    return {
      scenario: "linode",
      clusters: o.clusters,
      nodesPerCluster: o.nodes,
      servicesPerCluster: o.services,
      linodesInAccount: totalLinodes,
      instanceListPages: pages,
      timeScale: k,
      windowS: o.windowS,
      converged: converged && settled && rebuilt,
      joinMs,
      joinCalls,
      fleetCcmCallsPerHour: round(fleetPerHour, 1),
      fleetCcmSteadyCallsByOperation: steadyByOperation,
      linodeCcmCallsPerHour: ccmPerHour,
      callsPerHourRatio: fleetPerHour > 0 ? round(ccmPerHour / fleetPerHour, 1) : null,
      fleetCcmCallsPerNodeJoin: round(perNodeJoinFleet, 1),
      linodeCcmCallsPerNodeJoin: perNodeJoinCcm,
      model: LINODE_CCM,
    };
  } finally {
    await fleet.stop();
  }
}
