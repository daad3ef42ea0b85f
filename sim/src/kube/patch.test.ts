// Unit tests of the patch engines, selectors and validation message formatting.

import { describe, expect, test } from "@jest/globals";
import {
  fieldErrorString,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  invalid,
  KubeApiError,
} from "./errors.js";
import type { JsonObject, JsonValue } from "./json.js";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, type SmpSchema } from "./patch.js";
import { NODES, SERVICES } from "./resources.js";
import { matchFields, matchLabels, parseFieldSelector, parseLabelSelector } from "./selectors.js";
import { isDNS1123Label, isQualifiedName } from "./validation.js";

function codeOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof KubeApiError) return e.code;
    throw e;
  }
  return undefined;
}

describe("JSON patch (RFC 6902)", () => {
  test("add/remove/replace/move/copy/test with pointer escaping and '-' index", () => {
    const doc: JsonValue = { a: { "b/c": 1, "d~e": [1, 2] }, list: ["x"] };
    const out = applyJsonPatch(doc, [
      { op: "test", path: "/a/b~1c", value: 1 },
      { op: "add", path: "/list/-", value: "y" },
      { op: "add", path: "/list/0", value: "w" },
      { op: "replace", path: "/a/d~0e/1", value: 3 },
      { op: "copy", from: "/a/b~1c", path: "/copied" },
      { op: "move", from: "/copied", path: "/moved" },
      { op: "remove", path: "/a/b~1c" },
    ]);
    expect(out).toEqual({ a: { "d~e": [1, 3] }, list: ["w", "x", "y"], moved: 1 });
  });

  test("failures → 422, non-array body → 400", () => {
    expect(codeOf(() => applyJsonPatch({ a: 1 }, [{ op: "test", path: "/a", value: 2 }]))).toBe(422);
    expect(codeOf(() => applyJsonPatch({ a: 1 }, [{ op: "remove", path: "/b" }]))).toBe(422);
    expect(codeOf(() => applyJsonPatch({ a: 1 }, [{ op: "replace", path: "/b", value: 1 }]))).toBe(422);
    expect(codeOf(() => applyJsonPatch({ a: 1 }, [{ op: "add", path: "/x/y", value: 1 }]))).toBe(422);
    expect(codeOf(() => applyJsonPatch({ a: 1 }, [{ op: "bogus", path: "/a" }]))).toBe(422);
    expect(codeOf(() => applyJsonPatch({ a: 1 }, { op: "add" }))).toBe(400);
    expect(applyJsonPatch({ a: 1 }, [{ op: "test", path: "/missing", value: null }])).toEqual({ a: 1 });
  });
});

describe("merge patch (RFC 7386)", () => {
  test("RFC examples", () => {
    expect(applyMergePatch({ a: "b" }, { a: "c" })).toEqual({ a: "c" });
    expect(applyMergePatch({ a: "b" }, { b: "c" })).toEqual({ a: "b", b: "c" });
    expect(applyMergePatch({ a: "b" }, { a: null })).toEqual({});
    expect(applyMergePatch({ a: [{ b: "c" }] }, { a: [1] })).toEqual({ a: [1] });
    expect(applyMergePatch({ a: { b: "c" } }, { a: { b: "d", c: null } })).toEqual({ a: { b: "d" } });
    expect(applyMergePatch({ a: "foo" }, ["c"])).toEqual(["c"]);
  });
});

