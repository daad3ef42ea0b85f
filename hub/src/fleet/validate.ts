import type { Node, Service } from "@fleet-ccm/proto";

/**
 * Agents are untrusted input. Everything they report is checked against the
 * shapes Kubernetes itself allows, with bounds, before it enters fleet state.
 * Each check returns the reason it fails, or null.
 */

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_MAP_ENTRIES = 256;
const MAX_STRING = 4096;
const MAX_LIST = 64;

function subdomain(what: string, v: string): string | null {
  if (v.length === 0 || v.length > 253 || !DNS1123_SUBDOMAIN.test(v))
    return `${what} "${clip(v)}" is not a valid name`;
  return null;
}

function clip(v: string): string {
  return v.length > 64 ? `${v.slice(0, 64)}…` : v;
}

function bounded(what: string, values: Iterable<string>): string | null {
  for (const v of values) if (v.length > MAX_STRING) return `${what} longer than ${MAX_STRING} characters`;
  return null;
}

function boundedMap(what: string, m: Record<string, string>): string | null {
  const keys = Object.keys(m);
  if (keys.length > MAX_MAP_ENTRIES) return `${what} has more than ${MAX_MAP_ENTRIES} entries`;
  return bounded(`${what} key`, keys) ?? bounded(`${what} value`, Object.values(m));
}

function uid(what: string, v: string): string | null {
  if (v.length === 0 || v.length > 128) return `${what} has no valid uid`;
  return null;
}

export function invalidNode(n: Node): string | null {
  const what = `node "${clip(n.name)}"`;
  return (
    subdomain("node name", n.name) ??
    uid(what, n.uid) ??
    bounded(`${what} field`, [n.resourceVersion, n.providerId, ...n.podCidrs, ...n.finalizers]) ??
    boundedMap(`${what} labels`, n.labels) ??
    boundedMap(`${what} annotations`, n.annotations) ??
    (n.taints.length > MAX_LIST || n.addresses.length > MAX_LIST || n.conditions.length > MAX_LIST
      ? `${what} has more than ${MAX_LIST} taints, addresses or conditions`
      : null) ??
    bounded(
      `${what} taint`,
      n.taints.flatMap((t) => [t.key, t.value, t.effect]),
    ) ??
    bounded(
      `${what} address`,
      n.addresses.flatMap((a) => [a.type, a.address]),
    )
  );
}

export function invalidService(s: Service): string | null {
  const what = `service "${clip(s.namespace)}/${clip(s.name)}"`;
  if (s.namespace.length === 0 || s.namespace.length > 63 || !DNS1123_LABEL.test(s.namespace))
    return `${what}: namespace is not a valid name`;
  if (s.name.length === 0 || s.name.length > 63 || !DNS1123_LABEL.test(s.name))
    return `${what}: name is not valid`;
  return (
    uid(what, s.uid) ??
    bounded(`${what} field`, [
      s.resourceVersion,
      s.type,
      s.loadBalancerClass,
      s.externalTrafficPolicy,
      s.sessionAffinity,
      ...s.finalizers,
      ...s.ipFamilies,
      ...s.loadBalancerSourceRanges,
    ]) ??
    boundedMap(`${what} annotations`, s.annotations) ??
    (s.ports.length > 1024 || s.ingress.length > MAX_LIST || s.loadBalancerSourceRanges.length > 1024
      ? `${what} has too many ports, ingress entries or source ranges`
      : null)
  );
}
