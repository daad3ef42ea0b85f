import type { ApplyResult, Delta } from "@fleet-ccm/proto";

export type Change = NonNullable<Delta["change"]>;

/**
 * A change waiting to be written. Its wire form is built only when it is written, so while the
 * hub reads slowly the outbox holds a reference to the informer's cached object, not a second
 * copy of it (at 5,000 nodes that copy was ~3 MiB of the agent's peak heap).
 */
export interface PendingChange {
  readonly key: string;
  readonly wire: () => Change;
}

export type Outgoing =
  | { readonly type: "change"; readonly change: PendingChange }
  | { readonly type: "result"; readonly result: ApplyResult };

/** The outbox key of an object's change: one per object (a recreated object has another uid). */
export function changeKey(kind: "node" | "service", namespace: string, name: string, uid: string): string {
  return `${kind}\u0000${namespace}\u0000${name}\u0000${uid}`;
}

/** A change already in wire form. */
export function readyChange(c: Change): PendingChange {
  const kind = c.$case === "node" || c.$case === "nodeDeleted" ? "node" : "service";
  const namespace = c.$case === "node" ? "" : c.value.namespace;
  return { key: changeKey(kind, namespace, c.value.name, c.value.uid), wire: () => c };
}

function keyOf(item: Outgoing): string {
  if (item.type === "change") return item.change.key;
  const r = item.result;
  return `result\u0000${r.kind}\u0000${r.namespace}\u0000${r.name}\u0000${r.uid}`;
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
