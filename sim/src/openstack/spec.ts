/**
 * The OpenStack spec the fake checks against: the four subsets of gtema's generated OpenAPI
 * (sim/fixtures/openstack/), one checker per service, a request routed to its service by the
 * fake's endpoint layout (`/<region>/<interface>/<service>/...`, Keystone at `/v3`). Three
 * readings of the generated documents, each noted in sim/fixtures/README.md, where the api-ref
 * pages (the projects' own reference) say otherwise:
 * - error statuses are hardly listed (no 409 on Octavia, no 429/503 anywhere) and Keystone's 401
 *   carries the MFA receipt schema: every operation's non-2xx answers are read as one `default`
 *   response without a schema (their bodies are checked against the api-ref samples in the
 *   fake's own test);
 * - Keystone's POST /v3/auth/tokens answers 201 (api-ref), not the generated 200;
 * - Octavia's batch member update answers 202 without a body (api-ref), not a member list;
 * - Octavia's `insert_headers` say `additionalProperties: {type: {type: string}}`, a schema
 *   nested one level too deep by the generator: read as the inner schema;
 * - Neutron's floating-IP list names the path parameter `id` of `/floatingips/{id}`: a path
 *   parameter its path lacks is left out;
 * - Octavia answers `null` for unset attributes (`default_pool_id`, `allowed_cidrs`,
 *   `session_persistence`, `flavor_id`, ... as its api-ref samples show) where the document
 *   types them without null: on Octavia's answers null is read as allowed, and its times
 *   carry no offset (`2017-02-28T00:41:44`, api-ref), read as UTC date-times;
 * - the paging and filter parameters the api-ref documents but the documents omit on Octavia's
 *   and Neutron's lists (`limit`, `marker`, `fields`, filters by attribute) are accepted;
 * - Neutron's security groups: the documents type a group's `security_group_rules` as a string
 *   and a rule's `port_range_min`/`port_range_max` as strings, where the api-ref (and Neutron)
 *   has a list of rules and integers; a rule's unset attributes are null (api-ref samples): read
 *   so in every `Security_Group*` schema;
 * - the ports list's `ports_links` (paging), which the document omits, typed as the api-ref's
 *   "Pagination" has it;
 * - a floating IP on no port has `fixed_ip_address: null` (api-ref samples
 *   floating-ips-list-response.json, floatingip-disassociate-response.json) where the document
 *   types it a string: read so in every `Floatingip*Response` schema.
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { parse as parseYaml } from "yaml";
import { OpenApiChecker } from "../fake-kit/openapi.js";
import type { SpecRequest, SpecResponse } from "../fake-kit/spec.js";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import type { ServingChecker } from "../fake-kit/vendor-fake.js";
import { cinderSpecChecker } from "./cinder-spec.js";

type Json = Record<string, unknown>;

export const OPENSTACK_SPECS = {
  identity: "openstack/identity-v3.14.ccm-subset.yaml",
  compute: "openstack/compute-v2.96.ccm-subset.yaml",
  network: "openstack/network-v2.ccm-subset.yaml",
  "load-balancer": "openstack/load-balancing-v2.ccm-subset.yaml",
} as const;
export type OpenStackService = keyof typeof OPENSTACK_SPECS;

/** `/<region>/<interface>/<service><rest>`: where the fake serves each region's services. */
export const SERVICE_PATH = /^\/([^/]+)\/(public|internal)\/(compute|network|load-balancer|volume)(\/.*)$/;

const EXTRA_QUERY: Record<OpenStackService, readonly string[]> = {
  identity: [],
  compute: [],
  network: ["limit", "marker", "fields", "page_reverse"],
  "load-balancer": [
    "limit",
    "marker",
    "fields",
    "page_reverse",
    "name",
    "loadbalancer_id",
    "project_id",
    "tags",
    "cascade",
  ],
};

function readDocument(file: string, nullable: boolean): Json {
  const doc = parseYaml(readFileSync(fixtureSpecPath(file), "utf8")) as Json;
  const params = ((doc["components"] as Json | undefined)?.["parameters"] ?? {}) as Json;
  const inPath = (path: string, ref: unknown): boolean => {
    const name = typeof ref === "string" ? ref.split("/").pop() : undefined;
    const p = name === undefined ? undefined : (params[name] as Json | undefined);
    return p?.["in"] !== "path" || path.includes(`{${String(p["name"])}}`);
  };
  const paths: Json = {};
  for (const [path, item] of Object.entries(doc["paths"] as Json)) {
    const methods: Json = {};
    for (const [m, op] of Object.entries(item as Json)) {
      const o = op as Json;
      const responses = o["responses"] as Json | undefined;
      const parameters = o["parameters"];
      if (Array.isArray(parameters))
        o["parameters"] = parameters.filter((x: Json) => inPath(path, x["$ref"]));
      if (responses === undefined) {
        methods[m] = o;
        continue;
      }
      const kept: Json = {};
      for (const [status, r] of Object.entries(responses)) if (/^2/.test(status)) kept[status] = r;
      if (path === "/v3/auth/tokens" && m === "post" && kept["200"] !== undefined) kept["201"] = kept["200"];
      if (path.endsWith("/members") && m === "put") kept["202"] = { description: "Accepted" };
      kept["default"] = {
        description: "Error",
        content: { "application/json": { schema: { type: "object" } } },
      };
      methods[m] = { ...o, responses: kept };
    }
    paths[path] = methods;
  }
  const out = unnest({ ...doc, paths }) as Json;
  securityGroupTypes(out);
  portsLinks(out);
  unassociatedFloatingIps(out);
  return nullable ? { ...out, components: withNull(out["components"]) } : out;
}

