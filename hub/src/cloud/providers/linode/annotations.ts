/**
 * The Linode CCM's Service annotations (`service.beta.kubernetes.io/linode-loadbalancer-*`),
 * with its defaults, so a Service written for it means the same here. Each value is checked
 * against the bound the Linode API documents for the field it becomes (LINODE_BOUNDS, from the
 * Linode OpenAPI v4.189.0) before any call; a bad value is an AnnotationError naming the
 * annotation and the bound (not retried: the Service must change).
 */
import { isIP } from "node:net";
import type { SecretReference } from "@fleet-ccm/proto";
import {
  AnnotationError,
  oneOf as enumOf,
  GO_BOOLEAN,
  type LengthBound,
  length,
  parseBoolean,
  parseEnum,
  parseLength,
  parseRange,
  type RangeBound,
  range,
  type SettingBounds,
} from "../../annotation-bounds.js";
import { isPrivateIPv4 } from "./instances.js";

export const ANNOTATION_PREFIX = "service.beta.kubernetes.io/linode-loadbalancer-";
export const NODE_ANNOTATION_PREFIX = "node.k8s.linode.com/";

/** Keys, without the prefix. */
export const A = {
  defaultProtocol: "default-protocol",
  portPrefix: "port-",
  defaultProxyProtocol: "default-proxy-protocol",
  proxyProtocol: "proxy-protocol",
  defaultAlgorithm: "default-algorithm",
  defaultStickiness: "default-stickiness",
  checkType: "check-type",
  checkPath: "check-path",
  checkBody: "check-body",
  checkInterval: "check-interval",
  checkTimeout: "check-timeout",
  checkAttempts: "check-attempts",
  checkPassive: "check-passive",
  throttle: "throttle",
  preserve: "preserve",
  nodeBalancerId: "nodebalancer-id",
  hostnameOnlyIngress: "hostname-only-ingress",
  tags: "tags",
  firewallId: "firewall-id",
  firewallAcl: "firewall-acl",
  enableIPv6Ingress: "enable-ipv6-ingress",
  enableIPv6Backends: "enable-ipv6-backends",
  nodeBalancerType: "nodebalancer-type",
  reservedIPv4: "reserved-ipv4",
  retainReservedIPv4: "retain-reserved-ipv4",
  udpCheckPort: "udp-check-port",
  backendIPv4Range: "backend-ipv4-range",
  backendVpcName: "backend-vpc-name",
  backendSubnetName: "backend-subnet-name",
  backendSubnetId: "backend-subnet-id",
  frontendSubnetId: "frontend-subnet-id",
  frontendVpcName: "frontend-vpc-name",
  frontendSubnetName: "frontend-subnet-name",
  frontendIPv4Range: "frontend-ipv4-range",
  frontendIPv6Range: "frontend-ipv6-range",
} as const;

/**
 * The Secrets port annotations name: `tls-secret-name` in `port-<N>`, a `kubernetes.io/tls`
 * Secret in the Service's namespace whose tls.crt and tls.key become the config's ssl_cert and
 * ssl_key (agents read these and no other Secret).
 */
export const TLS_SECRET_REFERENCE: SecretReference = Object.freeze({
  annotationPrefix: ANNOTATION_PREFIX + A.portPrefix,
  jsonField: "tls-secret-name",
  keys: ["tls.crt", "tls.key"],
});

/** Keys the Linode CCM has that this provider refuses (it cannot do what they ask). */
export const UNSUPPORTED = [] as const;

export type NbProto = "tcp" | "http" | "https" | "udp";
export type ProxyProtocol = "none" | "v1" | "v2";
export type Algorithm = "roundrobin" | "leastconn" | "source" | "ring_hash";
export type Stickiness = "none" | "table" | "http_cookie" | "session" | "source_ip";
export type CheckType = "none" | "connection" | "http" | "http_body";

export interface PortSettings {
  readonly protocol?: NbProto;
  readonly proxyProtocol?: ProxyProtocol;
  readonly algorithm?: Algorithm;
  readonly stickiness?: Stickiness;
  readonly udpCheckPort?: number;
  /** The kubernetes.io/tls Secret of an https port (LoadBalancerSpec.secrets holds its content). */
  readonly tlsSecretName?: string;
}

