import type { Node, Service, ServiceSecret } from "@fleet-ccm/proto";
import type { V1Node, V1Service } from "@kubernetes/client-node";

/** The Secrets a Service names, as the agent last read them. */
export type SecretsOf = (s: V1Service) => ServiceSecret[];

/** Node conditions the hub reads. */
const FORWARDED_CONDITIONS = new Set(["Ready", "NetworkUnavailable"]);

/** Objects from a LIST are typed (Date), from a WATCH raw JSON (string): accept both. */
export function toDate(v: Date | string | undefined | null): Date | undefined {
  if (v === undefined || v === null) return undefined;
  const d = v instanceof Date ? v : new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/**
 * The slice of a Node the hub needs (fleet.v1.Node), from a slim object (slim.ts), whose
 * annotations are already only the forwarded ones.
 */
export function toWireNode(n: V1Node): Node {
  const md = n.metadata ?? {};
  return {
    name: md.name ?? "",
    uid: md.uid ?? "",
    resourceVersion: md.resourceVersion ?? "",
    providerId: n.spec?.providerID ?? "",
    labels: { ...(md.labels ?? {}) },
    annotations: { ...md.annotations },
    taints: (n.spec?.taints ?? []).map((t) => ({ key: t.key, value: t.value ?? "", effect: t.effect })),
    addresses: (n.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
    conditions: (n.status?.conditions ?? [])
      .filter((c) => FORWARDED_CONDITIONS.has(c.type))
      .map((c) => ({ type: c.type, status: c.status, reason: c.reason ?? "", message: c.message ?? "" })),
    podCidrs: n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : []),
    creationTimestamp: toDate(md.creationTimestamp),
    deletionTimestamp: toDate(md.deletionTimestamp),
    finalizers: md.finalizers ?? [],
  };
}

/**
 * The slice of a Service the hub needs (fleet.v1.Service), from a slim object (slim.ts), with
 * the Secrets it names as last read (secrets.ts).
 */
export function toWireService(s: V1Service, secrets?: SecretsOf): Service {
  const md = s.metadata ?? {};
  const spec = s.spec ?? {};
  return {
    namespace: md.namespace ?? "",
    name: md.name ?? "",
    uid: md.uid ?? "",
    resourceVersion: md.resourceVersion ?? "",
    type: spec.type ?? "ClusterIP",
    loadBalancerClass: spec.loadBalancerClass ?? "",
    ports: (spec.ports ?? []).map((p) => ({
      name: p.name ?? "",
      protocol: p.protocol ?? "TCP",
      port: p.port,
      nodePort: p.nodePort ?? 0,
    })),
    externalTrafficPolicy: spec.externalTrafficPolicy ?? "",
    healthCheckNodePort: spec.healthCheckNodePort ?? 0,
    ipFamilies: spec.ipFamilies ?? [],
    loadBalancerSourceRanges: spec.loadBalancerSourceRanges ?? [],
    loadBalancerIp: spec.loadBalancerIP ?? "",
    annotations: { ...md.annotations },
    ingress: (s.status?.loadBalancer?.ingress ?? []).map((i) => ({
      ip: i.ip ?? "",
      hostname: i.hostname ?? "",
      ipMode: i.ipMode ?? "",
    })),
    creationTimestamp: toDate(md.creationTimestamp),
    deletionTimestamp: toDate(md.deletionTimestamp),
    finalizers: md.finalizers ?? [],
    sessionAffinity: spec.sessionAffinity ?? "None",
    secrets: secrets?.(s) ?? [],
  };
}
