// Serving a LIST: the revision to read (the current one, an exact one or a continue token's), then one
// page in key order with its continue token and remainingItemCount.

import { CURRENT_STATE, continueExpired, decodeContinue, encodeContinue } from "./continue-token.js";
import { badRequest, timeoutTooLargeResourceVersion } from "./errors.js";
import type { History } from "./history.js";
import { compileFilter, type ListOptions, matches, parseRV, validateListOptions } from "./list-options.js";
import type { ResourceDef } from "./resources.js";
import { compareKeys, type Entry, type Table } from "./table.js";

/** The minimum resourceVersion a LIST must wait for (NotOlderThan semantics), or undefined. */
export function listWaitTarget(o: ListOptions, current: number): number | undefined {
  if (!o.resourceVersion || o.resourceVersion === "0" || o.continue) return undefined;
  const rv = parseRV(o.resourceVersion);
  return rv > current ? rv : undefined;
}

/** Serves a LIST; returns the full response body. */
export function listBody(def: ResourceDef, o: ListOptions, table: Table, history: History): string {
  validateListOptions(o);
  const filter = compileFilter(def, o);
  let listRV: number;
  let source: ReadonlyMap<string, Entry>;
  let start = "";
  if (o.continue) {
    if (o.resourceVersion && o.resourceVersion !== "0") {
      throw badRequest("specifying resource version is not allowed when using continue");
    }
    const tok = decodeContinue(o.continue);
    start = tok.start;
    if (tok.rv === CURRENT_STATE) {
      listRV = history.current;
      source = table.entries;
    } else if (tok.rv < history.oldest) {
      throw continueExpired(tok.start);
    } else {
      listRV = tok.rv;
      source = history.snapshotAt(table, tok.rv);
    }
  } else if (o.resourceVersionMatch === "Exact" && o.resourceVersion) {
    listRV = parseRV(o.resourceVersion);
    if (listRV > history.current) throw timeoutTooLargeResourceVersion(listRV, history.current);
    source = history.snapshotAt(table, listRV);
  } else {
    if (o.resourceVersion && o.resourceVersion !== "0") {
      const want = parseRV(o.resourceVersion);
      if (want > history.current) throw timeoutTooLargeResourceVersion(want, history.current);
    }
    listRV = history.current;
    source = table.entries;
  }
  const t = table;
  const keys = source === t.entries ? t.sortedKeys() : [...source.keys()].sort(compareKeys);
  const limit = o.limit !== undefined && o.limit > 0 ? o.limit : undefined;
  const items: string[] = [];
  let lastKey = "";
  let i = 0;
  let hasMore = false;
  for (; i < keys.length; i++) {
    const k = keys[i] ?? "";
    if (start !== "" && k < start) continue;
    const e = source.get(k);
    if (e === undefined || !matches(filter, e)) continue;
    if (limit !== undefined && items.length >= limit) {
      hasMore = true;
      break;
    }
    items.push(e.json);
    lastKey = k;
  }
  let metaJson = `{"resourceVersion":"${listRV}"`;
  if (hasMore) {
    metaJson += `,"continue":"${encodeContinue(listRV, `${lastKey}\u0000`)}"`;
    if (filter.trivial) {
      let remaining = 0;
      for (let j = i; j < keys.length; j++) {
        const e = source.get(keys[j] ?? "");
        if (e !== undefined && (filter.namespace === undefined || e.namespace === filter.namespace))
          remaining++;
      }
      metaJson += `,"remainingItemCount":${remaining}`;
    }
  }
  metaJson += "}";
  return `{"kind":"${def.listKind}","apiVersion":"${def.apiVersion}","metadata":${metaJson},"items":[${items.join(",")}]}`;
}
