/**
 * The Service annotations cloud-provider-gcp reads (gce_annotations.go), with its meaning:
 * the load-balancer type (`Internal`, and the deprecated `cloud.google.com/` key and lower-case
 * value), the network tier of an external one, the internal one's global access and subnet,
 * and the backend-service NetLB switch (`cloud.google.com/l4-rbs: enabled`, external Services only).
 */
import { AnnotationError } from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";

export const GCP_ANNOTATIONS = {
  loadBalancerType: "networking.gke.io/load-balancer-type",
  deprecatedLoadBalancerType: "cloud.google.com/load-balancer-type",
  allowGlobalAccess: "networking.gke.io/internal-load-balancer-allow-global-access",
  subnet: "networking.gke.io/internal-load-balancer-subnet",
  networkTier: "cloud.google.com/network-tier",
  rbs: "cloud.google.com/l4-rbs",
} as const;

/** Compute's network tiers, as an address or forwarding rule names them. */
export type NetworkTier = "PREMIUM" | "STANDARD";

export interface GcpLbAnnotations {
  readonly internal: boolean;
  /** The tier the annotation asks for; undefined: none asked (Premium, no mismatch handling). */
  readonly networkTier: NetworkTier | undefined;
  readonly allowGlobalAccess: boolean;
  /** The subnetwork name an internal load balancer's address comes from. */
  readonly subnet: string | undefined;
  /** `l4-rbs: enabled` on an external Service: the backend-service based network load balancer. */
  readonly rbs: boolean;
}

type A = Readonly<Record<string, string>>;

/** Upstream's GetLoadBalancerAnnotationType: the new key first, `Internal` or `internal`. */
function isInternal(a: A): boolean {
  const v = a[GCP_ANNOTATIONS.loadBalancerType] ?? a[GCP_ANNOTATIONS.deprecatedLoadBalancerType];
  return v === "Internal" || v === "internal";
}

/** The factory's lbSettings: the load-balancer type is the unified `internal` setting. */
export function gcpLbSettings(a: A): VendorLbSettings {
  return isInternal(a) ? { internal: true } : {};
}

/** Every GCP annotation of a Service, checked; throws AnnotationError on a value upstream refuses. */
export function parseGcpLbAnnotations(a: A = {}): GcpLbAnnotations {
  const tier = a[GCP_ANNOTATIONS.networkTier];
  if (tier !== undefined && tier !== "Standard" && tier !== "Premium")
    throw new AnnotationError(GCP_ANNOTATIONS.networkTier, tier, "Standard or Premium");
  const subnet = a[GCP_ANNOTATIONS.subnet];
  if (subnet !== undefined && !/^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/.test(subnet))
    throw new AnnotationError(GCP_ANNOTATIONS.subnet, subnet, "a subnetwork name of the cluster's network");
  return {
    internal: isInternal(a),
    networkTier: tier === undefined ? undefined : tier === "Standard" ? "STANDARD" : "PREMIUM",
    allowGlobalAccess: a[GCP_ANNOTATIONS.allowGlobalAccess] === "true",
    subnet: subnet === undefined || subnet === "" ? undefined : subnet,
    // As GKE: only the value `enabled` asks for it (anything else keeps the target pool), and
    // an internal Service ignores it.
    rbs: a[GCP_ANNOTATIONS.rbs] === "enabled" && !isInternal(a),
  };
}
