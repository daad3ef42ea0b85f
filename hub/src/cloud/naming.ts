import { createHash } from "node:crypto";

/** Tag keys that mark what fleet-ccm owns. The same on every cloud. */
export const OWNER_TAG_CLUSTER = "fleet-ccm.io/cluster";
export const OWNER_TAG_SERVICE_UID = "fleet-ccm.io/service-uid";
export const OWNER_TAG_SERVICE = "fleet-ccm.io/service";

/**
 * The cloud name of a Service's load balancer: deterministic from (cluster, Service uid), so a
 * restarted hub finds what it created instead of creating it twice, and two clusters with
 * Services of the same namespace/name never collide. 32 characters, like upstream's
 * DefaultLoadBalancerName, and valid on every cloud (lower-case alphanumerics and '-').
 */
export function loadBalancerName(cluster: string, serviceUid: string): string {
  const digest = createHash("sha256").update(`${cluster}\u0000${serviceUid}`).digest("hex");
  return `fccm-${digest.slice(0, 27)}`;
}

/** Tags every cloud resource of a Service's load balancer carries. */
export function loadBalancerOwnerTags(cluster: string, serviceUid: string): Record<string, string> {
  return { [OWNER_TAG_CLUSTER]: cluster, [OWNER_TAG_SERVICE_UID]: serviceUid };
}

/** Tags of routes a cluster owns. */
export function routeOwnerTags(cluster: string): Record<string, string> {
  return { [OWNER_TAG_CLUSTER]: cluster };
}
