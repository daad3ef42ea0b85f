// Stored objects: one immutable Entry per object version, and the current entries of one resource.
//
// Objects are stored as their serialized JSON text (plus the few attributes selectors need), so reads
// never clone and callers can never mutate stored state: every writer parses a fresh copy.

import { internalRaw } from "./errors.js";
import {
  ensureObject,
  getObject,
  getString,
  getStringArray,
  getStringMap,
  isObject,
  type JsonObject,
  parseJson,
} from "./json.js";
import type { ResourceDef } from "./resources.js";

/** One stored object version. Immutable. */
export interface Entry {
  readonly key: string;
  readonly name: string;
  readonly namespace: string;
  readonly json: string;
  readonly rv: number;
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly fields: Readonly<Record<string, string>>;
  readonly deleting: boolean;
  readonly finalizers: readonly string[];
}

/** The storage key: `namespace/name` for namespaced resources, `name` otherwise. */
export function keyOf(def: ResourceDef, namespace: string, name: string): string {
  return def.namespaced ? `${namespace}/${name}` : name;
}

export function metaOf(obj: JsonObject): JsonObject {
  return ensureObject(obj, "metadata");
}

export function makeEntry(def: ResourceDef, obj: JsonObject, rv: number): Entry {
  const m = getObject(obj, "metadata") ?? {};
  const name = getString(m, "name") ?? "";
  const namespace = def.namespaced ? (getString(m, "namespace") ?? "") : "";
  const dt = m["deletionTimestamp"];
  return {
    key: keyOf(def, namespace, name),
    name,
    namespace,
    json: JSON.stringify(obj),
    rv,
    uid: getString(m, "uid") ?? "",
    labels: getStringMap(m, "labels"),
    fields: def.fieldsOf(obj),
    deleting: dt !== undefined && dt !== null,
    finalizers: getStringArray(m, "finalizers"),
  };
}

/** A fresh, mutable copy of a stored object. */
export function parseObject(json: string): JsonObject {
  const v = parseJson(json);
  if (!isObject(v)) throw internalRaw("stored object is not an object");
  return v;
}

export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The current entries of one resource; the key order is cached until a key is added or removed. */
export class Table {
  private readonly map = new Map<string, Entry>();
  private sorted: string[] | undefined;

  constructor(readonly def: ResourceDef) {}

  get entries(): ReadonlyMap<string, Entry> {
    return this.map;
  }

  get(key: string): Entry | undefined {
    return this.map.get(key);
  }

  /** Stores an entry under a new key. */
  insert(entry: Entry): void {
    this.map.set(entry.key, entry);
    this.sorted = undefined;
  }

  /** Stores a new version of an existing key. */
  replace(entry: Entry): void {
    this.map.set(entry.key, entry);
  }

  remove(key: string): void {
    this.map.delete(key);
    this.sorted = undefined;
  }

  sortedKeys(): readonly string[] {
    if (this.sorted === undefined) this.sorted = [...this.map.keys()].sort(compareKeys);
    return this.sorted;
  }

  /** Current entries in key order (optionally one namespace). */
  list(namespace?: string): Entry[] {
    const out: Entry[] = [];
    for (const k of this.sortedKeys()) {
      const e = this.map.get(k);
      if (e === undefined) continue;
      if (namespace !== undefined && this.def.namespaced && e.namespace !== namespace) continue;
      out.push(e);
    }
    return out;
  }
}
