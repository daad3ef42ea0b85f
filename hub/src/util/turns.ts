/**
 * Turns of the event loop handed out one at a time. Work that many callers resume at once (every
 * cluster's periodic pass awaiting one shared cloud listing) would otherwise run back to back in
 * one burst of microtasks, and no socket or timer is served until the last one is done. Each
 * `await turns.next()` resumes in an event-loop turn of its own, in call order.
 */
export class Turns {
  private readonly waiting: (() => void)[] = [];
  private head = 0;
  private scheduled = false;

  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.release());
      }
    });
  }

  /** One waiter per turn: an immediate queued from an immediate runs in the next loop iteration. */
  private release(): void {
    const resolve = this.waiting[this.head++];
    resolve?.();
    if (this.head < this.waiting.length) {
      setImmediate(() => this.release());
      return;
    }
    this.waiting.length = 0;
    this.head = 0;
    this.scheduled = false;
  }
}
