/**
 * The annotation prefixes the hub itself reads on every cluster, whatever its provider: the
 * unified `lb.fleet-ccm.io/` and `lifecycle.fleet-ccm.io/` keys and the two Kubernetes-wide
 * annotations upstream's controllers read. An agent whose Welcome names no prefixes (a hub that
 * predates Welcome.forward_annotation_prefixes) forwards exactly these.
 */
export const UNIFIED_ANNOTATION_PREFIXES: readonly string[] = [
  "lb.fleet-ccm.io/",
  "lifecycle.fleet-ccm.io/",
  "alpha.kubernetes.io/provided-node-ip",
  "service.beta.kubernetes.io/load-balancer-source-ranges",
];

/** Which annotations cross from a cluster to the hub: those whose key starts with one of the prefixes. */
export class AnnotationFilter {
  readonly prefixes: readonly string[];

  /** No prefixes: the unified set (the Welcome of an older hub). */
  constructor(prefixes: readonly string[] = []) {
    // An empty prefix would forward every annotation: never taken.
    const named = prefixes.filter((p) => p !== "");
    this.prefixes = [...new Set(named.length === 0 ? UNIFIED_ANNOTATION_PREFIXES : named)].sort();
  }

  /** The same set of prefixes (order does not matter). */
  sameAs(other: AnnotationFilter): boolean {
    return (
      this.prefixes.length === other.prefixes.length && this.prefixes.every((p, i) => p === other.prefixes[i])
    );
  }

  forwards(key: string): boolean {
    for (const p of this.prefixes) if (key.startsWith(p)) return true;
    return false;
  }

  /** The forwarded subset; `undefined` stays `undefined`, so a slim object carries no empty map. */
  pick(annotations: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
    if (annotations === undefined) return undefined;
    let out: Record<string, string> | undefined;
    for (const k in annotations) {
      if (!this.forwards(k)) continue;
      out ??= {};
      out[k] = annotations[k] as string;
    }
    return out;
  }
}