export interface FirewallAcl {
  readonly kind: "allowList" | "denyList";
  readonly ipv4: readonly string[];
  readonly ipv6: readonly string[];
}

export type NodeBalancerType = "common" | "premium" | "premium_40gb";

export interface LinodeLbSettings {
  readonly defaultProtocol?: NbProto;
  readonly ports: ReadonlyMap<number, PortSettings>;
  readonly defaultProxyProtocol?: ProxyProtocol;
  readonly defaultAlgorithm?: Algorithm;
  readonly defaultStickiness?: Stickiness;
  readonly checkType?: CheckType;
  readonly checkPath?: string;
  readonly checkBody?: string;
  readonly checkInterval?: number;
  readonly checkTimeout?: number;
  readonly checkAttempts?: number;
  readonly checkPassive?: boolean;
  readonly throttle: number;
  readonly preserve: boolean;
  readonly nodeBalancerId?: number;
  readonly hostnameOnlyIngress: boolean;
  readonly tags: readonly string[];
  readonly firewallId?: number;
  readonly firewallAcl?: FirewallAcl;
  readonly enableIPv6Ingress: boolean;
  /** The nodes' public IPv6 as backends (no VPC backends then). */
  readonly enableIPv6Backends: boolean;
  readonly nodeBalancerType: NodeBalancerType;
  /** Create the NodeBalancer on this reserved IPv4 (only at creation, as the Linode CCM). */
  readonly reservedIPv4?: string;
  /** Keep the reserved IPv4 when the NodeBalancer is deleted. */
  readonly retainReservedIPv4: boolean;
  readonly udpCheckPort?: number;
  /** The backend VPC subnet, by id or by VPC and subnet names, and an optional range in it. */
  readonly backendSubnet?: { readonly id: number } | { readonly vpc?: string; readonly subnet?: string };
  readonly backendIPv4Range?: string;
  /** A VPC frontend: the NodeBalancer's address in this subnet, optionally from these ranges. */
  readonly frontend?: {
    readonly subnet: { readonly id: number } | { readonly vpc: string; readonly subnet: string };
    readonly ipv4Range?: string;
    readonly ipv6Range?: string;
  };
}

/** NodeBalancer config check_path (Linode OpenAPI: pattern ^[a-zA-Z0-9\/\-%?&=.]*$, no maxLength). */
const CHECK_PATH_FORM = {
  pattern: /^[a-zA-Z0-9/\-%?&=.]*$/,
  form: "a URL path of letters, digits and / - % ? & = .",
};

/**
 * The bound of each Linode annotation with one, from the field it becomes in the Linode API
 * (OpenAPI v4.189.0, NodeBalancer, config, tag and VPC schemas). Where Linode documents no
 * maximum length, 1024 (the longest health check path the other clouds take) keeps a huge value
 * from reaching the API.
 */
export const LINODE_BOUNDS = {
  // check_path: the pattern above; no documented length.
  checkPath: length(1024, CHECK_PATH_FORM),
  // check_body: a string, no documented length.
  checkBody: length(1024),
  // check_interval: no range documented, only "greater than check_timeout".
  checkInterval: range(2, 3600, "seconds"),
  // check_timeout: 1..30, "less than check_interval".
  checkTimeout: range(1, 30, "seconds"),
  // check_attempts: 1..30.
  checkAttempts: range(1, 30),
  // client_conn_throttle: 0..20 (the Linode CCM clamps a larger one to 20).
  throttle: range(0, Number.MAX_SAFE_INTEGER),
  // udp_check_port: 1..65535.
  udpCheckPort: range(1, 65535),
  // A tag (POST /tags label): 3..50 characters.
  tag: length(50, undefined, 3),
  // VPC and subnet labels: 1..64 characters.
  vpcLabel: length(64, undefined, 1),
  // NodeBalancer, firewall and subnet ids: positive integers.
  id: range(1, Number.MAX_SAFE_INTEGER),
} as const satisfies Record<string, LengthBound | RangeBound>;

/** What Linode takes for the unified settings it maps to config fields (capabilities.settingBounds). */
export const LINODE_SETTING_BOUNDS = {
  // check_path's pattern, on the unified path too.
  healthCheckPath: length(1024, CHECK_PATH_FORM),
  healthCheckTimeoutSeconds: LINODE_BOUNDS.checkTimeout,
} as const satisfies SettingBounds;

