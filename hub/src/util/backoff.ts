import { type BackoffOptions, backoffDelayMs, checkBackoff } from "@fleet-ccm/proto";

/**
 * Backoff for the hub: the shared formula (proto/src/backoff.ts, the agent's too) as a stateless
 * delay for reconnect loops, and a per-key failure counter for work queues (client-go's
 * ItemExponentialFailureRateLimiter).
 */
export { type BackoffOptions, backoffDelayMs };

/** Per-key failure counts; each failure of a key doubles (by `factor`) its next delay until forget(key). */
export class ExponentialBackoff {
  private readonly failureCounts = new Map<string, number>();

  constructor(private readonly options: BackoffOptions) {
    checkBackoff(options);
  }

  /** Records one more failure of `key` and returns how long to wait before retrying it. */
  next(key: string): number {
    const attempt = this.failureCounts.get(key) ?? 0;
    this.failureCounts.set(key, attempt + 1);
    return backoffDelayMs(attempt, this.options);
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
