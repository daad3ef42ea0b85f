// /openapi/v3 (and a JSON /openapi/v2) describing the served kinds: what kubectl reads to learn that the
// server validates fields itself (a PATCH operation per kind with a `fieldValidation` parameter), so
// `kubectl apply` / `create -f` send `fieldValidation=Strict` instead of failing to validate locally,
// and what `kubectl explain` shows.

import { createHash } from "node:crypto";
import type { JsonObject, JsonValue } from "./json.js";
import type { SmpSchema } from "./patch.js";
import { ALL_RESOURCES, type ResourceDef } from "./resources.js";
import { KIND_SCHEMAS, type Schema } from "./schema.js";

type RefStyle = "v2" | "v3";

function refTo(name: string, style: RefStyle): JsonObject {
  return { $ref: style === "v3" ? `#/components/schemas/${name}` : `#/definitions/${name}` };
}

const STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/**
 * Converts a Schema, collecting named object types into `defs`. The strategic-merge-patch metadata the
 * server applies (`smp`) is published as x-kubernetes-patch-strategy / -merge-key, from which kubectl
 * computes its patches.
 */
function toOpenAPI(
  s: Schema,
  defs: Map<string, JsonObject>,
  style: RefStyle,
  smp: SmpSchema | undefined,
): JsonObject {
  switch (s.k) {
    case "scalar":
      return s.format === undefined ? { type: s.type } : { type: s.type, format: s.format };
    case "map":
      return { type: "object", additionalProperties: toOpenAPI(s.values, defs, style, undefined) };
    case "array": {
      const out: JsonObject = { type: "array", items: toOpenAPI(s.items, defs, style, smp?.items) };
      if (smp?.mergeList) {
        out["x-kubernetes-patch-strategy"] = "merge";
        if (smp.mergeKey !== undefined) out["x-kubernetes-patch-merge-key"] = smp.mergeKey;
      }
      return out;
    }
    case "any":
      return s.intOrString ? { "x-kubernetes-int-or-string": true } : { type: "object" };
    case "object": {
      const build = (): JsonObject => {
        const properties: JsonObject = {};
        for (const [k, v] of Object.entries(s.props)) {
          properties[k] = toOpenAPI(v, defs, style, smp?.fields?.[k]);
        }
        return { type: "object", properties };
      };
      if (s.name === undefined) return build();
      if (!defs.has(s.name)) {
        defs.set(s.name, {});
        defs.set(s.name, build());
      }
      return refTo(s.name, style);
    }
  }
}

function schemaName(def: ResourceDef): string {
  const s = KIND_SCHEMAS[def.kind];
  return s.k === "object" && s.name !== undefined ? s.name : `io.k8s.api.core.v1.${def.kind}`;
}

function gvk(def: ResourceDef): JsonObject {
  return { group: def.group, version: def.version, kind: def.kind };
}

function queryParam(name: string, type = "string"): JsonObject {
  return { name, in: "query", schema: { type, uniqueItems: true } };
}

function pathParam(name: string): JsonObject {
  return { name, in: "path", required: true, schema: { type: "string", uniqueItems: true } };
}

const WRITE_PARAMS = ["dryRun", "fieldManager", "fieldValidation"];
const LIST_PARAMS = [
  "allowWatchBookmarks",
  "continue",
  "fieldSelector",
  "labelSelector",
  "limit",
  "resourceVersion",
  "resourceVersionMatch",
  "sendInitialEvents",
  "timeoutSeconds",
  "watch",
];

function opId(verb: string, def: ResourceDef, suffix = ""): string {
  const group = def.group === "" ? "Core" : def.group.split(".")[0]?.replace(/^./, (c) => c.toUpperCase());
  const scope = def.namespaced && verb !== "listForAllNamespaces" ? "Namespaced" : "";
  const v = verb === "listForAllNamespaces" ? "list" : verb;
  const tail = verb === "listForAllNamespaces" ? "ForAllNamespaces" : "";
  return `${v}${group}${def.version.toUpperCase()}${scope}${def.kind}${suffix}${tail}`;
}