describe("strategic merge patch", () => {
  const schema: SmpSchema = {
    fields: {
      items: { mergeList: true, mergeKey: "name" },
      tags: { mergeList: true },
      spec: { fields: {} },
    },
  };

  test("$setElementOrder, $retainKeys, map $patch directives", () => {
    const orig: JsonObject = {
      items: [
        { name: "a", v: 1 },
        { name: "b", v: 2 },
      ],
      tags: ["x", "y"],
      spec: { keep: 1, drop: 2 },
      gone: { x: 1 },
      replaced: { x: 1, y: 2 },
    };
    const out = applyStrategicMergePatch(
      orig,
      {
        items: [{ name: "c", v: 3 }],
        "$setElementOrder/items": [{ name: "c" }, { name: "a" }, { name: "b" }],
        tags: ["z", "x"],
        spec: { $retainKeys: ["keep", "new"], new: 3 },
        gone: { $patch: "delete" },
        replaced: { $patch: "replace", z: 3 },
      },
      schema,
    );
    expect(out).toEqual({
      items: [
        { name: "c", v: 3 },
        { name: "a", v: 1 },
        { name: "b", v: 2 },
      ],
      tags: ["x", "y", "z"],
      spec: { keep: 1, new: 3 },
      replaced: { z: 3 },
    });
  });

  test("bad directives and missing merge keys → 400", () => {
    expect(codeOf(() => applyStrategicMergePatch({}, { a: { $patch: "explode" } }, schema))).toBe(400);
    expect(codeOf(() => applyStrategicMergePatch({ items: [] }, { items: [{ v: 1 }] }, schema))).toBe(400);
    expect(codeOf(() => applyStrategicMergePatch({}, [1], schema))).toBe(400);
  });

  test("node and service schemas follow the k8s.io/api patch strategies", () => {
    const svc = applyStrategicMergePatch(
      { spec: { ports: [{ port: 80, name: "http" }] } },
      { spec: { ports: [{ port: 80, nodePort: 30080 }, { port: 443 }] } },
      SERVICES.smp,
    );
    expect(svc).toEqual({ spec: { ports: [{ port: 80, name: "http", nodePort: 30080 }, { port: 443 }] } });
    const node = applyStrategicMergePatch(
      {
        spec: { podCIDRs: ["10.0.0.0/24"], taints: [{ key: "a" }] },
        status: { addresses: [{ type: "Hostname", address: "h" }] },
      },
      {
        spec: { podCIDRs: ["10.0.0.0/24", "fd00::/64"], taints: [{ key: "b" }] },
        status: { addresses: [{ type: "Hostname", address: "h2" }] },
      },
      NODES.smp,
    );
    expect(node).toEqual({
      spec: { podCIDRs: ["10.0.0.0/24", "fd00::/64"], taints: [{ key: "b" }] },
      status: { addresses: [{ type: "Hostname", address: "h2" }] },
    });
  });
});

describe("selectors", () => {
  test("label selector parsing and matching", () => {
    const labels = { env: "prod", tier: "web", n: "5" };
    const m = (s: string): boolean => matchLabels(parseLabelSelector(s), labels);
    expect(m("")).toBe(true);
    expect(m("env=prod,tier!=db")).toBe(true);
    expect(m("env in (dev, prod),!missing")).toBe(true);
    expect(m("env notin (prod)")).toBe(false);
    expect(m("missing!=x")).toBe(true);
    expect(m("n>4,n<6")).toBe(true);
    expect(m("k=")).toBe(false);
    expect(parseLabelSelector("a in ()")).toEqual([{ key: "a", op: "in", values: [] }]);
    expect(codeOf(() => parseLabelSelector("env in prod"))).toBe(400);
    expect(codeOf(() => parseLabelSelector("bad key=1"))).toBe(400);
    expect(codeOf(() => parseLabelSelector("a=b=c"))).toBe(400);
  });

  test("field selector parsing with escapes", () => {
    const sel = parseFieldSelector("metadata.name=a\\,b,spec.type!=ClusterIP");
    expect(sel).toEqual([
      { field: "metadata.name", op: "=", value: "a,b" },
      { field: "spec.type", op: "!=", value: "ClusterIP" },
    ]);
    expect(matchFields(sel, { "metadata.name": "a,b", "spec.type": "LoadBalancer" })).toBe(true);
    expect(matchFields(parseFieldSelector("metadata.name==x"), { "metadata.name": "x" })).toBe(true);
    expect(codeOf(() => parseFieldSelector("metadata.name"))).toBe(400);
  });
});

describe("validation messages", () => {
  test("names, qualified names and aggregated Invalid messages", () => {
    expect(isDNS1123Label("a.b")).toEqual(["must not contain dots"]);
    expect(isQualifiedName("a/b/c")[0]).toMatch(/^a valid label key must consist of alphanumeric characters/);
    expect(isQualifiedName("/x")).toEqual(["prefix part must be non-empty"]);
    expect(fieldErrorString(fieldRequired("spec.x"))).toBe("spec.x: Required value");
    expect(fieldErrorString(fieldInvalid("spec.n", 0, "must be greater than 0"))).toBe(
      "spec.n: Invalid value: 0: must be greater than 0",
    );
    expect(fieldErrorString(fieldNotSupported("spec.t", "X", ["A", "B"]))).toBe(
      'spec.t: Unsupported value: "X": supported values: "A", "B"',
    );
    const err = invalid("", "Node", "n", [
      fieldRequired("spec.a"),
      fieldRequired("spec.a"),
      fieldInvalid("spec.b", true, "nope"),
    ]);
    expect(err.code).toBe(422);
    expect(err.status.message).toBe(
      'Node "n" is invalid: [spec.a: Required value, spec.b: Invalid value: true: nope]',
    );
    expect(err.status.details?.causes).toHaveLength(3);
  });
});
