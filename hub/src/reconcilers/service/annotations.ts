import {
  AnnotationError,
  BOOLEAN,
  type BooleanBound,
  type EnumBound,
  length,
  oneOf,
  parseBoolean,
  parseEnum,
  parseLength,
  parseRange,
  range,
  type SettingBounds,
} from "../../cloud/annotation-bounds.js";
import type { LbProtocol, VendorLbSettings } from "../../cloud/provider.js";

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

export { AnnotationError };

/** A Service's load balancer settings, parsed: each value within its setting's bounds (UNIFIED_SETTINGS). */
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

/**
 * The unified settings with their bounds: the one table every `lb.fleet-ccm.io/` value is
 * checked against before any cloud call (a provider's capabilities.settingBounds may bound a
 * setting more tightly still). Defaults are the values a Service without the key gets.
 */
export const UNIFIED_SETTINGS = {
  defaultProtocol: {
    key: ANNOTATIONS.protocol,
    bound: oneOf(["TCP", "HTTP", "HTTPS"] as const),
    default: "TCP",
  },
  healthCheckProtocol: { key: ANNOTATIONS.healthCheckProtocol, bound: oneOf(["TCP", "HTTP"] as const) },
  // The longest ping path a load balancer takes: ELBv2 TargetGroup HealthCheckPath (`Path`, 1 to
  // 1024, botocore elbv2-2015-12-01), the simulated cloud's health check `path` (at most 1024).
  healthCheckPath: {
    key: ANNOTATIONS.healthCheckPath,
    bound: length(1024, { pattern: /^\/[\x21-\x7e]*$/, form: "an absolute URL path such as /healthz" }, 1),
  },
  // Provider-neutral ranges, within the simulated cloud's (interval and timeout 1 to 3600,
  // thresholds 1 to 100, idle timeout 1 to 4000); AWS and Linode narrow them (settingBounds).
  healthCheckIntervalSeconds: {
    key: ANNOTATIONS.healthCheckInterval,
    bound: range(2, 300, "seconds"),
    default: 10,
  },
  /** Default: 5, or the interval when that is shorter. */
  healthCheckTimeoutSeconds: {
    key: ANNOTATIONS.healthCheckTimeout,
    bound: range(1, 120, "seconds"),
    default: 5,
  },
  healthyThreshold: { key: ANNOTATIONS.healthyThreshold, bound: range(1, 10), default: 2 },
  unhealthyThreshold: { key: ANNOTATIONS.unhealthyThreshold, bound: range(1, 10), default: 3 },
  proxyProtocol: { key: ANNOTATIONS.proxyProtocol, bound: BOOLEAN, default: false },
  idleTimeoutSeconds: { key: ANNOTATIONS.idleTimeout, bound: range(1, 3600, "seconds"), default: 60 },
  internal: { key: ANNOTATIONS.internal, bound: BOOLEAN, default: false },
} as const;

/** The bound of a per-port protocol key's port and value. */
const PORT_PROTOCOL = { port: range(1, 65535), value: UNIFIED_SETTINGS.defaultProtocol.bound } as const;

/** A unified setting's value under its bound, then under the provider's tighter one if any. */
function bounded(
  raw: string,
  setting: keyof SettingBounds,
  narrow: ProviderSettingBounds | undefined,
): string | number {
  const { key, bound } = UNIFIED_SETTINGS[setting];
  const value = bound.kind === "length" ? parseLength(key, raw, bound) : parseRange(key, raw, bound);
  const tighter = narrow?.bounds[setting];
  if (tighter === undefined) return value;
  try {
    return tighter.kind === "length" ? parseLength(key, raw, tighter) : parseRange(key, raw, tighter);
  } catch (err) {
    if (!(err instanceof AnnotationError)) throw err;
    throw new AnnotationError(key, raw, `${err.expected} on provider ${narrow?.provider}`, err.problem);
  }
}

/** A provider's tighter bounds for unified settings (its capabilities.settingBounds), by name for the Event. */
export interface ProviderSettingBounds {
  readonly provider: string;
  readonly bounds: SettingBounds;
}

