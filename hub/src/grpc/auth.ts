import { createHash } from "node:crypto";
import type { ClusterConfig } from "../config/schema.js";
import { resolveSecret } from "../config/secret.js";

/** A cluster's credential as the hub keeps it: the token itself, or only its SHA-256 digest. */
export type ClusterCredential =
  | { readonly cluster: string; readonly token: string }
  | { readonly cluster: string; readonly tokenHash: string };

/**
 * Maps a bearer token to the one cluster it belongs to. Tokens are kept only as
 * SHA-256 digests, so a heap dump or a log line never shows one, and the lookup
 * is a hash-map probe, not a string comparison that leaks timing.
 */
export class TokenAuthenticator {
  private byDigest = new Map<string, string>();

  constructor(tokens: Iterable<readonly [cluster: string, token: string]> = []) {
    this.replace([...tokens].map(([cluster, token]) => ({ cluster, token })));
  }

  /**
   * Replaces every credential at once (a configuration reload); all-or-nothing. Returns the
   * clusters whose credential changed or went: their open streams must close.
   */
  replace(credentials: Iterable<ClusterCredential>): string[] {
    const next = new Map<string, string>();
    for (const c of credentials) {
      const digest = "token" in c ? sha256(c.token) : c.tokenHash.replace(/^sha256:/, "");
      const other = next.get(digest);
      if (other !== undefined && other !== c.cluster)
        throw new Error(
          `clusters "${other}" and "${c.cluster}" have the same token; each cluster needs its own`,
        );
      next.set(digest, c.cluster);
    }
    const kept = new Map<string, Set<string>>();
    for (const [digest, cluster] of next) {
      const set = kept.get(cluster) ?? new Set<string>();
      set.add(digest);
      kept.set(cluster, set);
    }
    const revoked = new Set<string>();
    for (const [digest, cluster] of this.byDigest)
      if (!(kept.get(cluster)?.has(digest) ?? false)) revoked.add(cluster);
    this.byDigest = next;
    return [...revoked];
  }

  /** The cluster a raw `authorization` header value belongs to, or undefined. */
  clusterFor(authorization: string | undefined): string | undefined {
    if (authorization === undefined) return undefined;
    const m = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (m === null || m[1] === undefined) return undefined;
    return this.byDigest.get(sha256(m[1]));
  }
}

/**
 * The hub's credentials of each cluster: its token read from its reference, or its digests (a
 * list while a token rotates: old and new both admitted).
 */
export function clusterCredentials(
  clusters: readonly ClusterConfig[],
  env?: NodeJS.ProcessEnv,
): ClusterCredential[] {
  return clusters.flatMap((c, i): ClusterCredential[] =>
    c.tokenHash !== undefined
      ? [c.tokenHash].flat().map((tokenHash) => ({ cluster: c.name, tokenHash }))
      : [
          {
            cluster: c.name,
            token: c.token === undefined ? "" : resolveSecret(c.token, `clusters[${i}].token`, env),
          },
        ],
  );
}

/** `sha256:<hex>` of a token, as clusters[].tokenHash holds it. */
export function tokenHash(token: string): string {
  return `sha256:${sha256(token)}`;
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}
