import type { SecretReference } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import type { z } from "zod";
import type { LabelSelector } from "../k8s/label-selector.js";
import type { Clock } from "../util/clock.js";
import type { SettingBounds } from "./annotation-bounds.js";

/** Node address as Kubernetes has it in status.addresses. */
export interface NodeAddress {
  readonly type: "Hostname" | "InternalIP" | "ExternalIP" | "InternalDNS" | "ExternalDNS";
  readonly address: string;
}

export type InstanceState = "pending" | "running" | "stopping" | "stopped" | "terminated" | "unknown";

/** What the cloud says about one instance (InstanceMetadata upstream, plus scope facts). */
export interface InstanceMetadata {
  /** `<provider>://<instance id>`, the node's spec.providerID. */
  readonly providerID: string;
  readonly instanceID: string;
  readonly name: string;
  readonly instanceType: string;
  readonly region: string;
  readonly zone: string;
  readonly addresses: readonly NodeAddress[];
  readonly state: InstanceState;
  /** VPC / network the instance is attached to, where the cloud has one. */
  readonly network?: string;
  /** Vendor tags/labels, used for ownership and scope checks. */
  readonly tags: Readonly<Record<string, string>>;
  readonly additionalLabels?: Readonly<Record<string, string>>;
}

export interface InstanceListPage {
  readonly instances: readonly InstanceMetadata[];
  /** Absent on the last page. */
  readonly nextPageToken?: string;
}

/** Required capability. Lookups throw InstanceNotFoundError only on a direct, authoritative "not found". */
export interface Instances {
  getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata>;
  /**
   * Every instance called exactly `name` in the account's region (all pages; terminated ones
   * included, marked so). Names are not identities: the caller picks by its cluster's scope. An
   * empty answer to this direct query is a "not found".
   */
  findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]>;
  /** One page of the account's instances in the bound region; for batched refresh, never for deletion. */
  listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage>;
  /** The instance id if `providerID` belongs to this provider, else undefined. */
  parseProviderID(providerID: string): string | undefined;
}

export interface CloudProvider {
  /** The providerID scheme, e.g. "simulated", "linode", "aws". */
  readonly name: string;
  readonly instances: Instances;
  /** Absent: the provider has no load balancers (checked once, like upstream's LoadBalancer() bool). */
  readonly loadBalancers?: LoadBalancers;
  /** Absent: the provider has no VPC routes. */
  readonly routes?: Routes;
  /** Absent: the provider looks up no disks (its clusters' PersistentVolumes are not followed). */
  readonly volumes?: Volumes;
}

// ---- Cluster scope ------------------------------------------------------------------------------

/** Instances and resources a cluster may use, beyond its account and region (clusters[] in the config). */
export interface ClusterScope {
  readonly network?: string | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
  /** The operator's opt-in to adopt the vendor CCM's load balancers (clusters[].adoptFrom). */
  readonly adoptFrom?: AdoptFrom | undefined;
}

/**
 * The cluster a load-balancer or route call acts for. Providers are bound per account and
 * shared by its clusters, so everything per cluster comes here, never from the account
 * binding: `network` is the cluster's own (clusters[].network, else the account's), the one
 * its routes are programmed in and its resources are checked against.
 */
export interface ClusterTarget {
  readonly cluster: string;
  readonly network?: string | undefined;
  readonly scope: ClusterScope;
}

/** One Service of a cluster: whose load balancer a call is about (an LbOwner with its cluster's scope). */
export interface ServiceTarget extends ClusterTarget, LbOwner {}

// ---- Asynchronous operations ------------------------------------------------------------------

/**
 * A mutation the cloud accepted but has not finished (an operation to poll, a PENDING_* state):
 * the caller looks again after `retryAfterMs`, repeating the same idempotent call. An answer,
 * never an error: no failure Event, no backoff, no worker waiting on a poll.
 */
export interface InProgress {
  readonly kind: "in-progress";
  readonly retryAfterMs: number;
  /** What the cloud is doing, for logs (e.g. "load balancer provisioning"). */
  readonly message: string;
}

export function inProgress(retryAfterMs: number, message: string): InProgress {
  return { kind: "in-progress", retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)), message };
}

