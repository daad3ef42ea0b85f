import { isIP } from "node:net";
import {
  type LoadBalancerIngress,
  type Node,
  type Service,
  UNIFIED_ANNOTATION_PREFIXES,
} from "@fleet-ccm/proto";
import { specText } from "../../cloud/naming.js";
import type {
  BackendAnnotations,
  LbHealthCheck,
  LbIngress,
  LbSecret,
  LbServiceHints,
  LoadBalancerSpec,
} from "../../cloud/provider.js";
import { FINALIZER_LB_CLEANUP, LABEL_EXCLUDE_FROM_LB, TAINT_TO_BE_DELETED } from "../../k8s/well-known.js";
import { AnnotationError, LB_ANNOTATION_PREFIX, type LbSettings, listenerProtocol } from "./annotations.js";

/** The hub's own node annotations (node lifecycle), never a vendor's. */
const LIFECYCLE_ANNOTATION_PREFIX = "lifecycle.fleet-ccm.io/";

/** Upstream's annotation for source ranges, honoured when spec.loadBalancerSourceRanges is empty. */
export const ANNOTATION_SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges";

export function hasFinalizer(svc: Readonly<Service>): boolean {
  return svc.finalizers.includes(FINALIZER_LB_CLEANUP);
}

/** A LoadBalancer Service this hub handles: no class, or the class it is configured to own. */
export function wantsLoadBalancer(svc: Readonly<Service>, ownedClass: string | undefined): boolean {
  if (svc.type !== "LoadBalancer" || svc.deletionTimestamp !== undefined) return false;
  return svc.loadBalancerClass === "" || svc.loadBalancerClass === ownedClass;
}

/** Upstream needsCleanup: our finalizer is on a Service that is going away or no longer wants a load balancer. */
export function needsCleanup(svc: Readonly<Service>, ownedClass: string | undefined): boolean {
  return hasFinalizer(svc) && (svc.deletionTimestamp !== undefined || !wantsLoadBalancer(svc, ownedClass));
}

/**
 * What a cluster leaving the hub (clusters[].decommission) still has to clear on this Service:
 * our finalizer, or the ingress of a load balancer this hub handles. Its load balancer goes first.
 */
export function decommissionPending(svc: Readonly<Service>, ownedClass: string | undefined): boolean {
  if (hasFinalizer(svc)) return true;
  const handled = svc.loadBalancerClass === "" || svc.loadBalancerClass === ownedClass;
  return svc.type === "LoadBalancer" && handled && svc.ingress.length > 0;
}

const PARSE_BOOL_FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * Upstream stableNodeSetPredicates (readiness is not one: KEP-3458): not being deleted, not
 * excluded by label (Go ParseBool: only a false value includes; anything unparsable excludes),
 * not tainted ToBeDeletedByClusterAutoscaler. The node list these leave is the one upstream
 * passes to the cloud, and the one whose emptiness is `UnAvailableLoadBalancer`.
 */
export function isAvailableNode(node: Readonly<Node>): boolean {
  if (node.deletionTimestamp !== undefined) return false;
  const exclude = node.labels[LABEL_EXCLUDE_FROM_LB];
  if (exclude !== undefined && !PARSE_BOOL_FALSE.has(exclude)) return false;
  return !node.taints.some((t) => t.key === TAINT_TO_BE_DELETED);
}

/**
 * An available node (`isAvailableNode`) with a providerID. Unlike upstream the hub requires one
 * for a backend: it is the only identity the hub trusts, so a node not yet initialized is
 * available (upstream lists it) but not yet a backend.
 */
export function isEligibleBackend(node: Readonly<Node>): boolean {
  return node.providerId !== "" && isAvailableNode(node);
}

/**
 * A node's vendor annotations (its provider's annotationPrefixes; the hub's own keys left out),
 * undefined when it has none: per-node settings a provider may honour for its backends.
 */
export function vendorNodeAnnotations(node: Readonly<Node>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  let any = false;
  for (const k of Object.keys(node.annotations).sort()) {
    if (UNIFIED_ANNOTATION_PREFIXES.some((p) => k.startsWith(p))) continue;
    out[k] = node.annotations[k] as string;
    any = true;
  }
  return any ? out : undefined;
}

/**
 * The fields of a node that decide load balancer membership and how a backend is reached; a
 * change to any re-syncs backends. `withLabels`: the cluster's provider selects backends by
 * node label (LoadBalancers.nodeSelector), so the labels decide membership too.
 */
