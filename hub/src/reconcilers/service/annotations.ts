import type { LbProtocol } from "../../cloud/provider.js";
import { AWS_ANNOTATION_PREFIX as AWS_PREFIX } from "../../cloud/providers/aws/annotations.js";
import { ANNOTATION_PREFIX as SIMULATED_PREFIX } from "../../cloud/providers/simulated/convert.js";

/** The one provider-neutral annotation prefix for load balancer settings. */
export const LB_ANNOTATION_PREFIX = "lb.fleet-ccm.io/";

export const ANNOTATIONS = {
  /** Protocol of every TCP port: tcp, http or https. */
  protocol: `${LB_ANNOTATION_PREFIX}protocol`,
  /** Per-port override: lb.fleet-ccm.io/protocol.<port>. */
  protocolPortPrefix: `${LB_ANNOTATION_PREFIX}protocol.`,
  healthCheckProtocol: `${LB_ANNOTATION_PREFIX}health-check-protocol`,
  healthCheckPath: `${LB_ANNOTATION_PREFIX}health-check-path`,
  healthCheckInterval: `${LB_ANNOTATION_PREFIX}health-check-interval`,
  healthCheckTimeout: `${LB_ANNOTATION_PREFIX}health-check-timeout`,
  healthyThreshold: `${LB_ANNOTATION_PREFIX}health-check-healthy-threshold`,
  unhealthyThreshold: `${LB_ANNOTATION_PREFIX}health-check-unhealthy-threshold`,
  proxyProtocol: `${LB_ANNOTATION_PREFIX}proxy-protocol`,
  idleTimeout: `${LB_ANNOTATION_PREFIX}idle-timeout`,
  internal: `${LB_ANNOTATION_PREFIX}internal`,
} as const;

export interface LbSettings {
  readonly defaultProtocol: "TCP" | "HTTP" | "HTTPS";
  readonly portProtocols: ReadonlyMap<number, "TCP" | "HTTP" | "HTTPS">;
  readonly healthCheckProtocol: "TCP" | "HTTP" | undefined;
  readonly healthCheckPath: string | undefined;
  readonly healthCheckIntervalSeconds: number;
  readonly healthCheckTimeoutSeconds: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
  readonly proxyProtocol: boolean;
  readonly idleTimeoutSeconds: number;
  readonly internal: boolean;
}

/** An annotation with a value we cannot use: names it and the expected form. */
export class AnnotationError extends Error {
  override name = "AnnotationError";
  constructor(
    readonly annotation: string,
    readonly value: string,
    readonly expected: string,
  ) {
    super(`invalid annotation ${annotation}="${value.slice(0, 100)}": expected ${expected}`);
  }
}

function oneOf<T extends string>(key: string, raw: string, values: readonly T[]): T {
  const v = raw.trim().toUpperCase();
  const hit = values.find((x) => x === v);
  if (hit === undefined)
    throw new AnnotationError(key, raw, `one of ${values.map((x) => x.toLowerCase()).join(", ")}`);
  return hit;
}

function integer(key: string, raw: string, min: number, max: number): number {
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max)
    throw new AnnotationError(key, raw, `a whole number of seconds from ${min} to ${max}`);
  return n;
}

function boolean(key: string, raw: string): boolean {
  const v = raw.trim().toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  throw new AnnotationError(key, raw, `"true" or "false"`);
}

const HTTP_PROTOCOLS = ["TCP", "HTTP", "HTTPS"] as const;

/**
 * A provider's own load balancer annotations (under a prefix its factory declares in
 * annotationPrefixes), for users coming from that vendor's CCM. Each setting it returns stands
 * for a unified key (UNIFIED_KEY_OF) and is used only where that unified key is not set.
 */
export interface ProviderLbAnnotations {
  readonly prefix: string;
  /** Throws AnnotationError on a bad value; ignores keys it does not know, as vendor CCMs do. */
  parse(annotations: Readonly<Record<string, string>>): Partial<LbSettings>;
}

/** The unified key each provider-settable setting stands for: when both are set, the unified key wins. */
const UNIFIED_KEY_OF: Partial<Record<keyof LbSettings, string>> = {
  idleTimeoutSeconds: ANNOTATIONS.idleTimeout,
  healthCheckProtocol: ANNOTATIONS.healthCheckProtocol,
  healthCheckPath: ANNOTATIONS.healthCheckPath,
  healthCheckIntervalSeconds: ANNOTATIONS.healthCheckInterval,
  healthCheckTimeoutSeconds: ANNOTATIONS.healthCheckTimeout,
  healthyThreshold: ANNOTATIONS.healthyThreshold,
  unhealthyThreshold: ANNOTATIONS.unhealthyThreshold,
  proxyProtocol: ANNOTATIONS.proxyProtocol,
  internal: ANNOTATIONS.internal,
};

