import { type ApplyResult, type Delta, ObjectKind } from "@fleet-ccm/proto";

export type Change = NonNullable<Delta["change"]>;

/**
 * A change waiting to be written. Its wire form is built only when it is written, so while the
 * hub reads slowly the outbox holds a reference to the informer's cached object, not a second
 * copy of it (at 5,000 nodes that copy was ~3 MiB of the agent's peak heap).
 */
export interface PendingChange {
  readonly type: "change";
  /** objectKey() of the object. */
  readonly key: string;
  wire(): Change;
}

export interface PendingResult {
  readonly type: "result";
  readonly key: string;
  readonly result: ApplyResult;
}

export type Outgoing = PendingChange | PendingResult;

/**
 * One key per object: its uid (unique across kinds; a recreated object has another). The uid
 * string is shared with the cached object, so a pending entry adds no key of its own; objects
 * without one (never from an API server) fall back to kind, namespace and name.
 */
export type ObjectKindName = "node" | "service" | "persistentVolume";

export function objectKey(kind: ObjectKindName, namespace: string, name: string, uid: string): string {
  return uid !== "" ? uid : `${kind}\u0000${namespace}\u0000${name}`;
}

/** A change already in wire form. */
export function readyChange(c: Change): PendingChange {
  const kind: ObjectKindName =
    c.$case === "node" || c.$case === "nodeDeleted"
      ? "node"
      : c.$case === "persistentVolume" || c.$case === "persistentVolumeDeleted"
        ? "persistentVolume"
        : "service";
  const namespace = "namespace" in c.value ? c.value.namespace : "";
  return { type: "change", key: objectKey(kind, namespace, c.value.name, c.value.uid), wire: () => c };
}

/** An apply result: the latest per object waits, under a key apart from the object's change. */
export function pendingResult(r: ApplyResult): PendingResult {
  const kind: ObjectKindName =
    r.kind === ObjectKind.OBJECT_KIND_SERVICE
      ? "service"
      : r.kind === ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME
        ? "persistentVolume"
        : "node";
  return { type: "result", key: `r${objectKey(kind, r.namespace, r.name, r.uid)}`, result: r };
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
    this.pending.set(item.key, item);
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
