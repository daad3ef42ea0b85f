/**
 * The end of one cloud call by its timeout or by any of its callers' signals, whichever comes
 * first: the one place every client (the REST kit, the GCP, Azure and AWS SDK wrappers) combines
 * them, and says which it was, so each maps a timeout and an abort to the same contract errors.
 */

import { whenAborted } from "../util/abort-fanout.js";
import type { Clock, TimerHandle } from "../util/clock.js";

export type CallEnd = "timeout" | "aborted";

export class CallDeadline {
  /** What ended the call, once something has. */
  ended: CallEnd | undefined;
  private readonly timer: TimerHandle;
  private readonly unsubscribe: (() => void)[];

  /**
   * `onEnd` is called once, with what ended the call and its reason: a TimeoutError, or the
   * aborted signal's reason. The callers' signals are shared by every call in flight (the hub's
   * shutdown), hence whenAborted's one listener per signal rather than one per call.
   */
  constructor(
    private readonly clock: Clock,
    timeoutMs: number,
    signals: readonly (AbortSignal | undefined)[],
    private readonly onEnd: (end: CallEnd, reason: Error) => void,
  ) {
    this.timer = clock.setTimeout(
      () => this.end("timeout", new DOMException(`no answer within ${timeoutMs} ms`, "TimeoutError")),
      timeoutMs,
    );
    this.unsubscribe = [];
    for (const s of signals)
      if (s !== undefined) this.unsubscribe.push(whenAborted(s, () => this.end("aborted", reasonOf(s))));
  }

  /** The call is over: the timer and the subscriptions go. */
  dispose(): void {
    this.clock.clearTimeout(this.timer);
    for (const off of this.unsubscribe) off();
  }

  private end(end: CallEnd, reason: Error): void {
    if (this.ended !== undefined) return;
    this.ended = end;
    this.onEnd(end, reason);
  }
}

/** What ended the call as the providers' error mappers take it. */
export function endedBy(deadline: CallDeadline): { timedOut: boolean; aborted: boolean } {
  return { timedOut: deadline.ended === "timeout", aborted: deadline.ended === "aborted" };
}

/** The reason an aborted signal gives, as an Error. */
function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError");
}
