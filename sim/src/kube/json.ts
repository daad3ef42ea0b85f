// Plain JSON value types and small helpers used throughout the simulator.

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Returns the object at `o[key]`, creating (and attaching) an empty one when absent or not an object. */
export function ensureObject(o: JsonObject, key: string): JsonObject {
  const v = o[key];
  if (isObject(v)) return v;
  const created: JsonObject = {};
  o[key] = created;
  return created;
}

export function getObject(o: JsonObject | undefined, key: string): JsonObject | undefined {
  if (o === undefined) return undefined;
  const v = o[key];
  return isObject(v) ? v : undefined;
}

export function getString(o: JsonObject | undefined, key: string): string | undefined {
  if (o === undefined) return undefined;
  const v = o[key];
  return typeof v === "string" ? v : undefined;
}

export function getNumber(o: JsonObject | undefined, key: string): number | undefined {
  if (o === undefined) return undefined;
  const v = o[key];
  return typeof v === "number" ? v : undefined;
}

export function getArray(o: JsonObject | undefined, key: string): JsonValue[] | undefined {
  if (o === undefined) return undefined;
  const v = o[key];
  return Array.isArray(v) ? v : undefined;
}

/** Reads a `map[string]string` field; non-string values are stringified like a lenient decoder would not do, so they are skipped. */
export function getStringMap(o: JsonObject | undefined, key: string): Record<string, string> {
  const m = getObject(o, key);
  const out: Record<string, string> = {};
  if (m === undefined) return out;
  for (const [k, v] of Object.entries(m)) {
    if (typeof v === "string") out[k] = v;
  }
  return out;
}

export function getStringArray(o: JsonObject | undefined, key: string): string[] {
  const a = getArray(o, key);
  if (a === undefined) return [];
  return a.filter((x): x is string => typeof x === "string");
}

export function deepEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!deepEqual(a[i], b[i])) return false;
    }
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k)) return false;
    if (!deepEqual(a[k], b[k])) return false;
  }
  return true;
}

/** Parses JSON text into a JsonValue (JSON.parse only ever yields JSON values). */
export function parseJson(text: string): JsonValue {
  return JSON.parse(text) as JsonValue;
}

/** Turns an arbitrary caller-supplied value into plain JSON (drops undefined, functions, Dates become strings). */
export function toJson(v: unknown): JsonValue {
  const text = JSON.stringify(v);
  if (text === undefined) return null;
  return parseJson(text);
}
