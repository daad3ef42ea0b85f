import { KeyedLock } from "../util/keyed-lock.js";
import type {
  AccountBinding,
  CloudProvider,
  ClusterScope,
  ClusterTarget,
  InstanceMetadata,
  ProviderFactory,
} from "./provider.js";

export type { ClusterScope } from "./provider.js";

/** A cluster's cloud: its account's provider (shared by the account's clusters) and its own scope. */
export interface ClusterCloud {
  readonly provider: CloudProvider;
  readonly account: AccountBinding;
  /**
   * What every load-balancer and route call of this cluster passes the provider: its network
   * (the cluster's own, else the account's) and its scope.
   */
  readonly target: ClusterTarget;
  /** The account's serialized writes (LockKey), shared by its clusters. */
  readonly writeLocks: KeyedLock;
  /** The provider's reader of vendor annotations for unified settings (ProviderFactory.lbSettings). */
  readonly lbSettings?: NonNullable<ProviderFactory["lbSettings"]>;
}

/**
 * A cluster's cloud: its scope (the cluster's network, else the account's) and the target every
 * load-balancer and route call of the cluster passes. `writeLocks`: the account's (shared by
 * its clusters); a new one for a cluster alone.
 */
export function clusterCloud(
  cluster: string,
  bound: {
    readonly provider: CloudProvider;
    readonly account: AccountBinding;
    readonly scope?: ClusterScope;
    readonly writeLocks?: KeyedLock;
    readonly lbSettings?: ClusterCloud["lbSettings"];
  },
): ClusterCloud {
  const scope = bound.scope ?? {};
  const network = scope.network ?? bound.account.network;
  return {
    provider: bound.provider,
    account: bound.account,
    target: { cluster, ...(network !== undefined && { network }), scope },
    writeLocks: bound.writeLocks ?? new KeyedLock(),
    ...(bound.lbSettings !== undefined && { lbSettings: bound.lbSettings }),
  };
}

/**
 * Agents are untrusted: a providerID reported by cluster A must resolve to an
 * instance inside A's account, region, network and tags, or the hub refuses to
 * act on it. Returns why it is out of scope, or null.
 */
export function outOfScope(meta: InstanceMetadata, cloud: ClusterCloud): string | null {
  if (meta.region !== "" && meta.region !== cloud.account.region)
    return `instance ${meta.instanceID} is in region ${meta.region}, not ${cloud.account.region}`;
  const { network, scope } = cloud.target;
  if (network !== undefined && meta.network !== network)
    return `instance ${meta.instanceID} is not in network ${network}`;
  for (const [k, v] of Object.entries(scope.tags ?? {}))
    if (meta.tags[k] !== v) return `instance ${meta.instanceID} lacks tag ${k}=${v}`;
  return null;
}

/** The cluster's scope in words, for Events: region, network, tags. */
export function describeScope(cloud: ClusterCloud): string {
  const parts = [`region ${cloud.account.region}`];
  const { network, scope } = cloud.target;
  if (network !== undefined) parts.push(`network ${network}`);
  const tags = Object.entries(scope.tags ?? {}).map(([k, v]) => `${k}=${v}`);
  if (tags.length > 0) parts.push(`tags ${tags.join(",")}`);
  return parts.join(", ");
}

export type NameResolution =
  | { readonly kind: "found"; readonly meta: InstanceMetadata }
  | { readonly kind: "not-found" | "ambiguous" | "out-of-scope"; readonly message: string };

/** How many ids an Event lists before it says "and N more". */
const LISTED_IDS = 10;

function ids(list: readonly InstanceMetadata[]): string {
  const shown = list.slice(0, LISTED_IDS).map((m) => m.instanceID);
  return list.length > LISTED_IDS
    ? `${shown.join(", ")} and ${list.length - LISTED_IDS} more`
    : shown.join(", ");
}

/**
 * Picks the instance a node named `name` runs on from every instance of that name in the
 * account: the one live instance inside the cluster's scope. Names are not identities, so
 * several in scope is ambiguous, and instances outside the scope (another cluster's) are never
 * picked; either way the message says what was found.
 */
export function resolveByName(
  name: string,
  matches: readonly InstanceMetadata[],
  cloud: ClusterCloud,
): NameResolution {
  const live = matches.filter((m) => m.name === name && m.state !== "terminated");
  const inScope: InstanceMetadata[] = [];
  const outside: { meta: InstanceMetadata; why: string }[] = [];
  for (const m of live) {
    const why = outOfScope(m, cloud);
    if (why === null) inScope.push(m);
    else outside.push({ meta: m, why });
  }
  const [only, ...more] = inScope;
  if (only !== undefined && more.length === 0) return { kind: "found", meta: only };
  const scope = describeScope(cloud);
  if (only !== undefined)
    return {
      kind: "ambiguous",
      message: `${inScope.length} instances named ${name} in this cluster's scope (${scope}): ${ids(inScope)}`,
    };
  if (outside.length > 0) {
    const n = outside.length;
    const reasons = [...new Set(outside.slice(0, LISTED_IDS).map((o) => o.why))].join("; ");
    return {
      kind: "out-of-scope",
      message: `${n} ${n === 1 ? "instance" : "instances"} named ${name} ${n === 1 ? "exists" : "exist"} but outside this cluster's scope (${scope}): ${reasons}`,
    };
  }
  return {
    kind: "not-found",
    message: `no instance named ${name} in the cloud account (this cluster's scope: ${scope})`,
  };
}
