/**
 * The Hetzner CCM's Service annotations (`load-balancer.hetzner.cloud/…`, its
 * internal/annotation/load_balancer.go) that fleet-ccm honours, with upstream's meaning, and
 * the ones it refuses: a Service asking for what fleet-ccm does not build (a fixed private IP or
 * subnet; the reserved `id`) is refused before any call rather than built otherwise. The HTTP/HTTPS keys are read in
 * http-settings.ts. docs/providers/hetzner.md has the table.
 */

import { type LabelSelector, LabelSelectorError, parseLabelSelector } from "../../../k8s/label-selector.js";
import {
  AnnotationError,
  BOOLEAN,
  GO_BOOLEAN,
  length,
  oneOf,
  parseBoolean,
  parseEnum,
  parseLength,
} from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";

export const ANNOTATION_PREFIX = "load-balancer.hetzner.cloud/";

export const A = {
  location: `${ANNOTATION_PREFIX}location`,
  networkZone: `${ANNOTATION_PREFIX}network-zone`,
  type: `${ANNOTATION_PREFIX}type`,
  algorithm: `${ANNOTATION_PREFIX}algorithm-type`,
  usePrivateIP: `${ANNOTATION_PREFIX}use-private-ip`,
  disablePublicNetwork: `${ANNOTATION_PREFIX}disable-public-network`,
  disablePrivateIngress: `${ANNOTATION_PREFIX}disable-private-ingress`,
  ipv6Disabled: `${ANNOTATION_PREFIX}ipv6-disabled`,
  hostname: `${ANNOTATION_PREFIX}hostname`,
  proxyProtocol: `${ANNOTATION_PREFIX}uses-proxyprotocol`,
  protocol: `${ANNOTATION_PREFIX}protocol`,
  name: `${ANNOTATION_PREFIX}name`,
  healthProtocol: `${ANNOTATION_PREFIX}health-check-protocol`,
  healthPort: `${ANNOTATION_PREFIX}health-check-port`,
  healthInterval: `${ANNOTATION_PREFIX}health-check-interval`,
  healthTimeout: `${ANNOTATION_PREFIX}health-check-timeout`,
  healthRetries: `${ANNOTATION_PREFIX}health-check-retries`,
  healthPath: `${ANNOTATION_PREFIX}health-check-http-path`,
  certificates: `${ANNOTATION_PREFIX}http-certificates`,
  certificateType: `${ANNOTATION_PREFIX}certificate-type`,
  managedName: `${ANNOTATION_PREFIX}http-managed-certificate-name`,
  managedDomains: `${ANNOTATION_PREFIX}http-managed-certificate-domains`,
  managedStaging: `${ANNOTATION_PREFIX}http-managed-certificate-acme-staging`,
  redirectHttp: `${ANNOTATION_PREFIX}http-redirect-http`,
  stickySessions: `${ANNOTATION_PREFIX}http-sticky-sessions`,
  cookieName: `${ANNOTATION_PREFIX}http-cookie-name`,
  cookieLifetime: `${ANNOTATION_PREFIX}http-cookie-lifetime`,
  timeoutIdle: `${ANNOTATION_PREFIX}http-timeout-idle`,
  statusCodes: `${ANNOTATION_PREFIX}http-status-codes`,
  healthDomain: `${ANNOTATION_PREFIX}health-check-http-domain`,
  healthTls: `${ANNOTATION_PREFIX}health-check-http-validate-certificate`,
  nodeSelector: `${ANNOTATION_PREFIX}node-selector`,
  ipv4Rdns: `${ANNOTATION_PREFIX}ipv4-rdns`,
  ipv6Rdns: `${ANNOTATION_PREFIX}ipv6-rdns`,
} as const;

/**
 * Keys fleet-ccm does not build: a Service with one is refused, naming it. `private-ipv4` and
 * `private-subnet-ip-range` pin the load balancer's private address; `id` is reserved upstream.
 */
const REFUSED: Readonly<Record<string, string>> = {
  [`${ANNOTATION_PREFIX}id`]: "not supported by fleet-ccm (reserved by the Hetzner CCM): remove it",
  [`${ANNOTATION_PREFIX}private-ipv4`]: "not supported by fleet-ccm yet: remove it",
  [`${ANNOTATION_PREFIX}private-subnet-ip-range`]: "not supported by fleet-ccm yet: remove it",
};

export const LB_TYPE_NAMES = ["lb11", "lb21", "lb31"] as const;
export type LbTypeName = (typeof LB_TYPE_NAMES)[number];
export const ALGORITHMS = ["round_robin", "least_connections"] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/**
 * A new load balancer's type and algorithm where neither the Service nor the account names one
 * (upstream's lb11; Hetzner's round_robin).
 */
