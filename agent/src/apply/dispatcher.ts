/**
 * Runs one job per object at a time. While an object's job runs, a newer job for the same
 * object and slot replaces the one waiting there; jobs of other slots wait beside it and run
 * after it, in the order their slots first waited. A slot is what a job changes: the hub's
 * controllers each send only their own fields of a Node (node-init its providerID and labels,
 * node-ipam its pod CIDRs, the route controller a condition), so the newest of one must not
 * stand in for another's. At most `concurrency` objects are worked on at once.
 */
export class KeyedDispatcher<T> {
  private readonly running = new Set<string>();
  private readonly waiting = new Map<string, Map<string, T>>();
  private readonly ready: string[] = [];
  private active = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly run: (item: T) => Promise<void>,
  ) {}

  submit(key: string, item: T, slot = ""): void {
    let slots = this.waiting.get(key);
    if (slots === undefined) {
      slots = new Map();
      this.waiting.set(key, slots);
      if (!this.running.has(key)) this.ready.push(key);
    }
    slots.set(slot, item);
    this.pump();
  }

  private pump(): void {
    while (this.active < this.concurrency && this.ready.length > 0) {
      const key = this.ready.shift() as string;
      const item = this.takeFirst(key);
      if (item === undefined) continue;
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

  /** The job of the key's oldest waiting slot, removed; the key stays waiting while it has more. */
  private takeFirst(key: string): T | undefined {
    const slots = this.waiting.get(key);
    if (slots === undefined) return undefined;
    const [slot, item] = slots.entries().next().value as [string, T];
    slots.delete(slot);
    if (slots.size === 0) this.waiting.delete(key);
    return item;
  }

  /** Resolves when nothing runs or waits. */
  idle(): Promise<void> {
    if (this.active === 0 && this.ready.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
