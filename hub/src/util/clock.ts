/** Time comes in through this interface so tests can drive it (FakeClock). */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export interface TimerHandle {
  /** Opaque. */
  readonly _timer: unknown;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { _timer: t };
  },
  clearTimeout(handle) {
    clearTimeout(handle._timer as NodeJS.Timeout);
  },
};

/** A clock that only moves when told to. Timers fire in due order during advance(). */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { due: this.current + Math.max(0, ms), fn });
    return { _timer: id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle._timer as number);
  }

  /** Moves time forward by `ms`, firing every timer that falls due, earliest first. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId = -1;
      let nextDue = Number.POSITIVE_INFINITY;
      for (const [id, t] of this.timers) {
        if (t.due <= target && t.due < nextDue) {
          nextDue = t.due;
          nextId = id;
        }
      }
      if (nextId < 0) break;
      const timer = this.timers.get(nextId);
      this.timers.delete(nextId);
      this.current = nextDue;
      timer?.fn();
    }
    this.current = target;
  }

  pendingTimers(): number {
    return this.timers.size;
  }
}
