// Watches: request validation, the Watcher of one connection (selector filtering with ADDED/DELETED
// transitions, bookmarks) and the fan-out of committed events to the open watchers.

import {
  type FieldError,
  fieldForbidden,
  fieldNotSupported,
  timeoutTooLargeResourceVersion,
  tooOldResourceVersion,
} from "./errors.js";
import type { History, HistoryEvent } from "./history.js";
import type { JsonObject } from "./json.js";
import {
  compileFilter,
  type Filter,
  type ListOptions,
  listOptionsInvalid,
  matches,
  parseRV,
} from "./list-options.js";
import type { ResourceDef } from "./resources.js";
import { type Entry, metaOf, parseObject, type Table } from "./table.js";

export interface WatchOptions extends ListOptions {
  allowWatchBookmarks?: boolean | undefined;
}

export interface WatchSink {
  write(line: string): void;
  end(): void;
}

function watchLine(type: string, objectJson: string): string {
  return `{"type":"${type}","object":${objectJson}}\n`;
}

/** The validated, not-yet-started form of a watch request (so errors can still become HTTP errors). */
export interface WatchPlan {
  readonly def: ResourceDef;
  readonly filter: Filter;
  /** undefined = start from current state with synthetic ADDED events. */
  readonly fromRV: number | undefined;
  readonly sendInitialEvents: boolean;
  readonly allowBookmarks: boolean;
}

