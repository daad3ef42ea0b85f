import { Counter, Gauge, Histogram, type LabelValues, Registry } from "prom-client";
import { type BusyLoopDelay, collectProcessMetrics } from "./event-loop-delay.js";
import { LabelledCounter, LabelledHistogram } from "./util/labelled-metrics.js";

/** The hub's Prometheus series. One instance per hub (no global registry), so tests can run several hubs. */
export class HubMetrics {
  readonly registry = new Registry();

  readonly streamsConnected = new Gauge({
    name: "fleet_ccm_hub_streams_connected",
    help: "Agent gRPC streams currently open.",
    registers: [this.registry],
  });

  readonly clustersSynced = new Gauge({
    name: "fleet_ccm_hub_clusters_synced",
    help: "Clusters whose agent is connected and whose snapshot is applied.",
    registers: [this.registry],
  });

  readonly queueDepth = new Gauge({
    name: "fleet_ccm_hub_queue_depth",
    help: "Work keys waiting to be reconciled (ready, not delayed).",
    registers: [this.registry],
  });

  /** Observed after every reconcile: bound by label values (LabelledHistogram.series). */
  readonly reconcileDuration = new LabelledHistogram({
    name: "fleet_ccm_reconcile_duration_seconds",
    help: "Time one reconcile took, by controller and requeue outcome.",
    labelNames: ["controller", "outcome"] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  /** Counted on a hot path: bound by label values (LabelledCounter.series). */
  readonly cloudCalls = new LabelledCounter({
    name: "fleet_ccm_cloud_calls_total",
    help: "Cloud API calls, by provider, account, operation and outcome.",
    labelNames: ["provider", "account", "op", "outcome"] as const,
    registers: [this.registry],
  });

  /** Observed after every cloud call: bound by label values (LabelledHistogram.series). */
  readonly cloudCallDuration = new LabelledHistogram({
    name: "fleet_ccm_cloud_call_duration_seconds",
    help: "Cloud API call latency, by provider and operation (rate-limit wait excluded).",
    labelNames: ["provider", "op"] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** Counted on a hot path: bound by label values (LabelledCounter.series). */
  readonly patchesPublished = new LabelledCounter({
    name: "fleet_ccm_desired_published_total",
    help: "Desired patches and events published to agents over NATS, by kind.",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });

  /** Counted on a hot path: bound by label values (LabelledCounter.series). */
  readonly applyResults = new LabelledCounter({
    name: "fleet_ccm_apply_results_total",
    help: "Apply results reported by agents, by outcome.",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  readonly nodesInitialized = new Counter({
    name: "fleet_ccm_nodes_initialized_total",
    help: "Nodes whose initialization the hub saw converge (uninitialized taint gone).",
    registers: [this.registry],
  });

  readonly nodeInitHubOverhead = new Histogram({
    name: "fleet_ccm_node_init_hub_overhead_seconds",
    help: "Node initialization inside the hub: first report of the node to its patch published, minus the cloud lookup.",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly lifecycleChecks = new Counter({
    name: "fleet_ccm_lifecycle_checks_total",
    help: "Direct instance lookups of nodes that are not Ready, by outcome (exists, not-found, error).",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  readonly lifecycleDeletions = new Counter({
    name: "fleet_ccm_lifecycle_node_deletions_total",
    help: "Nodes deleted because their instance is confirmed gone.",
    registers: [this.registry],
  });

  readonly lifecycleDeletionsBlocked = new Counter({
    name: "fleet_ccm_lifecycle_deletions_blocked_total",
    help: "Node deletions held back by the per-cluster blast-radius limit.",
    registers: [this.registry],
  });

  readonly routeOperations = new Counter({
    name: "fleet_ccm_route_operations_total",
    help: "Route creations and deletions, by operation and outcome.",
    labelNames: ["op", "outcome"] as const,
    registers: [this.registry],
  });

  readonly streamsRefused = new Counter({
    name: "fleet_ccm_hub_streams_refused_total",
    help: "Agent streams the hub refused or ended, by cluster (empty when no credential named one), gRPC code and reason (token, identity, version, stream-limit, stream-rate, protocol, malformed, message-size, sequence, chunk-size, delta-rate, idle, revoked, shutdown).",
    labelNames: ["cluster", "code", "reason"] as const,
    registers: [this.registry],
  });

  readonly instancesOutOfScope = new Counter({
    name: "fleet_ccm_instances_out_of_scope_total",
    help: "providerIDs a cluster reported that resolve to an instance outside its scope (account, region, network, tags): refused with an InstanceOutOfScope Event, never initialized, put behind a load balancer, routed to or deleted.",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
  });

  // Ingest safety: refused objects and held snapshot drops.
  readonly objectsRefused = new Counter({
    name: "fleet_ccm_objects_refused_total",
    help: "Objects an agent reported that the hub refused (left out of its view, Warning Event ObjectRefused), by kind and the limit broken.",
    labelNames: ["kind", "reason"] as const,
    registers: [this.registry],
  });

  readonly snapshotDrops = new Counter({
    name: "fleet_ccm_snapshot_drops_total",
    help: "Objects a snapshot no longer listed, by kind and outcome: removed (small drop), held (large drop kept in the view), confirmed (held, then removed), released (held, then listed again).",
    labelNames: ["kind", "outcome"] as const,
    registers: [this.registry],
  });

  /** Set by the hub: objects held now, read at each scrape. */
  heldObjects: () => number = () => 0;

  readonly objectsHeld = new Gauge({
    name: "fleet_ccm_snapshot_objects_held",
    help: "Objects currently held in the hub's view after a large snapshot drop, awaiting confirmation.",
    registers: [this.registry],
    collect: () => {
      this.objectsHeld.set(this.heldObjects());
    },
  });

  readonly routesHeld = new Gauge({
    name: "fleet_ccm_routes_held",
    help: "Owned routes no node claims that are kept until their release is confirmed (all clusters).",
    registers: [this.registry],
  });

  readonly ipamNodesWaiting = new Gauge({
    name: "fleet_ccm_ipam_nodes_waiting",
    help: "Nodes without pod CIDRs that get none because a CIDR of the cluster's pod network has no free range (CIDRNotAvailable Event on each), at the cluster's last IPAM pass.",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
  });

  readonly ipamRangesFree = new Gauge({
    name: "fleet_ccm_ipam_ranges_free",
    help: "Node ranges left in each CIDR of a cluster's pod network, at the cluster's last IPAM pass.",
    labelNames: ["cluster", "cidr"] as const,
    registers: [this.registry],
  });

  readonly routeCidrConflicts = new Gauge({
    name: "fleet_ccm_route_cidr_conflicts",
    help: "Pod CIDRs of live nodes not routed because they equal or overlap another live node's in the same cluster (that node keeps the range; PodCIDRConflict Event on this one), at the cluster's last route reconcile.",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
  });

  readonly routeDeletionsBlocked = new Counter({
    name: "fleet_ccm_route_deletions_blocked_total",
    help: "Confirmed deletions of unclaimed routes held back by the per-cluster blast-radius limit.",
    registers: [this.registry],
  });

  // Fleet state, computed at each scrape from the hooks the hub sets.
  /** Per configured cluster: whether its agent's stream is open, and seconds since it last closed (since the hub started if none opened). */
  clusterAgents: () => readonly ClusterAgentStat[] = () => [];
  /** Per cluster running cloud-node-controller: nodes still tainted uninitialized, and the oldest one's age. */
  nodesWaiting: () => readonly NodesWaitingStat[] = () => [];
  /** Per cluster and state: Services that want a load balancer from this hub. */
  loadBalancers: () => readonly LoadBalancerStat[] = () => [];

  readonly agentConnected = new Gauge({
    name: "fleet_ccm_cluster_agent_connected",
    help: "1 while the cluster's agent has a stream open to this hub, else 0 (every configured cluster).",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
    collect: () => {
      this.agentConnectedSeries.update(
        this.clusterAgents().map((a) => [{ cluster: a.cluster }, a.connected ? 1 : 0]),
      );
    },
  });
  private readonly agentConnectedSeries = new ScrapedSeries(this.agentConnected);

  readonly agentDisconnected = new Gauge({
    name: "fleet_ccm_cluster_agent_disconnected_seconds",
    help: "Seconds since the cluster's agent last had a stream open to this hub (since the hub started if it never had); 0 while connected.",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
    collect: () => {
      this.agentDisconnectedSeries.update(
        this.clusterAgents().map((a) => [{ cluster: a.cluster }, a.disconnectedSeconds]),
      );
    },
  });
  private readonly agentDisconnectedSeries = new ScrapedSeries(this.agentDisconnected);

  readonly nodesWaitingInit = new Gauge({
    name: "fleet_ccm_nodes_waiting_initialization",
    help: "Nodes still carrying the uninitialized taint, per cluster running cloud-node-controller.",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
    collect: () => {
      this.nodesWaitingInitSeries.update(this.nodesWaiting().map((w) => [{ cluster: w.cluster }, w.count]));
    },
  });
  private readonly nodesWaitingInitSeries = new ScrapedSeries(this.nodesWaitingInit);

  readonly nodesWaitingOldest = new Gauge({
    name: "fleet_ccm_nodes_waiting_initialization_oldest_seconds",
    help: "Age (from its creationTimestamp) of the oldest node still waiting for initialization, per cluster; 0 when none waits.",
    labelNames: ["cluster"] as const,
    registers: [this.registry],
    collect: () => {
      this.nodesWaitingOldestSeries.update(
        this.nodesWaiting().map((w) => [{ cluster: w.cluster }, w.oldestSeconds]),
      );
    },
  });
  private readonly nodesWaitingOldestSeries = new ScrapedSeries(this.nodesWaitingOldest);

  readonly loadBalancersByState = new Gauge({
    name: "fleet_ccm_load_balancers",
    help: "LoadBalancer Services this hub serves, per cluster and state: ready (has an ingress, last sync ok), pending (no ingress yet), failing (last sync failed, retrying with backoff).",
    labelNames: ["cluster", "state"] as const,
    registers: [this.registry],
    collect: () => {
      this.loadBalancersByStateSeries.update(
        this.loadBalancers().map((l) => [{ cluster: l.cluster, state: l.state }, l.count]),
      );
    },
  });
  private readonly loadBalancersByStateSeries = new ScrapedSeries(this.loadBalancersByState);

  /**
   * Drops the series a cluster's reconciles set (routes, IPAM): those of a cluster removed from
   * the configuration, or handed to another replica, would otherwise be exported for ever.
   */
  async forgetCluster(cluster: string): Promise<void> {
    await dropSeries(this.routeCidrConflicts, cluster);
    await dropSeries(this.ipamNodesWaiting, cluster);
    await dropSeries(this.ipamRangesFree, cluster);
  }

  /** The event-loop delay histogram behind nodejs_eventloop_lag_*: absent without process metrics. */
  private readonly loopDelay: BusyLoopDelay | undefined;

  constructor(withProcessMetrics = true) {
    // The event-loop delay series sample only while the loop works (event-loop-delay.ts).
    if (withProcessMetrics) this.loopDelay = collectProcessMetrics(this.registry);
  }

  /** Stops the event-loop delay sampling. */
  stop(): void {
    this.loopDelay?.stop();
  }
}

/**
 * The series of a gauge recomputed at each scrape: those given are set (in place where they
 * exist), those not given again are removed. reset() and set would rebuild every series at
 * each scrape: thousands of objects at 500 clusters, alive until the next scrape, long enough
 * to be promoted, and so old-generation garbage that an idle hub collects in major collections.
 */
class ScrapedSeries<T extends string> {
  /** Each series set, by its label values, with the scrape that last set it. */
  private readonly held = new Map<string, { readonly labels: LabelValues<T>; scrape: number }>();
  private scrape = 0;

  constructor(private readonly gauge: Gauge<T>) {}

  update(series: readonly (readonly [LabelValues<T>, number])[]): void {
    const scrape = ++this.scrape;
    for (const [labels, value] of series) {
      this.gauge.set(labels, value);
      const key = Object.values(labels).join("\u0000");
      const held = this.held.get(key);
      if (held === undefined) this.held.set(key, { labels, scrape });
      else held.scrape = scrape;
    }
    for (const [key, { labels, scrape: last }] of this.held)
      if (last !== scrape) {
        this.gauge.remove(labels);
        this.held.delete(key);
      }
  }
}

export interface ClusterAgentStat {
  readonly cluster: string;
  readonly connected: boolean;
  readonly disconnectedSeconds: number;
}

export interface NodesWaitingStat {
  readonly cluster: string;
  readonly count: number;
  readonly oldestSeconds: number;
}

export type LoadBalancerState = "ready" | "pending" | "failing";

export interface LoadBalancerStat {
  readonly cluster: string;
  readonly state: LoadBalancerState;
  readonly count: number;
}

async function dropSeries<T extends string>(gauge: Gauge<T | "cluster">, cluster: string): Promise<void> {
  for (const v of (await gauge.get()).values)
    if (v.labels["cluster" as T | "cluster"] === cluster) gauge.remove(v.labels);
}
