import {
  MAX_SECRET_VALUE_BYTES,
  MAX_SECRETS_PER_SERVICE,
  type Node,
  namedSecrets,
  type PersistentVolume,
  type SecretReference,
  type Service,
  type ServiceSecret,
} from "@fleet-ccm/proto";

/**
 * Agents are untrusted input. Everything they report is checked against the
 * shapes and limits Kubernetes itself enforces (apimachinery's validation), so
 * any object a real API server accepted passes, and a forged or corrupt one is
 * refused. A refusal costs that object only, never the stream.
 */

/** Which limit an object broke: the `reason` label of fleet_ccm_objects_refused_total. */
export type RefusalLimit =
  | "name"
  | "uid"
  | "label"
  | "annotation"
  | "annotations-size"
  | "field-size"
  | "list-length"
  | "ports"
  | "secret"
  | "max-objects-per-cluster";

export interface Invalid {
  readonly limit: RefusalLimit;
  readonly message: string;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** apimachinery's qualified name part and label value: alphanumeric ends, `-_.` inside. */
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** apimachinery TotalAnnotationSizeLimitB: keys and values of all annotations together. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;
/** apimachinery LabelValueMaxLength and the name part of a qualified name. */
const MAX_LABEL_VALUE = 63;
const MAX_QUALIFIED_NAME = 63;
/** DNS-1123 subdomain: node names and qualified-name prefixes. */
const MAX_SUBDOMAIN = 253;
/**
 * Fields without a Kubernetes length limit of their own (providerID, resourceVersion, CIDRs,
 * address strings): far above any real value, small enough to bound memory.
 */
const MAX_FIELD = 4096;
/** Lists without a Kubernetes count limit (source ranges, ports, taints, addresses): the object
 * size limit (1.5 MiB in etcd) bounds them; this bounds them far above any real object. */
const MAX_LIST = 10_000;

function clip(v: string): string {
  return v.length > 64 ? `${v.slice(0, 64)}…` : v;
}

/**
 * A problem found. Its message leaves out the object it is about: `about` names the object, so
 * an accepted one (nearly every report) costs no message strings.
 */
function bad(limit: RefusalLimit, message: string): Invalid {
  return { limit, message };
}

/** The problem `e` of the object `subject()` names; the name is built only for a problem. */
function about(e: Invalid | null, subject: () => string): Invalid | null {
  return e === null ? null : { limit: e.limit, message: `${subject()}${e.message}` };
}

/** apimachinery IsQualifiedName: [prefix/]name, prefix a DNS-1123 subdomain of at most 253. */
function qualifiedName(part: string, key: string, limit: RefusalLimit): Invalid | null {
  const slash = key.indexOf("/");
  const prefix = slash < 0 ? "" : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0 && (prefix.length === 0 || prefix.length > MAX_SUBDOMAIN || !DNS1123_SUBDOMAIN.test(prefix)))
    return bad(
      limit,
      `${part} key "${clip(key)}": the prefix must be a DNS-1123 subdomain of at most 253 characters`,
    );
  if (name.length === 0 || name.length > MAX_QUALIFIED_NAME || !QUALIFIED_NAME.test(name))
    return bad(
      limit,
      `${part} key "${clip(key)}": the name must be at most 63 alphanumeric characters, '-', '_' or '.'`,
    );
  return null;
}

function labels(m: Record<string, string>): Invalid | null {
  for (const k of Object.keys(m)) {
    const key = qualifiedName(" label", k, "label");
    if (key !== null) return key;
    const v = m[k] as string;
    if (v.length > MAX_LABEL_VALUE || (v !== "" && !QUALIFIED_NAME.test(v)))
      return bad(
        "label",
        ` label "${clip(k)}": the value must be at most 63 alphanumeric characters, '-', '_' or '.'`,
      );
  }
  return null;
}

function annotations(m: Record<string, string>): Invalid | null {
  let bytes = 0;
  for (const k of Object.keys(m)) {
    const key = qualifiedName(" annotation", k, "annotation");
    if (key !== null) return key;
    bytes += Buffer.byteLength(k) + Buffer.byteLength(m[k] as string);
  }
  if (bytes > MAX_ANNOTATIONS_BYTES)
    return bad(
      "annotations-size",
      `: annotations total ${bytes} bytes; the limit is ${MAX_ANNOTATIONS_BYTES} (Kubernetes' own)`,
    );
  return null;
}

/** Whether a field without a Kubernetes limit of its own is over MAX_FIELD (see fieldTooLong). */
function long(v: string): boolean {
  return v.length > MAX_FIELD;
}

function fieldTooLong(): Invalid {
  return bad("field-size", `: a field is longer than ${MAX_FIELD} characters`);
}

