import type { V1Node, V1Service } from "@kubernetes/client-node";
import { forwardedAnnotations } from "./convert.js";

/**
 * What the agent keeps of an object: exactly the fields it sends to the hub (convert.ts) and
 * computes patches from (apply/). Everything else (images, node info, capacity, managed fields,
 * selectors, other annotations) is dropped before the informer caches the object, so the agent's
 * memory follows the number of objects, not their size. The caches are never written back whole:
 * patches are built field by field, with uid and resourceVersion preconditions.
 */
export function slimNode(n: V1Node): V1Node {
  const md = n.metadata ?? {};
  return {
    metadata: {
      name: md.name,
      uid: md.uid,
      resourceVersion: md.resourceVersion,
      labels: md.labels,
      annotations: forwardedAnnotations(md.annotations),
      creationTimestamp: md.creationTimestamp,
      deletionTimestamp: md.deletionTimestamp,
      finalizers: md.finalizers,
    },
    spec: {
      providerID: n.spec?.providerID,
      taints: n.spec?.taints,
      podCIDR: n.spec?.podCIDR,
      podCIDRs: n.spec?.podCIDRs,
    },
    status: { addresses: n.status?.addresses, conditions: n.status?.conditions },
  };
}

export function slimService(s: V1Service): V1Service {
  const md = s.metadata ?? {};
  const spec = s.spec ?? {};
  return {
    metadata: {
      namespace: md.namespace,
      name: md.name,
      uid: md.uid,
      resourceVersion: md.resourceVersion,
      annotations: forwardedAnnotations(md.annotations),
      creationTimestamp: md.creationTimestamp,
      deletionTimestamp: md.deletionTimestamp,
      finalizers: md.finalizers,
    },
    spec: {
      type: spec.type,
      loadBalancerClass: spec.loadBalancerClass,
      ports: spec.ports,
      externalTrafficPolicy: spec.externalTrafficPolicy,
      healthCheckNodePort: spec.healthCheckNodePort,
      ipFamilies: spec.ipFamilies,
      loadBalancerSourceRanges: spec.loadBalancerSourceRanges,
      sessionAffinity: spec.sessionAffinity,
    },
    status: { loadBalancer: s.status?.loadBalancer },
  };
}
