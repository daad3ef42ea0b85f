/**
 * openstack-cloud-controller-manager's Service annotations that fleet-ccm honours, with
 * upstream's meaning (its pkg/openstack/loadbalancer.go), and the unified settings some of them
 * stand for (lbSettings). Keys fleet-ccm does not build are listed as unsupported in
 * docs/providers/openstack.md and left alone (a Warning Event says so).
 */
import {
  BOOLEAN,
  GO_BOOLEAN,
  oneOf,
  parseBoolean,
  parseEnum,
  parseRange,
  range,
} from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";

export const LB_PREFIX = "loadbalancer.openstack.org/";
export const INTERNAL_KEY = "service.beta.kubernetes.io/openstack-internal-load-balancer";

export const A = {
  internal: INTERNAL_KEY,
  floatingNetworkId: `${LB_PREFIX}floating-network-id`,
  floatingSubnetId: `${LB_PREFIX}floating-subnet-id`,
  subnetId: `${LB_PREFIX}subnet-id`,
  networkId: `${LB_PREFIX}network-id`,
  memberSubnetId: `${LB_PREFIX}member-subnet-id`,
  proxyProtocol: `${LB_PREFIX}proxy-protocol`,
  keepFloatingIp: `${LB_PREFIX}keep-floatingip`,
  lbMethod: `${LB_PREFIX}lb-method`,
  flavorId: `${LB_PREFIX}flavor-id`,
  availabilityZone: `${LB_PREFIX}availability-zone`,
  enableHealthMonitor: `${LB_PREFIX}enable-health-monitor`,
  healthDelay: `${LB_PREFIX}health-monitor-delay`,
  healthTimeout: `${LB_PREFIX}health-monitor-timeout`,
  healthMaxRetries: `${LB_PREFIX}health-monitor-max-retries`,
  healthMaxRetriesDown: `${LB_PREFIX}health-monitor-max-retries-down`,
  timeoutClientData: `${LB_PREFIX}timeout-client-data`,
  timeoutMemberConnect: `${LB_PREFIX}timeout-member-connect`,
  timeoutMemberData: `${LB_PREFIX}timeout-member-data`,
  timeoutTcpInspect: `${LB_PREFIX}timeout-tcp-inspect`,
  xForwardedFor: `${LB_PREFIX}x-forwarded-for`,
  loadBalancerId: `${LB_PREFIX}load-balancer-id`,
  tlsContainerRef: `${LB_PREFIX}default-tls-container-ref`,
} as const;

export const LB_METHODS = ["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"] as const;
export type LbMethod = (typeof LB_METHODS)[number];

/** What a Service's annotations ask of its load balancer (absent: the account's defaults). */
export interface OpenStackLbAnnotations {
  readonly internal?: boolean;
  readonly floatingNetworkId?: string;
  readonly floatingSubnetId?: string;
  readonly subnetId?: string;
  readonly networkId?: string;
  readonly memberSubnetId?: string;
  readonly keepFloatingIp: boolean;
  readonly lbMethod?: LbMethod;
  readonly flavorId?: string;
  readonly availabilityZone?: string;
  readonly enableHealthMonitor?: boolean;
  readonly timeouts: Readonly<Record<string, number>>;
  readonly xForwardedFor: boolean;
  readonly loadBalancerId?: string;
  /** A certificate reference (Barbican's): the TCP listeners terminate TLS with it. */
  readonly tlsContainerRef?: string;
}

const TIMEOUT = range(0, 31_536_000_000, "ms");
const TIMEOUTS = {
  timeout_client_data: A.timeoutClientData,
  timeout_member_connect: A.timeoutMemberConnect,
  timeout_member_data: A.timeoutMemberData,
  timeout_tcp_inspect: A.timeoutTcpInspect,
} as const;

const str = (a: Readonly<Record<string, string>>, k: string): string | undefined => {
  const v = a[k]?.trim();
  return v === undefined || v === "" ? undefined : v;
};

/** Reads the annotations; throws AnnotationError on a value upstream would refuse. */
export function parseAnnotations(a: Readonly<Record<string, string>>): OpenStackLbAnnotations {
  const bool = (k: string) => {
    const raw = a[k];
    return raw === undefined ? undefined : parseBoolean(k, raw, GO_BOOLEAN);
  };
  const timeouts: Record<string, number> = {};
  for (const [field, key] of Object.entries(TIMEOUTS)) {
    const raw = a[key];
    if (raw !== undefined) timeouts[field] = parseRange(key, raw, TIMEOUT);
  }
  const method = str(a, A.lbMethod);
  const out: Record<string, unknown> = {
    keepFloatingIp: bool(A.keepFloatingIp) ?? false,
    timeouts,
    xForwardedFor: bool(A.xForwardedFor) ?? false,
  };
  const set = (k: keyof OpenStackLbAnnotations, v: unknown) => {
    if (v !== undefined) out[k] = v;
  };
  set("internal", bool(A.internal));
  set("floatingNetworkId", str(a, A.floatingNetworkId));
  set("floatingSubnetId", str(a, A.floatingSubnetId));
  set("subnetId", str(a, A.subnetId));
  set("networkId", str(a, A.networkId));
  set("memberSubnetId", str(a, A.memberSubnetId));
  set("lbMethod", method === undefined ? undefined : parseEnum(A.lbMethod, method, oneOf(LB_METHODS, true)));
  set("flavorId", str(a, A.flavorId));
  set("availabilityZone", str(a, A.availabilityZone));
  set("enableHealthMonitor", bool(A.enableHealthMonitor));
  set("loadBalancerId", str(a, A.loadBalancerId));
  set("tlsContainerRef", str(a, A.tlsContainerRef));
  return out as unknown as OpenStackLbAnnotations;
}

const SECONDS = range(1, 86_400, "s");
const RETRIES = range(1, 10);

/** The unified settings upstream's keys stand for (a `lb.fleet-ccm.io/` key on the Service wins). */
export function vendorLbSettings(a: Readonly<Record<string, string>>): VendorLbSettings {
  const out: Record<string, unknown> = {};
  const read = (key: string, field: keyof VendorLbSettings, parse: (raw: string) => unknown) => {
    const raw = a[key];
    if (raw !== undefined) out[field] = parse(raw);
  };
  read(A.internal, "internal", (r) => parseBoolean(A.internal, r, GO_BOOLEAN));
  read(A.proxyProtocol, "proxyProtocol", (r) => parseBoolean(A.proxyProtocol, r, BOOLEAN));
  read(A.healthDelay, "healthCheckIntervalSeconds", (r) =>
    parseRange(A.healthDelay, r.replace(/s$/, ""), SECONDS),
  );
  read(A.healthTimeout, "healthCheckTimeoutSeconds", (r) =>
    parseRange(A.healthTimeout, r.replace(/s$/, ""), SECONDS),
  );
  read(A.healthMaxRetries, "healthyThreshold", (r) => parseRange(A.healthMaxRetries, r, RETRIES));
  read(A.healthMaxRetriesDown, "unhealthyThreshold", (r) => parseRange(A.healthMaxRetriesDown, r, RETRIES));
  return out as VendorLbSettings;
}
