import type { ApplyResult } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import type { InstanceCache } from "../cloud/instance-cache.js";
import type { InstanceLookups } from "../cloud/instance-lookups.js";
import type { ClusterCloud } from "../cloud/scope.js";
import type { VerifiedInstances } from "../cloud/verified-instances.js";
import type { PodNetwork } from "../config/pod-network.js";
import type { HubConfig } from "../config/schema.js";
import type { ControllerName } from "../controllers.js";
import type { FleetListener, FleetState } from "../fleet/state.js";
import type { HubMetrics } from "../metrics.js";
import type { WorkKey, WorkQueue } from "../queue/index.js";
import type { Clock } from "../util/clock.js";
import type { Semaphore } from "../util/semaphore.js";
import type { ConvergenceTracker } from "./convergence.js";
import type { NodeInitProgress } from "./node-init/progress.js";
import type { Outcome } from "./outcome.js";

/** What every controller may use; built once by the hub. */
export interface ControllerContext {
  readonly config: HubConfig;
  readonly fleet: FleetState;
  readonly queue: WorkQueue;
  readonly tracker: ConvergenceTracker;
  readonly verified: VerifiedInstances;
  readonly metrics: HubMetrics;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Aborted on hub shutdown; passed to every cloud call a reconciler makes. */
  readonly signal?: AbortSignal;
  cloudFor(cluster: string): ClusterCloud | undefined;
  cacheFor(cluster: string): InstanceCache | undefined;
  lookupsFor(cluster: string): InstanceLookups | undefined;
  routeWritesFor(cluster: string): Semaphore | undefined;
  /** The account-wide bound on concurrent load-balancer syncs (absent: the controller's own). */
  loadBalancerOpsFor?(cluster: string): Semaphore | undefined;
  /** Node deletions (wall ms) recorded in the cluster's lease by any replica (hub replicas only). */
  recordedDeletions?(cluster: string): readonly number[];
  /** The cluster's pod network in the running configuration (reloads included). */
  podNetworkFor?(cluster: string): PodNetwork | undefined;
  /** The cluster is leaving the hub (clusters[].decommission): only its cleanup runs. */
  decommissioning?(cluster: string): boolean;
  /** Node-init's progress per cluster (first publications, those awaiting their reports), read by a new Service's wait for its nodes. */
  readonly nodeInitProgress?: NodeInitProgress;
}

/**
 * One upstream CCM controller, for every cluster. `triggers` only enqueue keys; `reconcile`
 * computes an Outcome for one key of one of its `kinds`; the hub's workers publish and requeue.
 * The hub calls triggers and reconcile only for clusters where the controller is enabled.
 */
export interface Controller {
  readonly name: ControllerName;
  readonly kinds: readonly string[];
  readonly triggers: FleetListener;
  reconcile(key: WorkKey): Promise<Outcome>;
  onApplyResult?(cluster: string, result: ApplyResult): void;
  /** This hub replica no longer acts for the cluster: forget what it gathered about it. */
  onReleased?(cluster: string): void;
}
