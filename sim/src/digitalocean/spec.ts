/**
 * DigitalOcean's OpenAPI document is many YAML files joined by relative `$ref`s
 * (`../../shared/responses/not_found.yml`, `attributes.yml#/load_balancer_droplet_ids`, a file's
 * own `#/page_links`). The kit's checker follows local references only, so the fixture
 * (sim/fixtures/digitalocean/, cut by scripts/vendor-specs.mjs) is joined here into one
 * document: every reference is replaced by what it names, read from the fixture folder alone.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { parse as parseYaml } from "yaml";
import { OpenApiChecker } from "../fake-kit/openapi.js";
import { fixtureSpecPath } from "../fake-kit/specs.js";

/** The entry file of the fixture (sim/fixtures/README.md). */
export const DIGITALOCEAN_SPEC = "digitalocean/specification/DigitalOcean-public.v2.ccm-subset.yaml";

/**
 * Paths the entry file (cut from shared/specs' droplets and load-balancer subset) lacks, as
 * DigitalOcean-public.v2.yaml lists them: their files are copied from digitalocean/openapi at
 * the same revision (scripts/vendor-specs.mjs, DO_SUPPLEMENT).
 */
export const DIGITALOCEAN_SUPPLEMENT_PATHS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "/v2/certificates": { get: "resources/certificates/certificates_list.yml" },
  "/v2/certificates/{certificate_id}": { get: "resources/certificates/certificates_get.yml" },
  "/v2/volumes": { get: "resources/volumes/volumes_list.yml" },
  "/v2/volumes/{volume_id}": { get: "resources/volumes/volumes_get.yml" },
};

/**
 * Fields DigitalOcean takes and answers that its published OpenAPI document lacks, each with the
 * source that shows it: the fake keeps them, and spec.test.ts checks the document still lacks
 * them (drop one here once it is published). Keyed `<object property>.<field>`.
 */
export const DIGITALOCEAN_SPEC_EXTENSIONS: Readonly<Record<string, string>> = {
  // The DigitalOcean CCM sends it false for its kube-proxy check (do/loadbalancers.go buildHealthCheck).
  "health_check.proxy_protocol":
    'github.com/digitalocean/godo load_balancers.go: HealthCheck.ProxyProtocol *bool `json:"proxy_protocol,omitempty"`',
};

type Json = unknown;

function pointerGet(doc: Json, pointer: string): Json {
  let node = doc;
  for (const part of pointer.split("/").filter((p) => p !== "")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, Json>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node;
}

/**
 * The document at `entry` (a fixture path), with `extraPaths` (path → method → operation file
 * relative to the entry) added, and every `$ref` replaced by its target.
 */
export function bundleSpec(
  entry: string,
  extraPaths: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): Json {
  const root = dirname(fixtureSpecPath(entry));
  const docs = new Map<string, Json>();
  const load = (file: string): Json => {
    if (!docs.has(file)) {
      const rel = relative(dirname(fixtureSpecPath("digitalocean/LICENSE")), file);
      docs.set(file, parseYaml(readFileSync(fixtureSpecPath(`digitalocean/${rel}`), "utf8")));
    }
    return docs.get(file);
  };
  const inline = (node: Json, file: string, stack: readonly string[]): Json => {
    if (Array.isArray(node)) return node.map((n) => inline(n, file, stack));
    if (typeof node !== "object" || node === null) return node;
    const obj = node as Record<string, Json>;
    const ref = obj["$ref"];
    if (typeof ref === "string") {
      const [path = "", pointer = ""] = ref.split("#");
      const target = path === "" ? file : join(dirname(file), path);
      const key = `${target}#${pointer}`;
      if (stack.includes(key)) throw new Error(`DigitalOcean spec: circular $ref ${ref} in ${file}`);
      const found = pointerGet(load(target), pointer);
      if (found === undefined) throw new Error(`DigitalOcean spec: unresolvable $ref ${ref} in ${file}`);
      return inline(found, target, [...stack, key]);
    }
    const out: Record<string, Json> = {};
    // Code samples are documentation: nothing checks them.
    for (const [k, v] of Object.entries(obj)) if (k !== "x-codeSamples") out[k] = inline(v, file, stack);
    return out;
  };
  const file = join(root, entry.slice(entry.lastIndexOf("/") + 1));
  const doc = load(file) as { paths?: Record<string, Json> };
  const paths: Record<string, Json> = { ...(doc.paths ?? {}) };
  for (const [path, methods] of Object.entries(extraPaths)) {
    if (paths[path] !== undefined) throw new Error(`DigitalOcean spec: ${path} is already in ${entry}`);
    paths[path] = Object.fromEntries(Object.entries(methods).map(([m, ref]) => [m, { $ref: ref }]));
  }
  return inline({ ...doc, paths }, file, []);
}

let cached: OpenApiChecker | undefined;
/** The checker of the joined fixture, built once per process. */
export function digitalOceanSpecChecker(): OpenApiChecker {
  cached ??= new OpenApiChecker(bundleSpec(DIGITALOCEAN_SPEC, DIGITALOCEAN_SUPPLEMENT_PATHS));
  return cached;
}