export const DEFAULT_LB_TYPE: LbTypeName = "lb11";
export const DEFAULT_ALGORITHM: Algorithm = "round_robin";

/** What a Service's annotations ask of its Hetzner load balancer (the account's defaults filled in). */
export interface HetznerLbSettings {
  /** Exactly one of location and networkZone is set. */
  readonly location?: string;
  readonly networkZone?: string;
  /**
   * Type and algorithm as the Service (else the account) names them; absent: the defaults at
   * create, and an existing load balancer's left as they are (upstream never downgrades one).
   */
  readonly type?: LbTypeName;
  readonly algorithm?: Algorithm;
  readonly usePrivateIP: boolean;
  /** Asked by disable-public-network (or an internal Service); absent: public at create, then left. */
  readonly publicInterface?: boolean;
  readonly privateIngress: boolean;
  readonly ipv6Ingress: boolean;
  readonly hostname?: string;
  /** A name the Service asks for; fleet-ccm keeps its own deterministic name (warned). */
  readonly requestedName?: string;
  /** The PTR of each public address the Service names (ipv4-rdns, ipv6-rdns); absent: left as it is. */
  readonly reverseDns: Readonly<Partial<Record<"ipv4" | "ipv6", string>>>;
}

export interface AccountLbDefaults {
  readonly location: string;
  readonly networkZone?: string | undefined;
  /** Only where the account sets them (HCLOUD_LOAD_BALANCERS_TYPE, _ALGORITHM_TYPE). */
  readonly type?: LbTypeName | undefined;
  readonly algorithm?: Algorithm | undefined;
  readonly usePrivateIP: boolean;
  readonly privateIngress: boolean;
  readonly ipv6Ingress: boolean;
}

const NAME = length(63, {
  pattern: /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/,
  form: "lower-case letters, digits and '-'",
});
const HOSTNAME = length(253, { pattern: /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i, form: "a DNS name" });
/** change_dns_ptr's dns_ptr: "a fully qualified domain name (FQDN) without trailing dot". */
const FQDN = length(253, {
  pattern: /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i,
  form: "a fully qualified domain name without trailing dot",
});

const bool = (a: Readonly<Record<string, string>>, key: string): boolean | undefined => {
  const raw = a[key];
  return raw === undefined ? undefined : parseBoolean(key, raw, GO_BOOLEAN);
};

/** Refuses what fleet-ccm does not build. */
export function checkRefused(a: Readonly<Record<string, string>>): void {
  for (const [key, why] of Object.entries(REFUSED))
    if (a[key] !== undefined) throw new AnnotationError(key, a[key] ?? "", "no value", why);
}

/**
 * The nodes `node-selector` picks as targets (a Kubernetes label selector, as upstream parses
 * it); undefined without the annotation: every eligible node.
 */
export function nodeSelectorOf(a: Readonly<Record<string, string>>): LabelSelector | undefined {
  const raw = a[A.nodeSelector];
  if (raw === undefined) return undefined;
  try {
    return parseLabelSelector(raw);
  } catch (err) {
    if (!(err instanceof LabelSelectorError)) throw err;
    throw new AnnotationError(
      A.nodeSelector,
      raw,
      "a Kubernetes label selector such as env=prod,tier in (web)",
      err.message,
    );
  }
}