function fail(key: string, value: string, expected: string, problem?: string): never {
  throw new AnnotationError(`${ANNOTATION_PREFIX}${key}`, value, expected, problem);
}

function oneOf<T extends string>(key: string, raw: string, values: readonly T[]): T {
  return parseEnum(`${ANNOTATION_PREFIX}${key}`, raw, enumOf(values));
}

function int(key: string, raw: string, bound: RangeBound): number {
  return parseRange(`${ANNOTATION_PREFIX}${key}`, raw, bound);
}

function str(key: string, raw: string, bound: LengthBound): string {
  return parseLength(`${ANNOTATION_PREFIX}${key}`, raw, bound);
}

/** Go's strconv.ParseBool, as the Linode CCM reads booleans. */
function bool(key: string, raw: string): boolean {
  return parseBoolean(`${ANNOTATION_PREFIX}${key}`, raw, GO_BOOLEAN);
}

const PROTOCOLS: readonly NbProto[] = ["tcp", "http", "https", "udp"];
const PROXY: readonly ProxyProtocol[] = ["none", "v1", "v2"];
const ALGORITHMS: readonly Algorithm[] = ["roundrobin", "leastconn", "source", "ring_hash"];
const STICKINESS: readonly Stickiness[] = ["none", "table", "http_cookie", "session", "source_ip"];
const CHECKS: readonly CheckType[] = ["none", "connection", "http", "http_body"];

function parsePort(key: string, raw: string): PortSettings {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return fail(key, raw, "a JSON object");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return fail(key, raw, "a JSON object");
  const o = v as Record<string, unknown>;
  const field = (k: string) => {
    const x = o[k];
    if (x === undefined) return undefined;
    if (typeof x !== "string") return fail(key, raw, `${k} as a string`);
    return x;
  };
  const tlsSecretName = field("tls-secret-name");
  const udpPort = o["udp-check-port"];
  if (
    udpPort !== undefined &&
    !(Number.isInteger(udpPort) && (udpPort as number) >= 1 && (udpPort as number) <= 65535)
  )
    fail(key, raw, "udp-check-port from 1 to 65535");
  const protocol = field("protocol");
  const proxy = field("proxy-protocol");
  const algorithm = field("algorithm");
  const stickiness = field("stickiness");
  return {
    ...(protocol !== undefined && { protocol: oneOf(key, protocol, PROTOCOLS) }),
    ...(proxy !== undefined && { proxyProtocol: oneOf(key, proxy, PROXY) }),
    ...(algorithm !== undefined && { algorithm: oneOf(key, algorithm, ALGORITHMS) }),
    ...(stickiness !== undefined && { stickiness: oneOf(key, stickiness, STICKINESS) }),
    ...(udpPort !== undefined && { udpCheckPort: udpPort as number }),
    ...(tlsSecretName !== undefined && tlsSecretName !== "" && { tlsSecretName }),
  };
}

const ACL_RULE_ADDRESSES = 255;
const ACL_RULES = 25;

function parseAcl(key: string, raw: string): FirewallAcl {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return fail(key, raw, 'JSON {"allowList": {"ipv4": [...], "ipv6": [...]}} or {"denyList": ...}');
  }
  const o = (typeof v === "object" && v !== null ? v : {}) as Record<string, unknown>;
  const kinds = (["allowList", "denyList"] as const).filter((k) => o[k] !== undefined);
  if (kinds.length !== 1) return fail(key, raw, "exactly one of allowList or denyList");
  const kind = kinds[0]!;
  const list = (o[kind] ?? {}) as Record<string, unknown>;
  const ips = (family: "ipv4" | "ipv6") => {
    const x = list[family];
    if (x === undefined) return [];
    if (!Array.isArray(x) || !x.every((i) => typeof i === "string"))
      return fail(key, raw, `${family} as a list of CIDRs`);
    const bits = family === "ipv4" ? 32 : 128;
    for (const cidr of x as string[]) {
      // Firewall rule addresses: "in IP/mask format" (OpenAPI).
      const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr);
      if (m === null || isIP(m[1] ?? "") !== (family === "ipv4" ? 4 : 6) || Number(m[2]) > bits)
        return fail(
          key,
          raw,
          `${family} as a list of CIDRs (IP/mask)`,
          `${JSON.stringify(cidr.slice(0, 64))} is not one`,
        );
    }
    return x as string[];
  };
  const acl: FirewallAcl = { kind, ipv4: ips("ipv4"), ipv6: ips("ipv6") };
  // A rule takes up to 255 addresses, a firewall up to 25 rules (OpenAPI; the Linode CCM's limits).
  const rules =
    Math.ceil(acl.ipv4.length / ACL_RULE_ADDRESSES) + Math.ceil(acl.ipv6.length / ACL_RULE_ADDRESSES);
  if (rules > ACL_RULES)
    fail(
      key,
      raw,
      `at most ${ACL_RULES} firewall rules of ${ACL_RULE_ADDRESSES} addresses (IPv4 and IPv6 apart)`,
      `${rules} rules`,
    );
  return acl;
}

