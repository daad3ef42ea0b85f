import type { Clock } from "../util/clock.js";

/** A desired state published and not yet seen in the agent's reports. */
export interface Inflight {
  readonly uid: string;
  readonly generation: number;
  readonly publishedAtMs: number;
  /** When to publish again if the reports still have not converged. */
  readonly deadlineMs: number;
  /** Publications of this desired state so far (1 = first). */
  readonly attempts: number;
  /** What the report must show for the loop to be closed (reconciler-defined). */
  readonly expectation: string;
}

const MAX_DEADLINE_MS = 5 * 60_000;
/** After an APPLIED result, the report gets this many deadlines more to arrive. */
const APPLIED_GRACE_FACTOR = 4;

/**
 * Observation closes the loop: a published patch counts only when the agent's
 * next report shows it. This remembers what is in flight per work key, so a
 * report that has not converged yet neither calls the cloud again nor
 * republishes before the deadline, and a missed deadline republishes with a
 * longer one each time (backoff).
 */
export class ConvergenceTracker {
  private readonly inflight = new Map<string, Inflight>();
  private generation = 0;

  constructor(
    private readonly clock: Clock,
    private readonly deadlineMs: number,
  ) {}

  get(key: string): Inflight | undefined {
    return this.inflight.get(key);
  }

  /** A generation for an untracked publication. */
  nextGeneration(): number {
    return ++this.generation;
  }

  /** Records a publication and returns it (with a fresh generation). */
  record(key: string, uid: string, expectation = ""): Inflight {
    const prev = this.inflight.get(key);
    const attempts =
      prev !== undefined && prev.uid === uid && prev.expectation === expectation ? prev.attempts + 1 : 1;
    const now = this.clock.now();
    const entry: Inflight = {
      uid,
      generation: ++this.generation,
      publishedAtMs: now,
      deadlineMs: now + Math.min(MAX_DEADLINE_MS, this.deadlineMs * 2 ** (attempts - 1)),
      attempts,
      expectation,
    };
    this.inflight.set(key, entry);
    return entry;
  }

  /** Whether `key` waits on a live publication for this object. */
  pending(key: string, uid: string): Inflight | undefined {
    const e = this.inflight.get(key);
    return e !== undefined && e.uid === uid && e.deadlineMs > this.clock.now() ? e : undefined;
  }

  /**
   * The agent applied this generation: the report showing it is on its way (a busy cluster's
   * reports can lag well behind). Waiting longer is right; publishing again would only add load.
   */
  applied(key: string, generation: number): void {
    const e = this.inflight.get(key);
    if (e === undefined || e.generation !== generation) return;
    const deadlineMs = Math.max(e.deadlineMs, this.clock.now() + APPLIED_GRACE_FACTOR * this.deadlineMs);
    this.inflight.set(key, { ...e, deadlineMs });
  }

  /** Makes the next reconcile publish at once (apply failed, agent reconnected). Keeps the attempt count. */
  expire(key: string): void {
    const e = this.inflight.get(key);
    if (e !== undefined) this.inflight.set(key, { ...e, deadlineMs: 0 });
  }

  expireWhere(predicate: (key: string) => boolean): void {
    for (const key of this.inflight.keys()) if (predicate(key)) this.expire(key);
  }

  clear(key: string): void {
    this.inflight.delete(key);
  }

  clearWhere(predicate: (key: string) => boolean): void {
    for (const key of [...this.inflight.keys()]) if (predicate(key)) this.inflight.delete(key);
  }

  size(): number {
    return this.inflight.size;
  }
}
