/**
 * The Hetzner CCM's HTTP and HTTPS keys, read as its hclbServiceOptsBuilder reads them
 * (internal/hcops/load_balancer.go): one protocol for every Service port (`protocol`), the
 * certificates of an https service (uploaded ones named by id or name in `http-certificates`,
 * or the one managed certificate the CCM requests for the Service with `certificate-type:
 * managed`), the HTTP options (redirect, sticky sessions and their cookie, idle timeout),
 * the health check's port and the HTTP health check's domain, status codes and TLS. Parsed without any call; what Hetzner
 * would refuse (certificates on plain http, https without one, an HTTP option on tcp) is
 * refused here, naming the key, instead of reaching the cloud.
 */
import {
  AnnotationError,
  GO_BOOLEAN,
  length,
  oneOf,
  parseBoolean,
  parseEnum,
  parseLength,
  parseRange,
  range,
} from "../../annotation-bounds.js";
import { A, type HetznerProtocol, serviceProtocolOf } from "./annotations.js";

export type { HetznerProtocol };

/** An uploaded certificate as the annotation names it: an id, or a name (upstream: not a number). */
export type CertificateRef = { readonly id: number } | { readonly name: string };

export interface ManagedCertificate {
  /** `http-managed-certificate-name`, else upstream's `ccm-managed-certificate-<uid>`. */
  readonly name: string;
  readonly domains: readonly string[];
  /** `http-managed-certificate-acme-staging`: upstream's label HC-Use-Staging-CA=true. */
  readonly staging: boolean;
}

export interface HetznerHttpSettings {
  readonly protocol: HetznerProtocol;
  /** https with uploaded certificates. */
  readonly certificates: readonly CertificateRef[];
  /** https with the Service's managed certificate (upstream then ignores http-certificates). */
  readonly managed?: ManagedCertificate;
  readonly redirectHttp: boolean;
  readonly stickySessions: boolean;
  readonly cookieName?: string;
  /** Seconds. */
  readonly cookieLifetime?: number;
  /** Seconds; sent only when set (Hetzner's default otherwise). */
  readonly timeoutIdle?: number;
  /** The HTTP health check's extras; upstream applies them only to an HTTP health check. */
  readonly healthDomain?: string;
  readonly healthStatusCodes?: readonly string[];
  readonly healthTls?: boolean;
  /** `health-check-port`: the port every service's check goes to, as given (upstream's Port). */
  readonly healthPort?: number;
}

/** Upstream's default name of the Service's managed certificate. */
export const managedCertificateName = (serviceUid: string) => `ccm-managed-certificate-${serviceUid}`;

/** Keys that only an http or https service takes. */
const HTTP_ONLY = [
  A.certificates,
  A.certificateType,
  A.managedName,
  A.managedDomains,
  A.redirectHttp,
  A.stickySessions,
  A.cookieName,
  A.cookieLifetime,
  A.timeoutIdle,
] as const;

const DOMAIN = length(253, {
  pattern: /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i,
  form: "a DNS name",
});
const COOKIE = length(255, { pattern: /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, form: "a cookie name" });
const CERT_NAME = length(128);
const STATUS_CODE = /^[1-5][0-9?]{2}$/;

const GO_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/** A Go duration ("300s", "5m", "1h30m"), as upstream's DurationFromService takes it, in whole seconds. */
export function goDurationSeconds(key: string, raw: string): number {
  const parts = raw.match(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g);
  if (parts === null || parts.join("") !== raw)
    throw new AnnotationError(key, raw, "a duration such as 300s or 5m");
  let total = 0;
  for (const p of parts) {
    const m = /^(\d+(?:\.\d+)?)(.+)$/.exec(p);
    total += Number(m?.[1]) * (GO_UNITS[m?.[2] ?? ""] ?? Number.NaN);
  }
  const s = Math.round(total * 1e6) / 1e6;
  if (!Number.isInteger(s) || s < 1)
    throw new AnnotationError(key, raw, "a duration of whole seconds, at least 1s");
  return s;
}

/** Upstream splits comma lists as they are (no trimming); an empty item is refused here. */
function list(key: string, raw: string): string[] {
  const items = raw.split(",");
  if (items.some((i) => i === ""))
    throw new AnnotationError(key, raw, "a comma-separated list without empty items");
  return items;
}

