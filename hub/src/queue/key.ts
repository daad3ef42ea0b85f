/** What a reconciler works on: one object of one cluster. Handlers enqueue keys, never objects. */
export interface WorkKey {
  readonly cluster: string;
  /** The reconciler, e.g. "node-init". */
  readonly kind: string;
  /** "namespace/name" for namespaced objects, "name" otherwise. */
  readonly name: string;
}

/**
 * The one string form of a key, for maps and logs: "cluster/kind/name". "%" and "/" in cluster
 * and kind are percent-encoded, so distinct keys never share a string and parseKey inverts it.
 */
export function keyOf(key: WorkKey): string {
  return `${escapeSegment(key.cluster)}/${escapeSegment(key.kind)}/${key.name}`;
}

/** Every keyOf() of `cluster` starts with this, and no other cluster's key does. */
export function clusterKeyPrefix(cluster: string): string {
  return `${escapeSegment(cluster)}/`;
}

/** Inverse of keyOf; undefined if `id` has no cluster and kind segments. */
export function parseKey(id: string): WorkKey | undefined {
  const clusterEnd = id.indexOf("/");
  const kindEnd = clusterEnd < 0 ? -1 : id.indexOf("/", clusterEnd + 1);
  if (kindEnd < 0) return undefined;
  return {
    cluster: unescapeSegment(id.slice(0, clusterEnd)),
    kind: unescapeSegment(id.slice(clusterEnd + 1, kindEnd)),
    name: id.slice(kindEnd + 1),
  };
}

function escapeSegment(segment: string): string {
  if (!segment.includes("/") && !segment.includes("%")) return segment;
  return segment.replaceAll("%", "%25").replaceAll("/", "%2F");
}

function unescapeSegment(segment: string): string {
  if (!segment.includes("%")) return segment;
  // Order matters: every "%" in an escaped segment starts "%25" or "%2F".
  return segment.replaceAll("%2F", "/").replaceAll("%25", "%");
}
