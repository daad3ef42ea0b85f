import type { ApplyResult } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import type { Clock, TimerHandle } from "../util/clock.js";

const SUMMARY_EVERY_MS = 30_000;
const EXAMPLES = 5;

interface ClusterFailures {
  count: number;
  readonly objects: Set<string>;
  last: ApplyResult;
  timer: TimerHandle;
}

function objectName(r: ApplyResult): string {
  return r.namespace === "" ? r.name : `${r.namespace}/${r.name}`;
}

/**
 * The hub's log of patches agents could not apply: per cluster, the first failure at once, then
 * one summary line per period while failures go on (how many, how many objects, a few names,
 * the last answer), not a line per failed apply.
 */
export class ApplyFailureLog {
  private readonly clusters = new Map<string, ClusterFailures>();

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly everyMs = SUMMARY_EVERY_MS,
  ) {}

  failed(cluster: string, r: ApplyResult): void {
    const s = this.clusters.get(cluster);
    if (s !== undefined) {
      s.count++;
      if (s.objects.size < 10_000) s.objects.add(objectName(r));
      s.last = r;
      return;
    }
    this.logger.warn(
      {
        cluster,
        object: objectName(r),
        status: r.httpStatus,
        reason: r.reason,
        message: r.message,
        summaryEveryS: this.everyMs / 1000,
      },
      "agent could not apply a patch; it is published again with backoff (further failures of this cluster are summarized)",
    );
    this.clusters.set(cluster, {
      count: 0,
      objects: new Set(),
      last: r,
      timer: this.clock.setTimeout(() => this.flush(cluster), this.everyMs),
    });
  }

  private flush(cluster: string): void {
    const s = this.clusters.get(cluster);
    if (s === undefined) return;
    if (s.count === 0) {
      // A quiet period: the next failure is logged at once again.
      this.clusters.delete(cluster);
      return;
    }
    this.logger.warn(
      {
        cluster,
        failed: s.count,
        objects: s.objects.size,
        examples: [...s.objects].slice(0, EXAMPLES),
        lastStatus: s.last.httpStatus,
        lastReason: s.last.reason,
        lastMessage: s.last.message,
        periodS: this.everyMs / 1000,
      },
      `agent could not apply ${s.count} patches in the last ${this.everyMs / 1000} s; retrying with backoff`,
    );
    s.count = 0;
    s.objects.clear();
    s.timer = this.clock.setTimeout(() => this.flush(cluster), this.everyMs);
  }

  stop(): void {
    for (const s of this.clusters.values()) this.clock.clearTimeout(s.timer);
    this.clusters.clear();
  }
}
