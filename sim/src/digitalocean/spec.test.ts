import { describe, expect, test } from "@jest/globals";
import {
  bundleSpec,
  DIGITALOCEAN_SPEC,
  DIGITALOCEAN_SPEC_EXTENSIONS,
  DIGITALOCEAN_SUPPLEMENT_PATHS,
  digitalOceanSpecChecker,
} from "./spec.js";

/** Every schema in `node` with `property` among its properties: that property's schema. */
function schemasOf(node: unknown, property: string): Record<string, unknown>[] {
  if (Array.isArray(node)) return node.flatMap((n) => schemasOf(n, property));
  if (typeof node !== "object" || node === null) return [];
  const o = node as Record<string, unknown>;
  const props = o["properties"] as Record<string, Record<string, unknown>> | undefined;
  const own = props?.[property] === undefined ? [] : [props[property]];
  return [...own, ...Object.values(o).flatMap((v) => schemasOf(v, property))];
}

describe("DigitalOcean spec fixture", () => {
  test("joins into one document with no reference left", () => {
    const text = JSON.stringify(
      bundleSpec("digitalocean/specification/DigitalOcean-public.v2.ccm-subset.yaml"),
    );
    expect(text).not.toContain('"$ref"');
  });

  test("serves the operations the fake routes", () => {
    const c = digitalOceanSpecChecker();
    expect(c.findOperation("GET", "/v2/droplets")?.operationId).toBe("droplets_list");
    expect(c.findOperation("GET", "/v2/droplets/7")?.operationId).toBe("droplets_get");
    expect(c.findOperation("PUT", "/v2/load_balancers/abc")?.operationId).toBe("loadBalancers_update");
    expect(c.uncheckedFormats).toEqual(expect.any(Array));
  });
});

describe("DigitalOcean spec supplement", () => {
  test("adds the certificates operations from digitalocean/openapi's files", () => {
    const c = digitalOceanSpecChecker();
    expect(c.findOperation("GET", "/v2/certificates")?.operationId).toBe("certificates_list");
    expect(c.findOperation("GET", "/v2/certificates/892071a0-bb95-49bc-8021-3afd67a210bf")?.operationId).toBe(
      "certificates_get",
    );
    const text = JSON.stringify(bundleSpec(DIGITALOCEAN_SPEC, DIGITALOCEAN_SUPPLEMENT_PATHS));
    expect(text).not.toContain('"$ref"');
    expect(text).toContain("lets_encrypt");
  });

  test("adds the Block Storage volumes operations from digitalocean/openapi's files", () => {
    const c = digitalOceanSpecChecker();
    expect(c.findOperation("GET", "/v2/volumes")?.operationId).toBe("volumes_list");
    expect(c.findOperation("GET", "/v2/volumes/506f78a4-e098-11e5-ad9f-000f53306ae1")?.operationId).toBe(
      "volumes_get",
    );
  });
});

describe("DigitalOcean spec extensions", () => {
  test("each field the fake keeps beyond the document is still missing from it, and has a source", () => {
    const doc = bundleSpec(DIGITALOCEAN_SPEC, DIGITALOCEAN_SUPPLEMENT_PATHS);
    for (const [path, source] of Object.entries(DIGITALOCEAN_SPEC_EXTENSIONS)) {
      const [object = "", field = ""] = path.split(".");
      const schemas = schemasOf(doc, object);
      expect({ path, found: schemas.length > 0 }).toEqual({ path, found: true });
      for (const schema of schemas)
        expect({
          path,
          documented: (schema["properties"] as Record<string, unknown> | undefined)?.[field],
        }).toEqual({ path, documented: undefined });
      expect(source).toMatch(/github\.com\//);
    }
  });
});
