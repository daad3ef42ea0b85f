import type { CloudFaultConfig } from "./types.js";

export const NO_FAULTS: CloudFaultConfig = Object.freeze({
  latencyMs: 0,
  latencyJitterMs: 0,
  errorRate: 0,
  errorRetryAfterSeconds: 1,
  throttleRate: 0,
  throttleRetryAfterSeconds: 1,
  timeoutRate: 0,
  timeoutHangMs: 30_000,
  dropFromListRate: 0,
  emptyListRate: 0,
  emptyGetRate: 0,
  lostResponseRate: 0,
  staleReadMs: 0,
});

const RATE_KEYS = new Set<keyof CloudFaultConfig>([
  "errorRate",
  "throttleRate",
  "timeoutRate",
  "dropFromListRate",
  "emptyListRate",
  "emptyGetRate",
  "lostResponseRate",
]);

const FAULT_KEYS = new Set<string>(Object.keys(NO_FAULTS));

/**
 * Checks a partial fault config from a caller (in-process or the admin API).
 * Returns the checked copy; throws RangeError naming the first bad field.
 */
export function validateFaults(input: unknown): Partial<CloudFaultConfig> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new RangeError("fault config must be an object");
  }
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(input)) {
    if (!FAULT_KEYS.has(key)) throw new RangeError(`unknown fault field "${key}"`);
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`fault field "${key}" must be a finite number >= 0`);
    }
    if (RATE_KEYS.has(key as keyof CloudFaultConfig) && value > 1) {
      throw new RangeError(`fault field "${key}" is a fraction and must be <= 1`);
    }
    out[key] = value;
  }
  return out as Partial<CloudFaultConfig>;
}

/** The config in force: the global one with the account's override on top, field by field. */
export function effectiveFaults(
  global: CloudFaultConfig,
  override: Partial<CloudFaultConfig> | undefined,
): CloudFaultConfig {
  return override === undefined ? global : { ...global, ...override };
}
