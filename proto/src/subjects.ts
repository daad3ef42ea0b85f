/** NATS subjects of the fleet.v1 contract, shared by the hub (publisher) and the agent (subscriber). */

/** A cluster name is one NATS subject token and one DNS-1123 label. */
export const CLUSTER_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isValidClusterName(name: string): boolean {
  return CLUSTER_NAME_PATTERN.test(name);
}

/** Everything the agent of `cluster` may receive: `fleet.v1.<cluster>.>`. */
export function clusterSubjectFilter(cluster: string): string {
  return `fleet.v1.${cluster}.>`;
}

/** Where the hub publishes a cluster's DesiredBatch messages. */
export function desiredSubject(cluster: string): string {
  return `fleet.v1.${cluster}.desired`;
}

/** The inbox prefix an agent must use, so NATS permissions can keep replies per cluster. */
export function agentInboxPrefix(cluster: string): string {
  return `_INBOX_${cluster}`;
}
