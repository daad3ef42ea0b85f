/**
 * Fault injection for vendor fakes: latency, hangs (timeouts), throttling, 5xx, lost answers
 * to mutations, partial and empty lists, empty gets and stale reads, drawn from a seeded
 * random source so that a seed replays the same faults. The injector decides; the fake's
 * ErrorRenderer gives each injected error the vendor's own shape.
 */
import { FakeError } from "./errors.js";
import { sleep } from "./http.js";
import type { RandomSource } from "./random.js";

export interface FaultConfig {
  /** Added to every call. */
  readonly latencyMs: number;
  /** Plus a uniform random [0, latencyJitterMs). */
  readonly latencyJitterMs: number;
  /** Fraction of calls answered 500 or 503 (half each; a 503 carries Retry-After half the time). */
  readonly errorRate: number;
  /** Retry-After (seconds) sent with an injected 503. */
  readonly errorRetryAfterSeconds: number;
  /** Fraction of calls answered 429 with Retry-After. */
  readonly throttleRate: number;
  /** Retry-After (seconds) sent with an injected 429. */
  readonly throttleRetryAfterSeconds: number;
  /** Fraction of calls that hang: no answer for `timeoutHangMs` (then 504), or until the client goes away. */
  readonly timeoutRate: number;
  readonly timeoutHangMs: number;
  /** Fraction of the items of each list page silently left out (the page token still advances). */
  readonly dropFromListRate: number;
  /** Fraction of list calls answered 200 with an empty collection and no next page. */
  readonly emptyListRate: number;
  /** Fraction of get calls answered 200 `{}`. */
  readonly emptyGetRate: number;
  /**
   * Fraction of mutating calls (POST, PATCH, DELETE) that take effect but whose answer is lost:
   * the client gets a 504 although the change was made (a connection dropped after the commit).
   */
  readonly lostResponseRate: number;
  /**
   * Eventual consistency: a read within this many ms of a resource's last change sees the
   * version before it (for a new resource: nothing). Which reads lag (gets, lists) is the
   * fake's choice, as it is the vendor's (see ConsistencyView).
   */
  readonly staleReadMs: number;
}

export const NO_FAULTS: FaultConfig = Object.freeze({
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

const RATE_KEYS = new Set<keyof FaultConfig>([
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
 * Checks a partial fault config from a caller (in-process or an admin API).
 * Returns the checked copy; throws RangeError naming the first bad field.
 */
export function validateFaults(input: unknown): Partial<FaultConfig> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new RangeError("fault config must be an object");
  }
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(input)) {
    if (!FAULT_KEYS.has(key)) throw new RangeError(`unknown fault field "${key}"`);
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`fault field "${key}" must be a finite number >= 0`);
    }
    if (RATE_KEYS.has(key as keyof FaultConfig) && value > 1) {
      throw new RangeError(`fault field "${key}" is a fraction and must be <= 1`);
    }
    out[key] = value;
  }
  return out as Partial<FaultConfig>;
}

/** The config in force: the global one with the scope's override on top, field by field. */
export function effectiveFaults(
  global: FaultConfig,
  override: Partial<FaultConfig> | undefined,
): FaultConfig {
  return override === undefined ? global : { ...global, ...override };
}

export interface FaultsView {
  readonly global: FaultConfig;
  readonly accounts: Record<string, Partial<FaultConfig>>;
}

/** The names an injected fault is logged under (LoggedRequest.fault). */
export type InjectedFault =
  | "timeout"
  | "throttled"
  | "internal"
  | "unavailable"
  | "lost-response"
  | "empty-get"
  | "empty-list"
  | "dropped-items";

/** The injected errors, as FakeErrors a renderer can re-shape by `kind`. */
export const FAULT_ERRORS = {
  timeout: (): FakeError =>
    new FakeError(504, "GatewayTimeout", "the request timed out upstream", { kind: "timeout" }),
  throttled: (retryAfterSeconds: number): FakeError =>
    new FakeError(429, "Throttling", "rate exceeded", {
      kind: "throttled",
      headers: { "retry-after": String(retryAfterSeconds) },
    }),
  internal: (): FakeError =>
    new FakeError(500, "InternalError", "an internal error occurred", { kind: "internal" }),
  unavailable: (retryAfterSeconds?: number): FakeError =>
    new FakeError(503, "ServiceUnavailable", "the service is temporarily unavailable", {
      kind: "unavailable",
      ...(retryAfterSeconds !== undefined && { headers: { "retry-after": String(retryAfterSeconds) } }),
    }),
};

