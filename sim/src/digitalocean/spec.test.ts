import { describe, expect, test } from "@jest/globals";
import {
  bundleSpec,
  DIGITALOCEAN_SPEC,
  DIGITALOCEAN_SUPPLEMENT_PATHS,
  digitalOceanSpecChecker,
} from "./spec.js";

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
