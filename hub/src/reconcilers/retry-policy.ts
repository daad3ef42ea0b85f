/**
 * The one retry policy of every reconciler: what an error or a provider's answer means for the
 * key's next attempt. Events are the caller's (it knows the object and the words).
 *
 * - in progress (a typed answer, not an error) → the provider's delay; the key's backoff is reset.
 * - throttled with the vendor's Retry-After → that delay.
 * - throttled without one, transient, not found, anything else → the key's own exponential backoff
 *   (or nothing, for a controller whose periodic pass is its retry).
 */
import { InstanceNotFoundError, ThrottledError, TransientCloudError } from "../cloud/errors.js";
import { isInProgress } from "../cloud/provider.js";
import { after, backoff, type Outcome } from "./outcome.js";

export type RetryClass = "in-progress" | "throttled" | "transient" | "not-found" | "failed";

export function classifyRetry(cause: unknown): RetryClass {
  if (isInProgress(cause)) return "in-progress";
  if (cause instanceof ThrottledError) return "throttled";
  if (cause instanceof InstanceNotFoundError) return "not-found";
  if (cause instanceof TransientCloudError) return "transient";
  return "failed";
}

/** The delay the cloud itself asked for (in progress, or Retry-After), if any. */
export function cloudDelayMs(cause: unknown): number | undefined {
  if (isInProgress(cause)) return cause.retryAfterMs;
  if (cause instanceof ThrottledError) return cause.retryAfterMs;
  return undefined;
}

export interface RetryOptions {
  /** Without a delay from the cloud: "backoff" (default) or "done" when a periodic pass retries anyway. */
  readonly otherwise?: "backoff" | "done";
}

/** The Outcome for `cause` (an error, or an InProgress answer), carrying `extra` (events, patches). */
export function retryOutcome(
  cause: unknown,
  extra: Omit<Outcome, "requeue"> = {},
  options: RetryOptions = {},
): Outcome {
  const delay = cloudDelayMs(cause);
  if (delay !== undefined) return after(delay, extra);
  if (options.otherwise === "done") return { ...extra, requeue: { kind: "done" } };
  return backoff(cause, extra);
}

/**
 * For a periodic controller whose pass had failures: the soonest delay the cloud asked for when
 * that is sooner than `periodMs`, else the period.
 */
export function periodicOutcome(
  periodMs: number,
  causes: readonly unknown[],
  extra: Omit<Outcome, "requeue"> = {},
): Outcome {
  let ms = periodMs;
  for (const c of causes) {
    const d = cloudDelayMs(c);
    if (d !== undefined && d < ms) ms = d;
  }
  return after(ms, extra);
}
