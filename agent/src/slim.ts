import { type AnnotationFilter, sharedStrings } from "@fleet-ccm/proto";
import type { V1Node, V1ObjectMeta, V1Service } from "@kubernetes/client-node";

/**
 * Values that repeat from object to object (label values, taint keys, condition reasons and
 * messages, address types, the timestamps of a join storm) as the process's one copy of each;
 * names, uids and resource versions are not looked up.
 */
const i = <T extends string | undefined>(s: T): T => (s === undefined ? s : (sharedStrings.intern(s) as T));
/** Timestamps are strings in watched objects, Dates only if a caller typed them. */
const t = <T>(v: T): T => (typeof v === "string" ? (sharedStrings.intern(v) as T) : v);

/**
 * The metadata both kinds keep; Nodes add their labels, Services their namespace. One literal
 * (not a spread plus a property): a spread-then-extended object took ~320 more bytes per Node.
 */
function slimMetadata(
  md: V1ObjectMeta,
  namespace: string | undefined,
  labels: Record<string, string> | undefined,
  annotations: AnnotationFilter,
): V1ObjectMeta {
  return {
    namespace,
    name: md.name,
    uid: md.uid,
    resourceVersion: md.resourceVersion,
    annotations: annotations.pick(md.annotations),
    creationTimestamp: t(md.creationTimestamp),
    deletionTimestamp: md.deletionTimestamp,
    finalizers: md.finalizers?.map(i),
    labels,
  };
}

/**
 * What the agent keeps of an object: exactly the fields it sends to the hub (convert.ts) and
 * computes patches from (apply/). Everything else (images, node info, capacity, managed fields,
 * selectors, annotations outside the hub's prefixes) is dropped before the informer caches the object, so the agent's
 * memory follows the number of objects, not their size. The caches are never written back whole:
 * patches are built field by field, with uid and resourceVersion preconditions. Values that
 * repeat from object to object are interned (`sharedStrings`, @fleet-ccm/proto).
 */
export function slimNode(n: V1Node, annotations: AnnotationFilter): V1Node {
  const md = n.metadata ?? {};
  return {
    metadata: slimMetadata(
      md,
      undefined,
      md.labels === undefined ? undefined : sharedStrings.internValues(md.labels),
      annotations,
    ),
    spec: {
      providerID: n.spec?.providerID,
      // A literal, not a spread of the parsed taint: each spread copy got a hidden class of its
      // own (~200 bytes per Node in a heap snapshot at 5,000 Nodes). V1Taint has these four fields.
      taints: n.spec?.taints?.map((x) => ({
        key: i(x.key),
        value: i(x.value),
        effect: i(x.effect),
        timeAdded: t(x.timeAdded),
      })),
      podCIDR: n.spec?.podCIDR,
      podCIDRs: n.spec?.podCIDRs,
    },
    status: {
      addresses: n.status?.addresses?.map((a) => ({ type: i(a.type), address: a.address })),
      conditions: n.status?.conditions?.map((c) => ({
        ...c,
        type: i(c.type),
        status: i(c.status),
        reason: i(c.reason),
        message: i(c.message),
        lastHeartbeatTime: t(c.lastHeartbeatTime),
        lastTransitionTime: t(c.lastTransitionTime),
      })),
    },
  };
}

export function slimService(s: V1Service, annotations: AnnotationFilter): V1Service {
  const md = s.metadata ?? {};
  const spec = s.spec ?? {};
  return {
    metadata: slimMetadata(md, md.namespace, undefined, annotations),
    spec: {
      type: i(spec.type),
      loadBalancerClass: spec.loadBalancerClass,
      ports: spec.ports?.map((p) => ({ ...p, protocol: i(p.protocol) })),
      externalTrafficPolicy: i(spec.externalTrafficPolicy),
      healthCheckNodePort: spec.healthCheckNodePort,
      ipFamilies: spec.ipFamilies?.map(i),
      loadBalancerSourceRanges: spec.loadBalancerSourceRanges,
      loadBalancerIP: spec.loadBalancerIP,
      sessionAffinity: i(spec.sessionAffinity),
    },
    status: { loadBalancer: s.status?.loadBalancer },
  };
}