export function backendFacts(node: Readonly<Node> | undefined, withLabels = false): string {
  if (node === undefined) return "";
  const vendor = vendorNodeAnnotations(node);
  let facts = `${isEligibleBackend(node)}|${node.providerId}`;
  if (vendor !== undefined) facts += `|${JSON.stringify(vendor)}`;
  if (withLabels)
    facts += `|${JSON.stringify(Object.entries(node.labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
  return facts;
}

function validCidr(s: string): boolean {
  const [ip, bits, extra] = s.trim().split("/");
  if (ip === undefined || bits === undefined || extra !== undefined || !/^\d{1,3}$/.test(bits)) return false;
  const family = isIP(ip);
  const n = Number(bits);
  return (family === 4 && n <= 32) || (family === 6 && n <= 128);
}

export function sourceRanges(svc: Readonly<Service>): string[] {
  const fromSpec = svc.loadBalancerSourceRanges.map((s) => s.trim()).filter((s) => s !== "");
  const fromAnnotation = (svc.annotations[ANNOTATION_SOURCE_RANGES] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const ranges = fromSpec.length > 0 ? fromSpec : fromAnnotation;
  for (const r of ranges)
    if (!validCidr(r))
      throw new AnnotationError(
        fromSpec.length > 0 ? "spec.loadBalancerSourceRanges" : ANNOTATION_SOURCE_RANGES,
        r,
        "CIDRs such as 203.0.113.0/24",
      );
  // 0.0.0.0/0 alone (::/0 beside it or not) means open, the same as no rule (upstream's
  // IsAllowAll). ::/0 alone opens IPv6 only: kept as a range, never read as open to IPv4 too.
  const open = ranges.includes("0.0.0.0/0") && ranges.every((r) => r === "0.0.0.0/0" || r === "::/0");
  return open ? [] : [...new Set(ranges)].sort();
}

export function healthCheck(svc: Readonly<Service>, settings: LbSettings): LbHealthCheck {
  const common = {
    intervalSeconds: settings.healthCheckIntervalSeconds,
    timeoutSeconds: settings.healthCheckTimeoutSeconds,
    healthyThreshold: settings.healthyThreshold,
    unhealthyThreshold: settings.unhealthyThreshold,
  };
  // externalTrafficPolicy Local: kube-proxy answers /healthz on healthCheckNodePort only where endpoints are.
  if (svc.externalTrafficPolicy === "Local" && svc.healthCheckNodePort > 0)
    return {
      protocol: "HTTP",
      port: svc.healthCheckNodePort,
      path: settings.healthCheckPath ?? "/healthz",
      ...common,
    };
  // The first TCP port's node port, else any; a port without one (node-ports.ts) is not checked.
  const withNodePort = svc.ports.filter((p) => p.nodePort > 0);
  const port = (withNodePort.find((p) => p.protocol !== "UDP") ?? withNodePort[0])?.nodePort ?? 0;
  const protocol = settings.healthCheckProtocol ?? (settings.healthCheckPath !== undefined ? "HTTP" : "TCP");
  return { protocol, port, path: protocol === "HTTP" ? (settings.healthCheckPath ?? "/") : "", ...common };
}

/** The load balancer the hub wants for a Service. Pure: same inputs, same spec. */
export function loadBalancerSpec(
  svc: Readonly<Service>,
  settings: LbSettings,
  backends: readonly string[],
  backendAnnotations?: BackendAnnotations,
): LoadBalancerSpec {
  const listeners = svc.ports
    .map((p) => ({
      protocol: listenerProtocol(settings, p.port, p.protocol),
      port: p.port,
      nodePort: p.nodePort,
      proxyProtocol: settings.proxyProtocol,
      ...(p.name !== "" && { name: p.name }),
    }))
    .sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
  return {
    listeners,
    backends: [...backends].sort(),
    ...backendAnnotationsOf(backends, backendAnnotations),
    healthCheck: healthCheck(svc, settings),
    sourceRanges: sourceRanges(svc),
    sessionAffinity: svc.sessionAffinity === "ClientIP" ? "ClientIP" : "None",
    idleTimeoutSeconds: settings.idleTimeoutSeconds,
    internal: settings.internal,
    serviceName: `${svc.namespace}/${svc.name}`,
    // Only when set: an unset one leaves the spec's digest as it was.
    ...(svc.loadBalancerIp !== "" && { loadBalancerIP: svc.loadBalancerIp }),
    ...vendorAnnotations(svc.annotations),
    ...secretsOf(svc),
  };
}

/** The annotations of the given backends only; nothing when none has any. */
export function backendAnnotationsOf(
  backends: readonly string[],
  annotations: BackendAnnotations | undefined,
): { backendAnnotations?: BackendAnnotations } {
  if (annotations === undefined) return {};
  const out: Record<string, Readonly<Record<string, string>>> = {};
  for (const id of [...backends].sort()) {
    const a = annotations[id];
    if (a !== undefined) out[id] = a;
  }
  return Object.keys(out).length === 0 ? {} : { backendAnnotations: out };
}

/** The Secrets the Service names (already narrowed to its references at ingest), UTF-8. */
function secretsOf(svc: Readonly<Service>): { secrets?: Readonly<Record<string, LbSecret>> } {
  if (svc.secrets.length === 0) return {};
  const out: Record<string, LbSecret> = {};
  for (const s of svc.secrets)
    out[s.name] =
      s.problem !== ""
        ? { problem: s.problem }
        : {
            data: Object.fromEntries(
              Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v).toString("utf8")]),
            ),
          };
  return { secrets: out };
}

/**
 * The Service's annotations for a provider that reads its vendor CCM's keys: all of them (so it
 * can tell where a unified key wins) when any is a vendor key; none otherwise.
 */
function vendorAnnotations(annotations: Readonly<Record<string, string>>): {
  annotations?: Readonly<Record<string, string>>;
} {
  const vendor = Object.keys(annotations).some(
    (k) => !k.startsWith(LB_ANNOTATION_PREFIX) && !k.startsWith(LIFECYCLE_ANNOTATION_PREFIX),
  );
  return vendor ? { annotations: { ...annotations } } : {};
}

/** What a provider taking over from a vendor CCM needs beyond the spec (LbServiceHints). */
export function serviceHints(svc: Readonly<Service>): LbServiceHints {
  return {
    annotations: { ...svc.annotations },
    ingress: svc.ingress.map((i) => ({
      ...(i.ip !== "" && { ip: i.ip }),
      ...(i.hostname !== "" && { hostname: i.hostname }),
    })),
  };
}

/** A stable digest of everything but the backends: changes mean a full ensure, not a backend update. */
export function specKey(spec: LoadBalancerSpec): string {
  return specText(spec);
}

/** The Service's ingress: an entry's hostname is kept beside its IP only where the provider says so. */
export function toWireIngress(ingress: readonly LbIngress[], ipWithHostname = false): LoadBalancerIngress[] {
  return ingress.map((i) => ({
    ip: i.ip ?? "",
    hostname: i.ip && !ipWithHostname ? "" : (i.hostname ?? ""),
    ipMode: i.ip ? (i.ipMode ?? "") : "",
  }));
}

/**
 * Compares what the Service shows with what the hub wants. The API server defaults ipMode to
 * VIP where an ip is set, and one without the LoadBalancerIPMode feature (before 1.30) drops the
 * field: a Service showing none matches any, or the hub would patch it forever.
 */
export function ingressEqual(
  have: readonly LoadBalancerIngress[],
  want: readonly LoadBalancerIngress[],
): boolean {
  return (
    have.length === want.length &&
    have.every((h, i) => {
      const w = want[i];
      return (
        w !== undefined &&
        h.ip === w.ip &&
        h.hostname === w.hostname &&
        (h.ipMode === "" || h.ipMode === (w.ipMode || (w.ip ? "VIP" : "")))
      );
    })
  );
}

/** 32-bit FNV-1a: cheap, stable, good enough to spread backends. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * At most `max` of `backends` for one Service, chosen by rendezvous hashing on the Service uid:
 * each Service gets its own spread of nodes, and a node joining or leaving changes at most one
 * member of each subset. With externalTrafficPolicy Cluster any node forwards to any endpoint,
 * so a subset serves all traffic (upstream's GCE ILB subsetting rests on the same fact).
 */
export function backendSubset(backends: readonly string[], serviceUid: string, max: number): string[] {
  if (backends.length <= max) return [...backends];
  return backends
    .map((id) => ({ id, score: fnv1a(`${serviceUid}/${id}`) }))
    .sort((a, b) => a.score - b.score || a.id.localeCompare(b.id))
    .slice(0, max)
    .map((x) => x.id)
    .sort();
}
