import type { Clock, TimerHandle } from "./clock.js";

/**
 * Collects what arrives within a window and hands it over as one batch: the first item starts
 * the window, every item until it ends joins the same batch. The cloud lookups use it to answer
 * many callers with one call.
 */
export class WindowBatch<T> {
  private items: T[] = [];
  private timer: TimerHandle | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
    private readonly flush: (items: T[]) => Promise<void>,
  ) {}

  add(item: T): void {
    this.items.push(item);
    this.timer ??= this.clock.setTimeout(() => {
      this.timer = undefined;
      const batch = this.items;
      this.items = [];
      void this.flush(batch);
    }, this.windowMs);
  }
}