/**
 * The ports list's `ports_links`, which the document omits: Neutron's pagination links as the
 * api-ref's "Pagination" (neutron-lib `v2/intro.inc`) has them, a `next` link unless the page is
 * the last, a `previous` one past the first.
 */
function portsLinks(doc: Json): void {
  const schemas = ((doc["components"] as Json | undefined)?.["schemas"] ?? {}) as Json;
  const list = schemas["PortsIndexResponse"] as Json | undefined;
  const props = list?.["properties"] as Json | undefined;
  if (props === undefined) return;
  props["ports_links"] = {
    type: "array",
    items: {
      type: "object",
      required: ["href", "rel"],
      properties: {
        href: { type: "string", format: "uri" },
        rel: { type: "string", enum: ["next", "previous"] },
      },
    },
  };
}

/** `fixed_ip_address` of the floating-IP answers may be null (see the note at the top). */
function unassociatedFloatingIps(doc: Json): void {
  const schemas = ((doc["components"] as Json | undefined)?.["schemas"] ?? {}) as Json;
  const fix = (node: unknown): void => {
    if (typeof node !== "object" || node === null) return;
    const props = (node as Json)["properties"] as Json | undefined;
    const fixed = props?.["fixed_ip_address"] as Json | undefined;
    if (fixed !== undefined && fixed["type"] === "string") fixed["type"] = ["string", "null"];
    for (const v of Object.values(node)) fix(v);
  };
  for (const [name, schema] of Object.entries(schemas))
    if (name.startsWith("Floatingip") && name.endsWith("Response")) fix(schema);
}

/** The `Security_Group*` schemas with the api-ref's types (see the note at the top). */
function securityGroupTypes(doc: Json): void {
  const schemas = ((doc["components"] as Json | undefined)?.["schemas"] ?? {}) as Json;
  const fix = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(fix);
    if (typeof node !== "object" || node === null) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) {
      if (k !== "properties" || typeof v !== "object" || v === null) {
        out[k] = fix(v);
        continue;
      }
      const props: Json = {};
      for (const [name, schema] of Object.entries(v as Json)) {
        if (name === "port_range_min" || name === "port_range_max")
          props[name] = { type: ["integer", "null"] };
        else if (name === "security_group_rules") props[name] = { type: "array", items: { type: "object" } };
        else props[name] = withNull(fix(schema));
      }
      out[k] = props;
    }
    return out;
  };
  for (const name of Object.keys(schemas))
    if (name.startsWith("Security_Group")) schemas[name] = fix(schemas[name]);
}

/** Every `type: <t>` of the schemas also allows null (Octavia's unset attributes). */
function withNull(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withNull);
  if (typeof node !== "object" || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "type" && typeof v === "string" && v !== "null") out[k] = [v, "null"];
    else if (k === "properties" && typeof v === "object" && v !== null) {
      // Property names (one may be called `type`) are not schema keywords.
      out[k] = Object.fromEntries(Object.entries(v).map(([name, schema]) => [name, withNull(schema)]));
    } else out[k] = withNull(v);
  }
  return out;
}

/** `additionalProperties: {type: {<schema>}}` (a generator slip) read as `additionalProperties: <schema>`. */
function unnest(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(unnest);
  if (typeof node !== "object" || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    const inner = (v as Json | null)?.["type"];
    out[k] =
      k === "additionalProperties" && typeof inner === "object" && inner !== null && !Array.isArray(inner)
        ? unnest(inner)
        : unnest(v);
  }
  return out;
}

/** Octavia's times: RFC 3339 with or without an offset. */
const OCTAVIA_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$/;

let cached: Map<OpenStackService, OpenApiChecker> | undefined;
function checkers(): Map<OpenStackService, OpenApiChecker> {
  if (cached === undefined) {
    cached = new Map();
    for (const [service, file] of Object.entries(OPENSTACK_SPECS) as [OpenStackService, string][])
      cached.set(
        service,
        new OpenApiChecker(readDocument(file, service === "load-balancer"), {
          extraQueryParams: EXTRA_QUERY[service],
          ...(service === "load-balancer" && {
            formats: { "date-time": OCTAVIA_TIME, ipaddress: (s: string) => isIP(s) !== 0 },
          }),
        }),
      );
  }
  return cached;
}

/** The service and the path as its document has it, for a path the fake serves. */
export function servicePath(
  path: string,
): { service: OpenStackService | "volume"; path: string } | undefined {
  if (path.startsWith("/v3/")) return { service: "identity", path };
  const m = SERVICE_PATH.exec(path);
  if (m === null) return undefined;
  return { service: m[3] as OpenStackService | "volume", path: m[4] ?? "" };
}

let cinder: ServingChecker | undefined;

/** Every exchange checked against its service's document (Cinder's: its api-ref, cinder-spec.ts). */
export function openstackSpecChecker(): ServingChecker {
  const all = checkers();
  cinder ??= cinderSpecChecker();
  const volume = cinder;
  const pick = (path: string) => {
    const s = servicePath(path);
    if (s === undefined) return undefined;
    return { checker: s.service === "volume" ? volume : all.get(s.service), path: s.path };
  };
  return {
    findOperation(method, path) {
      const p = pick(path);
      return p?.checker?.findOperation(method, p.path);
    },
    checkRequest(req: SpecRequest) {
      const p = pick(req.path);
      if (p?.checker === undefined) return { problems: [`no OpenStack service serves ${req.path}`] };
      return p.checker.checkRequest({ ...req, path: p.path });
    },
    checkResponse(req, res: SpecResponse) {
      const p = pick(req.path);
      if (p?.checker === undefined) return { problems: [`no OpenStack service serves ${req.path}`] };
      return p.checker.checkResponse({ ...req, path: p.path }, res);
    },
  };
}
