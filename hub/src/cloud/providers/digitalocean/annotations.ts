/**
 * The DigitalOcean CCM's Service annotations (`service.beta.kubernetes.io/do-loadbalancer-*`)
 * that this provider honours, with upstream's meaning and defaults, each value checked against
 * the bound DigitalOcean documents for the field it becomes before any call (AnnotationError:
 * not retried, the Service must change). What depends on the Service's ports (a TLS port
 * without a certificate, say) is checked where the forwarding rules are built (forwarding-rules.ts).
 */
import { isIP } from "node:net";
import {
  AnnotationError,
  oneOf as enumOf,
  GO_BOOLEAN,
  length,
  parseBoolean,
  parseEnum,
  parseLength,
  parseRange,
  range,
  type SettingBounds,
} from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";
import type { LbNetwork, LbNetworkStack, LbType, WireStickySessions } from "./wire.js";

export const ANNOTATION_PREFIX = "service.beta.kubernetes.io/do-loadbalancer-";
/** Where the DigitalOcean CCM writes its load balancer's id (and where it finds it again). */
export const LOAD_BALANCER_ID = "kubernetes.digitalocean.com/load-balancer-id";
/** The certificate-id annotation, whole: the DigitalOcean CCM rewrites it when Let's Encrypt renews the certificate. */
export const CERTIFICATE_ID = "service.beta.kubernetes.io/do-loadbalancer-certificate-id";
/**
 * "true": the load balancer is the user's now (to hand it to another Service or cluster):
 * ensure, backend updates and delete leave it alone (upstream's annDODisownLB, lb_annotations.go).
 */
export const DISOWN = "service.kubernetes.io/do-loadbalancer-disown";
/**
 * The load balancer's type, whole: the DigitalOcean CCM writes its load balancer's type back here
 * (since 6db9a8781, do/loadbalancers.go retrieveAndAnnotateLoadBalancer), so going back to it keeps
 * the type instead of applying its default.
 */
export const LB_TYPE = "service.beta.kubernetes.io/do-loadbalancer-type";

/** Keys, without the prefix. */
export const A = {
  protocol: "protocol",
  httpPorts: "http-ports",
  healthCheckProtocol: "healthcheck-protocol",
  healthCheckPath: "healthcheck-path",
  healthCheckPort: "healthcheck-port",
  healthCheckInterval: "healthcheck-check-interval-seconds",
  healthCheckTimeout: "healthcheck-response-timeout-seconds",
  unhealthyThreshold: "healthcheck-unhealthy-threshold",
  healthyThreshold: "healthcheck-healthy-threshold",
  enableProxyProtocol: "enable-proxy-protocol",
  httpIdleTimeout: "http-idle-timeout-seconds",
  stickySessionsType: "sticky-sessions-type",
  stickySessionsCookieName: "sticky-sessions-cookie-name",
  stickySessionsCookieTtl: "sticky-sessions-cookie-ttl",
  sizeUnit: "size-unit",
  sizeSlug: "size-slug",
  enableBackendKeepalive: "enable-backend-keepalive",
  disableLetsEncryptDnsRecords: "disable-lets-encrypt-dns-records",
  allowRules: "allow-rules",
  denyRules: "deny-rules",
  network: "network",
  networkStack: "network-stack",
  type: "type",
  name: "name",
  certificateId: "certificate-id",
  certificateName: "certificate-name",
  tlsPorts: "tls-ports",
  http2Ports: "http2-ports",
  http3Port: "http3-port",
  tlsPassthrough: "tls-passthrough",
  redirectHttpToHttps: "redirect-http-to-https",
  hostname: "hostname",
  ip: "ip",
  subnetUuid: "subnet-uuid",
} as const;

/**
 * The keys only upstream's buildForwardingRules reads: a REGIONAL_NETWORK load balancer's rules
 * (buildRegionalNetworkForwardingRule) ignore them, values included.
 */
