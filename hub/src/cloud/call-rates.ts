/** Calls per second are averaged over this window. */
export const RATE_WINDOW_MS = 10_000;
/** An account throttled within this long counts as throttled. */
export const THROTTLE_WINDOW_MS = 60_000;

const SLOT_MS = 1000;
const SLOTS = THROTTLE_WINDOW_MS / SLOT_MS;

export interface AccountRate {
  readonly callsPerSecond: number;
  /** Throttled answers within the throttle window. */
  readonly throttledRecent: number;
  readonly throttledTotal: number;
  readonly lastThrottledMs: number | undefined;
}

const NONE: AccountRate = {
  callsPerSecond: 0,
  throttledRecent: 0,
  throttledTotal: 0,
  lastThrottledMs: undefined,
};

/** One account's calls of the last minute, in one-second slots. */
class Slots {
  /** The second (clock ms / SLOT_MS) each slot counts; a slot of an older second is stale. */
  readonly second = new Float64Array(SLOTS).fill(-1);
  readonly calls = new Uint32Array(SLOTS);
  readonly throttled = new Uint32Array(SLOTS);
  throttledTotal = 0;
  lastThrottledMs: number | undefined;

  constructor(readonly firstMs: number) {}

  slot(second: number): number {
    const i = second % SLOTS;
    if (this.second[i] !== second) {
      this.second[i] = second;
      this.calls[i] = 0;
      this.throttled[i] = 0;
    }
    return i;
  }
}

/**
 * Each account's cloud calls, counted as they are made (the fleet API's call rate and throttling):
 * no timer sampling a counter, so an idle hub is not woken for it, and exact to the second.
 */
export class CallRates {
  private readonly accounts = new Map<string, Slots>();

  constructor(private readonly now: () => number) {}

  record(account: string, throttled: boolean): void {
    const nowMs = this.now();
    let slots = this.accounts.get(account);
    if (slots === undefined) {
      slots = new Slots(nowMs);
      this.accounts.set(account, slots);
    }
    const i = slots.slot(Math.floor(nowMs / SLOT_MS));
    slots.calls[i] = (slots.calls[i] ?? 0) + 1;
    if (!throttled) return;
    slots.throttled[i] = (slots.throttled[i] ?? 0) + 1;
    slots.throttledTotal++;
    slots.lastThrottledMs = nowMs;
  }

  of(account: string): AccountRate {
    const slots = this.accounts.get(account);
    if (slots === undefined) return NONE;
    const nowMs = this.now();
    const second = Math.floor(nowMs / SLOT_MS);
    const rateSlots = RATE_WINDOW_MS / SLOT_MS;
    let calls = 0;
    let throttledRecent = 0;
    for (let i = 0; i < SLOTS; i++) {
      const age = second - (slots.second[i] ?? -1);
      if (age < 0 || age >= SLOTS) continue;
      throttledRecent += slots.throttled[i] ?? 0;
      if (age < rateSlots) calls += slots.calls[i] ?? 0;
    }
    // Over the time they were counted in: from the start of the oldest second counted (or the
    // first call) to now, at least a second (the first calls are no burst of thousands a second).
    const fromMs = Math.max((second - rateSlots + 1) * SLOT_MS, slots.firstMs);
    const seconds = Math.max(1, (nowMs - fromMs) / 1000);
    return {
      callsPerSecond: calls / seconds,
      throttledRecent,
      throttledTotal: slots.throttledTotal,
      lastThrottledMs: slots.lastThrottledMs,
    };
  }
}
