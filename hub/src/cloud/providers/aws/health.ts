/**
 * The health check of an AWS Service, as cloud-provider-aws builds it: its protocols (HTTPS and
 * SSL beside TCP and HTTP, which the hub's unified check has alone), its defaults for the kind
 * where the Service sets none, so a load balancer that CCM built and fleet-ccm adopts keeps its
 * health check. A value the Service sets (the unified `lb.fleet-ccm.io/health-check-*` key, or
 * upstream's `aws-load-balancer-healthcheck-*`, the unified one winning) is used as it is.
 */
import { parseEnum } from "../../annotation-bounds.js";
import { checksHealthCheckNodePort, type LbHealthCheck, type LoadBalancerSpec } from "../../provider.js";
import { AWS_ANNOTATION_PREFIX, AWS_HEALTH_CHECK_PROTOCOLS, type AwsLbSettings } from "./annotations.js";

export type AwsHealthProtocol = "TCP" | "HTTP" | "HTTPS" | "SSL";

export interface AwsHealthCheck extends Omit<LbHealthCheck, "protocol"> {
  readonly protocol: AwsHealthProtocol;
  /** On kube-proxy's healthCheckNodePort (externalTrafficPolicy Local), which no listener uses. */
  readonly local: boolean;
}

/** The spec an AWS load balancer is built from: the hub's, with the AWS health check. */
export interface AwsLbSpec extends Omit<LoadBalancerSpec, "healthCheck"> {
  readonly healthCheck: AwsHealthCheck;
}

type Numbers = Pick<
  LbHealthCheck,
  "intervalSeconds" | "timeoutSeconds" | "healthyThreshold" | "unhealthyThreshold"
>;

/** Upstream's defaultElbHC* (classic) and buildNLBHealthCheckConfiguration's (NLB; Local: its HTTP check's). */
export const UPSTREAM_HEALTH_DEFAULTS: Readonly<Record<"classic" | "nlb" | "nlbLocal", Numbers>> = {
  classic: { intervalSeconds: 10, timeoutSeconds: 5, healthyThreshold: 2, unhealthyThreshold: 6 },
  nlb: { intervalSeconds: 30, timeoutSeconds: 10, healthyThreshold: 3, unhealthyThreshold: 3 },
  nlbLocal: { intervalSeconds: 10, timeoutSeconds: 10, healthyThreshold: 2, unhealthyThreshold: 2 },
};

const UNIFIED = "lb.fleet-ccm.io/health-check-";
const VENDOR = `${AWS_ANNOTATION_PREFIX}healthcheck-`;

/** The keys that set each number: the hub's unified one and upstream's. */
const KEYS: Readonly<Record<keyof Numbers, readonly [string, string]>> = {
  intervalSeconds: [`${UNIFIED}interval`, `${VENDOR}interval`],
  timeoutSeconds: [`${UNIFIED}timeout`, `${VENDOR}timeout`],
  healthyThreshold: [`${UNIFIED}healthy-threshold`, `${VENDOR}healthy-threshold`],
  unhealthyThreshold: [`${UNIFIED}unhealthy-threshold`, `${VENDOR}unhealthy-threshold`],
};

/**
 * The protocol: a unified key's (the hub's check, a unified path alone meaning HTTP), else
 * upstream's annotation as it is (HTTPS and SSL too), else upstream's default: the check the
 * hub built for Local (HTTP), SSL behind an ssl or https backend on a classic ELB
 * (aws.go's hcProtocol), TCP. Upstream's path annotation alone never makes it HTTP.
 */
function protocolOf(
  h: LbHealthCheck,
  a: Readonly<Record<string, string>>,
  local: boolean,
  classicSsl: boolean,
): AwsHealthProtocol {
  const vendor = a[`${VENDOR}protocol`];
  if (a[`${UNIFIED}protocol`] !== undefined) return h.protocol;
  if (vendor !== undefined) return parseEnum(`${VENDOR}protocol`, vendor, AWS_HEALTH_CHECK_PROTOCOLS);
  if (a[`${UNIFIED}path`] !== undefined || local) return h.protocol;
  return classicSsl ? "SSL" : "TCP";
}

/**
 * The spec's health check with upstream's protocol and, for every number the Service's
 * `annotations` (all of them, as forwarded) do not set, upstream's default for `kind`.
 */
export function awsHealthCheck(
  spec: LoadBalancerSpec,
  annotations: Readonly<Record<string, string>>,
  kind: "classic" | "nlb",
  s: Pick<AwsLbSettings, "backendProtocol">,
): AwsHealthCheck {
  const h = spec.healthCheck;
  // externalTrafficPolicy Local: HTTP on kube-proxy's healthCheckNodePort, which no listener
  // uses; upstream's NLB checks it with numbers of its own.
  const local = checksHealthCheckNodePort(spec);
  const classicSsl = kind === "classic" && (s.backendProtocol === "ssl" || s.backendProtocol === "https");
  const protocol = protocolOf(h, annotations, local, classicSsl);
  const defaults = UPSTREAM_HEALTH_DEFAULTS[kind === "nlb" && local ? "nlbLocal" : kind];
  const set = (n: keyof Numbers) => KEYS[n].some((k) => annotations[k] !== undefined);
  const pick = (n: keyof Numbers) => (set(n) ? h[n] : defaults[n]);
  const interval = pick("intervalSeconds");
  return {
    ...h,
    protocol,
    local,
    // Upstream uses the path for HTTP and HTTPS only.
    path: protocol === "HTTP" || protocol === "HTTPS" ? h.path || "/" : "",
    intervalSeconds: interval,
    // A default timeout never above a set interval (the hub's rule for its own defaults).
    timeoutSeconds: set("timeoutSeconds") ? h.timeoutSeconds : Math.min(defaults.timeoutSeconds, interval),
    healthyThreshold: pick("healthyThreshold"),
    unhealthyThreshold: pick("unhealthyThreshold"),
  };
}
