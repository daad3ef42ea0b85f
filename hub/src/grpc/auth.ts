import { createHash } from "node:crypto";

/**
 * Maps a bearer token to the one cluster it belongs to. Tokens are kept only as
 * SHA-256 digests, so a heap dump or a log line never shows one, and the lookup
 * is a hash-map probe, not a string comparison that leaks timing.
 */
export class TokenAuthenticator {
  private readonly byDigest = new Map<string, string>();

  constructor(tokens: Iterable<readonly [cluster: string, token: string]>) {
    for (const [cluster, token] of tokens) {
      const digest = sha256(token);
      const other = this.byDigest.get(digest);
      if (other !== undefined && other !== cluster)
        throw new Error(
          `clusters "${other}" and "${cluster}" have the same token; each cluster needs its own`,
        );
      this.byDigest.set(digest, cluster);
    }
  }

  /** The cluster a raw `authorization` header value belongs to, or undefined. */
  clusterFor(authorization: string | undefined): string | undefined {
    if (authorization === undefined) return undefined;
    const m = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (m === null || m[1] === undefined) return undefined;
    return this.byDigest.get(sha256(m[1]));
  }
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}