export function httpSettingsOf(a: Readonly<Record<string, string>>, serviceUid: string): HetznerHttpSettings {
  const protocol = serviceProtocolOf(a);
  // The health check's extras count on any protocol (a tcp service may have an HTTP check).
  const domain = a[A.healthDomain];
  const codes = a[A.statusCodes];
  const tls = a[A.healthTls];
  const port = a[A.healthPort];
  const health = {
    ...(port !== undefined && { healthPort: parseRange(A.healthPort, port, range(1, 65535)) }),
    ...(domain !== undefined && { healthDomain: parseLength(A.healthDomain, domain, DOMAIN) }),
    ...(codes !== undefined && {
      healthStatusCodes: list(A.statusCodes, codes).map((c) => {
        if (!STATUS_CODE.test(c))
          throw new AnnotationError(A.statusCodes, codes, "status codes such as 200 or 2??");
        return c;
      }),
    }),
    ...(tls !== undefined && { healthTls: parseBoolean(A.healthTls, tls, GO_BOOLEAN) }),
  };
  if (protocol === "tcp") {
    const key = HTTP_ONLY.find((k) => a[k] !== undefined);
    if (key !== undefined)
      throw new AnnotationError(
        key,
        a[key] ?? "",
        "no value",
        `only for protocol http or https (${A.protocol})`,
      );
    return { protocol, certificates: [], redirectHttp: false, stickySessions: false, ...health };
  }
  const rawType = a[A.certificateType];
  const type =
    rawType === undefined
      ? "uploaded"
      : parseEnum(A.certificateType, rawType, oneOf(["uploaded", "managed"] as const));
  let certificates: CertificateRef[] = [];
  let managed: ManagedCertificate | undefined;
  if (type === "managed") {
    const rawDomains = a[A.managedDomains];
    if (rawDomains === undefined)
      throw new AnnotationError(
        A.managedDomains,
        "",
        "a comma-separated list of domains",
        "a managed certificate needs its domains",
      );
    const domains = list(A.managedDomains, rawDomains).map((d) => parseLength(A.managedDomains, d, DOMAIN));
    const rawName = a[A.managedName];
    const name =
      rawName === undefined || rawName === ""
        ? managedCertificateName(serviceUid)
        : parseLength(A.managedName, rawName, CERT_NAME);
    const staging = a[A.managedStaging];
    // Upstream reads the staging key leniently: anything but a true boolean means production.
    let useStaging = false;
    try {
      useStaging = staging !== undefined && parseBoolean(A.managedStaging, staging, GO_BOOLEAN);
    } catch {
      useStaging = false;
    }
    managed = { name, domains, staging: useStaging };
  } else {
    const raw = a[A.certificates];
    if (raw !== undefined)
      certificates = list(A.certificates, raw).map((c) =>
        /^\d+$/.test(c) ? { id: Number(c) } : { name: parseLength(A.certificates, c, CERT_NAME) },
      );
  }
  if (protocol === "http" && (certificates.length > 0 || managed !== undefined))
    throw new AnnotationError(
      managed !== undefined ? A.certificateType : A.certificates,
      a[managed !== undefined ? A.certificateType : A.certificates] ?? "",
      "no value",
      "certificates terminate TLS on protocol https only",
    );
  if (protocol === "https" && certificates.length === 0 && managed === undefined)
    throw new AnnotationError(
      A.certificates,
      "",
      "certificate ids or names",
      `protocol https needs ${A.certificates} or ${A.certificateType}: managed`,
    );
  const redirect = a[A.redirectHttp];
  const redirectHttp = redirect !== undefined && parseBoolean(A.redirectHttp, redirect, GO_BOOLEAN);
  if (redirectHttp && protocol !== "https")
    throw new AnnotationError(
      A.redirectHttp,
      redirect ?? "",
      "false",
      "a redirect to HTTPS needs protocol https",
    );
  const sticky = a[A.stickySessions];
  const cookie = a[A.cookieName];
  const lifetime = a[A.cookieLifetime];
  const idle = a[A.timeoutIdle];
  return {
    protocol,
    certificates,
    ...(managed !== undefined && { managed }),
    redirectHttp,
    stickySessions: sticky !== undefined && parseBoolean(A.stickySessions, sticky, GO_BOOLEAN),
    ...(cookie !== undefined && { cookieName: parseLength(A.cookieName, cookie, COOKIE) }),
    ...(lifetime !== undefined && { cookieLifetime: goDurationSeconds(A.cookieLifetime, lifetime) }),
    ...(idle !== undefined && { timeoutIdle: goDurationSeconds(A.timeoutIdle, idle) }),
    ...health,
  };
}
