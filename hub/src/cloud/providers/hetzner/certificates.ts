/**
 * The certificates of a Service's https services. Uploaded ones are the user's, named by id or
 * name in `http-certificates`: read (one call each) so a missing one, or one labelled for
 * another cluster, is refused before the load balancer is touched; never changed. The managed
 * one is requested as the Hetzner CCM requests it (`POST /certificates` type managed, labelled
 * `hcloud-ccm/service-uid=<uid>`, with HC-Use-Staging-CA=true for ACME staging) and owned like
 * the load balancer (fleet-ccm's owner labels): its issuance is its create_certificate action,
 * polled once; while it runs the call answers in progress, and the next one reads the
 * certificate's actions and issuance from the cloud. A failed issuance is reported once as
 * OperationFailedError and the certificate deleted, so the next sync requests it again. One
 * the Hetzner CCM requested (the uid label, no owner) is adopted only with adoptFrom. Owned
 * managed certificates go with the load balancer (after it, as nothing then uses them).
 */
import { CloudError, OperationFailedError, SuspectAnswerError } from "../../errors.js";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import {
  type InProgress,
  inProgress,
  isInProgress,
  type LbServiceHints,
  type ServiceTarget,
} from "../../provider.js";
import { ACTION_RETRY_MS, describeFailure, pollOnce, recentActions } from "./actions.js";
import type { HetznerClient } from "./client.js";
import { HetznerApiError, isNotFound } from "./errors.js";
import type { CertificateRef, HetznerHttpSettings, ManagedCertificate } from "./http-settings.js";
import type { WireAction, WireCertificate } from "./wire.js";

export const CERT_OPS = {
  list: "cert.list",
  get: "cert.get",
  actions: "cert.actions",
  create: "cert.create",
  labels: "cert.labels.update",
  delete: "cert.delete",
} as const;

/** Upstream's label asking Hetzner for a Let's Encrypt staging certificate (hcops reconcileManagedCertificate). */
export const STAGING_LABEL = "HC-Use-Staging-CA";

export function checkCertificate(body: unknown): WireCertificate {
  const c = body as Partial<WireCertificate> | null;
  if (
    typeof c !== "object" ||
    c === null ||
    !Number.isSafeInteger(c.id) ||
    typeof c.name !== "string" ||
    typeof c.labels !== "object" ||
    c.labels === null ||
    !Array.isArray(c.domain_names) ||
    !Array.isArray(c.used_by)
  )
    throw new SuspectAnswerError("Hetzner Cloud API answered something that is not a certificate");
  return c as WireCertificate;
}

export class HetznerCertificates {
  constructor(
    private readonly client: HetznerClient,
    /** The owner labels every owned resource of the Service carries (load-balancers.ts). */
    private readonly ownerLabels: (target: ServiceTarget) => Record<string, string>,
    private readonly uidLabel: string,
  ) {}

