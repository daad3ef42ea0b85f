// What kube-controller-manager and etcd would do to the objects of the simulated cluster: the namespace
// controller deleting a namespace's content, the garbage collector removing its own finalizers (orphan,
// foregroundDeletion) from objects being deleted, and Events expiring (kube-apiserver --event-ttl).

import { canonicalize } from "./canonical.js";
import { getObject, getStringArray, type JsonObject } from "./json.js";
import { ALL_RESOURCES, EVENTS, NAMESPACES, type ResourceDef } from "./resources.js";
import { type Entry, metaOf, parseObject } from "./table.js";

/** The store operations the controllers use. */
export interface ControlledStore {
  current(def: ResourceDef, key: string): Entry | undefined;
  entries(def: ResourceDef, namespace: string): Entry[];
  /** A DELETE as a client sends it (validation, finalizers). */
  delete(def: ResourceDef, namespace: string, name: string): void;
  /** Controller-side writes: no validation, still bumping the resourceVersion and notifying watchers. */
  commitUpdate(def: ResourceDef, prev: Entry, obj: JsonObject): Entry;
  commitDelete(def: ResourceDef, prev: Entry): Entry;
}

/**
 * ShouldDeleteDuringUpdate: an object being deleted goes once its last finalizer is gone; a namespace
 * only once the namespace controller has also removed its spec.finalizers (ShouldDeleteNamespaceDuringUpdate).
 */
export function shouldDeleteDuringUpdate(def: ResourceDef, obj: JsonObject): boolean {
  if (getStringArray(getObject(obj, "metadata"), "finalizers").length > 0) return false;
  return def !== NAMESPACES || getStringArray(getObject(obj, "spec"), "finalizers").length === 0;
}

/** How often the namespace controller looks again at content still waiting on its own finalizers. */
const NAMESPACE_RETRY_MS = 50;

export interface ControllerOptions {
  readonly simulateGarbageCollector: boolean;
  readonly eventTTLSeconds: number;
}

export class SimulatedControllers {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly eventExpiry = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly opts: ControllerOptions,
    private readonly store: ControlledStore,
  ) {
    if (opts.eventTTLSeconds > 0) {
      const every = Math.max(10, Math.min(opts.eventTTLSeconds * 1000, 30_000));
      const t = setInterval(() => this.expireEvents(), every);
      t.unref();
      this.timers.add(t);
    }
  }

  /** Called for every committed write (obj undefined: a delete). */
  afterWrite(def: ResourceDef, key: string, obj: JsonObject | undefined): void {
    if (def === EVENTS && this.opts.eventTTLSeconds > 0) {
      if (obj === undefined) this.eventExpiry.delete(key);
      else this.eventExpiry.set(key, Date.now() + this.opts.eventTTLSeconds * 1000);
    }
  }

  /** A delete left `entry` waiting on `finalizers`; the garbage collector soon removes its own. */
  deletionPending(def: ResourceDef, entry: Entry, finalizers: readonly string[]): void {
    if (
      this.opts.simulateGarbageCollector &&
      finalizers.some((f) => f === "orphan" || f === "foregroundDeletion")
    ) {
      this.scheduleGarbageCollection(def, entry);
    }
  }

  /**
   * The namespace controller for a namespace just marked for deletion: delete its content, wait until
   * the content is gone (objects may wait on their own finalizers), then remove the `kubernetes` spec
   * finalizer, which deletes the namespace if no metadata finalizer remains.
   */
  namespaceTerminating(name: string): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.closed) return;
      const ns = this.store.current(NAMESPACES, name);
      if (ns === undefined || !ns.deleting) return;
      if (this.deleteNamespaceContent(name) > 0) {
        this.namespaceTerminating(name);
        return;
      }
      this.systemWrite(NAMESPACES, ns, (obj) => {
        const spec = getObject(obj, "spec");
        if (spec === undefined) return;
        const rest = getStringArray(spec, "finalizers").filter((f) => f !== "kubernetes");
        if (rest.length > 0) spec["finalizers"] = rest;
        else delete spec["finalizers"];
      });
    }, NAMESPACE_RETRY_MS);
    t.unref();
    this.timers.add(t);
  }

  /** Deletes what is in namespace `ns`; returns how many objects are still there. */
  private deleteNamespaceContent(ns: string): number {
    let remaining = 0;
    for (const def of ALL_RESOURCES) {
      if (!def.namespaced) continue;
      for (const e of this.store.entries(def, ns)) {
        remaining++;
        if (e.deleting) continue;
        try {
          this.store.delete(def, ns, e.name);
        } catch {
          // retried on the next pass, like the namespace controller
        }
      }
    }
    return remaining;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private scheduleGarbageCollection(def: ResourceDef, entry: Entry): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.closed) return;
      const cur = this.store.current(def, entry.key);
      if (cur === undefined || cur.uid !== entry.uid) return;
      const remaining = cur.finalizers.filter((f) => f !== "orphan" && f !== "foregroundDeletion");
      if (remaining.length === cur.finalizers.length) return;
      this.systemWrite(def, cur, (obj) => {
        metaOf(obj)["finalizers"] = remaining;
      });
    }, 20);
    t.unref();
    this.timers.add(t);
  }

  /** A controller-side write that bypasses validation, still bumping RV and notifying watchers. */
  private systemWrite(def: ResourceDef, cur: Entry, mutate: (obj: JsonObject) => void): void {
    const obj = parseObject(cur.json);
    mutate(obj);
    const canon = canonicalize(def, obj);
    if (cur.deleting && shouldDeleteDuringUpdate(def, canon)) {
      this.store.commitDelete(def, cur);
      return;
    }
    this.store.commitUpdate(def, cur, canon);
  }

  private expireEvents(): void {
    if (this.closed) return;
    const now = Date.now();
    for (const [key, at] of this.eventExpiry) {
      if (at > now) continue;
      this.eventExpiry.delete(key);
      const e = this.store.current(EVENTS, key);
      if (e !== undefined) this.store.commitDelete(EVENTS, e);
    }
  }
}