function operation(
  verb: string,
  action: string,
  def: ResourceDef,
  style: RefStyle,
  params: readonly string[],
  body: string | undefined,
  response: string,
  suffix = "",
): JsonObject {
  const op: JsonObject = {
    operationId: opId(verb, def, suffix),
    parameters: params.map((p) =>
      queryParam(p, p === "limit" || p === "timeoutSeconds" ? "integer" : "string"),
    ),
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk(def),
  };
  const mediaTypes =
    action === "patch"
      ? [
          "application/json-patch+json",
          "application/merge-patch+json",
          "application/strategic-merge-patch+json",
        ]
      : ["*/*"];
  if (style === "v3") {
    if (body !== undefined) {
      const content: JsonObject = {};
      for (const t of mediaTypes) content[t] = { schema: refTo(body, style) };
      op["requestBody"] = { content, required: true };
    }
    op["responses"] = {
      "200": {
        description: "OK",
        content: { "application/json": { schema: refTo(response, style) } },
      },
    };
  } else {
    const ps = op["parameters"] as JsonValue[];
    op["parameters"] = ps.map((p) => {
      const o = p as JsonObject;
      return { name: o["name"] ?? "", in: "query", type: "string", uniqueItems: true };
    });
    if (body !== undefined) {
      (op["parameters"] as JsonValue[]).push({
        name: "body",
        in: "body",
        required: true,
        schema: refTo(body, style),
      });
    }
    op["consumes"] = mediaTypes;
    op["produces"] = ["application/json"];
    op["responses"] = { "200": { description: "OK", schema: refTo(response, style) } };
  }
  return op;
}

function pathsFor(def: ResourceDef, style: RefStyle): Record<string, JsonObject> {
  const prefix = def.group === "" ? "/api/v1" : `/apis/${def.group}/${def.version}`;
  const nsPart = def.namespaced ? "/namespaces/{namespace}" : "";
  const collection = `${prefix}${nsPart}/${def.plural}`;
  const item = `${collection}/{name}`;
  const name = schemaName(def);
  const list = `${name}List`;
  const scopeParams = def.namespaced ? [pathParam("namespace")] : [];
  const v2Params = (ps: JsonObject[]): JsonValue[] =>
    style === "v3"
      ? ps
      : ps.map((p) => ({ name: p["name"] ?? "", in: "path", required: true, type: "string" }));
  const out: Record<string, JsonObject> = {
    [collection]: {
      parameters: v2Params(scopeParams),
      get: operation("list", "list", def, style, LIST_PARAMS, undefined, list),
      post: operation("create", "post", def, style, WRITE_PARAMS, name, name),
      delete: operation(
        "deleteCollection",
        "deletecollection",
        def,
        style,
        LIST_PARAMS,
        DELETE_OPTIONS,
        STATUS,
      ),
    },
    [item]: {
      parameters: v2Params([pathParam("name"), ...scopeParams]),
      get: operation("read", "get", def, style, [], undefined, name),
      put: operation("replace", "put", def, style, WRITE_PARAMS, name, name),
      patch: operation("patch", "patch", def, style, [...WRITE_PARAMS, "force"], PATCH, name),
      delete: operation(
        "delete",
        "delete",
        def,
        style,
        ["dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"],
        DELETE_OPTIONS,
        def.returnDeletedObject ? name : STATUS,
      ),
    },
  };
  if (def.hasStatus) {
    out[`${item}/status`] = {
      parameters: v2Params([pathParam("name"), ...scopeParams]),
      get: operation("read", "get", def, style, [], undefined, name, "Status"),
      put: operation("replace", "put", def, style, WRITE_PARAMS, name, name, "Status"),
      patch: operation("patch", "patch", def, style, [...WRITE_PARAMS, "force"], PATCH, name, "Status"),
    };
  }
  if (def.namespaced) {
    out[`${prefix}/${def.plural}`] = {
      get: operation("listForAllNamespaces", "list", def, style, LIST_PARAMS, undefined, list),
    };
  }
  return out;
}

