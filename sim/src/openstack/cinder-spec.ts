/**
 * Cinder's own api-ref as the fake's spec (no OpenAPI document of Cinder is kept): the
 * operations of `volumes-v3-volumes.inc` (each `rest_method` with its request and response
 * parameter lists), the parameters' `in`, `type` and `required` from `parameters.yaml`, and the
 * response samples of the operations the fake serves (sim/fixtures/openstack/cinder/, unchanged
 * copies). A request's query parameters must be the operation's documented query parameters
 * (an integer where typed so); an answer's members must be documented response parameters of
 * their type (a string may be null: the samples show unset ones so), and those the parameters
 * call required must be there where the operation's sample carries them (the samples show the
 * base microversion; members required from a later one, `service_uuid` 3.48 say, come only
 * when it is asked for). Error answers are Cinder's fault body `{"<fault>": {code, message}}`.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { SpecRequest, SpecResponse } from "../fake-kit/spec.js";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import type { ServingChecker } from "../fake-kit/vendor-fake.js";

type Json = Record<string, unknown>;

export const CINDER_FILES = {
  parameters: "openstack/cinder/parameters.yaml",
  volumes: "openstack/cinder/volumes-v3-volumes.inc",
} as const;
/** The samples of the operations the fake serves, by rest_method. */
export const CINDER_SAMPLES: Readonly<Record<string, string>> = {
  "GET /v3/{project_id}/volumes/detail":
    "openstack/cinder/samples/volumes/volumes-list-detailed-response.json",
  "GET /v3/{project_id}/volumes/{volume_id}": "openstack/cinder/samples/volumes/volume-show-response.json",
};

interface Param {
  readonly in: string;
  readonly type: string;
  readonly required: boolean;
}
interface Operation {
  readonly name: string;
  readonly method: string;
  readonly pattern: RegExp;
  readonly literal: number;
  readonly request: ReadonlyMap<string, Param>;
  /** Every documented response member (a name documented twice, per microversion, keeps each type). */
  readonly response: ReadonlyMap<string, readonly Param[]>;
  readonly sample?: Json;
}

/** `- name: parameter` lines of a rest_parameters block. */
function paramList(block: string, params: Json): [string, Param][] {
  const out: [string, Param][] = [];
  for (const m of block.matchAll(/^\s+- ([^:\s]+(?::[^:\s]+)?):\s+(\S+)\s*$/gm)) {
    const p = params[m[2] ?? ""] as Json | undefined;
    if (p === undefined) throw new Error(`Cinder api-ref: parameter ${m[2]} is not in parameters.yaml`);
    out.push([
      m[1] ?? "",
      { in: String(p["in"]), type: String(p["type"]), required: p["required"] === true },
    ]);
  }
  return out;
}

export function cinderOperations(): Operation[] {
  const params = parseYaml(readFileSync(fixtureSpecPath(CINDER_FILES.parameters), "utf8")) as Json;
  const inc = readFileSync(fixtureSpecPath(CINDER_FILES.volumes), "utf8");
  const parts = inc.split(/^\.\. rest_method::\s+/m).slice(1);
  return parts.map((part) => {
    const [first = ""] = part.split("\n");
    const [method = "", path = ""] = first.trim().split(/\s+/);
    const name = `${method} ${path}`;
    const at = part.indexOf("Response Parameters");
    const requestBlock = at < 0 ? part : part.slice(0, at);
    const responseBlock = at < 0 ? "" : part.slice(at);
    const response = new Map<string, Param[]>();
    for (const [k, p] of paramList(responseBlock, params)) response.set(k, [...(response.get(k) ?? []), p]);
    const sampleFile = CINDER_SAMPLES[name];
    const segments = path.split("/");
    return {
      name,
      method,
      pattern: new RegExp(`^${segments.map((s) => (/^\{.+\}$/.test(s) ? "[^/]+" : s)).join("/")}$`),
      literal: segments.filter((s) => !s.startsWith("{")).length,
      request: new Map(paramList(requestBlock, params)),
      response,
      ...(sampleFile !== undefined && {
        sample: JSON.parse(readFileSync(fixtureSpecPath(sampleFile), "utf8")) as Json,
      }),
    };
  });
}

function typeOk(type: string, v: unknown): boolean {
  switch (type) {
    case "string":
      return typeof v === "string" || v === null;
    case "integer":
      return Number.isInteger(v);
    case "boolean":
      return typeof v === "boolean";
    case "array":
      return Array.isArray(v);
    case "object":
      return typeof v === "object" && v !== null && !Array.isArray(v);
    default:
      return true;
  }
}

function checkMembers(
  op: Operation,
  where: string,
  got: Json,
  sample: Json | undefined,
  out: string[],
): void {
  for (const [k, v] of Object.entries(got)) {
    const doc = op.response.get(k);
    if (doc === undefined) out.push(`${where}.${k} is not a documented response parameter`);
    else if (!doc.some((p) => typeOk(p.type, v))) out.push(`${where}.${k} is not ${doc[0]?.type}`);
  }
  for (const [k, doc] of op.response)
    if (doc.some((p) => p.required) && sample !== undefined && k in sample && !(k in got))
      out.push(`${where} lacks the required ${k}`);
}

function checkAnswer(op: Operation, body: unknown): string[] {
  const out: string[] = [];
  if (typeof body !== "object" || body === null) return ["the answer is not a JSON object"];
  const sample = op.sample ?? {};
  checkMembers(op, "answer", body as Json, sample, out);
  // The sample's top-level member holds the item or the items.
  for (const [key, s] of Object.entries(sample)) {
    const got = (body as Json)[key];
    const items = Array.isArray(got) ? got : [got];
    const sampleItem = (Array.isArray(s) ? s[0] : s) as Json | undefined;
    items.forEach((item, i) => {
      if (typeof item !== "object" || item === null) out.push(`${key}[${i}] is not an object`);
      else checkMembers(op, Array.isArray(got) ? `${key}[${i}]` : key, item as Json, sampleItem, out);
    });
  }
  return out;
}

/** A Cinder checker over paths below the endpoint (`/v3/{project_id}/...`). */
export function cinderSpecChecker(): ServingChecker {
  const ops = cinderOperations().sort((a, b) => b.literal - a.literal);
  const find = (method: string, path: string) => ops.find((o) => o.method === method && o.pattern.test(path));
  return {
    findOperation: (method, path) => find(method, path),
    checkRequest(req: SpecRequest) {
      const op = find(req.method, req.path);
      if (op === undefined) return { problems: [`Cinder's api-ref has no ${req.method} ${req.path}`] };
      const problems: string[] = [];
      for (const [k, v] of req.query) {
        const p = op.request.get(k);
        if (p === undefined || p.in !== "query") problems.push(`query ${k} is not a documented parameter`);
        else if (p.type === "integer" && !/^\d+$/.test(v)) problems.push(`query ${k}=${v} is not an integer`);
      }
      return { specOperation: op.name, problems };
    },
    checkResponse(req, res: SpecResponse) {
      const op = find(req.method, req.path);
      if (op === undefined) return { problems: [`Cinder's api-ref has no ${req.method} ${req.path}`] };
      if (res.status >= 200 && res.status < 300)
        return { specOperation: op.name, problems: checkAnswer(op, res.body) };
      const fault = Object.values((res.body ?? {}) as Json)[0] as Json | undefined;
      const ok = typeof fault?.["message"] === "string" && fault["code"] === res.status;
      return { specOperation: op.name, problems: ok ? [] : ["an error answer is not Cinder's fault body"] };
    },
  };
}
