import { clusterKeyPrefix, parseKey } from "../queue/index.js";
import { backoffDelayMs } from "../util/backoff.js";
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
  /** The agent could not apply it: published again at the deadline (a backoff), never extended. */
  readonly failed: boolean;
  /** Already retried early once because the cluster's API server applied something else. */
  readonly fastTracked: boolean;
}

/**
 * Republication after a failed apply, per object: 1 s doubling to 30 s, ±20%. The count is the
 * publication's attempts, so it grows while the same desired state keeps failing.
 */
const FAILED_APPLY_BACKOFF = { initialMs: 1000, maxMs: 30_000, jitter: 0.2 };

/** Failures that say the API server (not the object) is in trouble: connection, timeout, throttling, 5xx. */
export function transientApplyFailure(httpStatus: number): boolean {
  return httpStatus === 0 || httpStatus === 408 || httpStatus === 429 || httpStatus >= 500;
}

const MAX_DEADLINE_MS = 5 * 60_000;

/**
 * How far one cluster's agent (its current stream) has got with the hub's publications: the
 * highest generation it has received over NATS and the hub time of the latest Ack it had read
 * (both from its heartbeats; 0: not said), and when it first reported a result past each
 * generation (increasing in both; the oldest kept is the last one at least a deadline old).
 */
interface Progress {
  receivedMax: number;
  ackedHubTimeMs: number;
  readonly marks: { generation: number; atMs: number }[];
}
/**
 * A publication counts as lost (not received) once the agent has read an Ack the hub sent this
 * share of a deadline after it: the margin covers the NATS hop, which the Ack does not take.
 */
