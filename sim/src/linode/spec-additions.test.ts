// The hand-added newer Linode parts: they reach schemas behind `$ref`s (the layout of
// linode/linode-api-openapi's openapi.json) and refuse to overwrite what the spec defines.

import { readFileSync } from "node:fs";
import { describe, expect, test } from "@jest/globals";
import { parse as parseYaml } from "yaml";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import { LINODE_SPEC } from "./fake.js";
import { withHandAddedLinodeOperations } from "./spec-additions.js";

type Obj = Record<string, unknown>;

const fixture = (): Obj => parseYaml(readFileSync(fixtureSpecPath(LINODE_SPEC), "utf8")) as Obj;

/** Every object under `node` for which `pick` holds. */
function objects(node: unknown, pick: (o: Obj) => boolean, into: Obj[] = []): Obj[] {
  if (Array.isArray(node)) for (const n of node) objects(n, pick, into);
  else if (typeof node === "object" && node !== null) {
    if (pick(node as Obj)) into.push(node as Obj);
    for (const v of Object.values(node)) objects(v, pick, into);
  }
  return into;
}

const props = (o: Obj): Obj => o["properties"] as Obj;
const titled = (title: string) => (o: Obj) =>
  o["title"] === title && typeof o["properties"] === "object" && o["properties"] !== null;
const isConfig = (o: Obj) =>
  typeof o["properties"] === "object" && o["properties"] !== null && "check_attempts" in props(o);

describe("hand-added Linode spec parts", () => {
  test("the fixture takes them all, each marked", () => {
    const doc = withHandAddedLinodeOperations(fixture()) as Obj;
    const nodeBalancers = objects(doc, titled("NodeBalancer"));
    expect(nodeBalancers.length).toBeGreaterThan(0);
    for (const nb of nodeBalancers)
      expect(props(nb)["type"]).toMatchObject({ "x-fleet-ccm-hand-added": true });
    const configs = objects(doc, isConfig);
    for (const c of configs) {
      const protocols = (props(c)["protocol"] as Obj)["enum"] as string[];
      expect(protocols.filter((p) => p === "udp")).toEqual(["udp"]);
    }
    expect(Object.keys(doc["paths"] as Obj)).toContain("/{apiVersion}/networking/reserved/ips/{address}");
  });

  test("a schema behind a $ref under components gets them too", () => {
    const doc = fixture();
    const post = ((doc["paths"] as Obj)["/{apiVersion}/nodebalancers"] as Obj)["post"] as Obj;
    const media = ((post["requestBody"] as Obj)["content"] as Obj)["application/json"] as Obj;
    const response = (((post["responses"] as Obj)["200"] as Obj)["content"] as Obj)[
      "application/json"
    ] as Obj;
    doc["components"] = {
      ...(doc["components"] as Obj),
      schemas: { "nb-create": media["schema"], nodebalancer: response["schema"] },
    };
    media["schema"] = { $ref: "#/components/schemas/nb-create" };
    response["schema"] = { $ref: "#/components/schemas/nodebalancer" };
    withHandAddedLinodeOperations(doc);
    const schemas = (doc["components"] as Obj)["schemas"] as Obj;
    expect(props(schemas["nb-create"] as Obj)["backend_vpcs"]).toMatchObject({
      "x-fleet-ccm-hand-added": true,
    });
    expect(props(schemas["nodebalancer"] as Obj)["frontend_address_type"]).toMatchObject({
      "x-fleet-ccm-hand-added": true,
    });
  });

  test("what the spec defines already is not overwritten: loading fails naming each such part", () => {
    const doc = fixture();
    const ownType = { type: "string", enum: ["common", "premium"] };
    for (const nb of objects(doc, titled("NodeBalancer"))) props(nb)["type"] = ownType;
    const config = objects(doc, isConfig)[0] as Obj;
    ((props(config)["protocol"] as Obj)["enum"] as string[]).push("udp");
    (doc["paths"] as Obj)["/{apiVersion}/networking/reserved/ips/{address}"] = { delete: {} };
    expect(() => withHandAddedLinodeOperations(doc)).toThrow(
      /defines what sim\/src\/linode\/spec-additions\.ts adds by hand: NodeBalancer\.type, .*NodeBalancer config protocol udp.*path \/\{apiVersion\}\/networking\/reserved\/ips\/\{address\}; drop those additions/,
    );
    expect(props(objects(doc, titled("NodeBalancer"))[0] as Obj)["type"]).toBe(ownType);
  });
});
