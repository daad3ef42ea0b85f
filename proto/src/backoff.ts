/**
 * The one backoff formula of hub and agent: initialMs × factor^attempt, capped at maxMs, with
 * jitter taking a random fraction off (a delay lies in [d × (1 − jitter), d]). Jitter only ever
 * shortens a delay, so a documented "doubling to 30 s" is a true upper bound, and peers failing
 * together (agents of a restarted hub) spread out instead of retrying in step.
 */

export interface BackoffOptions {
  /** Delay after the first failure (before jitter). */
  readonly initialMs: number;
  /** No delay exceeds this. */
  readonly maxMs: number;
  /** Growth per failure (default 2). */
  readonly factor?: number;
  /** Largest fraction taken off a delay at random, in [0, 1] (default 0: none). */
  readonly jitter?: number;
  /** Uniform in [0, 1) (default Math.random). */
  readonly random?: () => number;
}

/** Delay before retry number `attempt` (0 after the first failure). */
export function backoffDelayMs(attempt: number, options: BackoffOptions): number {
  const { initialMs, maxMs, factor = 2, jitter = 0, random = Math.random } = checkBackoff(options);
  // Capping the exponent keeps factor ** n finite; the cap is reached long before.
  const exponent = Math.min(1024, Math.max(0, Math.floor(attempt)));
  const nominal = initialMs === 0 ? 0 : Math.min(maxMs, initialMs * factor ** exponent);
  return Math.round(nominal * (1 - jitter * random()));
}

/** Throws a RangeError naming the bad field; returns the options unchanged. */
export function checkBackoff<T extends BackoffOptions>(options: T): T {
  const { initialMs, maxMs, factor = 2, jitter = 0 } = options;
  if (!(Number.isFinite(initialMs) && initialMs >= 0))
    throw new RangeError(`backoff initialMs must be a finite number >= 0, got ${initialMs}`);
  if (!(Number.isFinite(maxMs) && maxMs >= initialMs))
    throw new RangeError(`backoff maxMs must be finite and >= initialMs (${initialMs}), got ${maxMs}`);
  if (!(Number.isFinite(factor) && factor >= 1))
    throw new RangeError(`backoff factor must be >= 1, got ${factor}`);
  if (!(jitter >= 0 && jitter <= 1))
    throw new RangeError(`backoff jitter must be within [0, 1], got ${jitter}`);
  return options;
}
