/**
 * A fetch that trusts the given CA certificates (PEM) instead of Node's default roots, for an
 * account whose cloud presents a private CA's certificate (clouds.yaml's `cacert`, which also
 * replaces the default trust). It is undici's own fetch with its own Agent, so the pair always
 * match, whichever undici the running Node.js bundles. Verification stays on: a certificate the
 * bundle does not vouch for fails the request.
 */
import { Agent, fetch as undiciFetch } from "undici";
import type { Fetch } from "./rest-client.js";

export function fetchTrusting(caCertificates: string): Fetch {
  const dispatcher = new Agent({ connect: { ca: caCertificates } });
  return async (url, init) =>
    (await undiciFetch(url, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    })) as unknown as Response;
}
