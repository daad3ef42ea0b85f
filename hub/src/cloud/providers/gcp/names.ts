/**
 * The names cloud-provider-gcp gives what it builds (gce_loadbalancer_naming, gce_util.go), so
 * what it made is found again, and the ownership descriptions it writes.
 */
import { createHash } from "node:crypto";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import type { LbOwner } from "../../provider.js";

export const PROVIDER_NAME = "gcp";
/** The providerID scheme upstream writes (gce_util.go): gce://<project>/<zone>/<name>. */
export const PROVIDER_ID_SCHEME = "gce";
export const GCP_ANNOTATION_PREFIXES = ["networking.gke.io/", "cloud.google.com/"];

/** Upstream's DefaultLoadBalancerName: "a" + the Service uid without dashes, 32 characters at most. */
export function gceLoadBalancerName(serviceUid: string): string {
  return `a${serviceUid.replace(/-/g, "")}`.slice(0, 32);
}

/**
 * The label of a Service's first forwarding rule that holds `loadBalancerSpecDigest` once the
 * cloud matches that spec (Compute's label keys: lower-case letters, digits, `-` and `_`).
 */
export const SPEC_DIGEST_LABEL = "fleet-ccm-spec-digest";

/** The firewall of a load balancer's clients (upstream MakeFirewallName). */
export function gceFirewallName(lbName: string): string {
  return `k8s-fw-${lbName}`;
}

/** The cluster id in names: lower-case, Compute's name alphabet. */
export function clusterId(cluster: string): string {
  return cluster.toLowerCase().replace(/[^-a-z0-9]/g, "-");
}

/** The shared node health check of a cluster (upstream MakeNodesHealthCheckName). */
export function gceNodesHealthCheckName(cluster: string): string {
  return `k8s-${clusterId(cluster)}-node`;
}

/** The firewall admitting Google's health checkers (upstream MakeHealthCheckFirewallName). */
export function gceHealthCheckFirewallName(
  cluster: string,
  hcName: string,
  isNodesHealthCheck: boolean,
): string {
  return isNodesHealthCheck ? `${gceNodesHealthCheckName(cluster)}-http-hc` : `k8s-${hcName}-http-hc`;
}

/** The cluster's unmanaged instance group in each zone, shared by its internal Services (upstream makeInstanceGroupName). */
export function gceInstanceGroupName(cluster: string): string {
  return `k8s-ig--${clusterId(cluster)}`;
}

/** The internal load balancer's health-check firewall (upstream makeHealthCheckFirewallName): shared or the Service's. */
export function gceInternalHealthCheckFirewallName(cluster: string, lbName: string, shared: boolean): string {
  return shared ? `k8s-${clusterId(cluster)}-node-hc` : `${lbName}-hc`;
}

/**
 * The health-check firewall of a backend-service based external load balancer (l4-rbs): the
 * cluster's shared one or the Service's own. Names of fleet-ccm's (GKE's ingress-gce names its
 * `k8s2-<kube-system uid hash>-l4-shared-hc-fw`, from a uid the hub does not know), apart from
 * the target-pool and internal ones so that neither kind's last Service deletes the other's.
 */
export function gceRbsHealthCheckFirewallName(cluster: string, lbName: string, shared: boolean): string {
  return shared ? `k8s-${clusterId(cluster)}-node-rbs-hc` : `k8s-${lbName}-rbs-hc`;
}

/** Upstream truncates a cluster name to 26 characters in route names (gce_routes.go). */
export function routePrefix(cluster: string): string {
  return `${clusterId(cluster).slice(0, 26)}-`;
}

/**
 * A route's name: upstream's `<cluster>-<node uid>`; the contract gives the destination and
 * target, not the node's uid, so the suffix is a digest of them (stable: a repeated create
 * after a lost answer finds its route by name).
 */
export function gceRouteName(cluster: string, destinationCIDR: string, targetInstanceID: string): string {
  const digest = createHash("sha256")
    .update(`${destinationCIDR}\u0000${targetInstanceID}`)
    .digest("hex")
    .slice(0, 32);
  return `${routePrefix(cluster)}${digest}`;
}

/** Upstream's route description. */
export const ROUTE_DESCRIPTION = "k8s-node-route";

/** The description key upstream writes on every load-balancer resource. */
export const SERVICE_NAME_KEY = "kubernetes.io/service-name";

/** The description of a load-balancer resource: upstream's JSON plus our owner. */
export function ownerDescription(
  owner: LbOwner,
  serviceName: string | undefined,
  extra: Record<string, string> = {},
): string {
  return JSON.stringify({
    [SERVICE_NAME_KEY]: serviceName ?? "",
    [OWNER_TAG_CLUSTER]: owner.cluster,
    [OWNER_TAG_SERVICE_UID]: owner.serviceUid,
    ...extra,
  });
}

/** The description's fields, or {} when it is not upstream's JSON. */
export function parseDescription(description: unknown): Record<string, string> {
  if (typeof description !== "string" || !description.startsWith("{")) return {};
  try {
    const v = JSON.parse(description) as unknown;
    if (typeof v !== "object" || v === null || Array.isArray(v)) return {};
    return Object.fromEntries(Object.entries(v).filter(([, x]) => typeof x === "string")) as Record<
      string,
      string
    >;
  } catch {
    return {};
  }
}

/** The owner a description names, if it is one of ours. */
export function descriptionOwner(description: unknown): LbOwner | undefined {
  const d = parseDescription(description);
  const cluster = d[OWNER_TAG_CLUSTER];
  const serviceUid = d[OWNER_TAG_SERVICE_UID];
  return cluster !== undefined && serviceUid !== undefined ? { cluster, serviceUid } : undefined;
}