export function isInProgress(value: unknown): value is InProgress {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { kind?: unknown }).kind === "in-progress" &&
    typeof (value as { retryAfterMs?: unknown }).retryAfterMs === "number"
  );
}

/**
 * externalTrafficPolicy Local, as the spec shows it: an HTTP check on a port no listener sends
 * traffic to, kube-proxy's healthCheckNodePort (the reconciler's health check puts it there).
 */
export function checksHealthCheckNodePort(spec: LoadBalancerSpec): boolean {
  const hc = spec.healthCheck;
  return hc.protocol === "HTTP" && hc.port > 0 && !spec.listeners.some((l) => l.nodePort === hc.port);
}

// ---- Load balancers -------------------------------------------------------------------------

export type LbProtocol = "TCP" | "UDP" | "SCTP" | "HTTP" | "HTTPS";

export interface LbListener {
  readonly protocol: LbProtocol;
  /** The Service port clients connect to. */
  readonly port: number;
  /** Where traffic goes on each backend instance. */
  readonly nodePort: number;
  readonly proxyProtocol: boolean;
  /** The Service port's name, for vendor settings that name ports (e.g. AWS ssl-ports). */
  readonly name?: string;
}

export interface LbHealthCheck {
  readonly protocol: "TCP" | "HTTP";
  readonly port: number;
  /** HTTP only. */
  readonly path: string;
  readonly intervalSeconds: number;
  readonly timeoutSeconds: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
}

/**
 * Whose load balancer: the hub addresses load balancers by owner only. How the cloud records
 * ownership (names, tags, labels, descriptions) and finds it again after a crash is the
 * provider's knowledge; the hub never sees a name or a tag.
 */
export interface LbOwner {
  readonly cluster: string;
  readonly serviceUid: string;
}

/** Just the owner of a call's target: what a provider reports as a load balancer's owner. */
export function lbOwner(of: LbOwner): LbOwner {
  return { cluster: of.cluster, serviceUid: of.serviceUid };
}

/** Everything the hub wants a Service's load balancer to be. Sub-resources are derived from it. */
export interface LoadBalancerSpec {
  readonly listeners: readonly LbListener[];
  /** Instance ids (not providerIDs) of the backends, sorted. */
  readonly backends: readonly string[];
  /**
   * Per backend instance id, its node's vendor annotations (forwarded under the provider's
   * annotationPrefixes), for providers that honour per-node settings of a vendor CCM (an
   * address override, say); only backends whose node has any, absent when none has.
   */
  readonly backendAnnotations?: BackendAnnotations;
  readonly healthCheck: LbHealthCheck;
  /** Allowed client CIDRs; empty = open to all. */
  readonly sourceRanges: readonly string[];
  readonly sessionAffinity: "None" | "ClientIP";
  readonly idleTimeoutSeconds: number;
  readonly internal: boolean;
  /**
   * The Service's spec.loadBalancerIP (deprecated in Kubernetes, still honoured by vendor CCMs:
   * a user-reserved address to use); absent when unset.
   */
  readonly loadBalancerIP?: string;
  /** The Service's namespace/name, for vendors that tag it (kubernetes.io/service-name). */
  readonly serviceName?: string;
  /**
   * The Service's annotations as forwarded (the provider's annotationPrefixes and the hub's own
   * keys) when any vendor key is among them, for providers that honour a vendor CCM's settings
   * (a unified key set here wins over the vendor's); absent when there is no vendor key.
   */
  readonly annotations?: Readonly<Record<string, string>>;
  /**
   * Certificate material: the Secrets the Service's annotations name under the provider's
   * `secretReferences`, by Secret name, from the Service's own namespace in its own cluster, as
   * the agent last read them. Absent when the Service names none. Never logged, never in an
   * Event; spec digests hold only hashes of it (naming.ts).
   */
  readonly secrets?: Readonly<Record<string, LbSecret>>;
}

/** Instance id → the node's vendor annotations (LoadBalancerSpec.backendAnnotations). */
export type BackendAnnotations = Readonly<Record<string, Readonly<Record<string, string>>>>;
/** One Secret a Service names: the keys its reference asks for (UTF-8, e.g. PEM), or why not. */
export type LbSecret =
  | { readonly data: Readonly<Record<string, string>>; readonly problem?: undefined }
  | { readonly data?: undefined; readonly problem: string };