const SIMULATED_IDLE_TIMEOUT = `${SIMULATED_PREFIX}load-balancer-idle-timeout`;

/**
 * cloud-provider-aws's annotations that stand for unified settings, with upstream's meaning
 * and ranges (the provider reads the AWS-only ones, such as the type and certificates, itself).
 */
function parseAwsAnnotations(a: Readonly<Record<string, string>>): Partial<LbSettings> {
  const key = (k: string) => `${AWS_PREFIX}${k}`;
  const out: { -readonly [K in keyof LbSettings]?: LbSettings[K] } = {};
  const int = (k: string, min: number, max: number): number | undefined => {
    const raw = a[key(k)];
    return raw === undefined ? undefined : integer(key(k), raw, min, max);
  };
  const idle = int("connection-idle-timeout", 1, 4000);
  if (idle !== undefined) out.idleTimeoutSeconds = idle;
  const interval = int("healthcheck-interval", 5, 300);
  if (interval !== undefined) out.healthCheckIntervalSeconds = interval;
  const timeout = int("healthcheck-timeout", 2, 60);
  if (timeout !== undefined) out.healthCheckTimeoutSeconds = timeout;
  const healthy = int("healthcheck-healthy-threshold", 2, 10);
  if (healthy !== undefined) out.healthyThreshold = healthy;
  const unhealthy = int("healthcheck-unhealthy-threshold", 2, 10);
  if (unhealthy !== undefined) out.unhealthyThreshold = unhealthy;
  const protocol = a[key("healthcheck-protocol")];
  if (protocol !== undefined) {
    const p = oneOf(key("healthcheck-protocol"), protocol, ["TCP", "HTTP", "HTTPS", "SSL"] as const);
    out.healthCheckProtocol = p === "HTTP" || p === "HTTPS" ? "HTTP" : "TCP";
  }
  const path = a[key("healthcheck-path")];
  if (path !== undefined) {
    if (!/^\/[\x21-\x7e]*$/.test(path))
      throw new AnnotationError(key("healthcheck-path"), path, "an absolute URL path such as /healthz");
    out.healthCheckPath = path;
  }
  const proxy = a[key("proxy-protocol")];
  if (proxy !== undefined) {
    if (proxy !== "*")
      throw new AnnotationError(key("proxy-protocol"), proxy, '"*" (every port), as upstream');
    out.proxyProtocol = true;
  }
  // Upstream: any value but "false" makes it internal; the scheme annotation says it in words.
  const internal = a[key("internal")];
  const scheme = a[key("scheme")];
  if (scheme !== undefined)
    out.internal = oneOf(key("scheme"), scheme, ["INTERNAL", "INTERNET-FACING"] as const) === "INTERNAL";
  if (internal !== undefined && internal !== "") out.internal = internal !== "false";
  return out;
}

/**
 * Every provider's reader. A cluster's view only holds annotations under the prefixes of its
 * own provider (the hub asks its agent for those and drops any other), so a reader applies to
 * a Service exactly when one of its keys is present.
 */
export const PROVIDER_LB_ANNOTATIONS: readonly ProviderLbAnnotations[] = [
  {
    prefix: SIMULATED_PREFIX,
    parse: (a) => {
      const idle = a[SIMULATED_IDLE_TIMEOUT];
      return idle === undefined ? {} : { idleTimeoutSeconds: integer(SIMULATED_IDLE_TIMEOUT, idle, 1, 3600) };
    },
  },
  { prefix: AWS_PREFIX, parse: parseAwsAnnotations },
];

/**
 * Parses every lb.fleet-ccm.io/ annotation, then the provider's own ones for settings no unified
 * key sets; throws AnnotationError on the first bad one.
 */
export function parseLbAnnotations(
  annotations: Readonly<Record<string, string>>,
  providers: readonly ProviderLbAnnotations[] = PROVIDER_LB_ANNOTATIONS,
): LbSettings {
  const unified = parseUnified(annotations);
  const keys = Object.keys(annotations);
  let settings = unified;
  for (const p of providers) {
    if (!keys.some((k) => k.startsWith(p.prefix))) continue;
    for (const [setting, value] of Object.entries(p.parse(annotations))) {
      const key = UNIFIED_KEY_OF[setting as keyof LbSettings];
      if (value === undefined || key === undefined || annotations[key] !== undefined) continue;
      settings = { ...settings, [setting]: value };
    }
  }
  return settings;
}

