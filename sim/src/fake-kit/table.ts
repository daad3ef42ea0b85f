/**
 * A table of versioned resources for a vendor fake: creation order for page tokens, a scope
 * index (account and region, a route table, a project) for cheap pages, and the version
 * before the last change for eventually consistent reads, deletions included.
 */
import { type ConsistencyView, visibleVersion } from "./consistency.js";

/** Every resource a table holds. */
export interface TableItem {
  readonly id: string;
  readonly account: string;
  readonly tags: Readonly<Record<string, string>>;
}

interface Versioned<T> {
  /** Creation order; page tokens point at it. */
  readonly seq: number;
  readonly scope: string;
  /** null once deleted (kept a while as a tombstone, for stale reads). */
  current: T | null;
  /** The version before the last change; null when the last change was the creation. */
  previous: T | null;
  changedAtMs: number;
}

/** How an API read sees the table: staleness from the fault config. */
export type TableView = ConsistencyView;

export interface TablePage<T> {
  readonly items: T[];
  /** Seq of the last item scanned when more remain. */
  readonly nextAfterSeq?: number;
}

/** Tombstones older than this are forgotten; a stale read window is far shorter. */
const TOMBSTONE_TTL_MS = 10 * 60_000;

export class ResourceTable<T extends TableItem> {
  private readonly byId = new Map<string, Versioned<T>>();
  /** Live records per scope, in creation order. */
  private readonly byScope = new Map<string, Versioned<T>[]>();
  /** Every live record, in creation order. */
  private readonly live: Versioned<T>[] = [];
  /** Deleted records in deletion order, for pruning. */
  private readonly tombstones: Array<{ id: string; atMs: number }> = [];
  /** Secondary indexes (e.g. by name): index → key → live records in creation order. */
  private readonly indexes = new Map<string, Map<string, Versioned<T>[]>>();

  constructor(
    private readonly nextSeq: () => number,
    private readonly scopeOf: (item: T) => string,
    /** Secondary indexes for cheap filtered pages, by name: item → key. */
    private readonly indexKeys: Readonly<Record<string, (item: T) => string>> = {},
  ) {
    for (const name of Object.keys(indexKeys)) this.indexes.set(name, new Map());
  }

  has(id: string): boolean {
    return this.byId.get(id)?.current != null;
  }

  /** The current truth. */
  get(id: string): T | undefined {
    return this.byId.get(id)?.current ?? undefined;
  }

  /** Ids ever used, deleted ones included while remembered (ids are never reused). */
  knows(id: string): boolean {
    return this.byId.has(id);
  }

  insert(item: T, nowMs: number): T {
    const record: Versioned<T> = {
      seq: this.nextSeq(),
      scope: this.scopeOf(item),
      current: item,
      previous: null,
      changedAtMs: nowMs,
    };
    this.byId.set(item.id, record);
    this.live.push(record);
    const list = this.byScope.get(record.scope);
    if (list === undefined) this.byScope.set(record.scope, [record]);
    else list.push(record);
    for (const [name, keyOf] of Object.entries(this.indexKeys))
      addSorted(this.indexes.get(name)!, keyOf(item), record);
    return item;
  }

  /** Replaces the current version (same id, same scope). */
  replace(item: T, nowMs: number): T {
    const record = this.byId.get(item.id);
    if (record?.current == null) throw new Error(`replace: ${item.id} does not exist`);
    for (const [name, keyOf] of Object.entries(this.indexKeys)) {
      const before = keyOf(record.current);
      const after = keyOf(item);
      if (before === after) continue;
      const index = this.indexes.get(name)!;
      removeFrom(index, before, record.seq);
      addSorted(index, after, record);
    }
    record.previous = record.current;
    record.current = item;
    record.changedAtMs = nowMs;
    return item;
  }

  remove(id: string, nowMs: number): T | undefined {
    const record = this.byId.get(id);
    if (record?.current == null) return undefined;
    const gone = record.current;
    record.previous = gone;
    record.current = null;
    record.changedAtMs = nowMs;
    removeBySeq(this.live, record.seq);
    const list = this.byScope.get(record.scope);
    if (list !== undefined) {
      removeBySeq(list, record.seq);
      if (list.length === 0) this.byScope.delete(record.scope);
    }
    for (const [name, keyOf] of Object.entries(this.indexKeys))
      removeFrom(this.indexes.get(name)!, keyOf(gone), record.seq);
    this.tombstones.push({ id, atMs: nowMs });
    this.prune(nowMs);
    return gone;
  }

  /** Every live item (of `account` if given), in creation order. */
  all(account?: string): T[] {
    const out: T[] = [];
    for (const r of this.live) {
      const item = r.current;
      if (item !== null && (account === undefined || item.account === account)) out.push(item);
    }
    return out;
  }