const UNIFIED_INTERVAL = "lb.fleet-ccm.io/health-check-interval";
const UNIFIED_TIMEOUT = "lb.fleet-ccm.io/health-check-timeout";

/** Reads every Linode CCM annotation of a Service; throws AnnotationError on a bad or unsupported one. */
export function parseLinodeAnnotations(annotations: Readonly<Record<string, string>>): LinodeLbSettings {
  const get = (k: string) => annotations[ANNOTATION_PREFIX + k];
  for (const k of UNSUPPORTED) {
    const v = get(k);
    if (v !== undefined) fail(k, v, "nothing: not supported by fleet-ccm's Linode provider (see README)");
  }
  const ports = new Map<number, PortSettings>();
  for (const [key, value] of Object.entries(annotations)) {
    if (!key.startsWith(ANNOTATION_PREFIX + A.portPrefix)) continue;
    const suffix = key.slice(ANNOTATION_PREFIX.length);
    const port = Number(suffix.slice(A.portPrefix.length));
    if (!/^\d+$/.test(suffix.slice(A.portPrefix.length)) || port < 1 || port > 65535)
      fail(suffix, value, "port-<1..65535>");
    ports.set(port, parsePort(suffix, value));
  }
  const opt = <T>(k: string, parse: (k: string, v: string) => T): T | undefined => {
    const v = get(k);
    return v === undefined ? undefined : parse(k, v);
  };
  const proxy =
    opt(A.defaultProxyProtocol, (k, v) => oneOf(k, v, PROXY)) ??
    opt(A.proxyProtocol, (k, v) => oneOf(k, v, PROXY));
  const checkType = opt(A.checkType, (k, v) => oneOf(k, v, CHECKS));
  const checkBody = get(A.checkBody);
  if (checkType === "http_body" && (checkBody === undefined || checkBody === ""))
    fail(A.checkType, "http_body", `a ${ANNOTATION_PREFIX}${A.checkBody} with it`);
  const checkPath = opt(A.checkPath, (k, v) => str(k, v, LINODE_BOUNDS.checkPath));
  if (checkBody !== undefined) str(A.checkBody, checkBody, LINODE_BOUNDS.checkBody);
  const nbId = opt(A.nodeBalancerId, (k, v) => int(k, v, LINODE_BOUNDS.id));
  const fwId = opt(A.firewallId, (k, v) => int(k, v, LINODE_BOUNDS.id));
  const acl = opt(A.firewallAcl, parseAcl);
  const interval = opt(A.checkInterval, (k, v) => int(k, v, LINODE_BOUNDS.checkInterval));
  const timeout = opt(A.checkTimeout, (k, v) => int(k, v, LINODE_BOUNDS.checkTimeout));
  // Linode: check_timeout "must be less than check_interval" (the Linode CCM's defaults: 3 and 5);
  // a unified key for either replaces these (desiredConfigs), and the hub checks those.
  const unifiedCheck = [UNIFIED_INTERVAL, UNIFIED_TIMEOUT].some((k) => annotations[k] !== undefined);
  if (!unifiedCheck && (interval !== undefined || timeout !== undefined) && (timeout ?? 3) >= (interval ?? 5))
    fail(
      interval !== undefined ? A.checkInterval : A.checkTimeout,
      get(interval !== undefined ? A.checkInterval : A.checkTimeout) ?? "",
      `${ANNOTATION_PREFIX}${A.checkInterval} (default 5) greater than ${ANNOTATION_PREFIX}${A.checkTimeout} (default 3)`,
    );
  const attempts = opt(A.checkAttempts, (k, v) => int(k, v, LINODE_BOUNDS.checkAttempts));
  const passive = opt(A.checkPassive, bool);
  const reserved = get(A.reservedIPv4)?.trim();
  if (reserved !== undefined && !/^(\d{1,3}\.){3}\d{1,3}$/.test(reserved))
    fail(A.reservedIPv4, reserved, "an IPv4 address");
  // An unknown type falls back to common, as the Linode CCM does (with a warning).
  const rawType = get(A.nodeBalancerType)?.trim().toLowerCase();
  const nbType: NodeBalancerType = rawType === "premium" || rawType === "premium_40gb" ? rawType : "common";
  const udpCheck = opt(A.udpCheckPort, (k, v) => int(k, v, LINODE_BOUNDS.udpCheckPort));
  const subnetId = opt(A.backendSubnetId, (k, v) => int(k, v, LINODE_BOUNDS.id));
  // An empty name stands for none, as before.
  const label = (k: string) =>
    opt(k, (key, v) => (v.trim() === "" ? "" : str(key, v.trim(), LINODE_BOUNDS.vpcLabel)));
  const vpcName = label(A.backendVpcName);
  const subnetName = label(A.backendSubnetName);
  const range = get(A.backendIPv4Range)?.trim();
  if (range !== undefined && !/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/.test(range))
    fail(A.backendIPv4Range, range, "an IPv4 CIDR such as 10.100.0.0/30");
  const frontendId = opt(A.frontendSubnetId, (k, v) => int(k, v, LINODE_BOUNDS.id));
  const frontendVpc = label(A.frontendVpcName);
  const frontendSubnet = label(A.frontendSubnetName);
  if ((frontendVpc === undefined) !== (frontendSubnet === undefined) && frontendId === undefined)
    fail(
      frontendVpc === undefined ? A.frontendSubnetName : A.frontendVpcName,
      frontendVpc ?? frontendSubnet ?? "",
      `${ANNOTATION_PREFIX}${A.frontendVpcName} and ${ANNOTATION_PREFIX}${A.frontendSubnetName} together`,
    );
  const f4 = get(A.frontendIPv4Range)?.trim();
  const f6 = get(A.frontendIPv6Range)?.trim();
  if (f4 !== undefined && !/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/.test(f4))
    fail(A.frontendIPv4Range, f4, "an IPv4 CIDR");
  if (f6 !== undefined && !/^[0-9a-fA-F:]+\/\d{1,3}$/.test(f6)) fail(A.frontendIPv6Range, f6, "an IPv6 CIDR");
  const frontendOf =
    frontendId !== undefined
      ? { id: frontendId }
      : frontendVpc && frontendSubnet
        ? { vpc: frontendVpc, subnet: frontendSubnet }
        : undefined;
  if (frontendOf === undefined && (f4 !== undefined || f6 !== undefined))
    fail(
      f4 !== undefined ? A.frontendIPv4Range : A.frontendIPv6Range,
      f4 ?? f6 ?? "",
      `a frontend subnet (${ANNOTATION_PREFIX}${A.frontendSubnetId})`,
    );
  const backendSubnet =
    subnetId !== undefined
      ? { id: subnetId }
      : vpcName !== undefined || subnetName !== undefined
        ? { ...(vpcName && { vpc: vpcName }), ...(subnetName && { subnet: subnetName }) }
        : undefined;
  const dp = opt(A.defaultProtocol, (k, v) => oneOf(k, v, PROTOCOLS));
  const da = opt(A.defaultAlgorithm, (k, v) => oneOf(k, v, ALGORITHMS));
  const ds = opt(A.defaultStickiness, (k, v) => oneOf(k, v, STICKINESS));
  return {
    ...(dp !== undefined && { defaultProtocol: dp }),
    ports,
    ...(proxy !== undefined && { defaultProxyProtocol: proxy }),
    ...(da !== undefined && { defaultAlgorithm: da }),
    ...(ds !== undefined && { defaultStickiness: ds }),
    ...(checkType !== undefined && { checkType }),
    ...(checkPath !== undefined && { checkPath }),
    ...(checkBody !== undefined && { checkBody }),
    ...(interval !== undefined && { checkInterval: interval }),
    ...(timeout !== undefined && { checkTimeout: timeout }),
    ...(attempts !== undefined && { checkAttempts: attempts }),
    ...(passive !== undefined && { checkPassive: passive }),
    // The Linode CCM clamps the throttle to 0..20 rather than refusing it.
    throttle: Math.min(20, opt(A.throttle, (k, v) => int(k, v, LINODE_BOUNDS.throttle)) ?? 0),
    preserve: opt(A.preserve, bool) ?? false,
    ...(nbId !== undefined && { nodeBalancerId: nbId }),
    hostnameOnlyIngress: opt(A.hostnameOnlyIngress, bool) ?? false,
    tags: (get(A.tags) ?? "")
      .split(",")
      .map((t) => t.trim())
      .filter((t) => t !== "")
      .map((t) => str(A.tags, t, LINODE_BOUNDS.tag)),
    ...(fwId !== undefined && { firewallId: fwId }),
    ...(acl !== undefined && { firewallAcl: acl }),
    enableIPv6Ingress: opt(A.enableIPv6Ingress, bool) ?? false,
    enableIPv6Backends: opt(A.enableIPv6Backends, bool) ?? false,
    nodeBalancerType: nbType,
    ...(reserved !== undefined && { reservedIPv4: reserved }),
    retainReservedIPv4: opt(A.retainReservedIPv4, bool) ?? true,
    ...(udpCheck !== undefined && { udpCheckPort: udpCheck }),
    ...(backendSubnet !== undefined && { backendSubnet }),
    ...(range !== undefined && { backendIPv4Range: range }),
    ...(frontendOf !== undefined && {
      frontend: {
        subnet: frontendOf,
        ...(f4 !== undefined && { ipv4Range: f4 }),
        ...(f6 !== undefined && { ipv6Range: f6 }),
      },
    }),
  };
}