export const PROXY_RULE_KEYS = [
  A.protocol,
  A.httpPorts,
  A.tlsPorts,
  A.http2Ports,
  A.http3Port,
  A.certificateId,
  A.certificateName,
  A.tlsPassthrough,
] as const;

/** The PROXY_RULE_KEYS the Service sets (full keys): what a REGIONAL_NETWORK load balancer leaves unused. */
export function proxyRuleKeysSet(a: Readonly<Record<string, string>>): string[] {
  return PROXY_RULE_KEYS.map(key).filter((k) => a[k] !== undefined);
}

/** Every Service port's protocol unless a *-ports annotation names it (upstream's `protocol`). */
export type DoPortProtocol = "tcp" | "http" | "https" | "http2";

/** DigitalOcean's documented bounds of the fields the unified settings become. */
export const DO_BOUNDS: SettingBounds = {
  healthCheckPath: length(255, { pattern: /^\/\S*$/, form: "an absolute URL path such as /healthz" }),
  healthCheckIntervalSeconds: range(3, 300, "seconds"),
  healthCheckTimeoutSeconds: range(3, 300, "seconds"),
  healthyThreshold: range(2, 10),
  unhealthyThreshold: range(2, 10),
  idleTimeoutSeconds: range(30, 600, "seconds"),
};

export interface DoLbSettings {
  /** Every port's protocol unless a *-ports annotation names it (tcp by default, as upstream). */
  readonly protocol: DoPortProtocol;
  readonly httpPorts: ReadonlySet<number>;
  /** https entry ports (upstream's tls-ports; 443 by default with a certificate or passthrough). */
  readonly tlsPorts: ReadonlySet<number>;
  readonly http2Ports: ReadonlySet<number>;
  /** The one HTTP/3 entry port (it shares an https or http2 port). */
  readonly http3Port?: number;
  /** certificate-id: wins over certificate-name, as upstream. */
  readonly certificateId?: string;
  /** certificate-name: looked up by name on every ensure (a renewed certificate keeps its name). */
  readonly certificateName?: string;
  readonly tlsPassthrough: boolean;
  readonly redirectHttpToHttps: boolean;
  /** Shown as the Service's ingress instead of the address (lower case, as upstream). */
  readonly hostname?: string;
  readonly healthCheckProtocol?: "tcp" | "http" | "https";
  /** The Service port whose node port is checked. */
  readonly healthCheckPort?: number;
  readonly stickySessions: WireStickySessions;
  readonly sizeUnit?: number;
  readonly sizeSlug?: "lb-small" | "lb-medium" | "lb-large";
  readonly enableBackendKeepalive: boolean;
  readonly disableLetsEncryptDnsRecords: boolean;
  readonly allowRules: readonly string[];
  readonly denyRules: readonly string[];
  readonly network?: LbNetwork;
  /**
   * The network-stack annotation's (none: a new load balancer is IPV4, an existing one keeps its
   * own, which DigitalOcean cannot change).
   */
  readonly networkStack?: LbNetworkStack;
  /** The type annotation's (none: the account's default type for a new one, an existing one's own). */
  readonly type?: LbType;
  /** The name upstream gave its load balancer (adoption only: the hub names its own). */
  readonly name?: string;
  /** The DigitalOcean CCM's load balancer id (adoption only, with clusters[].adoptFrom). */
  readonly loadBalancerId?: string;
  /** The disown annotation (DISOWN) is true. */
  readonly disowned: boolean;
  /**
   * The `ip` annotation, trimmed: upstream's create-only BYOIP address. A create with it is
   * refused (see createOnlyRefusal); an existing load balancer keeps its address, as upstream.
   */
  readonly reservedIp?: string;
}

/** How the DigitalOcean CCM finds a Service's load balancer: its id annotation, then its name. */
export type VendorRefs = Pick<DoLbSettings, "name" | "loadBalancerId">;

const key = (k: string) => `${ANNOTATION_PREFIX}${k}`;

function ports(k: string, raw: string): Set<number> {
  const out = new Set<number>();
  for (const part of raw.split(",")) {
    const p = part.trim();
    if (p === "") continue;
    out.add(parseRange(key(k), p, range(1, 65535)));
  }
  return out;
}

