/**
 * cloud-provider-aws's annotations that stand for unified settings (health check, idle timeout,
 * proxy protocol, internal), with upstream's meaning and AWS's ranges (AWS_SETTING_BOUNDS). The
 * hub applies them where no `lb.fleet-ccm.io/` key is set; they arrive in the LoadBalancerSpec.
 * The AWS-only ones (type, certificates, subnets, ...) are read in annotations.ts.
 */
import {
  AnnotationError,
  length,
  parseEnum,
  parseLength,
  parseRange,
  type RangeBound,
} from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";
import {
  AWS_ANNOTATION_PREFIX,
  AWS_HEALTH_CHECK_PROTOCOLS,
  AWS_SCHEMES,
  AWS_SETTING_BOUNDS,
} from "./annotations.js";

/** An absolute URL path (as the unified key takes it), within AWS's length. */
const HEALTH_CHECK_PATH = length(
  AWS_SETTING_BOUNDS.healthCheckPath.max,
  { pattern: /^\/[\x21-\x7e]*$/, form: "an absolute URL path such as /healthz" },
  1,
);

export function awsLbSettings(a: Readonly<Record<string, string>>): VendorLbSettings {
  const key = (k: string) => `${AWS_ANNOTATION_PREFIX}${k}`;
  const out: { -readonly [K in keyof VendorLbSettings]: VendorLbSettings[K] } = {};
  const int = (k: string, bound: RangeBound): number | undefined => {
    const raw = a[key(k)];
    return raw === undefined ? undefined : parseRange(key(k), raw, bound);
  };
  const idle = int("connection-idle-timeout", AWS_SETTING_BOUNDS.idleTimeoutSeconds);
  if (idle !== undefined) out.idleTimeoutSeconds = idle;
  const interval = int("healthcheck-interval", AWS_SETTING_BOUNDS.healthCheckIntervalSeconds);
  if (interval !== undefined) out.healthCheckIntervalSeconds = interval;
  const timeout = int("healthcheck-timeout", AWS_SETTING_BOUNDS.healthCheckTimeoutSeconds);
  if (timeout !== undefined) out.healthCheckTimeoutSeconds = timeout;
  const healthy = int("healthcheck-healthy-threshold", AWS_SETTING_BOUNDS.healthyThreshold);
  if (healthy !== undefined) out.healthyThreshold = healthy;
  const unhealthy = int("healthcheck-unhealthy-threshold", AWS_SETTING_BOUNDS.unhealthyThreshold);
  if (unhealthy !== undefined) out.unhealthyThreshold = unhealthy;
  const protocol = a[key("healthcheck-protocol")];
  if (protocol !== undefined) {
    const p = parseEnum(key("healthcheck-protocol"), protocol, AWS_HEALTH_CHECK_PROTOCOLS);
    // The hub's check knows TCP and HTTP only; the provider builds upstream's own (HTTPS, SSL,
    // a path only for HTTP(S)) from the annotations again (health.ts).
    out.healthCheckProtocol = p === "HTTP" || p === "HTTPS" ? "HTTP" : "TCP";
  }
  const path = a[key("healthcheck-path")];
  if (path !== undefined) out.healthCheckPath = parseLength(key("healthcheck-path"), path, HEALTH_CHECK_PATH);
  const proxy = a[key("proxy-protocol")];
  if (proxy !== undefined) {
    if (proxy !== "*")
      throw new AnnotationError(key("proxy-protocol"), proxy, '"*" (every port), as upstream');
    out.proxyProtocol = true;
  }
  // Upstream: any value but "false" makes it internal; the scheme annotation says it in words.
  const internal = a[key("internal")];
  const scheme = a[key("scheme")];
  if (scheme !== undefined) out.internal = parseEnum(key("scheme"), scheme, AWS_SCHEMES) === "internal";
  if (internal !== undefined && internal !== "") out.internal = internal !== "false";
  return out;
}