function list(name: string, n: number): Invalid | null {
  return n > MAX_LIST ? bad("list-length", `: ${n} ${name}; the limit is ${MAX_LIST}`) : null;
}

function uid(v: string): Invalid | null {
  if (v.length === 0 || v.length > 128) return bad("uid", " has no valid uid");
  return null;
}

function finalizers(names: readonly string[]): Invalid | null {
  for (const f of names) {
    const e = qualifiedName(" finalizer", f, "field-size");
    if (e !== null) return e;
  }
  return null;
}

function nodeFieldsLong(n: Node): boolean {
  if (long(n.resourceVersion) || long(n.providerId)) return true;
  for (const c of n.podCidrs) if (long(c)) return true;
  for (const t of n.taints) if (long(t.key) || long(t.value) || long(t.effect)) return true;
  for (const a of n.addresses) if (long(a.type) || long(a.address)) return true;
  for (const c of n.conditions) if (long(c.type) || long(c.status) || long(c.reason)) return true;
  return false;
}

export function invalidNode(n: Node): Invalid | null {
  return about(nodeProblem(n), () => `node "${clip(n.name)}"`);
}

function nodeProblem(n: Node): Invalid | null {
  if (n.name.length === 0 || n.name.length > MAX_SUBDOMAIN || !DNS1123_SUBDOMAIN.test(n.name))
    return bad("name", ": the name is not a valid DNS-1123 subdomain");
  return (
    uid(n.uid) ??
    list("taints", n.taints.length) ??
    list("addresses", n.addresses.length) ??
    list("conditions", n.conditions.length) ??
    list("podCIDRs", n.podCidrs.length) ??
    list("finalizers", n.finalizers.length) ??
    (nodeFieldsLong(n) ? fieldTooLong() : null) ??
    finalizers(n.finalizers) ??
    labels(n.labels) ??
    annotations(n.annotations)
  );
}

/** apimachinery ValidatePathSegmentName (PersistentVolume names), with the subdomain's length. */
function pathSegmentName(name: string): boolean {
  return (
    name.length > 0 && name.length <= MAX_SUBDOMAIN && name !== "." && name !== ".." && !/[/%]/.test(name)
  );
}

export function invalidPersistentVolume(pv: PersistentVolume): Invalid | null {
  return about(persistentVolumeProblem(pv), () => `persistentVolume "${clip(pv.name)}"`);
}

function persistentVolumeProblem(pv: PersistentVolume): Invalid | null {
  if (!pathSegmentName(pv.name)) return bad("name", ": the name is not a valid path segment");
  return (
    uid(pv.uid) ??
    ([pv.resourceVersion, pv.source, pv.csiDriver, pv.volumeHandle, pv.phase, pv.capacity].some(long)
      ? fieldTooLong()
      : null) ??
    labels(pv.labels)
  );
}

const PROTOCOLS = new Set(["", "TCP", "UDP", "SCTP"]);

/**
 * apimachinery's ValidateService for ports (1-65535, node ports 0-65535, protocol, no two with
 * the same port and protocol or the same name), and the hub's own bound on the ports of a
 * LoadBalancer Service: each port is a listener and a health check the cluster's cloud account
 * pays for, in calls every other cluster of the account shares.
 */
function ports(s: Service, maxLoadBalancerPorts: number): Invalid | null {
  if (s.type === "LoadBalancer" && s.ports.length > maxLoadBalancerPorts)
    return bad(
      "ports",
      `: ${s.ports.length} ports; a LoadBalancer Service may have at most ${maxLoadBalancerPorts} (limits.maxServicePorts)`,
    );
  const seen = new Set<string>();
  const names = new Set<string>();
  for (const p of s.ports) {
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535)
      return bad("ports", `: port ${p.port} is not in 1-65535`);
    if (!Number.isInteger(p.nodePort) || p.nodePort < 0 || p.nodePort > 65535)
      return bad("ports", `: node port ${p.nodePort} is not in 0-65535`);
    if (!PROTOCOLS.has(p.protocol))
      return bad("ports", `: protocol "${clip(p.protocol)}" is not TCP, UDP or SCTP`);
    const key = `${p.port}/${p.protocol || "TCP"}`;
    if (seen.has(key)) return bad("ports", `: port ${key} appears twice`);
    seen.add(key);
    if (p.name !== "") {
      if (names.has(p.name)) return bad("ports", `: port name "${clip(p.name)}" appears twice`);
      names.add(p.name);
    }
  }
  if (s.healthCheckNodePort < 0 || s.healthCheckNodePort > 65535)
    return bad("ports", `: health check node port ${s.healthCheckNodePort} is not in 0-65535`);
  return null;
}