/**
 * What the hub knows of the Service beyond the spec, for providers that take over from a
 * vendor CCM: it finds the load balancer that CCM made by the Service's current ingress, and
 * reads its delete-time annotations (keep the load balancer, say).
 */
export interface LbServiceHints {
  /** The Service's annotations as forwarded to the hub. */
  readonly annotations: Readonly<Record<string, string>>;
  /** status.loadBalancer.ingress as the Service shows it now. */
  readonly ingress: readonly LbIngress[];
  /**
   * Records a Warning Event on the Service for a setting the provider left as it is and went on
   * (as a vendor CCM warns, e.g. Linode's NodeBalancerIPChangeIgnored); absent in tests.
   */
  readonly warn?: (reason: string, message: string) => void;
  /**
   * Sets an annotation the vendor CCM keeps on the Service for its load balancer (DigitalOcean's
   * `kubernetes.digitalocean.com/load-balancer-id`, say), written with the ingress once ensure
   * succeeds, so a user going back to the vendor CCM keeps the load balancer. Only keys among
   * `capabilities.serviceAnnotationKeys`; absent in tests.
   */
  readonly annotate?: (key: string, value: string) => void;
}

/**
 * Which vendor-CCM load balancers a cluster may take over while migrating (clusters[].adoptFrom,
 * in ClusterScope). Absent: a load balancer the hub did not make is never adopted, whatever the
 * Service's annotations or ingress say.
 */
export interface AdoptFrom {
  /** The vendor CCM's --cluster-name for this cluster, as it marks what it makes. */
  readonly vendorCcmClusterName: string;
}

export interface LbIngress {
  readonly ip?: string;
  readonly hostname?: string;
  /**
   * status.loadBalancer.ingress[].ipMode, with an ip only. "Proxy": the load balancer rewrites
   * the traffic (PROXY protocol, say), so kube-proxy must not short-cut in-cluster traffic to
   * the ip straight to the pods. Absent: the API server's default, VIP.
   */
  readonly ipMode?: "Proxy";
}

/** What exists in the cloud for one load balancer, as the provider found it. */
export interface LoadBalancerState {
  readonly id: string;
  /** The cloud's name for it (logs). */
  readonly name: string;
  /** Who owns it, as the provider determined. */
  readonly owner: LbOwner;
  readonly ingress: readonly LbIngress[];
  readonly backends: readonly string[];
}

/** One page of the load balancers the hub owns in an account (all clusters). */
export interface OwnedLoadBalancerPage {
  readonly items: readonly OwnedLoadBalancer[];
  /** Absent on the last page. */
  readonly nextPageToken?: string;
}

/** A load balancer of the account-wide listing: whose it is and what clients reach. */
export interface OwnedLoadBalancer {
  readonly id: string;
  readonly name: string;
  readonly owner: LbOwner;
  readonly ingress: readonly LbIngress[];
  /**
   * `loadBalancerSpecDigest` and `backendsDigest` (naming.ts, with the backend annotations it
   * was given) of what the provider last made the cloud match, recorded only after it did. Absent where the vendor has no place to keep
   * them: a restarted hub then ensures the Service once.
   */
  readonly specDigest?: string;
  readonly backendsDigest?: string;
}