/** What the call-level faults decided. */
export type CallFault =
  | { readonly kind: "none" }
  /** The client left (or the fake closed) during the latency or the hang: answer nothing. */
  | { readonly kind: "abandoned" }
  | { readonly kind: "error"; readonly fault: InjectedFault; readonly error: FakeError };

/**
 * A global fault config with per-scope (account) overrides, and the draws. The draws happen
 * in a fixed order per call, so that one seed replays one run.
 */
export class FaultInjector {
  private global: FaultConfig;
  private readonly overrides = new Map<string, Partial<FaultConfig>>();

  constructor(
    private readonly random: RandomSource,
    private readonly defaults: FaultConfig = NO_FAULTS,
  ) {
    this.global = defaults;
  }

  /** Merges a checked partial config into the global one, or into the scope's override. */
  set(faults: Partial<FaultConfig>, scope?: string): void {
    const checked = validateFaults(faults);
    if (scope === undefined) this.global = Object.freeze({ ...this.global, ...checked });
    else this.overrides.set(scope, Object.freeze({ ...this.overrides.get(scope), ...checked }));
  }

  /** Back to the defaults everywhere without `scope`, else drops that override. */
  reset(scope?: string): void {
    if (scope === undefined) {
      this.global = this.defaults;
      this.overrides.clear();
    } else {
      this.overrides.delete(scope);
    }
  }

  config(scope?: string): FaultConfig {
    return effectiveFaults(this.global, scope === undefined ? undefined : this.overrides.get(scope));
  }

  view(): FaultsView {
    return { global: this.global, accounts: Object.fromEntries(this.overrides) };
  }

  chance(rate: number): boolean {
    return rate > 0 && this.random.next() < rate;
  }

  /**
   * Latency, then a hang, a throttle or a 5xx. Waits (on real time; `signal` ends the wait
   * when the client leaves). A hang that runs its course is answered with the timeout error.
   */
  async beforeCall(f: FaultConfig, signal: AbortSignal): Promise<CallFault> {
    const delayMs = f.latencyMs + (f.latencyJitterMs > 0 ? this.random.next() * f.latencyJitterMs : 0);
    if (delayMs > 0 && !(await sleep(delayMs, signal))) return { kind: "abandoned" };
    if (this.chance(f.timeoutRate)) {
      if (!(await sleep(f.timeoutHangMs, signal))) return { kind: "abandoned" };
      return { kind: "error", fault: "timeout", error: FAULT_ERRORS.timeout() };
    }
    if (this.chance(f.throttleRate)) {
      return {
        kind: "error",
        fault: "throttled",
        error: FAULT_ERRORS.throttled(f.throttleRetryAfterSeconds),
      };
    }
    if (this.chance(f.errorRate)) {
      if (this.random.next() < 0.5)
        return { kind: "error", fault: "internal", error: FAULT_ERRORS.internal() };
      const retryAfter = this.random.next() < 0.5 ? f.errorRetryAfterSeconds : undefined;
      return { kind: "error", fault: "unavailable", error: FAULT_ERRORS.unavailable(retryAfter) };
    }
    return { kind: "none" };
  }

  /** True when this get is to be answered with an empty object. */
  emptyGet(f: FaultConfig): boolean {
    return this.chance(f.emptyGetRate);
  }

  /** True when this list is to be answered empty, with no next page. */
  emptyList(f: FaultConfig): boolean {
    return this.chance(f.emptyListRate);
  }

  /** The page's items less those dropped (the page token still advances past them). */
  dropFromList<T>(f: FaultConfig, items: readonly T[]): readonly T[] {
    return f.dropFromListRate > 0 ? items.filter(() => !this.chance(f.dropFromListRate)) : items;
  }

  /** The error that replaces a mutation's answer (the change stays made), if one is drawn. */
  lostResponse(f: FaultConfig): FakeError | undefined {
    return this.chance(f.lostResponseRate) ? FAULT_ERRORS.timeout() : undefined;
  }
}