const LOST_AFTER_ACK_SHARE = 0.2;
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
  /** By clusterKeyPrefix: a tracker key starts with its cluster's prefix. */
  private readonly progress = new Map<string, Progress>();
  /** By clusterKeyPrefix: keys whose publication failed transiently, for an early retry on recovery. */
  private readonly failedTransiently = new Map<string, Set<string>>();
  private generation = 0;

  constructor(
    private readonly clock: Clock,
    private readonly deadlineMs: number,
    private readonly random: () => number = Math.random,
    /**
     * Asks the cluster's agent to echo an Ack now: a publication waits on an echo newer than the
     * agent's heartbeats have brought (they come every heartbeat interval, which may be longer
     * than a deadline), so by the next deadline the hub knows whether it was lost.
     */
    private readonly askEcho: (cluster: string) => void = () => {},
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
    const same = prev !== undefined && prev.uid === uid && prev.expectation === expectation;
    const attempts = same ? prev.attempts + 1 : 1;
    const now = this.clock.now();
    const entry: Inflight = {
      uid,
      generation: ++this.generation,
      publishedAtMs: now,
      deadlineMs: now + Math.min(MAX_DEADLINE_MS, this.deadlineMs * 2 ** (attempts - 1)),
      attempts,
      expectation,
      failed: false,
      fastTracked: same && prev.fastTracked,
    };
    this.inflight.set(key, entry);
    return entry;
  }

  /**
   * Whether `key` waits on a live publication for this object. A missed deadline is extended
   * while the publication waits in the cluster's agent (received, not yet applied: a busy
   * cluster's agent can be tens of seconds behind), since publishing again would only lengthen
   * its queue. It publishes again when the agent never received it, has been past it for a
   * whole deadline, or after MAX_DEADLINE_MS.
   */
  pending(key: string, uid: string): Inflight | undefined {
    const e = this.inflight.get(key);
    if (e === undefined || e.uid !== uid) return undefined;
    const now = this.clock.now();
    if (e.deadlineMs > now) return e;
    if (e.failed || !this.agentBehind(key, e, now)) return undefined;
    const extended = { ...e, deadlineMs: now + this.deadlineMs };
    this.inflight.set(key, extended);
    return extended;
  }

  /** An agent of `cluster` reported a result for `generation` (any outcome, any object). */
  reported(cluster: string, generation: number): void {
    const prefix = clusterKeyPrefix(cluster);
    const now = this.clock.now();
    const p = this.progressOf(prefix);
    const last = p.marks[p.marks.length - 1];
    if (last === undefined || generation > last.generation) p.marks.push({ generation, atMs: now });
    const cutoff = now - this.deadlineMs;
    while (p.marks.length > 1 && (p.marks[1]?.atMs ?? now) <= cutoff) p.marks.shift();
  }

  /**
   * The agent's stream says it has received desired state up to `generation`, and had read the
   * Ack the hub sent at `ackedHubTimeMs` (0: not said).
   */
  received(cluster: string, generation: number, ackedHubTimeMs = 0): void {
    const p = this.progressOf(clusterKeyPrefix(cluster));
    p.receivedMax = Math.max(p.receivedMax, generation);
    p.ackedHubTimeMs = Math.max(p.ackedHubTimeMs, ackedHubTimeMs);
  }

  private progressOf(prefix: string): Progress {
    let p = this.progress.get(prefix);
    if (p === undefined) {
      p = { receivedMax: 0, ackedHubTimeMs: 0, marks: [] };
      this.progress.set(prefix, p);
    }
    return p;
  }

  /**
   * The publication is on its way to, or waits in, the agent. Received (NATS delivers in order,
   * so a later generation received means this one was): it waits in the agent's queue unless the
   * agent has been past it (in its results) for a whole deadline — its applies run concurrently,
   * so being just past one says nothing yet. Not received: still on its way while the agent has
   * not read its hub stream past the publication (a busy cluster's agent reads both streams tens
   * of seconds late); lost once it has, or when the agent never says how far it read (one that
   * predates acked_hub_time_ms).
   */
  private agentBehind(key: string, e: Inflight, now: number): boolean {
    // expire() asks for a publication now (failure, reconnect): never extended.
    if (e.deadlineMs === 0 || now - e.publishedAtMs >= MAX_DEADLINE_MS) return false;
    const p = this.progress.get(key.slice(0, key.indexOf("/") + 1));
    if (p === undefined) return false;
    if (p.receivedMax < e.generation) {
      const behind =
        p.ackedHubTimeMs > 0 && p.ackedHubTimeMs < e.publishedAtMs + LOST_AFTER_ACK_SHARE * this.deadlineMs;
      const cluster = behind ? parseKey(key)?.cluster : undefined;
      if (cluster !== undefined) this.askEcho(cluster);
      return behind;
    }
    const cutoff = now - this.deadlineMs;
    let pastLongAgo = 0;
    for (const m of p.marks) if (m.atMs <= cutoff) pastLongAgo = m.generation;
    return pastLongAgo < e.generation;
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

  /**
   * The agent could not apply this generation: it is published again after a backoff that grows
   * with its attempts (per object), and not before. Returns the delay, or undefined if `generation`
   * is not the one in flight.
   */
  failedApply(key: string, generation: number, httpStatus: number): number | undefined {
    const e = this.inflight.get(key);
    if (e === undefined || e.generation !== generation) return undefined;
    const delay = backoffDelayMs(e.attempts - 1, { ...FAILED_APPLY_BACKOFF, random: this.random });
    this.inflight.set(key, { ...e, deadlineMs: this.clock.now() + delay, failed: true });
    if (transientApplyFailure(httpStatus) && !e.fastTracked) {
      const prefix = key.slice(0, key.indexOf("/") + 1);
      let set = this.failedTransiently.get(prefix);
      if (set === undefined) {
        set = new Set();
        this.failedTransiently.set(prefix, set);
      }
      set.add(key);
    }
    return delay;
  }

  /**
   * The cluster's API server applied a patch: publications of the cluster that failed
   * transiently are due at once (each at most once per desired state, so an object that keeps
   * failing on its own is not retried at the rate of the others' successes). Returns their keys.
   */
  recovered(cluster: string): string[] {
    const prefix = clusterKeyPrefix(cluster);
    const set = this.failedTransiently.get(prefix);
    if (set === undefined) return [];
    this.failedTransiently.delete(prefix);
    const due: string[] = [];
    for (const key of set) {
      const e = this.inflight.get(key);
      if (e === undefined || !e.failed) continue;
      this.inflight.set(key, { ...e, deadlineMs: this.clock.now(), fastTracked: true });
      due.push(key);
    }
    return due;
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
    this.failedTransiently.get(key.slice(0, key.indexOf("/") + 1))?.delete(key);
  }

  clearWhere(predicate: (key: string) => boolean): void {
    for (const key of [...this.inflight.keys()]) if (predicate(key)) this.clear(key);
  }

  /** Forgets a cluster's progress (its agent disconnected or the cluster was removed). */
  forgetProgress(cluster: string): void {
    this.progress.delete(clusterKeyPrefix(cluster));
  }

  /** A new agent stream is synced: it has received and applied nothing of this hub's yet. */
  restartProgress(cluster: string): void {
    this.progress.set(clusterKeyPrefix(cluster), { receivedMax: 0, ackedHubTimeMs: 0, marks: [] });
  }

  size(): number {
    return this.inflight.size;
  }

  /** Per cluster key prefix: publications in flight, published more than once, and failed to apply. */
  countsByPrefix(): Map<string, { inflight: number; republished: number; failedApply: number }> {
    const out = new Map<string, { inflight: number; republished: number; failedApply: number }>();
    for (const [key, e] of this.inflight) {
      const prefix = key.slice(0, key.indexOf("/") + 1);
      let c = out.get(prefix);
      if (c === undefined) {
        c = { inflight: 0, republished: 0, failedApply: 0 };
        out.set(prefix, c);
      }
      c.inflight++;
      if (e.attempts > 1) c.republished++;
      if (e.failed) c.failedApply++;
    }
    return out;
  }
}