/** The unified key each provider-settable setting stands for: when both are set, the unified key wins. */
const UNIFIED_KEY_OF: Record<keyof VendorLbSettings, string> = {
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

/**
 * Parses every lb.fleet-ccm.io/ annotation, then the provider's own ones (`vendor`: its
 * factory's lbSettings) for settings no unified key sets; throws AnnotationError on the first
 * bad one. `narrow`: the cluster's provider's tighter bounds for unified settings.
 */
export function parseLbAnnotations(
  annotations: Readonly<Record<string, string>>,
  vendor?: (annotations: Readonly<Record<string, string>>) => VendorLbSettings,
  narrow?: ProviderSettingBounds,
): LbSettings {
  let settings = parseUnified(annotations, narrow);
  if (vendor === undefined) return settings;
  for (const [setting, value] of Object.entries(vendor(annotations))) {
    const key = UNIFIED_KEY_OF[setting as keyof VendorLbSettings];
    if (value === undefined || key === undefined || annotations[key] !== undefined) continue;
    settings = { ...settings, [setting]: value };
  }
  return settings;
}

function parseUnified(
  annotations: Readonly<Record<string, string>>,
  narrow: ProviderSettingBounds | undefined,
): LbSettings {
  const portProtocols = new Map<number, "TCP" | "HTTP" | "HTTPS">();
  for (const [k, v] of Object.entries(annotations)) {
    if (!k.startsWith(LB_ANNOTATION_PREFIX)) continue;
    if (k.startsWith(ANNOTATIONS.protocolPortPrefix)) {
      const port = k.slice(ANNOTATIONS.protocolPortPrefix.length);
      if (
        !/^\d+$/.test(port) ||
        Number(port) < PORT_PROTOCOL.port.min ||
        Number(port) > PORT_PROTOCOL.port.max
      )
        throw new AnnotationError(
          k,
          v,
          `${ANNOTATIONS.protocolPortPrefix}<port> with a port from ${PORT_PROTOCOL.port.min} to ${PORT_PROTOCOL.port.max}`,
        );
      portProtocols.set(Number(port), parseEnum(k, v, PORT_PROTOCOL.value));
      continue;
    }
    if (!(Object.values(ANNOTATIONS) as string[]).includes(k))
      throw new AnnotationError(k, v, `a known annotation (${Object.values(ANNOTATIONS).join(", ")})`);
  }
  const S = UNIFIED_SETTINGS;
  const get = (k: string) => annotations[k];
  const num = (setting: Exclude<keyof SettingBounds, "healthCheckPath">, fallback: number): number => {
    const raw = get(S[setting].key);
    return raw === undefined ? fallback : (bounded(raw, setting, narrow) as number);
  };
  const en = <T extends string>(s: { key: string; bound: EnumBound<T> }): T | undefined => {
    const raw = get(s.key);
    return raw === undefined ? undefined : parseEnum(s.key, raw, s.bound);
  };
  const bool = (s: { key: string; bound: BooleanBound; default: boolean }): boolean => {
    const raw = get(s.key);
    return raw === undefined ? s.default : parseBoolean(s.key, raw, s.bound);
  };
  const pathRaw = get(S.healthCheckPath.key);
  const path = pathRaw === undefined ? undefined : (bounded(pathRaw, "healthCheckPath", narrow) as string);
  const interval = num("healthCheckIntervalSeconds", S.healthCheckIntervalSeconds.default);
  const timeout = num("healthCheckTimeoutSeconds", Math.min(S.healthCheckTimeoutSeconds.default, interval));
  if (timeout > interval)
    throw new AnnotationError(
      S.healthCheckTimeoutSeconds.key,
      String(timeout),
      `at most the interval (${interval} s)`,
    );
  return {
    defaultProtocol: en(S.defaultProtocol) ?? S.defaultProtocol.default,
    portProtocols,
    healthCheckProtocol: en(S.healthCheckProtocol),
    healthCheckPath: path,
    healthCheckIntervalSeconds: interval,
    healthCheckTimeoutSeconds: timeout,
    healthyThreshold: num("healthyThreshold", S.healthyThreshold.default),
    unhealthyThreshold: num("unhealthyThreshold", S.unhealthyThreshold.default),
    proxyProtocol: bool(S.proxyProtocol),
    idleTimeoutSeconds: num("idleTimeoutSeconds", S.idleTimeoutSeconds.default),
    internal: bool(S.internal),
  };
}

/** The load balancer protocol of one Service port under these settings. */
export function listenerProtocol(settings: LbSettings, servicePort: number, protocol: string): LbProtocol {
  if (protocol === "UDP" || protocol === "SCTP") return protocol;
  return settings.portProtocols.get(servicePort) ?? settings.defaultProtocol;
}