  /** Live items of one scope, in creation order. */
  inScope(scope: string): T[] {
    return (this.byScope.get(scope) ?? []).flatMap((r) => (r.current === null ? [] : [r.current]));
  }

  /** The item as an API read sees it: the previous version within the stale window. */
  read(id: string, view: TableView): T | undefined {
    const record = this.byId.get(id);
    if (record === undefined) return undefined;
    return (
      visibleVersion(record.current, record.previous, record.changedAtMs, view.nowMs, view.staleReadMs) ??
      undefined
    );
  }

  /** When the item last changed (creation included), or undefined for an unknown id. */
  changedAtMs(id: string): number | undefined {
    return this.byId.get(id)?.changedAtMs;
  }

  /**
   * Up to `pageSize` items of `scope` that `keep` accepts, after `afterSeq`, in creation
   * order. Without a view (or with `listStaleMs` 0) the page is consistent; with one, an item
   * changed within `listStaleMs` shows its previous version (a new one is left out). Deleted
   * items are not scanned, so a stale list never resurrects them; only direct reads do.
   */
  page(
    scope: string,
    keep: (item: T, changedAtMs: number) => boolean,
    pageSize: number,
    afterSeq?: number,
    view?: TableView,
  ): TablePage<T> {
    return this.pageOf(this.byScope.get(scope) ?? [], keep, pageSize, afterSeq, view);
  }

  /** The same as page(), over the items whose `index` key is `key`. */
  pageIndex(
    index: string,
    key: string,
    keep: (item: T, changedAtMs: number) => boolean,
    pageSize: number,
    afterSeq?: number,
    view?: TableView,
  ): TablePage<T> {
    const byKey = this.indexes.get(index);
    if (byKey === undefined) throw new Error(`no index "${index}"`);
    return this.pageOf(byKey.get(key) ?? [], keep, pageSize, afterSeq, view);
  }

  private pageOf(
    records: readonly Versioned<T>[],
    keep: (item: T, changedAtMs: number) => boolean,
    pageSize: number,
    afterSeq: number | undefined,
    view: TableView | undefined,
  ): TablePage<T> {
    const windowMs = view?.listStaleMs ?? 0;
    let i = afterSeq === undefined ? 0 : firstAfter(records, afterSeq);
    const items: T[] = [];
    let lastSeq: number | undefined;
    for (; i < records.length && items.length < pageSize; i++) {
      const record = records[i]!;
      lastSeq = record.seq;
      const seen =
        view === undefined || windowMs <= 0
          ? record.current
          : visibleVersion(record.current, record.previous, record.changedAtMs, view.nowMs, windowMs);
      if (seen !== null && keep(seen, record.changedAtMs)) items.push(seen);
    }
    return i < records.length && lastSeq !== undefined ? { items, nextAfterSeq: lastSeq } : { items };
  }

  private prune(nowMs: number): void {
    while (this.tombstones.length > 0 && nowMs - this.tombstones[0]!.atMs > TOMBSTONE_TTL_MS) {
      const { id } = this.tombstones.shift()!;
      if (this.byId.get(id)?.current === null) this.byId.delete(id);
    }
  }
}

/** True when `tags` carries every key=value of `wanted`. */
export function hasTags(
  tags: Readonly<Record<string, string>>,
  wanted: Readonly<Record<string, string>>,
): boolean {
  for (const [k, v] of Object.entries(wanted)) if (tags[k] !== v) return false;
  return true;
}

/** Index of the first record with seq > after (records are sorted by seq). */
function firstAfter(records: ReadonlyArray<{ readonly seq: number }>, after: number): number {
  let lo = 0;
  let hi = records.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (records[mid]!.seq <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function addSorted<R extends { readonly seq: number }>(
  index: Map<string, R[]>,
  key: string,
  record: R,
): void {
  const list = index.get(key);
  if (list === undefined) {
    index.set(key, [record]);
    return;
  }
  list.splice(firstAfter(list, record.seq), 0, record);
}

function removeFrom(index: Map<string, Array<{ readonly seq: number }>>, key: string, seq: number): void {
  const list = index.get(key);
  if (list === undefined) return;
  removeBySeq(list, seq);
  if (list.length === 0) index.delete(key);
}

function removeBySeq(records: Array<{ readonly seq: number }>, seq: number): void {
  const i = firstAfter(records, seq - 1);
  if (records[i]?.seq === seq) records.splice(i, 1);
}

/** A fresh id from `make` that `table` has never used (ids are never reused, as in clouds). */
export function freshId(table: { knows(id: string): boolean }, make: () => string): string {
  let id: string;
  do id = make();
  while (table.knows(id));
  return id;
}