  /** The certificate ids the Service's https services use, or in progress while its managed one is issued. */
  async resolve(
    target: ServiceTarget,
    http: HetznerHttpSettings,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<number[] | InProgress> {
    if (http.protocol !== "https") return [];
    if (http.managed !== undefined) {
      const id = await this.managed(target, http.managed, signal, hints);
      return isInProgress(id) ? id : [id];
    }
    const ids: number[] = [];
    for (const ref of http.certificates) ids.push((await this.uploaded(target, ref, signal)).id);
    return [...new Set(ids)];
  }

  private async uploaded(
    target: ServiceTarget,
    ref: CertificateRef,
    signal?: AbortSignal,
  ): Promise<WireCertificate> {
    let cert: WireCertificate | undefined;
    if ("id" in ref) {
      try {
        cert = checkCertificate(
          (await this.client.get<{ certificate?: unknown }>(CERT_OPS.get, `/certificates/${ref.id}`, signal))
            .certificate,
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (cert !== undefined && cert.id !== ref.id)
        throw new SuspectAnswerError(`certificate ${ref.id} answered as certificate ${cert.id}`);
    } else {
      const found = (
        await this.client.list<unknown>(CERT_OPS.list, "/certificates", "certificates", signal, {
          name: ref.name,
        })
      ).map(checkCertificate);
      cert = found.find((c) => c.name === ref.name);
    }
    const named = "id" in ref ? String(ref.id) : ref.name;
    if (cert === undefined)
      throw new CloudError(
        `http-certificates names certificate ${named}, which the Hetzner project does not have`,
      );
    const cluster = cert.labels[OWNER_TAG_CLUSTER];
    if (cluster !== undefined && cluster !== target.cluster)
      throw new CloudError(
        `certificate ${named} belongs to cluster ${cluster}: it is not this cluster's to use`,
      );
    return cert;
  }

  /** The Service's managed certificates as upstream's label finds them, sorted by whose. */
  private async find(target: ServiceTarget, signal?: AbortSignal) {
    const all = (
      await this.client.list<unknown>(CERT_OPS.list, "/certificates", "certificates", signal, {
        label_selector: `${this.uidLabel}=${target.serviceUid}`,
      })
    ).map(checkCertificate);
    const out: {
      mine?: WireCertificate;
      vendor?: WireCertificate;
      foreign?: WireCertificate;
      allMine: WireCertificate[];
    } = { allMine: [] };
    for (const c of all) {
      if (c.labels[this.uidLabel] !== target.serviceUid)
        throw new SuspectAnswerError(
          `label selector for Service ${target.serviceUid} answered certificate ${c.id}`,
        );
      const cluster = c.labels[OWNER_TAG_CLUSTER];
      const uid = c.labels[OWNER_TAG_SERVICE_UID];
      if (cluster === target.cluster && uid === target.serviceUid) {
        out.mine ??= c;
        out.allMine.push(c);
      } else if (cluster === undefined && uid === undefined) out.vendor ??= c;
      else out.foreign ??= c;
    }
    return out;
  }

  private async managed(
    target: ServiceTarget,
    want: ManagedCertificate,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<number | InProgress> {
    const found = await this.find(target, signal);
    let cert = found.mine;
    if (cert === undefined && found.foreign !== undefined)
      throw new CloudError(
        `managed certificate ${found.foreign.name} labelled with Service UID ${target.serviceUid} belongs to cluster ${found.foreign.labels[OWNER_TAG_CLUSTER]}`,
      );
    if (cert === undefined && found.vendor !== undefined) {
      if (target.scope.adoptFrom === undefined)
        throw new CloudError(
          `managed certificate ${found.vendor.name} was requested by the Hetzner CCM for Service UID ${target.serviceUid}: set clusters[].adoptFrom to adopt it`,
        );
      cert = checkCertificate(
        (
          await this.client.put<{ certificate?: unknown }>(
            CERT_OPS.labels,
            `/certificates/${found.vendor.id}`,
            { labels: { ...found.vendor.labels, ...this.ownerLabels(target) } },
            signal,
          )
        ).certificate,
      );
    }
    if (cert === undefined) return this.request(target, want, signal);

    const page = await recentActions(
      this.client,
      CERT_OPS.actions,
      `/certificates/${cert.id}`,
      `managed certificate ${cert.name}`,
      signal,
    );
    if (page.running !== undefined) return page.running;
    // The certificate was read before its actions: an issuance they show ended is taken from them.
    const issued = page.items.find((a) => a.command === "create_certificate");
    const issuance = cert.status?.issuance;
    if (issuance === "failed" || (issuance !== "completed" && issued?.status === "error"))
      return this.failed(
        cert,
        page.items.find((a) => a.status === "error"),
        signal,
      );
    if (issuance === "pending" && issued?.status !== "success")
      return inProgress(ACTION_RETRY_MS, `managed certificate ${cert.name}: issuance pending`);
    const same =
      cert.domain_names.length === want.domains.length &&
      want.domains.every((d) => cert.domain_names.includes(d));
    if (!same)
      hints?.warn?.(
        "HetznerManagedCertificateUnchanged",
        `managed certificate ${cert.name} keeps its domains ${cert.domain_names.join(",")}: Hetzner cannot change a certificate's domains (delete it to have it requested again)`,
      );
    return cert.id;
  }

  private async request(
    target: ServiceTarget,
    want: ManagedCertificate,
    signal?: AbortSignal,
  ): Promise<number | InProgress> {
    let answer: { certificate?: unknown; action?: unknown };
    try {
      answer = await this.client.post(
        CERT_OPS.create,
        "/certificates",
        {
          name: want.name,
          type: "managed",
          domain_names: want.domains,
          labels: { ...this.ownerLabels(target), ...(want.staging && { [STAGING_LABEL]: "true" }) },
        },
        signal,
      );
    } catch (err) {
      const api = err instanceof Error && err.cause instanceof HetznerApiError ? err.cause : err;
      if (api instanceof HetznerApiError && api.code === "uniqueness_error")
        throw new CloudError(
          `a certificate named ${want.name} exists in the Hetzner project and is not this Service's: set another http-managed-certificate-name`,
          { cause: err },
        );
      throw err;
    }
    const cert = checkCertificate(answer.certificate);
    const outcome = await pollOnce(this.client, answer, `managed certificate ${cert.name}: issuing`, signal);
    if (isInProgress(outcome)) return outcome;
    if (outcome.kind === "failed") return this.failed(cert, outcome.action, signal);
    return cert.id;
  }

  /** A failed issuance: the certificate goes (unless something uses it) and the next sync asks again. */
  private async failed(
    cert: WireCertificate,
    a: WireAction | undefined,
    signal?: AbortSignal,
  ): Promise<never> {
    const why = a === undefined ? "issuance failed" : describeFailure(a);
    if (cert.used_by.length > 0)
      throw new OperationFailedError(`managed certificate ${cert.name}: ${why}; still in use, left as it is`);
    await this.client.delete(CERT_OPS.delete, `/certificates/${cert.id}`, signal);
    throw new OperationFailedError(
      `managed certificate ${cert.name}: ${why}; deleted, the next sync requests it again`,
    );
  }

  /**
   * Deletes the owner's managed certificates (after its load balancer: nothing then uses them),
   * but those the load balancer `keptBy` (one left in place) still uses.
   */
  async deleteOwned(target: ServiceTarget, signal?: AbortSignal, keptBy?: number): Promise<void> {
    const { allMine } = await this.find(target, signal);
    const inUse = (c: WireCertificate) =>
      c.used_by.some((u) => u.type === "load_balancer" && u.id === keptBy);
    for (const c of allMine.filter((x) => !inUse(x)))
      try {
        await this.client.delete(CERT_OPS.delete, `/certificates/${c.id}`, signal);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
  }
}
