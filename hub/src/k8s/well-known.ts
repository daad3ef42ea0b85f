/** Names and constants of k8s.io/cloud-provider and k8s.io/api, verbatim: users migrating must see identical objects. */

export const TAINT_UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
export const TAINT_SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown";
/** Cluster autoscaler marks nodes it is removing; upstream drops them from load balancers. */
export const TAINT_TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler";

export const LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type";
export const LABEL_INSTANCE_TYPE_BETA = "beta.kubernetes.io/instance-type";
export const LABEL_ZONE = "topology.kubernetes.io/zone";
export const LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone";
export const LABEL_REGION = "topology.kubernetes.io/region";
export const LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region";
export const LABEL_EXCLUDE_FROM_LB = "node.kubernetes.io/exclude-from-external-load-balancers";

export const ANNOTATION_PROVIDED_NODE_IP = "alpha.kubernetes.io/provided-node-ip";

export const FINALIZER_LB_CLEANUP = "service.kubernetes.io/load-balancer-cleanup";

/** AdditionalLabels from a provider may not use these namespaces (node_controller.go). */
export const RESERVED_LABEL_NAMESPACE = /(^|\.)(kubernetes|k8s)\.io\//;

/** Event sources (the recorder's component) per upstream controller. */
export const EVENT_SOURCE = {
  cloudNode: "cloud-node-controller",
  cloudNodeLifecycle: "cloud-node-lifecycle-controller",
  service: "service-controller",
  route: "route_controller",
  /** kube-controller-manager's range allocator records as this. */
  ipam: "cidrAllocator",
  persistentVolumeLabel: "persistentvolume-label-controller",
} as const;
