// The field order kube-apiserver serializes objects in (json.Marshal follows the Go struct field order),
// so that stored objects read back byte-for-byte like the real server's.

import { getObject, isObject, type JsonObject, type JsonValue } from "./json.js";
import type { ResourceDef } from "./resources.js";

const META_ORDER = [
  "name",
  "generateName",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
] as const;

/** Top-level field order of the Go structs (json.Marshal follows struct field order). */
const SPEC_STATUS_ORDER = ["spec", "status"] as const;
const EVENT_ORDER = [
  "involvedObject",
  "reason",
  "message",
  "source",
  "firstTimestamp",
  "lastTimestamp",
  "count",
  "type",
  "eventTime",
  "series",
  "action",
  "related",
  "reportingComponent",
  "reportingInstance",
] as const;

function isEmptyValue(v: JsonValue | undefined): boolean {
  if (v === undefined || v === null || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isObject(v)) return Object.keys(v).length === 0;
  return false;
}

/** Orders keys like the Go structs serialize them and drops empty omitempty metadata fields. */
export function canonicalize(def: ResourceDef, obj: JsonObject): JsonObject {
  const m = getObject(obj, "metadata") ?? {};
  const meta: JsonObject = {};
  for (const k of META_ORDER) {
    const v = m[k];
    if (v === undefined || isEmptyValue(v)) continue;
    if (k === "generation" && v === 0) continue;
    meta[k] = v;
  }
  const out: JsonObject = { kind: def.kind, apiVersion: def.apiVersion, metadata: meta };
  for (const k of def.kind === "Event" ? EVENT_ORDER : SPEC_STATUS_ORDER) {
    const v = obj[k];
    if (v !== undefined) out[k] = v;
  }
  for (const [k, v] of Object.entries(obj)) {
    if (k === "kind" || k === "apiVersion" || k === "metadata" || Object.hasOwn(out, k)) continue;
    out[k] = v;
  }
  return out;
}
