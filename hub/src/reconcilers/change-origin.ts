interface Pending {
  readonly delta?: () => void;
  readonly snapshot?: () => void;
}

/**
 * Tells a change the agent's watch reported (a delta) from one a snapshot applied. FleetState
 * calls onNode for every change of a snapshot and then onSynced, all in one synchronous run; a
 * delta's change is never followed synchronously by onSynced. So a change's handling is held
 * until its synchronous run ends, and `snapshot()` (from onSynced) decides which it was. An
 * object missing from a snapshot was not seen deleted: absence from a list is not evidence.
 */
export class ChangeOrigin {
  private readonly pending = new Map<string, Pending[]>();

  /** Runs `on.delta` if the change proves to be a delta, `on.snapshot` if a snapshot applied it. */
  defer(cluster: string, on: Pending): void {
    let list = this.pending.get(cluster);
    if (list === undefined) {
      const mine: Pending[] = [];
      list = mine;
      this.pending.set(cluster, mine);
      queueMicrotask(() => {
        if (this.pending.get(cluster) !== mine) return;
        this.pending.delete(cluster);
        for (const p of mine) p.delta?.();
      });
    }
    list.push(on);
  }

  /** A snapshot was applied: the changes of this run came from it. */
  snapshot(cluster: string): void {
    const list = this.pending.get(cluster);
    this.pending.delete(cluster);
    for (const p of list ?? []) p.snapshot?.();
  }
}
