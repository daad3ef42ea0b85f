/**
 * The health check numbers of an AWS Service: cloud-provider-aws's defaults for its kind where
 * the Service sets none, so a load balancer that CCM built and fleet-ccm adopts keeps its
 * health check. A value the Service sets (the unified `lb.fleet-ccm.io/health-check-*` key, or
 * upstream's `aws-load-balancer-healthcheck-*`, the unified one winning) arrives in the spec
 * and is used as it is.
 */
import type { LbHealthCheck, LoadBalancerSpec } from "../../provider.js";
import { AWS_ANNOTATION_PREFIX } from "./annotations.js";

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

/** The keys that set each number: the hub's unified one and upstream's. */
const KEYS: Readonly<Record<keyof Numbers, readonly [string, string]>> = {
  intervalSeconds: ["lb.fleet-ccm.io/health-check-interval", `${AWS_ANNOTATION_PREFIX}healthcheck-interval`],
  timeoutSeconds: ["lb.fleet-ccm.io/health-check-timeout", `${AWS_ANNOTATION_PREFIX}healthcheck-timeout`],
  healthyThreshold: [
    "lb.fleet-ccm.io/health-check-healthy-threshold",
    `${AWS_ANNOTATION_PREFIX}healthcheck-healthy-threshold`,
  ],
  unhealthyThreshold: [
    "lb.fleet-ccm.io/health-check-unhealthy-threshold",
    `${AWS_ANNOTATION_PREFIX}healthcheck-unhealthy-threshold`,
  ],
};

/**
 * The spec's health check with upstream's defaults for `kind` in place of every number the
 * Service's `annotations` (all of them, as forwarded) do not set.
 */
export function awsHealthCheck(
  spec: LoadBalancerSpec,
  annotations: Readonly<Record<string, string>>,
  kind: "classic" | "nlb",
): LbHealthCheck {
  const h = spec.healthCheck;
  // externalTrafficPolicy Local: HTTP on kube-proxy's healthCheckNodePort, which no listener
  // uses; upstream's NLB checks it with numbers of its own.
  const local = h.protocol === "HTTP" && !spec.listeners.some((l) => l.nodePort === h.port);
  const defaults = UPSTREAM_HEALTH_DEFAULTS[kind === "nlb" && local ? "nlbLocal" : kind];
  const set = (n: keyof Numbers) => KEYS[n].some((k) => annotations[k] !== undefined);
  const pick = (n: keyof Numbers) => (set(n) ? h[n] : defaults[n]);
  const interval = pick("intervalSeconds");
  return {
    ...h,
    intervalSeconds: interval,
    // A default timeout never above a set interval (the hub's rule for its own defaults).
    timeoutSeconds: set("timeoutSeconds") ? h.timeoutSeconds : Math.min(defaults.timeoutSeconds, interval),
    healthyThreshold: pick("healthyThreshold"),
    unhealthyThreshold: pick("unhealthyThreshold"),
  };
}
