/**
 * Exponential backoff in two shapes: a stateless delay function for reconnect loops, and a
 * per-key failure counter for work queues (client-go's ItemExponentialFailureRateLimiter).
 * The agent has its own (agent/src/backoff.ts: subtractive jitter, with a retry loop and a log summary).
 */

export interface BackoffOptions {
  /** Delay after the first failure. */
  initialMs: number;
  /** Hard cap: no delay exceeds it, jitter included. */
  maxMs: number;
  /** Growth per failure. Default 2. */
  factor?: number;
  /** Spread as a fraction of the delay: 0.2 gives ±20%. Default 0. */
  jitter?: number;
  /** Uniform in [0, 1). Default Math.random. */
  random?: () => number;
}

type ResolvedBackoff = Required<BackoffOptions>;

/**
 * Delay before retry number `attempt` (0 for the first failure): initialMs × factor^attempt,
 * jittered, capped at maxMs.
 */
export function backoffDelayMs(attempt: number, options: BackoffOptions): number {
  return computeDelayMs(attempt, resolveBackoff(options));
}

/** Per-key failure counts; each failure of a key doubles (by `factor`) its next delay until forget(key). */
export class ExponentialBackoff {
  private readonly options: ResolvedBackoff;
  private readonly failureCounts = new Map<string, number>();

  constructor(options: BackoffOptions) {
    this.options = resolveBackoff(options);
  }

  /** Records one more failure of `key` and returns how long to wait before retrying it. */
  next(key: string): number {
    const attempt = this.failureCounts.get(key) ?? 0;
    this.failureCounts.set(key, attempt + 1);
    return computeDelayMs(attempt, this.options);
  }

  failures(key: string): number {
    return this.failureCounts.get(key) ?? 0;
  }

  /** The key succeeded (or is gone): its next failure starts again at initialMs. */
  forget(key: string): void {
    this.failureCounts.delete(key);
  }

  /** Forgets every key the predicate matches, e.g. all keys of a removed cluster. O(keys). */
  forgetIf(predicate: (key: string) => boolean): void {
    for (const key of this.failureCounts.keys()) {
      if (predicate(key)) this.failureCounts.delete(key);
    }
  }

  /** Keys with at least one unforgotten failure; a leak shows up here. */
  get size(): number {
    return this.failureCounts.size;
  }
}

function computeDelayMs(attempt: number, o: ResolvedBackoff): number {
  const exponent = Math.max(0, Math.floor(attempt));
  // factor ** exponent may reach Infinity after ~1000 failures; Math.min folds it into maxMs.
  let delayMs = o.initialMs === 0 ? 0 : Math.min(o.maxMs, o.initialMs * o.factor ** exponent);
  if (o.jitter > 0) delayMs *= 1 + o.jitter * (2 * o.random() - 1);
  return Math.min(o.maxMs, Math.max(0, delayMs));
}

function resolveBackoff(options: BackoffOptions): ResolvedBackoff {
  const { initialMs, maxMs, factor = 2, jitter = 0, random = Math.random } = options;
  if (!(Number.isFinite(initialMs) && initialMs >= 0)) {
    throw new RangeError(`backoff initialMs must be a finite number >= 0, got ${initialMs}`);
  }
  if (!(Number.isFinite(maxMs) && maxMs >= initialMs)) {
    throw new RangeError(`backoff maxMs must be finite and >= initialMs (${initialMs}), got ${maxMs}`);
  }
  if (!(Number.isFinite(factor) && factor >= 1)) {
    throw new RangeError(`backoff factor must be >= 1, got ${factor}`);
  }
  if (!(jitter >= 0 && jitter <= 1)) {
    throw new RangeError(`backoff jitter must be within [0, 1], got ${jitter}`);
  }
  return { initialMs, maxMs, factor, jitter, random };
}
