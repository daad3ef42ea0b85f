/**
 * Which Secrets a Service names, by the hub's SecretReferences (Welcome.secret_references): the
 * agent reads exactly these and the hub accepts exactly these, by the one definition here.
 */
import type { SecretReference } from "./gen/fleet/v1/sync.js";

/** At most this many Secrets per Service cross to the hub (more are reported as a problem). */
export const MAX_SECRETS_PER_SERVICE = 16;
/** At most this many bytes per Secret value (a long certificate chain is a few KiB). */
export const MAX_SECRET_VALUE_BYTES = 64 * 1024;

/** A Secret name Kubernetes accepts: a DNS-1123 subdomain of at most 253 characters. */
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isValidSecretName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}

/** A Secret a Service names: its name (valid or not) and the data keys asked for it. */
export interface NamedSecret {
  readonly name: string;
  readonly keys: readonly string[];
  /** A valid Secret name, so it may be read; an invalid one is reported, never requested. */
  readonly valid: boolean;
}

function nameIn(value: string, jsonField: string): string | undefined {
  if (jsonField === "") return value.trim() === "" ? undefined : value.trim();
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const name = (v as Record<string, unknown>)[jsonField];
  return typeof name === "string" && name !== "" ? name : undefined;
}

/**
 * The Secrets the annotations name under the references, sorted by name, each with the union of
 * the keys its references ask for; at most MAX_SECRETS_PER_SERVICE (the first by name).
 */
export function namedSecrets(
  annotations: Readonly<Record<string, string>> | undefined,
  references: readonly SecretReference[],
): NamedSecret[] {
  if (annotations === undefined || references.length === 0) return [];
  const keys = new Map<string, Set<string>>();
  for (const k in annotations)
    for (const r of references) {
      if (r.annotationPrefix === "" || !k.startsWith(r.annotationPrefix)) continue;
      const name = nameIn(annotations[k] as string, r.jsonField);
      if (name === undefined) continue;
      const set = keys.get(name) ?? new Set<string>();
      for (const key of r.keys) set.add(key);
      keys.set(name, set);
    }
  return [...keys]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, MAX_SECRETS_PER_SERVICE)
    .map(([name, set]) => ({ name, keys: [...set].sort(), valid: isValidSecretName(name) }));
}

/** The same references (order does not matter). */
export function sameReferences(a: readonly SecretReference[], b: readonly SecretReference[]): boolean {
  const key = (rs: readonly SecretReference[]) =>
    JSON.stringify(rs.map((r) => [r.annotationPrefix, r.jsonField, [...r.keys].sort()]).sort());
  return key(a) === key(b);
}
