/**
 * Runs one job per object at a time, latest wins: while an object's job runs,
 * a newer desired state for it replaces any older one waiting. At most
 * `concurrency` objects are worked on at once.
 */
export class KeyedDispatcher<T> {
  private readonly running = new Set<string>();
  private readonly waiting = new Map<string, T>();
  private readonly ready: string[] = [];
  private active = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly run: (item: T) => Promise<void>,
  ) {}

  submit(key: string, item: T): void {
    const queued = this.waiting.has(key);
    this.waiting.set(key, item);
    if (!queued && !this.running.has(key)) this.ready.push(key);
    this.pump();
  }

  private pump(): void {
    while (this.active < this.concurrency && this.ready.length > 0) {
      const key = this.ready.shift() as string;
      const item = this.waiting.get(key);
      if (item === undefined) continue;
      this.waiting.delete(key);
      this.running.add(key);
      this.active++;
      this.run(item)
        .catch(() => undefined)
        .finally(() => {
          this.active--;
          this.running.delete(key);
          if (this.waiting.has(key)) this.ready.push(key);
          this.pump();
          if (this.active === 0 && this.ready.length === 0) for (const w of this.idleWaiters.splice(0)) w();
        });
    }
  }

  /** Resolves when nothing runs or waits. */
  idle(): Promise<void> {
    if (this.active === 0 && this.ready.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
