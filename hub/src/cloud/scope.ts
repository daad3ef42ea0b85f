import type { AccountBinding, CloudProvider, InstanceMetadata } from "./provider.js";

/** Instances a cluster may use, beyond its account and region. */
export interface ClusterScope {
  readonly network?: string | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
}

/** A cluster's cloud: its account's provider (shared by the account's clusters) and its own scope. */
export interface ClusterCloud {
  readonly provider: CloudProvider;
  readonly account: AccountBinding;
  readonly scope: ClusterScope;
}

/**
 * Agents are untrusted: a providerID reported by cluster A must resolve to an
 * instance inside A's account, region, network and tags, or the hub refuses to
 * act on it. Returns why it is out of scope, or null.
 */
export function outOfScope(meta: InstanceMetadata, cloud: ClusterCloud): string | null {
  if (meta.region !== "" && meta.region !== cloud.account.region)
    return `instance ${meta.instanceID} is in region ${meta.region}, not ${cloud.account.region}`;
  const network = cloud.scope.network ?? cloud.account.network;
  if (network !== undefined && meta.network !== network)
    return `instance ${meta.instanceID} is not in network ${network}`;
  for (const [k, v] of Object.entries(cloud.scope.tags ?? {}))
    if (meta.tags[k] !== v) return `instance ${meta.instanceID} lacks tag ${k}=${v}`;
  return null;
}
