import type { ApplyResult, Delta } from "@fleet-ccm/proto";

export type Change = NonNullable<Delta["change"]>;

export type Outgoing =
  | { readonly type: "change"; readonly change: Change }
  | { readonly type: "result"; readonly result: ApplyResult };

function objectKey(kind: "node" | "service", namespace: string, name: string, uid: string): string {
  return `${kind}\u0000${namespace}\u0000${name}\u0000${uid}`;
}

function keyOf(item: Outgoing): string {
  if (item.type === "result") {
    const r = item.result;
    return `result\u0000${r.kind}\u0000${r.namespace}\u0000${r.name}\u0000${r.uid}`;
  }
  const c = item.change;
  switch (c.$case) {
    case "node":
      return objectKey("node", "", c.value.name, c.value.uid);
    case "nodeDeleted":
      return objectKey("node", "", c.value.name, c.value.uid);
    case "service":
      return objectKey("service", c.value.namespace, c.value.name, c.value.uid);
    case "serviceDeleted":
      return objectKey("service", c.value.namespace, c.value.name, c.value.uid);
  }
}

/**
 * What waits while the hub reads slower than the cluster changes: at most one message per
 * object (its latest state, or its deletion) and one apply result per object (the latest).
 * The hub works from the latest state of each object, so nothing it needs is lost, and the
 * agent's memory is bounded by the number of objects, however long the hub stalls.
 *
 * Order: an object keeps the place of its first pending message, so a deletion is never sent
 * after a later object's creation under the same name (a recreated object has another uid, so
 * another key, placed after).
 */
export class Outbox {
  private readonly pending = new Map<string, Outgoing>();

  get size(): number {
    return this.pending.size;
  }

  put(item: Outgoing): void {
    this.pending.set(keyOf(item), item);
  }

  /** Removes and returns the oldest pending message. */
  take(): Outgoing | undefined {
    const first = this.pending.entries().next();
    if (first.done === true) return undefined;
    this.pending.delete(first.value[0]);
    return first.value[1];
  }

  /** Empties the outbox, returning what was in it, oldest first. */
  drain(): Outgoing[] {
    const items = [...this.pending.values()];
    this.pending.clear();
    return items;
  }
}
