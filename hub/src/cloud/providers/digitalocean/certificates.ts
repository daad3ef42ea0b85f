/**
 * The certificate a Service's TLS rules use, found as the DigitalOcean CCM finds it:
 * certificate-id as given, else certificate-name looked up with `GET /v2/certificates?name=`
 * (the first of page 1). And upstream's Let's Encrypt rule: DigitalOcean renews a Let's Encrypt
 * certificate under a new id and moves the load balancer to it, so when the load balancer's
 * certificate differs from the Service's, the load balancer's is kept if it is a Let's Encrypt
 * certificate with the same name as the Service's (or the Service's no longer exists), instead
 * of putting back the expired one.
 */
import { CloudError, SuspectAnswerError } from "../../errors.js";
import type { DoLbSettings } from "./annotations.js";
import type { DigitalOceanClient } from "./client.js";
import { isNotFound } from "./errors.js";
import type { WireCertificate, WireLoadBalancer } from "./wire.js";

export const CERT_OPS = {
  list: "certificates.list",
  get: "certificates.get",
} as const;

function checkCertificate(body: unknown): WireCertificate {
  const c = body as Partial<WireCertificate> | null;
  if (typeof c !== "object" || c === null || typeof c.id !== "string" || typeof c.name !== "string")
    throw new SuspectAnswerError("DigitalOcean API answered something that is not a certificate");
  return c as WireCertificate;
}

/** The certificate `id`, undefined if DigitalOcean says it does not exist. */
export async function certificateById(
  client: DigitalOceanClient,
  id: string,
  signal?: AbortSignal,
): Promise<WireCertificate | undefined> {
  try {
    const answer = await client.get<{ certificate?: unknown }>(
      CERT_OPS.get,
      `/certificates/${encodeURIComponent(id)}`,
      signal,
    );
    const cert = checkCertificate(answer.certificate);
    if (cert.id !== id)
      throw new SuspectAnswerError(`asked for certificate ${id}, the API answered ${cert.id}`);
    return cert;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The id the Service's annotations name (upstream's findCertificateID); undefined: none named. */
export async function serviceCertificateId(
  client: DigitalOceanClient,
  s: DoLbSettings,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (s.certificateId !== undefined) return s.certificateId;
  const name = s.certificateName;
  if (name === undefined) return undefined;
  const page = await client.page<unknown>(
    CERT_OPS.list,
    "/certificates",
    "certificates",
    1,
    { name },
    signal,
  );
  // DigitalOcean filters by exact name; the check is ours, so another's never slips in.
  const found = page.items.map(checkCertificate).find((c) => c.name === name);
  if (found === undefined)
    throw new CloudError(
      `certificate with name: ${JSON.stringify(name)} not found (GET /v2/certificates?name=)`,
    );
  return found.id;
}

/** The first certificate a load balancer's rules use (upstream reads one per load balancer). */
export function certificateOfLb(lb: WireLoadBalancer): string | undefined {
  const id = lb.forwarding_rules.find(
    (r) => r.certificate_id !== undefined && r.certificate_id !== "",
  )?.certificate_id;
  return id === undefined || id === "" ? undefined : id;
}

/**
 * The certificate to build with: the Service's, or the load balancer's where upstream's
 * recordUpdatedLetsEncryptCert takes it (a Let's Encrypt renewal, see above).
 */
export async function certificateToUse(
  client: DigitalOceanClient,
  lb: WireLoadBalancer | undefined,
  serviceCert: string | undefined,
  signal?: AbortSignal,
): Promise<{ id: string | undefined; renewedFrom?: string }> {
  const lbCert = lb === undefined ? undefined : certificateOfLb(lb);
  if (lbCert === undefined || serviceCert === undefined || lbCert === serviceCert) return { id: serviceCert };
  const current = await certificateById(client, lbCert, signal);
  if (current === undefined || current.type !== "lets_encrypt") return { id: serviceCert };
  const named = await certificateById(client, serviceCert, signal);
  if (named === undefined || named.name === current.name) return { id: lbCert, renewedFrom: serviceCert };
  return { id: serviceCert };
}
