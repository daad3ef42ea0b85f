import type { Logger } from "pino";
import { type Clock, systemClock } from "./backoff.js";

/**
 * A log of repeated failures of one kind (patches the API server refused, …): the first at
 * once, then one summary line per period while they go on (how many, a few objects, the last
 * error), never a line per failure. A quiet period resets it.
 */
export class FailureSummary {
  private count = 0;
  private readonly objects = new Set<string>();
  private last: Record<string, unknown> = {};
  private timer: unknown;

  constructor(
    private readonly logger: Logger,
    private readonly msg: string,
    private readonly clock: Clock = systemClock,
    private readonly everyMs = 30_000,
    /** "info" for what is expected now and then but not in a loop (a 410 Gone on a watch). */
    private readonly level: "warn" | "info" = "warn",
  ) {}

  failed(object: string, fields: Record<string, unknown>): void {
    if (this.timer === undefined) {
      this.logger[this.level]({ object, ...fields, summaryEveryS: this.everyMs / 1000 }, this.msg);
      this.timer = this.clock.setTimeout(() => this.flush(), this.everyMs);
      return;
    }
    this.count++;
    if (this.objects.size < 1000) this.objects.add(object);
    this.last = fields;
  }

  private flush(): void {
    this.timer = undefined;
    if (this.count === 0) return;
    this.logger[this.level](
      {
        failures: this.count,
        objects: this.objects.size,
        examples: [...this.objects].slice(0, 5),
        ...this.last,
        periodS: this.everyMs / 1000,
      },
      `${this.msg} (${this.count} times in the last ${this.everyMs / 1000} s)`,
    );
    this.count = 0;
    this.objects.clear();
    this.timer = this.clock.setTimeout(() => this.flush(), this.everyMs);
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
