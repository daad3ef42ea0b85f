/**
 * What a fake was asked and what it answered, for tests to assert on: every call is
 * counted by (account, operation, outcome) for good, and the last `capacity` calls are kept
 * in full (method, path, query, status, request id, the fault injected, spec problems).
 */

export interface LoggedRequest {
  /** 1, 2, ... in arrival order. */
  readonly seq: number;
  readonly atMs: number;
  readonly account: string;
  readonly operation: string;
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly requestId: string;
  /** HTTP status as a string ("200", "429", ...), or "aborted" when the client left first. */
  readonly outcome: string;
  /** The fault injected into this call, if one was. */
  readonly fault?: string;
  /** The caller's User-Agent header (hub replicas name themselves in it). */
  readonly userAgent?: string;
}

export interface CallCount {
  readonly account: string;
  readonly operation: string;
  readonly outcome: string;
  readonly count: number;
}

export interface CallStatsGroup {
  readonly totalCalls: number;
  readonly byOperation: Record<string, number>;
  readonly byOutcome: Record<string, number>;
}

export interface CallStats extends CallStatsGroup {
  readonly byAccount: Record<string, CallStatsGroup>;
  /** Every (account, operation, outcome) with its count, sorted. */
  readonly calls: readonly CallCount[];
}

export interface RequestFilter {
  readonly account?: string;
  readonly operation?: string | RegExp;
  readonly outcome?: string;
  readonly method?: string;
  readonly fault?: string;
  /** Calls whose User-Agent contains this. */
  readonly userAgent?: string;
  /** Only calls after this seq (see `mark()`). */
  readonly afterSeq?: number;
}

const SEP = "\u0000";
export const DEFAULT_LOG_CAPACITY = 10_000;

export class RequestLog {
  private readonly counts = new Map<string, number>();
  private readonly entries: LoggedRequest[] = [];
  private seq = 0;

  constructor(
    private readonly now: () => number = Date.now,
    /** Calls kept in full; older ones are only counted. 0 keeps none. */
    private readonly capacity = DEFAULT_LOG_CAPACITY,
  ) {}

  record(call: Omit<LoggedRequest, "seq" | "atMs">): LoggedRequest {
    const key = call.account + SEP + call.operation + SEP + call.outcome;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    const entry: LoggedRequest = { seq: ++this.seq, atMs: this.now(), ...call };
    if (this.capacity > 0) {
      this.entries.push(entry);
      if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
    }
    return entry;
  }

  /** The seq of the last call so far: pass it as `afterSeq` to see only what comes next. */
  mark(): number {
    return this.seq;
  }

  /** The kept calls matching `filter`, oldest first. */
  requests(filter: RequestFilter = {}): LoggedRequest[] {
    return this.entries.filter((e) => matches(e, filter));
  }

  /** How many kept calls match (for counts over all calls, see `stats()`). */
  count(filter: RequestFilter = {}): number {
    return this.requests(filter).length;
  }

  reset(): void {
    this.counts.clear();
    this.entries.length = 0;
  }

  stats(): CallStats {
    const calls: CallCount[] = [];
    for (const [key, count] of this.counts) {
      const [account = "", operation = "", outcome = ""] = key.split(SEP);
      calls.push({ account, operation, outcome, count });
    }
    calls.sort(
      (a, b) =>
        a.account.localeCompare(b.account) ||
        a.operation.localeCompare(b.operation) ||
        a.outcome.localeCompare(b.outcome),
    );
    const total = emptyGroup();
    const byAccount: Record<string, MutableGroup> = {};
    for (const c of calls) {
      addTo(total, c);
      byAccount[c.account] ??= emptyGroup();
      addTo(byAccount[c.account]!, c);
    }
    return { ...total, byAccount, calls };
  }
}

function matches(e: LoggedRequest, f: RequestFilter): boolean {
  if (f.afterSeq !== undefined && e.seq <= f.afterSeq) return false;
  if (f.account !== undefined && e.account !== f.account) return false;
  if (f.outcome !== undefined && e.outcome !== f.outcome) return false;
  if (f.method !== undefined && e.method !== f.method) return false;
  if (f.fault !== undefined && e.fault !== f.fault) return false;
  if (f.userAgent !== undefined && !(e.userAgent ?? "").includes(f.userAgent)) return false;
  if (f.operation !== undefined) {
    if (typeof f.operation === "string" ? e.operation !== f.operation : !f.operation.test(e.operation))
      return false;
  }
  return true;
}

interface MutableGroup extends CallStatsGroup {
  totalCalls: number;
}

function emptyGroup(): MutableGroup {
  return { totalCalls: 0, byOperation: {}, byOutcome: {} };
}

function addTo(group: MutableGroup, c: CallCount): void {
  group.totalCalls += c.count;
  group.byOperation[c.operation] = (group.byOperation[c.operation] ?? 0) + c.count;
  group.byOutcome[c.outcome] = (group.byOutcome[c.outcome] ?? 0) + c.count;
}