/** The hub's default for limits.maxServicePorts. */
export const DEFAULT_MAX_SERVICE_PORTS = 100;

export function invalidService(s: Service, limits: { maxServicePorts?: number } = {}): Invalid | null {
  return about(serviceProblem(s, limits), () => `service "${clip(s.namespace)}/${clip(s.name)}"`);
}

function serviceFieldsLong(s: Service): boolean {
  if (
    long(s.resourceVersion) ||
    long(s.type) ||
    long(s.loadBalancerClass) ||
    long(s.externalTrafficPolicy) ||
    long(s.sessionAffinity) ||
    long(s.loadBalancerIp)
  )
    return true;
  for (const f of s.ipFamilies) if (long(f)) return true;
  for (const r of s.loadBalancerSourceRanges) if (long(r)) return true;
  for (const p of s.ports) if (long(p.name) || long(p.protocol)) return true;
  for (const i of s.ingress) if (long(i.ip) || long(i.hostname) || long(i.ipMode)) return true;
  return false;
}

function serviceProblem(s: Service, limits: { maxServicePorts?: number }): Invalid | null {
  if (s.namespace.length === 0 || s.namespace.length > 63 || !DNS1123_LABEL.test(s.namespace))
    return bad("name", ": the namespace is not a valid DNS-1123 label");
  if (s.name.length === 0 || s.name.length > 63 || !DNS1123_LABEL.test(s.name))
    return bad("name", ": the name is not a valid DNS-1123 label");
  return (
    uid(s.uid) ??
    list("ports", s.ports.length) ??
    list("ingress entries", s.ingress.length) ??
    list("source ranges", s.loadBalancerSourceRanges.length) ??
    list("IP families", s.ipFamilies.length) ??
    list("finalizers", s.finalizers.length) ??
    (serviceFieldsLong(s) ? fieldTooLong() : null) ??
    ports(s, limits.maxServicePorts ?? DEFAULT_MAX_SERVICE_PORTS) ??
    finalizers(s.finalizers) ??
    annotations(s.annotations) ??
    secrets(s.secrets)
  );
}

/** A problem text the agent wrote: shown in an Event, so bounded. */
const MAX_PROBLEM = 300;

/** Bounds of the Secrets a Service carries; messages name Secrets and keys, never content. */
function secrets(all: readonly ServiceSecret[]): Invalid | null {
  if (all.length > MAX_SECRETS_PER_SERVICE)
    return bad("secret", `: ${all.length} Secrets; the limit is ${MAX_SECRETS_PER_SERVICE}`);
  for (const s of all) {
    if (s.problem.length > MAX_PROBLEM)
      return bad("secret", `: the problem reported for Secret "${clip(s.name)}" is too long`);
    for (const [k, v] of Object.entries(s.data))
      if (v.length > MAX_SECRET_VALUE_BYTES)
        return bad(
          "secret",
          `: ${clip(k)} of Secret "${clip(s.name)}" takes ${v.length} bytes; the limit is ${MAX_SECRET_VALUE_BYTES}`,
        );
  }
  return null;
}

/**
 * The Secrets of a Service the hub uses: only those its own annotations name under the
 * provider's references (so a Secret reaches the load balancer of the Service that names it,
 * in that Service's namespace and cluster, and no other), each once, with only the keys asked
 * for; everything else an agent sends is dropped.
 */
export function namedSecretsOnly(svc: Service, references: readonly SecretReference[]): ServiceSecret[] {
  if (svc.secrets.length === 0) return [];
  const named = new Map(namedSecrets(svc.annotations, references).map((n) => [n.name, n]));
  const out: ServiceSecret[] = [];
  for (const s of svc.secrets) {
    const n = named.get(s.name);
    if (n === undefined) continue;
    named.delete(s.name);
    if (!n.valid) {
      // Never read (no request is made for it): the hub says why, whatever the agent sent.
      out.push({ name: s.name, data: {}, problem: "not a valid Secret name (a DNS-1123 subdomain)" });
      continue;
    }
    const data: Record<string, Buffer> = {};
    for (const k of n.keys) if (s.data[k] !== undefined) data[k] = s.data[k];
    const complete = n.keys.every((k) => (data[k]?.length ?? 0) > 0);
    out.push(
      s.problem !== ""
        ? { name: s.name, data: {}, problem: s.problem }
        : complete
          ? { name: s.name, data, problem: "" }
          : {
              name: s.name,
              data: {},
              problem: `the agent sent Secret ${s.name} without ${n.keys.join(", ")}`,
            },
    );
  }
  return out;
}
