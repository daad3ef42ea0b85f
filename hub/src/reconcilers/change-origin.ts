/**
 * Tells a deletion the agent observed from an object missing from a snapshot. FleetState calls
 * onNode for every change of a snapshot and then onSynced, all in one synchronous run; a
 * delta's change is never followed synchronously by onSynced. So a deletion is held until the
 * current synchronous run ends, and dropped if a snapshot ends it: absence from a list is not
 * evidence, only a deletion the agent's watch reported is.
 */
export class ChangeOrigin {
  private readonly pending = new Map<string, (() => void)[]>();

  /** Runs `fn` once the change proves to be a delta; never if a snapshot applied it. */
  ifDelta(cluster: string, fn: () => void): void {
    let list = this.pending.get(cluster);
    if (list === undefined) {
      const mine: (() => void)[] = [];
      list = mine;
      this.pending.set(cluster, mine);
      queueMicrotask(() => {
        if (this.pending.get(cluster) !== mine) return;
        this.pending.delete(cluster);
        for (const f of mine) f();
      });
    }
    list.push(fn);
  }

  /** A snapshot was applied: the changes of this run came from it. */
  snapshot(cluster: string): void {
    this.pending.delete(cluster);
  }
}