/** Node annotations the Linode CCM reads for NodeBalancer backends. */
export const NODE_PRIVATE_IP = `${NODE_ANNOTATION_PREFIX}private-ip`;
export const NODE_PUBLIC_IPV6 = `${NODE_ANNOTATION_PREFIX}public-ipv6`;

/** A backend node's address overrides, and what was wrong with the ones left out. */
export interface NodeBackendOverrides {
  /** Replaces the Linode's private IPv4 for private (non-VPC) backends. */
  readonly privateIP?: string;
  /** Replaces the Linode's SLAAC address for IPv6 backends. */
  readonly publicIPv6?: string;
  readonly problems: readonly string[];
}

/**
 * The Linode CCM's node overrides: `private-ip` (an IPv4) and `public-ipv6` (an IPv6 in prefix
 * form, as the Linode CCM writes it, e.g. `2600:3c03::1/128`; a bare address is taken too). A
 * malformed value is left out (the Linode's own address is used) and reported.
 */
export function nodeBackendOverrides(a: Readonly<Record<string, string>> | undefined): NodeBackendOverrides {
  const problems: string[] = [];
  const privateIP = a?.[NODE_PRIVATE_IP]?.trim();
  const ipv6 = a?.[NODE_PUBLIC_IPV6]?.trim();
  // A NodeBalancer reaches IPv4 backends at private addresses only (the API refuses others).
  const okPrivate = privateIP !== undefined && isIP(privateIP) === 4 && isPrivateIPv4(privateIP);
  if (privateIP !== undefined && !okPrivate)
    problems.push(`${NODE_PRIVATE_IP}=${JSON.stringify(privateIP)} is not a private IPv4 address`);
  const v6 = ipv6 === undefined ? undefined : /^([^/]+)(?:\/(\d{1,3}))?$/.exec(ipv6);
  const addr = v6?.[1];
  const okV6 = addr !== undefined && isIP(addr) === 6 && (v6?.[2] === undefined || Number(v6[2]) <= 128);
  if (ipv6 !== undefined && !okV6)
    problems.push(`${NODE_PUBLIC_IPV6}=${JSON.stringify(ipv6)} is not an IPv6 address or prefix`);
  return {
    ...(okPrivate && { privateIP }),
    ...(okV6 && { publicIPv6: addr }),
    problems,
  };
}
