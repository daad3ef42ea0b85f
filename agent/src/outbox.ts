import { type ApplyResult, type Delta, ObjectKind } from "@fleet-ccm/proto";
import { type Clock, systemClock } from "./backoff.js";

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
  /** The object's deletion (never held). */
  readonly deleted?: boolean;
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
  const key = objectKey(kind, namespace, c.value.name, c.value.uid);
  return { type: "change", key, deleted: c.$case.endsWith("Deleted"), wire: () => c };
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
 * The longest an apply in flight holds its object's changes: as long as one of its requests may
 * take (the kube client's timeout), so a slow API server does not split its echoes into
 * several deltas, and a stuck apply hides nothing longer.
 */
export const APPLY_HOLD_MAX_MS = 30_000;
/**
 * After the apply ended, the longest its echoes are waited for. A watch delivers events in order,
 * so an echo comes after every change made before its write, however late the watch runs; the
 * bound is for an echo that never comes (a write that changed nothing, a watch that broke).
 */
export const ECHO_WAIT_MS = 10_000;

/**
 * An apply in flight to one object. Each write it makes comes back as a watch event (its echo);
 * the object's changes are held until the apply is done and every write has echoed, so the hub
 * gets one delta with the final state instead of one per write.
 */
export interface ApplyHold {
  /** One write landed: its echo is waited for. */
  wrote(): void;
  /** The apply finished (success or failure): release once every write has echoed. */
  done(): void;
}

class Hold implements ApplyHold {
  writes = 0;
  echoes = 0;
  finished = false;
  change: PendingChange | undefined;
  timer: unknown;

  constructor(private readonly ended: (h: Hold) => void) {}

  get settled(): boolean {
    return this.finished && this.echoes >= this.writes;
  }

  wrote(): void {
    this.writes++;
  }

  done(): void {
    this.finished = true;
    this.ended(this);
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
  private readonly holds = new Map<string, Hold>();

  /** `released`: held changes were just put back in line (write them). */
  constructor(
    private readonly released: () => void = () => undefined,
    private readonly clock: Clock = systemClock,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /**
   * Holds the object's next changes (the latest wins) until the apply is done and has echoed:
   * APPLY_HOLD_MAX_MS at most while it runs, ECHO_WAIT_MS at most once it has ended. A change
   * already waiting is not held; a deletion ends the hold and goes out as usual. The released
   * change takes its place in line when it is released.
   */
  hold(key: string): ApplyHold {
    const previous = this.holds.get(key);
    if (previous !== undefined) this.release(key, previous);
    const expire = (h: Hold, ms: number): void => {
      this.clock.clearTimeout(h.timer);
      h.timer = this.clock.setTimeout(() => {
        if (this.holds.get(key) === h) this.release(key, h);
      }, ms);
    };
    const hold: Hold = new Hold((h) => {
      if (this.holds.get(key) !== h) return;
      if (h.settled) this.release(key, h);
      else expire(h, ECHO_WAIT_MS);
    });
    expire(hold, APPLY_HOLD_MAX_MS);
    this.holds.set(key, hold);
    return hold;
  }

  put(item: Outgoing): void {
    const hold = item.type === "change" ? this.holds.get(item.key) : undefined;
    if (hold !== undefined && item.type === "change") {
      hold.echoes++;
      if (item.deleted === true) {
        hold.change = undefined;
        this.release(item.key, hold);
      } else if (!this.pending.has(item.key)) {
        hold.change = item;
        if (hold.settled) this.release(item.key, hold);
        return;
      }
    }
    this.pending.set(item.key, item);
  }

  private release(key: string, hold: Hold): void {
    this.holds.delete(key);
    this.clock.clearTimeout(hold.timer);
    if (hold.change === undefined) return;
    this.pending.set(key, hold.change);
    hold.change = undefined;
    this.released();
  }

  /** Ends every hold without writing what it held (the stream stopped). */
  endHolds(): void {
    for (const hold of this.holds.values()) this.clock.clearTimeout(hold.timer);
    this.holds.clear();
  }

  /** Removes and returns the oldest pending message. */
  take(): Outgoing | undefined {
    const first = this.pending.entries().next();
    if (first.done === true) return undefined;
    this.pending.delete(first.value[0]);
    return first.value[1];
  }

  /** Empties the outbox, returning what was in it, oldest first (held changes last; their holds go on). */
  drain(): Outgoing[] {
    const items = [...this.pending.values()];
    this.pending.clear();
    for (const hold of this.holds.values())
      if (hold.change !== undefined) {
        items.push(hold.change);
        hold.change = undefined;
      }
    return items;
  }
}