export interface LoadBalancerCapabilities {
  readonly sessionAffinity: boolean;
  readonly proxyProtocol: boolean;
  readonly internal: boolean;
  readonly protocols: readonly LbProtocol[];
  /**
   * false: nothing the provider builds depends on its backends' node annotations, so the hub
   * passes none (`backendAnnotations` absent, backend digests of the ids alone) and a provider
   * may derive `backendsDigest` from the cloud's own member lists.
   */
  readonly readsNodeAnnotations?: boolean;
  /** Most backends one pool takes (undefined: no limit). */
  readonly maxBackends?: number;
  /**
   * The Service's ingress entries show the hostname beside the IP (the vendor CCM writes both,
   * as Linode's does); otherwise an entry with an IP shows the IP alone.
   */
  readonly ingressIpWithHostname?: boolean;
  /**
   * The Service annotation keys LbServiceHints.annotate may set (exact keys, each under one of
   * the factory's annotationPrefixes, so the hub sees what is set): the hub writes only these,
   * so a provider cannot touch any other annotation of a Service.
   */
  readonly serviceAnnotationKeys?: readonly string[];
  /**
   * Tighter bounds than the hub's for unified settings, from the vendor's documented limits (a
   * value the hub takes but this cloud refuses is refused before any call, naming the bound).
   */
  readonly settingBounds?: SettingBounds;
  /**
   * The vendor's quotas one Service can exceed by itself, for a Service with these annotations
   * (the kind of load balancer they select may have its own). The service reconciler refuses a
   * Service beyond any of them before any cloud call, with a Warning Event naming the quota,
   * instead of building part of a load balancer the cloud then refuses to finish.
   */
  readonly quotas?: (annotations: Readonly<Record<string, string>>) => readonly LbQuota[];
  /**
   * false when the load balancer built from this spec sends neither traffic nor health checks to
   * the listeners' node ports (GCP's target pools reach the Service port on the node). Undefined
   * or true: a Service port without a node port (spec.allocateLoadBalancerNodePorts false) gets
   * no listener, and a Service with none is refused (reconcilers/service/node-ports.ts).
   */
  readonly usesNodePorts?: (spec: LoadBalancerSpec) => boolean;
}

/** A vendor quota on one load balancer (LoadBalancerCapabilities.quotas). */
export type LbQuota = {
  /** The vendor's name for it, as its quota documentation has it (shown in the Event). */
  readonly name: string;
  /** The vendor's default: a raised quota is set in the provider's options where it has one. */
  readonly limit: number;
} & (
  | /** One listener per distinct Service port. */ { readonly counts: "listeners" }
  | {
      /**
       * The firewall rules the provider writes: one per listener and source range (the
       * Service's source ranges, or one open range), plus `extraRulesPerSource`; IPv4 and IPv6
       * ranges are counted apart, as clouds count them.
       */
      readonly counts: "sourceRules";
      readonly extraRulesPerSource?: number;
    }
  | /** What the provider counted from the annotations (e.g. security groups they name). */ {
      readonly counts: "annotations";
      readonly used: number;
    }
);

/**
 * The key of the shared cloud object a write changes (Azure's load balancer of a cluster, a
 * route table, a Neutron router, a Linode VPC interface's ranges), or undefined when the write
 * changes only objects of its own. The hub never runs two writes of one key at once (per
 * account); a provider whose writes can still collide (another replica, another tool) throws
 * ConflictError, which the hub retries at once with fresh state. A provider that coalesces the
 * writes of one object itself declares none (Azure's shared-writer.ts: every pending edit in one
 * read and one PUT with If-Match, where a lock would make one PUT per Service).
 */
export type LockKey = string | undefined;

/**
 * Optional capability. Every method is idempotent and safe to repeat after a crash at any
 * point: the provider finds the owner's resources again (deterministic names, ownership
 * marks), never creates them twice, and never touches what another owner (or nobody it
 * knows) holds. Every call names the Service and its cluster's scope (ServiceTarget): one
 * provider serves every cluster of its account at once.
 */
