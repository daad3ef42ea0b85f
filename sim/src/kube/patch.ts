// JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386) and Kubernetes strategic merge patch.

import { badRequest, jsonPatchRejected, KubeApiError } from "./errors.js";
import { deepEqual, isObject, type JsonObject, type JsonValue } from "./json.js";

// ---------------------------------------------------------------------------------------------
// RFC 6902

class PatchOpFailed extends Error {}

function decodePointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new PatchOpFailed(`invalid pointer ${path}`);
  return path
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

type Container = JsonObject | JsonValue[];

function resolveParent(doc: JsonValue, tokens: string[]): { parent: Container; key: string } {
  if (tokens.length === 0) throw new PatchOpFailed("root");
  let cur: JsonValue = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i] ?? "";
    if (Array.isArray(cur)) {
      const idx = parseIndex(t, cur.length - 1);
      const next: JsonValue | undefined = cur[idx];
      if (next === undefined) throw new PatchOpFailed("missing");
      cur = next;
    } else if (isObject(cur)) {
      const next: JsonValue | undefined = cur[t];
      if (next === undefined) throw new PatchOpFailed("missing");
      cur = next;
    } else {
      throw new PatchOpFailed("not a container");
    }
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw new PatchOpFailed("not a container");
  return { parent: cur, key: tokens[tokens.length - 1] ?? "" };
}

function parseIndex(t: string, max: number): number {
  if (!/^(0|[1-9][0-9]*)$/.test(t)) throw new PatchOpFailed(`bad index ${t}`);
  const n = Number(t);
  if (n > max) throw new PatchOpFailed("index out of range");
  return n;
}

function getAt(doc: JsonValue, path: string): JsonValue {
  const tokens = decodePointer(path);
  if (tokens.length === 0) return doc;
  const { parent, key } = resolveParent(doc, tokens);
  if (Array.isArray(parent)) {
    const v = parent[parseIndex(key, parent.length - 1)];
    if (v === undefined) throw new PatchOpFailed("missing");
    return v;
  }
  const v = parent[key];
  if (v === undefined) throw new PatchOpFailed("missing");
  return v;
}

function addAt(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  const tokens = decodePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = resolveParent(doc, tokens);
  if (Array.isArray(parent)) {
    if (key === "-") parent.push(value);
    else parent.splice(parseIndex(key, parent.length), 0, value);
  } else {
    parent[key] = value;
  }
  return doc;
}

function removeAt(doc: JsonValue, path: string): JsonValue {
  const tokens = decodePointer(path);
  if (tokens.length === 0) throw new PatchOpFailed("cannot remove root");
  const { parent, key } = resolveParent(doc, tokens);
  if (Array.isArray(parent)) {
    parent.splice(parseIndex(key, parent.length - 1), 1);
  } else {
    if (!Object.hasOwn(parent, key)) throw new PatchOpFailed("missing");
    delete parent[key];
  }
  return doc;
}

function replaceAt(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  const tokens = decodePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = resolveParent(doc, tokens);
  if (Array.isArray(parent)) {
    parent[parseIndex(key, parent.length - 1)] = value;
  } else {
    if (!Object.hasOwn(parent, key)) throw new PatchOpFailed("missing");
    parent[key] = value;
  }
  return doc;
}

const MAX_JSON_PATCH_OPS = 10000;

/**
 * Applies an RFC 6902 patch to `doc` (which is mutated). A non-array body → 400; any failing
 * operation → the generic 422 the apiserver returns for JSON patch errors.
 */
