import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "@jest/globals";
import { parse as parseYaml } from "yaml";
import { AWS_MODEL_FILES } from "../aws/fake.js";
import { LINODE_SPEC } from "../linode/fake.js";
import { fixtureSpecPath } from "./specs.js";

const FIXTURES = fileURLToPath(new URL("../../fixtures/", import.meta.url));

interface Botocore {
  operations: Record<
    string,
    { input?: { shape: string }; output?: { shape: string }; errors?: { shape: string }[] }
  >;
  shapes: Record<
    string,
    {
      members?: Record<string, { shape: string }>;
      member?: { shape: string };
      key?: { shape: string };
      value?: { shape: string };
    }
  >;
}

describe("vendor spec fixtures", () => {
  test("every spec the fakes load is a file under sim/fixtures/, inside the repository", () => {
    for (const file of [...Object.values(AWS_MODEL_FILES), LINODE_SPEC]) {
      const path = fixtureSpecPath(file);
      expect(relative(FIXTURES, path)).toBe(file);
    }
  });

  test("a missing fixture is an error naming the file and how to make it again", () => {
    expect(() => fixtureSpecPath("aws/nope-2020-01-01/service-2.json")).toThrow(
      /sim\/fixtures\/aws\/nope-2020-01-01\/service-2\.json is missing.*node scripts\/vendor-specs\.mjs/,
    );
  });

  test("the botocore subsets define every shape their operations reach", () => {
    for (const file of Object.values(AWS_MODEL_FILES)) {
      const model = JSON.parse(readFileSync(fixtureSpecPath(file), "utf8")) as Botocore;
      const undefinedShapes = new Set<string>();
      const refs = [
        ...Object.values(model.operations).flatMap((o) => [o.input, o.output, ...(o.errors ?? [])]),
        ...Object.values(model.shapes).flatMap((s) => [
          ...Object.values(s.members ?? {}),
          s.member,
          s.key,
          s.value,
        ]),
      ];
      for (const ref of refs)
        if (ref !== undefined && model.shapes[ref.shape] === undefined) undefinedShapes.add(ref.shape);
      expect({ file, undefinedShapes: [...undefinedShapes] }).toEqual({ file, undefinedShapes: [] });
    }
  });

  test("the Linode subset's $refs all resolve inside it", () => {
    const doc = parseYaml(readFileSync(fixtureSpecPath(LINODE_SPEC), "utf8")) as Record<string, unknown>;
    const refs: string[] = [];
    const walk = (n: unknown): void => {
      if (Array.isArray(n)) n.forEach(walk);
      else if (typeof n === "object" && n !== null) {
        const ref = (n as Record<string, unknown>)["$ref"];
        if (typeof ref === "string") refs.push(ref);
        Object.values(n).forEach(walk);
      }
    };
    walk(doc["paths"]);
    const resolves = (ref: string): boolean => {
      let node: unknown = doc;
      for (const part of ref.replace(/^#\//, "").split("/"))
        node =
          typeof node === "object" && node !== null ? (node as Record<string, unknown>)[part] : undefined;
      return node !== undefined;
    };
    expect(refs.filter((r) => !resolves(r))).toEqual([]);
    expect(Object.keys(doc["paths"] as object).length).toBeGreaterThan(0);
  });
});