export interface LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities;
  /**
   * Reads the provider's own Service annotations (its vendor keys) without any call; throws
   * AnnotationError (annotation-bounds.ts) on a value their settings cannot take. The service
   * reconciler runs it before any cloud call for the Service; ensure reads them the same way.
   */
  checkAnnotations?(annotations: Readonly<Record<string, string>>): void;
  /**
   * The nodes this Service's load balancer targets, as the vendor CCM's annotation selects them
   * by label (Hetzner's `node-selector`); undefined: every eligible node. No call; throws
   * AnnotationError on a selector that does not parse. The hub filters the backends by it, so
   * a node's label change re-syncs the Services of a cluster whose provider has this.
   */
  nodeSelector?(annotations: Readonly<Record<string, string>>): LabelSelector | undefined;
  /** The shared object ensure, updateBackends and ensureDeleted of this Service write (LockKey). Absent: none. */
  lockKey?(target: ServiceTarget): LockKey;
  /** The owner's load balancer if it exists; undefined if absent. */
  get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined>;
  /**
   * Creates or updates in place every sub-resource so the cloud matches `spec`; returns the
   * ingress once the load balancer is ready, or InProgress while the cloud is still working
   * (the caller calls again after the delay). An operation that answered InProgress and then
   * failed in the cloud is reported by the next call as OperationFailedError, read from the
   * cloud (any replica sees it), never from the provider's memory alone.
   */
  ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress>;
  /**
   * Replaces only the backends (node set or a backend node's vendor annotations changed);
   * InProgress while the cloud applies it. `backendAnnotations` as in LoadBalancerSpec.
   */
  updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
    backendAnnotations?: BackendAnnotations,
  ): Promise<undefined | InProgress>;
  /**
   * Deletes the owner's load balancer and every sub-resource of it (including orphans of an
   * interrupted create). Succeeds when nothing is left; InProgress while the cloud is still
   * deleting; never deletes what is not the owner's.
   */
  ensureDeleted(
    target: ServiceTarget,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<undefined | InProgress>;
  /**
   * One page of every load balancer this hub owns in the account, any cluster: re-verifying
   * thousands of Services takes a few list calls, not one chain per Service. Absent: the
   * provider cannot list (each Service is verified on its own).
   */
  listOwned?(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage>;
}

// ---- Routes -----------------------------------------------------------------------------------

/** Where a route sends a destination. */
export interface RouteTarget {
  readonly destinationCIDR: string;
  readonly targetInstanceID: string;
}

export interface CloudRoute extends RouteTarget {
  /** Provider id of the route (for deletion). */
  readonly id: string;
  /**
   * The cluster that owns the route, as the provider determined it (tags, names, descriptions,
   * a route table per cluster: the vendor's way); absent when no cluster of this hub owns it.
   */
  readonly ownerCluster?: string;
}

/** Optional capability: routes in the route table of the cluster's network (ClusterTarget.network). */
export interface Routes {
  /** The shared object a create or delete of `route` writes (a route table, a router, an instance's interface): LockKey. */
  lockKey?(cluster: ClusterTarget, route: RouteTarget): LockKey;
  /**
   * Every route of the cluster's network's route table (all pages), any owner. Used to create
   * and to remove stale owned routes only.
   */
  list(cluster: ClusterTarget, signal?: AbortSignal): Promise<readonly CloudRoute[]>;
  /**
   * Creates a route owned by the cluster: the created route, or InProgress while the cloud
   * creates it (listed once done).
   */
  create(cluster: ClusterTarget, route: RouteTarget, signal?: AbortSignal): Promise<CloudRoute | InProgress>;
  delete(cluster: ClusterTarget, route: CloudRoute, signal?: AbortSignal): Promise<undefined | InProgress>;
}

// ---- Volumes ----------------------------------------------------------------------------------

export type DiskState = "creating" | "available" | "in-use" | "deleting" | "error" | "unknown";

/** What the cloud says of one disk: where it is (upstream GetLabelsForVolume's answer) and what it costs. */
export interface DiskMetadata {
  /** The vendor's disk id, as parseVolumeHandle gives it. */
  readonly id: string;
  readonly region: string;
  /**
   * The zones the disk is in: one for a zonal disk, every zone it spans for a regional one;
   * empty where the vendor's disks have a region only (then only the region label is set).
   */
  readonly zones: readonly string[];
  readonly sizeGiB: number;
  readonly state: DiskState;
  /** The instance id it is attached to; absent when detached. */
  readonly attachedTo?: string;
  /**
   * The clusters the disk's ownership tags name (the vendor's CSI driver's and in-tree
   * provisioner's tags, read by the provider); empty: no cluster's.
   */
  readonly ownerClusters: readonly string[];
  /** The vendor's name or label for it (reports). */
  readonly name?: string;
  readonly createdAt?: Date;
}

/** The disk a PersistentVolume names: its id and, if the handle says, its zone. */
export interface DiskRef {
  readonly id: string;
  readonly zone?: string;
}

/**
 * Optional capability: cloud disks behind the PersistentVolumes of the provider's clusters. Reads
 * only; the hub labels PVs from the answers and reports disks nobody claims. A provider is bound
 * to its account and region: lookups answer for the account, and the hub checks each disk
 * against the asking cluster (region, ownership tags) itself.
 */
export interface Volumes {
  /** The PV sources of this provider's disks: agents forward exactly these PersistentVolumes. */
  readonly sources: { readonly inTree: readonly string[]; readonly csiDrivers: readonly string[] };
  /** Most ids one getMany takes. */
  readonly maxBatch: number;
  /**
   * The disk a PV's source names (`source`: an in-tree source name or "csi"; `csiDriver` for csi;
   * `handle`: volumeID, pdName, diskURI or volumeHandle), or undefined if it is not this
   * provider's disk or does not parse. No call.
   */
  parseVolumeHandle(source: string, csiDriver: string, handle: string): DiskRef | undefined;
  /** One disk of the account; throws DiskNotFoundError only on a direct, authoritative "not found". */
  get(id: string, signal?: AbortSignal): Promise<DiskMetadata>;
  /**
   * The disks of these ids (at most maxBatch) that the account has, in one call or its pages;
   * an id not found is left out (the caller asks `get` before concluding anything from it).
   */
  getMany(ids: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]>;
  /** Every disk of the account whose ownership tags name one of `clusters` (all pages). */
  listOwned(clusters: readonly string[], signal?: AbortSignal): Promise<readonly DiskMetadata[]>;
}

/** What a provider gets from the hub: its account, a logger, a clock. Never global state. */
export interface ProviderContext {
  readonly account: AccountBinding;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Every cloud call goes through this (rate limit, metrics). */
  readonly call: CloudCallWrapper;
  /**
   * The networks the account's clusters are in (each cluster's own, else the account's), for
   * account-wide reads that must cover every cluster: instance listings, an instance's network
   * and VPC addresses. Re-read per call (a configuration reload changes it). `undefined` in the
   * list: a cluster with no network at all (nothing filters by network then). Absent: the
   * account's network alone.
   */
  readonly clusterNetworks?: () => readonly (string | undefined)[];
  /**
   * What the vendor's answer said is left of the account's own rate limit (its rate-limit
   * headers): the account's limiter never spends more than that, and waits for the vendor's
   * next free call when nothing is left. Shared by every cluster and replica of the account.
   */
  readonly rateBudget?: (budget: RateBudget) => void;
}

/** Calls per second and how many may go at once. */
export interface RateLimit {
  readonly perSecond: number;
  readonly burst: number;
}

/** Where the vendor's rate-limit headers say the account stands (ProviderContext.rateBudget). */
export interface RateBudget {
  /** Calls the vendor will still take now. */
  readonly remaining: number;
  /** When (injected clock, ms) the vendor takes the next call once none remain. */
  readonly nextFreeAtMs: number;
}

/** The networks of the account's clusters (ProviderContext.clusterNetworks), deduplicated; "" counts as none. */
export function accountNetworks(ctx: ProviderContext): readonly (string | undefined)[] {
  const all = ctx.clusterNetworks?.() ?? [ctx.account.network];
  return [...new Set(all.map((n) => (n === "" ? undefined : n)))];
}

/** Wraps one cloud API call: rate limiting, counting, timing. `op` is a short stable name. */
export type CloudCallWrapper = <T>(op: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/** An account from the hub config, credentials resolved. */
export interface AccountBinding {
  readonly name: string;
  readonly provider: string;
  readonly region: string;
  readonly network?: string;
  /** API endpoint override (tests, demo, private endpoints). */
  readonly endpoint?: string;
  /** The (primary) secret as read at start: never logged, never sent to an agent. */
  readonly credential: string;
  /**
   * The current value of a named credential ("" or absent: the single one), re-read when its
   * file changes. Providers call it per request so credentials rotate without a restart.
   */
  readonly secret?: (name?: string) => string;
  /** The names of the account's credentials (`[""]` for a single reference), for providers with optional ones. */
  readonly credentialNames?: readonly string[];
  readonly requestTimeoutMs: number;
  /** The hub's User-Agent (it names the replica when there are several); sent where the API takes one. */
  readonly userAgent?: string;
}

/** A provider refusing its account's settings; `field` is relative to the account (e.g. "options.pageSize"). */
export class AccountConfigError extends Error {
  override name = "AccountConfigError";
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

/**
 * The credentials an account of a provider takes (accounts[].credentials), checked by the hub
 * before the provider is created; errors name the field (e.g. "credentials.apiKey").
 */
export interface CredentialSpec {
  /** Named credentials an account must give. */
  readonly required: readonly string[];
  readonly optional?: readonly string[];
  /**
   * The credential a bare reference (`credentials: {file: …}`) stands for, when an account may
   * give just one; absent: names are required. `AccountBinding.secret(bare)` then reads it.
   */
  readonly bare?: string;
  /** A credential that is only valid beside another (AWS's externalId beside roleArn). */
  readonly onlyWith?: Readonly<Record<string, string>>;
  /**
   * Alternatives of which an account gives exactly one (GCP's serviceAccountKey or
   * externalAccount), each also listed in `required` or `optional`.
   */
  readonly oneOf?: readonly string[];
}

/**
 * Unified load-balancer settings a vendor CCM's own annotations stand for (its health-check or
 * idle-timeout keys, say): what the factory's `lbSettings` reads. A unified `lb.fleet-ccm.io/`
 * key set on the Service wins over these.
 */
export interface VendorLbSettings {
  readonly healthCheckProtocol?: "TCP" | "HTTP";
  readonly healthCheckPath?: string;
  readonly healthCheckIntervalSeconds?: number;
  readonly healthCheckTimeoutSeconds?: number;
  readonly healthyThreshold?: number;
  readonly unhealthyThreshold?: number;
  readonly proxyProtocol?: boolean;
  readonly idleTimeoutSeconds?: number;
  readonly internal?: boolean;
}

/**
 * A provider, declared: the hub parses and checks the account's options, credentials and
 * endpoint against these declarations (mapping each problem to the config field), then awaits
 * `create` with the parsed options. Nothing per provider is known outside its factory.
 */
export interface ProviderFactory<Options = unknown> {
  readonly name: string;
  /**
   * The annotation key prefixes this provider reads on Nodes and Services (its vendor settings,
   * e.g. `service.beta.kubernetes.io/linode-loadbalancer-`), besides the hub's unified ones.
   * Agents of its clusters forward these and nothing else.
   */
  readonly annotationPrefixes: readonly string[];
  /**
   * The annotations (among annotationPrefixes) that name Secrets this provider needs, such as
   * TLS certificates of load-balancer ports, and the keys it needs of them. Agents of its
   * clusters read exactly these Secrets with `get`, in the Service's namespace, and forward
   * them in the Service; they arrive in LoadBalancerSpec.secrets. Absent: no Secret is read.
   */
  readonly secretReferences?: readonly SecretReference[];
  /** accounts[].options: defaults and checks. The hub parses it; `create` gets the result. */
  readonly options: z.ZodType<Options>;
  readonly credentials: CredentialSpec;
  /**
   * accounts[].endpoint: "required" when the cloud has no public address (the hub refuses an
   * account without one); "optional" where the vendor's SDK knows its own; `{ default }`: the
   * vendor's public address, which the provider then finds in `account.endpoint` when the
   * account names none. Either way the hub checks it is an http(s) URL.
   */
  readonly endpoint: "required" | "optional" | { readonly default: string };
  /** How the vendor rate-limits: one bucket per account (default) or per account and region. */
  readonly rateLimitScope?: "account" | "region";
  /**
   * accounts[].rateLimit where the account names none: the vendor's published limit for one
   * account (cite it beside the figure). Absent: the hub's generic DEFAULT_RATE_LIMIT.
   */
  readonly defaultRateLimit?: RateLimit;
  /**
   * Reads the vendor CCM's annotations that stand for unified load-balancer settings, without
   * any call; throws AnnotationError (annotation-bounds.ts) on a value they cannot take. The
   * service reconciler applies it to the Services of this provider's clusters only.
   */
  lbSettings?(annotations: Readonly<Record<string, string>>): VendorLbSettings;
  /** Binds the provider to one account and region; may load its SDK. */
  create(ctx: ProviderContext, options: Options): Promise<CloudProvider>;
}