/** `ip:<address>` and `cidr:<range>` entries, comma-separated, as DigitalOcean's firewall takes them. */
function firewallRules(k: string, raw: string): string[] {
  const out: string[] = [];
  for (const part of raw.split(",")) {
    const rule = part.trim();
    if (rule === "") continue;
    const m = /^(ip|cidr):(.+)$/.exec(rule);
    const [addr = "", bits] = (m?.[2] ?? "").split("/");
    const ok =
      m !== null &&
      isIP(addr) !== 0 &&
      (m[1] === "ip"
        ? bits === undefined
        : bits !== undefined && /^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(addr) === 4 ? 32 : 128));
    if (!ok)
      throw new AnnotationError(
        key(k),
        raw,
        "comma-separated ip:<address> or cidr:<address>/<bits> rules",
        `${JSON.stringify(rule.slice(0, 64))} is neither`,
      );
    out.push(rule);
  }
  return out;
}

/**
 * Upstream's TLS refusals that need no Service port: a TLS port (tls-ports, http2-ports, or every
 * port by `protocol`) with neither a certificate nor passthrough; a certificate and passthrough
 * both; HTTP/3 with passthrough or without a certificate. (Upstream meets the first two only
 * when the Service has such a port; they are never meant, so they are refused outright.)
 */
function tlsChecks(
  a: Readonly<Record<string, string>>,
  protocol: DoPortProtocol,
  tlsPortsNamed: boolean,
  certificate: boolean,
  passthrough: boolean,
  http3Raw: string | undefined,
): void {
  const protocolTls = protocol === "https" || protocol === "http2";
  if ((tlsPortsNamed || protocolTls) && !certificate && !passthrough) {
    const k = protocolTls
      ? A.protocol
      : a[key(A.tlsPorts)] !== undefined && a[key(A.tlsPorts)] !== ""
        ? A.tlsPorts
        : A.http2Ports;
    throw new AnnotationError(
      key(k),
      a[key(k)] ?? "",
      `${key(A.certificateId)}, ${key(A.certificateName)} or ${key(A.tlsPassthrough)} beside it`,
      "must set certificate id or enable tls pass through (upstream's rule)",
    );
  }
  if (certificate && passthrough)
    throw new AnnotationError(
      key(A.tlsPassthrough),
      a[key(A.tlsPassthrough)] ?? "",
      `either a certificate (${key(A.certificateId)} or ${key(A.certificateName)}) or ${key(A.tlsPassthrough)}`,
      "either certificate id should be set or tls pass through enabled, not both (upstream's rule)",
    );
  if (http3Raw !== undefined && passthrough)
    throw new AnnotationError(
      key(A.http3Port),
      http3Raw,
      `no ${key(A.tlsPassthrough)} beside it`,
      "TLS passthrough is not allowed to be used in conjunction with HTTP3 (upstream's rule)",
    );
  if (http3Raw !== undefined && !certificate)
    throw new AnnotationError(
      key(A.http3Port),
      http3Raw,
      `${key(A.certificateId)} or ${key(A.certificateName)} beside it`,
      "certificate ID is required for HTTP3 (upstream's rule)",
    );
}

/**
 * Upstream's subnet-uuid (its VPCSubnetUUID, sent on every create and update): DigitalOcean's
 * OpenAPI document (sim/fixtures/digitalocean/) has no such field, so it cannot be built or
 * checked here. Refused, never dropped: the load balancer would land in another subnet.
 */
function refuseSubnet(a: Readonly<Record<string, string>>): void {
  const raw = a[key(A.subnetUuid)];
  if (raw !== undefined && raw.trim() !== "")
    throw new AnnotationError(
      key(A.subnetUuid),
      raw,
      "no value",
      "placing a load balancer in a VPC subnet is not supported by fleet-ccm (DigitalOcean's API document has no subnet field): remove it",
    );
}