function parseUnified(annotations: Readonly<Record<string, string>>): LbSettings {
  const get = (k: string) => annotations[k];
  const portProtocols = new Map<number, "TCP" | "HTTP" | "HTTPS">();
  for (const [k, v] of Object.entries(annotations)) {
    if (!k.startsWith(LB_ANNOTATION_PREFIX)) continue;
    if (k.startsWith(ANNOTATIONS.protocolPortPrefix)) {
      const port = Number(k.slice(ANNOTATIONS.protocolPortPrefix.length));
      if (!Number.isInteger(port) || port < 1 || port > 65535)
        throw new AnnotationError(
          k,
          v,
          `${ANNOTATIONS.protocolPortPrefix}<port> with a port from 1 to 65535`,
        );
      portProtocols.set(port, oneOf(k, v, HTTP_PROTOCOLS));
      continue;
    }
    if (!(Object.values(ANNOTATIONS) as string[]).includes(k))
      throw new AnnotationError(k, v, `a known annotation (${Object.values(ANNOTATIONS).join(", ")})`);
  }
  const hcProtoRaw = get(ANNOTATIONS.healthCheckProtocol);
  const hcPath = get(ANNOTATIONS.healthCheckPath);
  if (hcPath !== undefined && !/^\/[\x21-\x7e]*$/.test(hcPath))
    throw new AnnotationError(ANNOTATIONS.healthCheckPath, hcPath, "an absolute URL path such as /healthz");
  const interval =
    get(ANNOTATIONS.healthCheckInterval) === undefined
      ? 10
      : integer(ANNOTATIONS.healthCheckInterval, get(ANNOTATIONS.healthCheckInterval) ?? "", 2, 300);
  const timeout =
    get(ANNOTATIONS.healthCheckTimeout) === undefined
      ? Math.min(5, interval)
      : integer(ANNOTATIONS.healthCheckTimeout, get(ANNOTATIONS.healthCheckTimeout) ?? "", 1, 120);
  if (timeout > interval)
    throw new AnnotationError(
      ANNOTATIONS.healthCheckTimeout,
      String(timeout),
      `at most the interval (${interval} s)`,
    );
  const protocolRaw = get(ANNOTATIONS.protocol);
  const proxyRaw = get(ANNOTATIONS.proxyProtocol);
  const idleRaw = get(ANNOTATIONS.idleTimeout);
  const internalRaw = get(ANNOTATIONS.internal);
  const healthyRaw = get(ANNOTATIONS.healthyThreshold);
  const unhealthyRaw = get(ANNOTATIONS.unhealthyThreshold);
  return {
    defaultProtocol:
      protocolRaw === undefined ? "TCP" : oneOf(ANNOTATIONS.protocol, protocolRaw, HTTP_PROTOCOLS),
    portProtocols,
    healthCheckProtocol:
      hcProtoRaw === undefined
        ? undefined
        : oneOf(ANNOTATIONS.healthCheckProtocol, hcProtoRaw, ["TCP", "HTTP"] as const),
    healthCheckPath: hcPath,
    healthCheckIntervalSeconds: interval,
    healthCheckTimeoutSeconds: timeout,
    healthyThreshold: healthyRaw === undefined ? 2 : integer(ANNOTATIONS.healthyThreshold, healthyRaw, 1, 10),
    unhealthyThreshold:
      unhealthyRaw === undefined ? 3 : integer(ANNOTATIONS.unhealthyThreshold, unhealthyRaw, 1, 10),
    proxyProtocol: proxyRaw === undefined ? false : boolean(ANNOTATIONS.proxyProtocol, proxyRaw),
    idleTimeoutSeconds: idleRaw === undefined ? 60 : integer(ANNOTATIONS.idleTimeout, idleRaw, 1, 3600),
    internal: internalRaw === undefined ? false : boolean(ANNOTATIONS.internal, internalRaw),
  };
}

/** The load balancer protocol of one Service port under these settings. */
export function listenerProtocol(settings: LbSettings, servicePort: number, protocol: string): LbProtocol {
  if (protocol === "UDP" || protocol === "SCTP") return protocol;
  return settings.portProtocols.get(servicePort) ?? settings.defaultProtocol;
}
