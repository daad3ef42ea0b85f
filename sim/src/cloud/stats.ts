import type { CloudCallCount, CloudStats, CloudStatsGroup } from "./types.js";

const SEP = "\u0000";

/** Counts public API calls by (account, operation, outcome). */
export class CallCounter {
  private readonly counts = new Map<string, number>();

  record(account: string, operation: string, outcome: string): void {
    const key = account + SEP + operation + SEP + outcome;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  reset(): void {
    this.counts.clear();
  }

  snapshot(): CloudStats {
    const calls: CloudCallCount[] = [];
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

interface MutableGroup extends CloudStatsGroup {
  totalCalls: number;
}

function emptyGroup(): MutableGroup {
  return { totalCalls: 0, byOperation: {}, byOutcome: {} };
}

function addTo(group: MutableGroup, c: CloudCallCount): void {
  group.totalCalls += c.count;
  group.byOperation[c.operation] = (group.byOperation[c.operation] ?? 0) + c.count;
  group.byOutcome[c.outcome] = (group.byOutcome[c.outcome] ?? 0) + c.count;
}