/**
 * Why a new load balancer cannot be made for the Service: upstream's `ip` (a BYOIP address, sent
 * only on create), which DigitalOcean's API document has only as the answered, read-only address.
 */
export function createOnlyRefusal(s: DoLbSettings): AnnotationError | undefined {
  return s.reservedIp === undefined
    ? undefined
    : new AnnotationError(
        key(A.ip),
        s.reservedIp,
        "no value for a new load balancer",
        "creating a load balancer on a reserved (BYOIP) address is not supported by fleet-ccm (DigitalOcean's API document has no writable ip): remove it, or create the load balancer elsewhere and adopt it",
      );
}

/** The disown annotation as upstream's getDisownLB reads it (strconv.ParseBool: a bad value is an error). */
export function isDisowned(a: Readonly<Record<string, string>>): boolean {
  const raw = a[DISOWN];
  return raw === undefined ? false : parseBoolean(DISOWN, raw, GO_BOOLEAN);
}

/** The DigitalOcean CCM's references to its load balancer (name and id annotations), checked. */
export function vendorRefs(a: Readonly<Record<string, string>>): VendorRefs {
  const nameRaw = a[key(A.name)];
  const idRaw = a[LOAD_BALANCER_ID];
  return {
    ...(nameRaw !== undefined && {
      name: parseLength(
        key(A.name),
        nameRaw,
        length(255, {
          pattern: /^[A-Za-z0-9][A-Za-z0-9.-]*$/,
          form: "alphanumerics, '.' and '-', starting alphanumeric",
        }),
      ),
    }),
    ...(idRaw !== undefined &&
      idRaw !== "" && {
        loadBalancerId: parseLength(
          LOAD_BALANCER_ID,
          idRaw,
          length(36, { pattern: /^[0-9a-f-]{36}$/i, form: "a load balancer UUID" }),
        ),
      }),
  };
}

/**
 * The vendor keys this provider reads, checked; throws AnnotationError on the first bad one. A
 * Service whose type (its annotation, else `defaultType`) is REGIONAL_NETWORK has its
 * PROXY_RULE_KEYS left unread, as upstream leaves them (its rules are port to port, tcp or udp).
 */