export function lbSettingsOf(a: Readonly<Record<string, string>>, d: AccountLbDefaults): HetznerLbSettings {
  checkRefused(a);
  const location = a[A.location];
  const zone = a[A.networkZone];
  if (location !== undefined && location !== "") parseLength(A.location, location, NAME);
  if (zone !== undefined) parseLength(A.networkZone, zone, NAME);
  // Upstream: a location wins over a network zone; an empty location annotation clears the default.
  const where =
    location !== undefined && location !== ""
      ? { location }
      : zone !== undefined
        ? { networkZone: zone }
        : location === "" && d.networkZone !== undefined
          ? { networkZone: d.networkZone }
          : { location: d.location };
  const rawType = a[A.type];
  const type = rawType === undefined ? d.type : parseEnum(A.type, rawType, oneOf(LB_TYPE_NAMES));
  const rawAlg = a[A.algorithm];
  const algorithm = rawAlg === undefined ? d.algorithm : parseEnum(A.algorithm, rawAlg, oneOf(ALGORITHMS));
  const disablePublic = bool(a, A.disablePublicNetwork);
  const disablePrivateIngress = bool(a, A.disablePrivateIngress);
  const ipv6Disabled = bool(a, A.ipv6Disabled);
  const hostname = a[A.hostname];
  if (hostname !== undefined) parseLength(A.hostname, hostname, HOSTNAME);
  const name = a[A.name];
  if (name !== undefined) parseLength(A.name, name, NAME);
  // Upstream sets the PTR whenever the key is there (changeIPv4RDNS); Hetzner takes an FQDN.
  const rdns = (key: string) => {
    const raw = a[key];
    return raw === undefined ? undefined : parseLength(key, raw, FQDN);
  };
  const ipv4Rdns = rdns(A.ipv4Rdns);
  const ipv6Rdns = rdns(A.ipv6Rdns);
  return {
    ...where,
    ...(type !== undefined && { type }),
    ...(algorithm !== undefined && { algorithm }),
    usePrivateIP: bool(a, A.usePrivateIP) ?? d.usePrivateIP,
    ...(disablePublic !== undefined && { publicInterface: !disablePublic }),
    privateIngress: disablePrivateIngress === undefined ? d.privateIngress : !disablePrivateIngress,
    ipv6Ingress: ipv6Disabled === undefined ? d.ipv6Ingress : !ipv6Disabled,
    ...(hostname !== undefined && { hostname }),
    ...(name !== undefined && { requestedName: name }),
    reverseDns: {
      ...(ipv4Rdns !== undefined && { ipv4: ipv4Rdns }),
      ...(ipv6Rdns !== undefined && { ipv6: ipv6Rdns }),
    },
  };
}

export const SERVICE_PROTOCOLS = ["tcp", "http", "https"] as const;
export type HetznerProtocol = (typeof SERVICE_PROTOCOLS)[number];

/** The protocol of the Service's Hetzner services (`protocol`, tcp by default). */
export function serviceProtocolOf(a: Readonly<Record<string, string>>): HetznerProtocol {
  const raw = a[A.protocol];
  return raw === undefined ? "tcp" : parseEnum(A.protocol, raw, oneOf(SERVICE_PROTOCOLS));
}

/** A Go duration as upstream's health-check keys take it ("15s", "1m", "500ms"), in whole seconds. */
export function seconds(key: string, raw: string): number {
  const m = /^(\d+)(ms|s|m)?$/.exec(raw.trim());
  if (m === null) throw new AnnotationError(key, raw, "a duration such as 15s");
  const n = Number(m[1]);
  const s = m[2] === "ms" ? n / 1000 : m[2] === "m" ? n * 60 : n;
  if (!Number.isInteger(s) || s < 1)
    throw new AnnotationError(key, raw, "a duration of whole seconds, at least 1s");
  return s;
}

/** The Hetzner CCM's keys that stand for unified settings (the factory's lbSettings). */
export function vendorLbSettings(a: Readonly<Record<string, string>>): VendorLbSettings {
  const out: { -readonly [K in keyof VendorLbSettings]: VendorLbSettings[K] } = {};
  const proto = a[A.healthProtocol];
  const p =
    proto === undefined ? undefined : parseEnum(A.healthProtocol, proto, oneOf(["tcp", "http"] as const));
  if (p !== undefined) out.healthCheckProtocol = p === "http" ? "HTTP" : "TCP";
  else if (
    a[A.protocol]?.toLowerCase() === "http" &&
    [A.healthInterval, A.healthTimeout, A.healthRetries].some((k) => a[k] !== undefined)
  )
    // Upstream: a health check configured by any of these keys takes the service's protocol.
    out.healthCheckProtocol = "HTTP";
  const path = a[A.healthPath];
  if (path !== undefined) {
    const checked = parseLength(A.healthPath, path, length(255));
    // Upstream reads the path only for an http(s) check: health-check-protocol, else the
    // service's protocol (tcp by default). Alone it would make the check HTTP (predicates.ts).
    if ((p ?? serviceProtocolOf(a)) !== "tcp") out.healthCheckPath = checked;
  }
  const interval = a[A.healthInterval];
  if (interval !== undefined) out.healthCheckIntervalSeconds = seconds(A.healthInterval, interval);
  const timeout = a[A.healthTimeout];
  if (timeout !== undefined) out.healthCheckTimeoutSeconds = seconds(A.healthTimeout, timeout);
  const retries = a[A.healthRetries];
  if (retries !== undefined) {
    const n = Number(retries);
    if (!/^\d+$/.test(retries) || n < 1 || n > 5)
      throw new AnnotationError(A.healthRetries, retries, "1 to 5");
    out.unhealthyThreshold = n;
  }
  const proxy = a[A.proxyProtocol];
  if (proxy !== undefined) out.proxyProtocol = parseBoolean(A.proxyProtocol, proxy, GO_BOOLEAN);
  return out;
}

export { BOOLEAN };
