import { createHash } from "node:crypto";
import type { BackendAnnotations, LoadBalancerSpec } from "./provider.js";

/** Tag keys that mark what fleet-ccm owns. The same on every cloud. */
export const OWNER_TAG_CLUSTER = "fleet-ccm.io/cluster";
export const OWNER_TAG_SERVICE_UID = "fleet-ccm.io/service-uid";
export const OWNER_TAG_SERVICE = "fleet-ccm.io/service";
/** Tag keys (or description fields) where a provider records what a load balancer was built from. */
export const DIGEST_TAG_SPEC = "fleet-ccm.io/spec-digest";
export const DIGEST_TAG_BACKENDS = "fleet-ccm.io/backends-digest";
/**
 * On a load balancer whose creation failed in the cloud: an ensure reported the failure
 * (OperationFailedError), so the next one replaces it. Kept in the cloud, where every replica
 * reads it.
 */
export const FAILURE_REPORTED_TAG = "fleet-ccm.io/failure-reported";

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

/**
 * What a load balancer was built from, except its backends: 16 hex characters, short enough for
 * every vendor's tag values. A provider records it (and `backendsDigest`) after the cloud matches
 * the spec and returns both in `listOwned`, so a restarted hub that computes the same digests
 * knows the load balancer is current without reading its sub-resources.
 */
export function loadBalancerSpecDigest(spec: LoadBalancerSpec): string {
  return digest16(specText(spec));
}

/**
 * The spec without its backends, as stable text in which Secret values appear only as SHA-256
 * hashes: a rotated certificate changes it, and no key is ever in it in clear.
 */
export function specText(spec: LoadBalancerSpec): string {
  const { backends: _backends, backendAnnotations: _annotations, secrets, ...rest } = spec;
  if (secrets === undefined) return JSON.stringify(rest);
  const hashed: Record<string, unknown> = {};
  for (const name of Object.keys(secrets).sort()) {
    const s = secrets[name];
    if (s === undefined) continue;
    hashed[name] =
      s.data === undefined
        ? { problem: s.problem }
        : Object.fromEntries(
            Object.keys(s.data)
              .sort()
              .map((k) => [
                k,
                `sha256:${createHash("sha256")
                  .update(s.data[k] ?? "")
                  .digest("hex")}`,
              ]),
          );
  }
  return JSON.stringify({ ...rest, secrets: hashed });
}

/**
 * The backend set, order and repeats ignored, with the vendor annotations of its nodes (a
 * changed address override is a changed backend); without any, the digest of the ids alone.
 */
export function backendsDigest(backends: readonly string[], annotations?: BackendAnnotations): string {
  const ids = [...new Set(backends)].sort();
  const annotated = ids.flatMap((id) => {
    const a = annotations?.[id];
    if (a === undefined || Object.keys(a).length === 0) return [];
    return [[id, Object.entries(a).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))]];
  });
  const text = ids.join("\n");
  return digest16(annotated.length === 0 ? text : `${text}\n\n${JSON.stringify(annotated)}`);
}

function digest16(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}