export function parseDoAnnotations(
  service: Readonly<Record<string, string>>,
  defaultType: LbType = "REGIONAL",
): DoLbSettings {
  const typeRaw = service[key(A.type)];
  // GLOBAL load balancers front other load balancers, not Droplets: not one per Service.
  const type =
    typeRaw === undefined || typeRaw === ""
      ? undefined
      : parseEnum(key(A.type), typeRaw, enumOf(["REGIONAL", "REGIONAL_NETWORK"] as const, true));
  const unread = new Set<string>(
    (type ?? defaultType) === "REGIONAL_NETWORK" ? proxyRuleKeysSet(service) : [],
  );
  const a = Object.fromEntries(Object.entries(service).filter(([k]) => !unread.has(k)));
  const get = (k: string) => a[key(k)];
  const num = (k: string, min: number, max: number, unit?: string) => {
    const raw = get(k);
    return raw === undefined ? undefined : parseRange(key(k), raw, range(min, max, unit));
  };
  const bool = (k: string) => {
    const raw = get(k);
    return raw === undefined ? false : parseBoolean(key(k), raw, GO_BOOLEAN);
  };
  const protocolRaw = get(A.protocol);
  // Upstream also takes http3 here, which makes http3 → http3 rules DigitalOcean refuses (no
  // http3 target protocol): HTTP/3 is the http3-port annotation's.
  const protocol =
    protocolRaw === undefined
      ? "tcp"
      : parseEnum(key(A.protocol), protocolRaw, enumOf(["tcp", "http", "https", "http2"] as const));
  const portsOf = (k: string) => {
    const raw = get(k);
    return raw === undefined ? new Set<number>() : ports(k, raw);
  };
  const httpPorts = portsOf(A.httpPorts);
  const tlsPorts = portsOf(A.tlsPorts);
  const http2Ports = portsOf(A.http2Ports);
  // Upstream's error: one port, one protocol.
  const all = [...httpPorts, ...tlsPorts, ...http2Ports];
  const shared = [...new Set(all.filter((p, i) => all.indexOf(p) !== i))].sort((x, y) => x - y);
  if (shared.length > 0)
    throw new AnnotationError(
      key(A.tlsPorts),
      get(A.tlsPorts) ?? "",
      `ports in at most one of ${key(A.httpPorts)}, ${key(A.tlsPorts)} and ${key(A.http2Ports)}`,
      `port${shared.length > 1 ? "s" : ""} ${shared.join(", ")} ${shared.length > 1 ? "are" : "is"} in more than one`,
    );
  const certificateId = get(A.certificateId);
  const certificateName = get(A.certificateName);
  const hostname = get(A.hostname);
  const passthrough = bool(A.tlsPassthrough);
  const http3Raw = get(A.http3Port);
  tlsChecks(
    a,
    protocol,
    tlsPorts.size > 0 || http2Ports.size > 0,
    (certificateId ?? "") !== "" || (certificateName ?? "") !== "",
    passthrough,
    http3Raw,
  );
  const hcpRaw = get(A.healthCheckProtocol);
  const stickyRaw = get(A.stickySessionsType);
  const sticky =
    stickyRaw === undefined
      ? "none"
      : parseEnum(key(A.stickySessionsType), stickyRaw, enumOf(["none", "cookies"] as const));
  const cookieName = get(A.stickySessionsCookieName);
  const cookieTtl = num(A.stickySessionsCookieTtl, 1, 86_400 * 365, "seconds");
  if (sticky === "cookies" && (cookieName === undefined || cookieTtl === undefined))
    throw new AnnotationError(
      key(A.stickySessionsType),
      "cookies",
      "cookies with sticky-sessions-cookie-name and sticky-sessions-cookie-ttl set",
      "a cookie needs a name and a TTL, as upstream requires",
    );
  if (cookieName !== undefined)
    parseLength(
      key(A.stickySessionsCookieName),
      cookieName,
      length(40, { pattern: /^[A-Za-z0-9_-]+$/, form: "letters, digits, '_' and '-'" }, 2),
    );
  refuseSubnet(a);
  const reservedIp = get(A.ip)?.trim();
  const sizeSlugRaw = get(A.sizeSlug);
  const networkRaw = get(A.network);
  const stackRaw = get(A.networkStack);
  return {
    protocol,
    httpPorts,
    tlsPorts,
    http2Ports,
    ...(http3Raw !== undefined && { http3Port: num(A.http3Port, 1, 65535) }),
    // An empty value is no value, as upstream reads it.
    ...(certificateId !== undefined &&
      certificateId !== "" && {
        certificateId: parseLength(
          key(A.certificateId),
          certificateId,
          length(36, { pattern: /^[0-9a-f-]{36}$/i, form: "a certificate UUID" }),
        ),
      }),
    ...(certificateName !== undefined &&
      certificateName !== "" && {
        certificateName: parseLength(key(A.certificateName), certificateName, length(255)),
      }),
    tlsPassthrough: passthrough,
    redirectHttpToHttps: bool(A.redirectHttpToHttps),
    ...(hostname !== undefined &&
      hostname !== "" && {
        hostname: parseLength(
          key(A.hostname),
          hostname.toLowerCase(),
          length(253, {
            pattern: /^(?=.*[a-z])[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/,
            form: "a DNS name (an ingress hostname: not an IP address)",
          }),
        ),
      }),
    ...(hcpRaw !== undefined && {
      healthCheckProtocol: parseEnum(
        key(A.healthCheckProtocol),
        hcpRaw,
        enumOf(["tcp", "http", "https"] as const),
      ),
    }),
    ...(get(A.healthCheckPort) !== undefined && { healthCheckPort: num(A.healthCheckPort, 1, 65535) }),
    stickySessions:
      sticky === "cookies"
        ? { type: "cookies", cookie_name: cookieName ?? "", cookie_ttl_seconds: cookieTtl ?? 0 }
        : { type: "none" },
    ...(get(A.sizeUnit) !== undefined && { sizeUnit: num(A.sizeUnit, 1, 100) }),
    ...(sizeSlugRaw !== undefined && {
      sizeSlug: parseEnum(
        key(A.sizeSlug),
        sizeSlugRaw,
        enumOf(["lb-small", "lb-medium", "lb-large"] as const),
      ),
    }),
    enableBackendKeepalive: bool(A.enableBackendKeepalive),
    disableLetsEncryptDnsRecords: bool(A.disableLetsEncryptDnsRecords),
    allowRules: get(A.allowRules) === undefined ? [] : firewallRules(A.allowRules, get(A.allowRules) ?? ""),
    denyRules: get(A.denyRules) === undefined ? [] : firewallRules(A.denyRules, get(A.denyRules) ?? ""),
    ...(networkRaw !== undefined && {
      network: parseEnum(key(A.network), networkRaw, enumOf(["EXTERNAL", "INTERNAL"] as const, true)),
    }),
    // An empty value is no value, as upstream reads it (getNetworkStack, getType).
    ...(stackRaw !== undefined &&
      stackRaw !== "" && {
        networkStack: parseEnum(key(A.networkStack), stackRaw, enumOf(["IPV4", "DUALSTACK"] as const, true)),
      }),
    ...(type !== undefined && { type }),
    ...vendorRefs(a),
    disowned: isDisowned(a),
    // As upstream's getLoadBalancerIP: trimmed, empty is none.
    ...(reservedIp !== undefined && reservedIp !== "" && { reservedIp }),
  };
}

/** The vendor keys standing for unified settings (the factory's lbSettings). */
export function doVendorLbSettings(a: Readonly<Record<string, string>>): VendorLbSettings {
  const get = (k: string) => a[key(k)];
  const num = (k: string, b: ReturnType<typeof range> | undefined) => {
    const raw = get(k);
    return raw === undefined || b === undefined ? undefined : parseRange(key(k), raw, b);
  };
  const hcp = get(A.healthCheckProtocol);
  const protocol =
    hcp === undefined
      ? undefined
      : parseEnum(key(A.healthCheckProtocol), hcp, enumOf(["tcp", "http", "https"] as const));
  const path = get(A.healthCheckPath);
  const proxy = get(A.enableProxyProtocol);
  const network = get(A.network);
  const out: Record<string, unknown> = {
    // https health checks stay the provider's (the unified protocol has TCP and HTTP only).
    ...(protocol === "tcp" && { healthCheckProtocol: "TCP" }),
    ...(protocol === "http" && { healthCheckProtocol: "HTTP" }),
    ...(path !== undefined &&
      DO_BOUNDS.healthCheckPath !== undefined && {
        healthCheckPath: parseLength(key(A.healthCheckPath), path, DO_BOUNDS.healthCheckPath),
      }),
    healthCheckIntervalSeconds: num(A.healthCheckInterval, DO_BOUNDS.healthCheckIntervalSeconds),
    healthCheckTimeoutSeconds: num(A.healthCheckTimeout, DO_BOUNDS.healthCheckTimeoutSeconds),
    healthyThreshold: num(A.healthyThreshold, DO_BOUNDS.healthyThreshold),
    unhealthyThreshold: num(A.unhealthyThreshold, DO_BOUNDS.unhealthyThreshold),
    idleTimeoutSeconds: num(A.httpIdleTimeout, DO_BOUNDS.idleTimeoutSeconds),
    ...(proxy !== undefined && {
      proxyProtocol: parseBoolean(key(A.enableProxyProtocol), proxy, GO_BOOLEAN),
    }),
    ...(network !== undefined && {
      internal:
        parseEnum(key(A.network), network, enumOf(["EXTERNAL", "INTERNAL"] as const, true)) === "INTERNAL",
    }),
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined)) as VendorLbSettings;
}
