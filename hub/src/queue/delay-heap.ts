/**
 * Min-heap of entries by due time, indexed by id: schedule, reschedule earlier, remove and pop
 * are O(log n). The work queue keeps all its delayed keys here behind a single timer.
 */
export interface DelayedEntry<T> {
  readonly id: string;
  readonly value: T;
  readonly dueMs: number;
}

interface Slot<T> {
  id: string;
  value: T;
  dueMs: number;
  /** Tie-break so entries due at the same time come out in scheduling order. */
  seq: number;
  index: number;
}

export class DelayHeap<T> {
  private readonly heap: Slot<T>[] = [];
  private readonly byId = new Map<string, Slot<T>>();
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  get(id: string): DelayedEntry<T> | undefined {
    return this.byId.get(id);
  }

  /**
   * Schedules `id` at `dueMs`; if already scheduled, only an earlier due time replaces the
   * current one. Returns whether anything changed.
   */
  scheduleEarliest(id: string, value: T, dueMs: number): boolean {
    const existing = this.byId.get(id);
    if (existing) {
      if (existing.dueMs <= dueMs) return false;
      existing.dueMs = dueMs;
      existing.value = value;
      existing.seq = this.seq++;
      this.siftUp(existing.index);
      return true;
    }
    const slot: Slot<T> = { id, value, dueMs, seq: this.seq++, index: this.heap.length };
    this.heap.push(slot);
    this.byId.set(id, slot);
    this.siftUp(slot.index);
    return true;
  }

  remove(id: string): DelayedEntry<T> | undefined {
    const slot = this.byId.get(id);
    if (!slot) return undefined;
    this.removeAt(slot.index);
    return slot;
  }

  peek(): DelayedEntry<T> | undefined {
    return this.heap[0];
  }

  /** Removes and returns the earliest entry if it is due at or before `nowMs`. */
  popDue(nowMs: number): DelayedEntry<T> | undefined {
    const top = this.heap[0];
    if (!top || top.dueMs > nowMs) return undefined;
    this.removeAt(0);
    return top;
  }

  /** Removes every entry whose value matches; O(n), for rare bulk drops. Returns how many. */
  removeWhere(predicate: (value: T) => boolean): number {
    const kept: Slot<T>[] = [];
    for (const slot of this.heap) {
      if (predicate(slot.value)) this.byId.delete(slot.id);
      else kept.push(slot);
    }
    const removed = this.heap.length - kept.length;
    if (removed === 0) return 0;
    this.heap.length = 0;
    for (const slot of kept) {
      slot.index = this.heap.length;
      this.heap.push(slot);
    }
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
    return removed;
  }

  clear(): void {
    this.heap.length = 0;
    this.byId.clear();
  }

  private removeAt(index: number): void {
    const slot = this.heap[index]!;
    this.byId.delete(slot.id);
    const last = this.heap.pop()!;
    if (last === slot) return;
    this.heap[index] = last;
    last.index = index;
    this.siftDown(index);
    this.siftUp(last.index);
  }

  private siftUp(start: number): void {
    let index = start;
    const slot = this.heap[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = this.heap[parentIndex]!;
      if (!before(slot, parent)) break;
      this.heap[index] = parent;
      parent.index = index;
      index = parentIndex;
    }
    this.heap[index] = slot;
    slot.index = index;
  }

  private siftDown(start: number): void {
    let index = start;
    const slot = this.heap[index]!;
    const length = this.heap.length;
    for (;;) {
      const leftIndex = 2 * index + 1;
      if (leftIndex >= length) break;
      const rightIndex = leftIndex + 1;
      let childIndex = leftIndex;
      if (rightIndex < length && before(this.heap[rightIndex]!, this.heap[leftIndex]!))
        childIndex = rightIndex;
      const child = this.heap[childIndex]!;
      if (!before(child, slot)) break;
      this.heap[index] = child;
      child.index = index;
      index = childIndex;
    }
    this.heap[index] = slot;
    slot.index = index;
  }
}

function before<T>(a: Slot<T>, b: Slot<T>): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq);
}