/** Validates a WATCH request (errors are still HTTP errors: nothing is written yet). */
export function planWatch(def: ResourceDef, o: WatchOptions): WatchPlan {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch ?? "";
  if (o.sendInitialEvents !== undefined) {
    if (match !== "NotOlderThan") {
      errs.push(
        fieldForbidden(
          "resourceVersionMatch",
          "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
      );
    }
    if (o.sendInitialEvents && !o.allowWatchBookmarks) {
      errs.push(
        fieldForbidden(
          "allowWatchBookmarks",
          "sendInitialEvents requires setting allowWatchBookmarks to true",
        ),
      );
    }
  }
  if (match !== "") {
    if (o.sendInitialEvents === undefined) {
      errs.push(
        fieldForbidden(
          "resourceVersionMatch",
          "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
      );
    }
    if (match !== "NotOlderThan")
      errs.push(fieldNotSupported("resourceVersionMatch", match, ["NotOlderThan"]));
    if (o.continue) {
      errs.push(
        fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"),
      );
    }
  }
  if (errs.length > 0) throw listOptionsInvalid(errs);
  const filter = compileFilter(def, o);
  const rvText = o.resourceVersion ?? "";
  const sendInitial = o.sendInitialEvents === true;
  let fromRV: number | undefined;
  if (sendInitial || rvText === "" || rvText === "0") fromRV = undefined;
  else fromRV = parseRV(rvText);
  return {
    def,
    filter,
    fromRV,
    sendInitialEvents: sendInitial,
    allowBookmarks: o.allowWatchBookmarks === true,
  };
}

export class Watcher {
  closed = false;
  private readonly timers: NodeJS.Timeout[] = [];
  constructor(
    readonly def: ResourceDef,
    private readonly filter: Filter,
    private readonly sink: WatchSink,
    /** Events with rv <= startAfter are not delivered (already covered by the initial state). */
    public startAfter: number,
    private readonly onClose: (w: Watcher) => void,
  ) {}

  addTimer(t: NodeJS.Timeout): void {
    this.timers.push(t);
  }

  /** Delivers one event, applying namespace and selector filtering with ADDED/DELETED transitions. */
  deliver(ev: HistoryEvent): void {
    if (this.closed || ev.rv <= this.startAfter) return;
    const f = this.filter;
    if (f.namespace !== undefined && ev.entry.namespace !== f.namespace) return;
    if (f.trivial) {
      this.sink.write(watchLine(ev.type, ev.entry.json));
      return;
    }
    const cur = ev.type !== "DELETED" && matches(f, ev.entry);
    const old = ev.prev !== undefined && matches(f, ev.prev);
    if (!cur && !old) return;
    if (cur && !old) this.sink.write(watchLine("ADDED", ev.entry.json));
    else if (cur && old) this.sink.write(watchLine("MODIFIED", ev.entry.json));
    else if (ev.type === "DELETED") this.sink.write(watchLine("DELETED", ev.entry.json));
    else if (ev.prev !== undefined) {
      // The object left the selector: DELETED with the previous content at the event's revision.
      const prevObj = parseObject(ev.prev.json);
      metaOf(prevObj)["resourceVersion"] = String(ev.rv);
      this.sink.write(watchLine("DELETED", JSON.stringify(prevObj)));
    }
  }

  sendInitial(entries: Iterable<Entry>): void {
    for (const e of entries) {
      if (matches(this.filter, e)) this.sink.write(watchLine("ADDED", e.json));
    }
  }

  writeRaw(line: string): void {
    if (!this.closed) this.sink.write(line);
  }

  bookmark(rv: number, initialEventsEnd: boolean): void {
    if (this.closed || rv < this.startAfter) return;
    const metadata: JsonObject = { resourceVersion: String(rv) };
    if (initialEventsEnd) metadata["annotations"] = { "k8s.io/initial-events-end": "true" };
    const obj = { kind: this.def.kind, apiVersion: this.def.apiVersion, metadata };
    this.sink.write(watchLine("BOOKMARK", JSON.stringify(obj)));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.onClose(this);
    this.sink.end();
  }
}

/** The open watches, by resource. */
export class Watches {
  private readonly byDef = new Map<ResourceDef, Set<Watcher>>();
  private readonly all = new Set<Watcher>();

  /** `futureResourceVersionWaitMs`: how long a watch from a future resourceVersion waits before failing. */
  constructor(
    defs: readonly ResourceDef[],
    private readonly futureResourceVersionWaitMs: number,
  ) {
    for (const def of defs) this.byDef.set(def, new Set());
  }

  get size(): number {
    return this.all.size;
  }

  /** Fans a committed event out to the watchers of its resource. */
  deliver(ev: HistoryEvent): void {
    for (const w of this.of(ev.def)) w.deliver(ev);
  }

  /** Starts a planned watch: writes the initial events (or the 410 ERROR) synchronously and registers. */
  start(plan: WatchPlan, sink: WatchSink, table: Table, history: History): Watcher | undefined {
    if (plan.fromRV !== undefined && plan.fromRV < history.oldest) {
      const err = tooOldResourceVersion(plan.fromRV, history.oldest);
      sink.write(watchLine("ERROR", JSON.stringify(err.status)));
      sink.end();
      return undefined;
    }
    const w = new Watcher(plan.def, plan.filter, sink, history.current, (closed) => this.remove(closed));
    if (plan.fromRV === undefined) {
      w.sendInitial(table.list(plan.filter.namespace));
      if (plan.sendInitialEvents) w.bookmark(history.current, true);
    } else if (plan.fromRV <= history.current) {
      w.startAfter = plan.fromRV;
      for (const ev of history.after(plan.fromRV)) {
        if (ev.def === plan.def) w.deliver(ev);
      }
      w.startAfter = history.current;
    } else {
      // A resourceVersion from the future: deliver changes after it, or fail like the watch cache does.
      w.startAfter = plan.fromRV;
      const want = plan.fromRV;
      const timer = setTimeout(() => {
        if (history.current < want && !w.closed) {
          const err = timeoutTooLargeResourceVersion(want, history.current);
          w.writeRaw(watchLine("ERROR", JSON.stringify(err.status)));
          w.close();
        }
      }, this.futureResourceVersionWaitMs);
      timer.unref();
      w.addTimer(timer);
    }
    this.of(plan.def).add(w);
    this.all.add(w);
    return w;
  }

  closeAll(): void {
    for (const w of [...this.all]) w.close();
  }

  private remove(w: Watcher): void {
    this.of(w.def).delete(w);
    this.all.delete(w);
  }

  private of(def: ResourceDef): Set<Watcher> {
    const s = this.byDef.get(def);
    if (s === undefined) throw new Error(`no table for ${def.kind}`);
    return s;
  }
}