export function applyJsonPatch(doc: JsonValue, ops: JsonValue): JsonValue {
  if (!Array.isArray(ops)) {
    const got = isObject(ops)
      ? "object"
      : typeof ops === "string"
        ? "string"
        : ops === null
          ? "null"
          : typeof ops;
    throw badRequest(
      `error decoding patch: json: cannot unmarshal ${got} into Go value of type jsonpatch.Patch`,
    );
  }
  if (ops.length > MAX_JSON_PATCH_OPS) {
    throw new KubeApiError({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPS}, got ${ops.length}`,
      reason: "RequestEntityTooLarge",
      code: 413,
    });
  }
  let cur = doc;
  try {
    for (const raw of ops) {
      if (!isObject(raw)) throw new PatchOpFailed("operation is not an object");
      const op = raw["op"];
      const path = raw["path"];
      if (typeof path !== "string") throw new PatchOpFailed("missing path");
      const value = raw["value"];
      switch (op) {
        case "add":
          if (value === undefined) throw new PatchOpFailed("missing value");
          cur = addAt(cur, path, structuredClone(value));
          break;
        case "remove":
          cur = removeAt(cur, path);
          break;
        case "replace":
          if (value === undefined) throw new PatchOpFailed("missing value");
          cur = replaceAt(cur, path, structuredClone(value));
          break;
        case "move": {
          const from = raw["from"];
          if (typeof from !== "string") throw new PatchOpFailed("missing from");
          const v = getAt(cur, from);
          cur = removeAt(cur, from);
          cur = addAt(cur, path, v);
          break;
        }
        case "copy": {
          const from = raw["from"];
          if (typeof from !== "string") throw new PatchOpFailed("missing from");
          const v = getAt(cur, from);
          cur = addAt(cur, path, structuredClone(v));
          break;
        }
        case "test": {
          let actual: JsonValue | undefined;
          try {
            actual = getAt(cur, path);
          } catch {
            actual = undefined;
          }
          const expected = value === undefined ? null : value;
          if (actual === undefined) {
            // evanphx/json-patch v4: a missing path only equals an explicit null.
            if (expected !== null) throw new PatchOpFailed("test failed");
          } else if (!deepEqual(actual, expected)) {
            throw new PatchOpFailed("test failed");
          }
          break;
        }
        default:
          throw new PatchOpFailed(`unknown op ${String(op)}`);
      }
    }
  } catch (e) {
    if (e instanceof PatchOpFailed) throw jsonPatchRejected();
    throw e;
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// RFC 7386

export function applyMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch

/** Describes list merge strategies at a position in an object (from the Go struct tags). */
export interface SmpSchema {
  fields?: Readonly<Record<string, SmpSchema>>;
  /** For list fields: merge (by key for lists of maps, set union for scalars). Absent = atomic replace. */
  mergeKey?: string;
  mergeList?: boolean;
  /** Schema for list elements. */
  items?: SmpSchema;
}

const DIRECTIVE = "$patch";
const RETAIN_KEYS = "$retainKeys";
const DELETE_PRIMITIVE_PREFIX = "$deleteFromPrimitiveList/";
const SET_ORDER_PREFIX = "$setElementOrder/";

const DELETE_MARKER = Symbol("delete");

function smpError(msg: string): KubeApiError {
  return badRequest(msg);
}

function stripDirectives(v: JsonValue): JsonValue {
  if (Array.isArray(v)) {
    return v
      .filter((e) => !(isObject(e) && e[DIRECTIVE] !== undefined && Object.keys(e).length === 1))
      .map(stripDirectives);
  }
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (
        k === DIRECTIVE ||
        k === RETAIN_KEYS ||
        k.startsWith(DELETE_PRIMITIVE_PREFIX) ||
        k.startsWith(SET_ORDER_PREFIX)
      )
        continue;
      if (x === null) continue;
      out[k] = stripDirectives(x);
    }
    return out;
  }
  return v;
}

function mergeMap(
  original: JsonObject,
  patch: JsonObject,
  schema: SmpSchema | undefined,
): JsonObject | typeof DELETE_MARKER {
  const directive = patch[DIRECTIVE];
  if (directive !== undefined) {
    if (directive === "replace") {
      const out = stripDirectives(patch);
      return isObject(out) ? out : {};
    }
    if (directive === "delete") return DELETE_MARKER;
    if (directive !== "merge") {
      throw smpError(`unknown patch type: ${JSON.stringify(directive)} in map: ${JSON.stringify(patch)}`);
    }
  }
  const result: JsonObject = { ...original };
  const retain = patch[RETAIN_KEYS];
  if (retain !== undefined) {
    if (!Array.isArray(retain) || retain.some((x) => typeof x !== "string")) {
      throw smpError("invalid patch: $retainKeys must be a list of strings");
    }
    const keep = new Set(retain.filter((x): x is string => typeof x === "string"));
    for (const k of Object.keys(result)) {
      if (!keep.has(k)) delete result[k];
    }
  }
  const orders: [string, JsonValue[]][] = [];
  // deletions from primitive lists first
  for (const [k, v] of Object.entries(patch)) {
    if (!k.startsWith(DELETE_PRIMITIVE_PREFIX)) continue;
    const field = k.slice(DELETE_PRIMITIVE_PREFIX.length);
    if (!Array.isArray(v)) throw smpError("invalid patch: $deleteFromPrimitiveList must be a list");
    const cur = result[field];
    if (Array.isArray(cur)) {
      result[field] = cur.filter((e) => !v.some((d) => deepEqual(d, e)));
    }
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS || k.startsWith(DELETE_PRIMITIVE_PREFIX)) continue;
    if (k.startsWith(SET_ORDER_PREFIX)) {
      if (!Array.isArray(v)) throw smpError("invalid patch: $setElementOrder must be a list");
      orders.push([k.slice(SET_ORDER_PREFIX.length), v]);
      continue;
    }
    if (k.startsWith("$")) throw smpError(`unknown patch directive: ${k}`);
    if (v === null) {
      delete result[k];
      continue;
    }
    const sub = schema?.fields?.[k];
    const orig = result[k];
    if (isObject(v)) {
      const merged = mergeMap(isObject(orig) ? orig : {}, v, sub);
      if (merged === DELETE_MARKER) delete result[k];
      else result[k] = merged;
    } else if (Array.isArray(v)) {
      result[k] = mergeListField(Array.isArray(orig) ? orig : [], v, sub);
    } else {
      result[k] = v;
    }
  }
  for (const [field, order] of orders) {
    const cur = result[field];
    if (Array.isArray(cur)) result[field] = applyOrder(cur, order, schema?.fields?.[field]?.mergeKey);
  }
  return result;
}

function applyOrder(list: JsonValue[], order: JsonValue[], key: string | undefined): JsonValue[] {
  const id = (e: JsonValue): JsonValue | undefined =>
    key !== undefined ? (isObject(e) ? e[key] : undefined) : e;
  const ordered: JsonValue[] = [];
  const used = new Set<number>();
  for (const o of order) {
    const want = key !== undefined && isObject(o) ? o[key] : o;
    const idx = list.findIndex((e, i) => !used.has(i) && deepEqual(id(e), want));
    if (idx >= 0) {
      used.add(idx);
      const e = list[idx];
      if (e !== undefined) ordered.push(e);
    }
  }
  list.forEach((e, i) => {
    if (!used.has(i)) ordered.push(e);
  });
  return ordered;
}

function isReplaceDirective(e: JsonValue): boolean {
  return isObject(e) && e[DIRECTIVE] === "replace";
}

function mergeListField(
  original: JsonValue[],
  patch: JsonValue[],
  schema: SmpSchema | undefined,
): JsonValue[] {
  const merge = schema?.mergeList === true;
  if (!merge) {
    // Atomic list: replace wholesale (still honouring an explicit replace directive element).
    const cleaned = stripDirectives(patch);
    return Array.isArray(cleaned) ? cleaned : [];
  }
  if (patch.some(isReplaceDirective)) {
    const rest = patch.filter((e) => !isReplaceDirective(e));
    const cleaned = stripDirectives(rest);
    return Array.isArray(cleaned) ? cleaned : [];
  }
  const key = schema?.mergeKey;
  if (key === undefined) {
    // set union of scalars, keeping first occurrence order
    const out: JsonValue[] = [];
    for (const e of [...original, ...patch]) {
      if (isObject(e) || Array.isArray(e))
        throw smpError("invalid patch: merging a list of non-primitives without a merge key");
      if (!out.some((x) => deepEqual(x, e))) out.push(e);
    }
    return out;
  }
  const result = [...original];
  for (const item of patch) {
    if (!isObject(item)) throw smpError(`invalid patch: list element ${JSON.stringify(item)} is not a map`);
    const keyVal = item[key];
    const directive = item[DIRECTIVE];
    if (directive === "delete") {
      if (keyVal === undefined)
        throw smpError(`map: ${JSON.stringify(item)} does not contain declared merge key: ${key}`);
      for (let i = result.length - 1; i >= 0; i--) {
        const e = result[i];
        if (isObject(e) && deepEqual(e[key], keyVal)) result.splice(i, 1);
      }
      continue;
    }
    if (directive !== undefined && directive !== "merge" && directive !== "replace") {
      throw smpError(`unknown patch type: ${JSON.stringify(directive)} in map: ${JSON.stringify(item)}`);
    }
    if (keyVal === undefined) {
      throw smpError(`map: ${JSON.stringify(item)} does not contain declared merge key: ${key}`);
    }
    const idx = result.findIndex((e) => isObject(e) && deepEqual(e[key], keyVal));
    const existing = idx >= 0 ? result[idx] : undefined;
    const merged = mergeMap(isObject(existing) ? existing : {}, item, schema?.items);
    if (merged === DELETE_MARKER) {
      if (idx >= 0) result.splice(idx, 1);
    } else if (idx >= 0) {
      result[idx] = merged;
    } else {
      result.push(merged);
    }
  }
  return result;
}

export function applyStrategicMergePatch(
  original: JsonObject,
  patch: JsonValue,
  schema: SmpSchema,
): JsonObject {
  if (!isObject(patch)) {
    throw badRequest("unable to decode strategic merge patch: the patch must be a JSON object");
  }
  const merged = mergeMap(original, patch, schema);
  if (merged === DELETE_MARKER) return {};
  return merged;
}