function definitions(defs: readonly ResourceDef[], style: RefStyle): Record<string, JsonObject> {
  const named = new Map<string, JsonObject>();
  for (const def of defs) {
    toOpenAPI(KIND_SCHEMAS[def.kind], named, style, def.smp);
    const name = schemaName(def);
    const kindSchema = named.get(name) ?? {};
    named.set(name, { ...kindSchema, "x-kubernetes-group-version-kind": [gvk(def)] });
    named.set(`${name}List`, {
      type: "object",
      required: ["items"],
      properties: {
        apiVersion: { type: "string" },
        kind: { type: "string" },
        metadata: refTo(LIST_META, style),
        items: { type: "array", items: refTo(name, style) },
      },
      "x-kubernetes-group-version-kind": [{ group: def.group, version: def.version, kind: def.listKind }],
    });
  }
  named.set(LIST_META, {
    type: "object",
    properties: {
      continue: { type: "string" },
      remainingItemCount: { type: "integer", format: "int64" },
      resourceVersion: { type: "string" },
      selfLink: { type: "string" },
    },
  });
  named.set(STATUS, {
    type: "object",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      code: { type: "integer", format: "int32" },
      details: { type: "object" },
      message: { type: "string" },
      metadata: refTo(LIST_META, style),
      reason: { type: "string" },
      status: { type: "string" },
    },
  });
  named.set(DELETE_OPTIONS, {
    type: "object",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      dryRun: { type: "array", items: { type: "string" } },
      gracePeriodSeconds: { type: "integer", format: "int64" },
      orphanDependents: { type: "boolean" },
      preconditions: {
        type: "object",
        properties: { resourceVersion: { type: "string" }, uid: { type: "string" } },
      },
      propagationPolicy: { type: "string" },
    },
  });
  named.set(PATCH, { type: "object" });
  return Object.fromEntries([...named.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export interface OpenAPIDocs {
  /** `/openapi/v3`: the group-version index. */
  readonly index: string;
  /** By path (`api/v1`, `apis/coordination.k8s.io/v1`): the OpenAPI 3 document of that group version. */
  readonly groupVersions: ReadonlyMap<string, string>;
  /** `/openapi/v2` as JSON. */
  readonly v2: string;
}

function gvPath(def: ResourceDef): string {
  return def.group === "" ? `api/${def.version}` : `apis/${def.group}/${def.version}`;
}

export function buildOpenAPI(gitVersion: string): OpenAPIDocs {
  const byGV = new Map<string, ResourceDef[]>();
  for (const def of ALL_RESOURCES) {
    const k = gvPath(def);
    byGV.set(k, [...(byGV.get(k) ?? []), def]);
  }
  const info = { title: "Kubernetes", version: gitVersion };
  const groupVersions = new Map<string, string>();
  const indexPaths: JsonObject = {};
  for (const [path, defs] of byGV) {
    const paths: JsonObject = {};
    for (const def of defs) Object.assign(paths, pathsFor(def, "v3"));
    const doc = JSON.stringify({
      openapi: "3.0.0",
      info,
      paths,
      components: { schemas: definitions(defs, "v3") },
    });
    groupVersions.set(path, doc);
    const hash = createHash("sha512").update(doc).digest("hex").toUpperCase();
    indexPaths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
  }
  const v2Paths: JsonObject = {};
  for (const def of ALL_RESOURCES) Object.assign(v2Paths, pathsFor(def, "v2"));
  const v2 = JSON.stringify({
    swagger: "2.0",
    info,
    paths: v2Paths,
    definitions: definitions(ALL_RESOURCES, "v2"),
  });
  return { index: JSON.stringify({ paths: indexPaths }), groupVersions, v2 };
}
