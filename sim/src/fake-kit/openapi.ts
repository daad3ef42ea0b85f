/**
 * An OpenAPI 3 (3.0 and 3.1) spec checker: finds the operation of a request by method and
 * path template, then checks path, query and header parameters, the JSON request body and
 * the JSON answer (status and body, the `default` response included) with Ajv. Request
 * bodies are checked with readOnly properties not required, answers with writeOnly ones
 * not required, as OpenAPI says.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Ajv, ErrorObject, Options, ValidateFunction } from "ajv";
import { parse as parseYaml } from "yaml";
import type { SpecChecker, SpecRequest, SpecResponse } from "./spec.js";

type Json = Record<string, unknown>;

/** A format check: a pattern, a predicate, or `true` (anything goes). */
export type FormatCheck = RegExp | ((value: string) => boolean) | true;

export interface OpenApiOptions {
  /**
   * Format checks over the standard ones (ajv-formats); a format the spec uses that neither
   * knows is not checked (see `uncheckedFormats`). Vendors differ from RFC 3339 (Linode's
   * date-times carry no offset): override here.
   */
  readonly formats?: Readonly<Record<string, FormatCheck>>;
  /** Query parameters every operation accepts although the spec omits them. */
  readonly extraQueryParams?: readonly string[];
}

interface Operation {
  readonly method: string;
  readonly template: string;
  readonly regex: RegExp;
  /** Literal segments first when two templates match. */
  readonly literalLength: number;
  readonly names: readonly string[];
  readonly op: Json;
  readonly pathItem: Json;
  readonly id: string;
}

/** Ajv is loaded on first use: importing the kit costs nothing to processes that never check specs. */
function loadAjv(): {
  Ajv: new (o: Options) => Ajv;
  Ajv2020: new (o: Options) => Ajv;
  addFormats: (a: Ajv) => void;
} {
  const require = createRequire(import.meta.url);
  return {
    Ajv: (require("ajv") as { Ajv: new (o: Options) => Ajv }).Ajv,
    Ajv2020: (require("ajv/dist/2020") as { Ajv2020: new (o: Options) => Ajv }).Ajv2020,
    addFormats: require("ajv-formats") as (a: Ajv) => void,
  };
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const STANDARD_FORMATS = new Set([
  "date",
  "time",
  "date-time",
  "iso-time",
  "iso-date-time",
  "duration",
  "uri",
  "uri-reference",
  "uri-template",
  "url",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "regex",
  "uuid",
  "json-pointer",
  "json-pointer-uri-fragment",
  "relative-json-pointer",
  "byte",
  "int32",
  "int64",
  "float",
  "double",
  "password",
  "binary",
]);

export class OpenApiChecker implements SpecChecker {
  private readonly operations: Operation[] = [];
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  /** Formats the spec names that nothing checks. */
  readonly uncheckedFormats: readonly string[];

  static fromFile(file: string, opts: OpenApiOptions = {}): OpenApiChecker {
    const text = readFileSync(file, "utf8");
    const doc = (file.endsWith(".json") ? JSON.parse(text) : parseYaml(text)) as unknown;
    return new OpenApiChecker(doc, opts);
  }

  constructor(
    private readonly doc: unknown,
    private readonly opts: OpenApiOptions = {},
  ) {
    if (!isObject(doc) || typeof doc["openapi"] !== "string" || !isObject(doc["paths"])) {
      throw new Error("not an OpenAPI 3 document (no `openapi` version or `paths`)");
    }
    const v31 = doc["openapi"].startsWith("3.1");
    const { Ajv: Ajv07, Ajv2020, addFormats } = loadAjv();
    const options: Options = { strict: false, allErrors: true, validateSchema: false };
    this.ajv = v31 ? new Ajv2020(options) : new Ajv07(options);
    addFormats(this.ajv);
    const unchecked: string[] = [];
    for (const name of formatsIn(doc)) {
      const own = opts.formats?.[name];
      if (own !== undefined) this.ajv.addFormat(name, own);
      else if (name === "url") this.ajv.addFormat("url", (s: string) => URL.canParse(s));
      else if (!STANDARD_FORMATS.has(name)) {
        this.ajv.addFormat(name, true);
        unchecked.push(name);
      } else if (name === "int32" || name === "int64" || name === "float" || name === "double")
        this.ajv.addFormat(name, { type: "number", validate: () => true });
    }
    for (const [name, check] of Object.entries(opts.formats ?? {})) {
      if (!unchecked.includes(name)) this.ajv.addFormat(name, check);
    }
    this.uncheckedFormats = unchecked;
    // Two copies of the document: one for requests (readOnly not required), one for answers.
    const base = mergeClosedAllOf(v31 ? doc : nullableToJsonSchema(doc));
    this.ajv.addSchema(relaxRequired(base, "readOnly") as Json, "request");
    this.ajv.addSchema(relaxRequired(base, "writeOnly") as Json, "response");
    for (const [template, item] of Object.entries(doc["paths"])) {
      if (!isObject(item)) continue;
      const names: string[] = [];
      const source = template
        .split("/")
        .map((seg) =>
          seg.replace(/\{([^}]+)\}|[^{]+/g, (m, name: string | undefined) => {
            if (name === undefined) return escapeRegex(m);
            names.push(name);
            return "([^/]+)";
          }),
        )
        .join("/");
      for (const method of METHODS) {
        const op = item[method];
        if (!isObject(op)) continue;
        this.operations.push({
          method: method.toUpperCase(),
          template,
          regex: new RegExp(`^${source}/?$`),
          literalLength: template.replace(/\{[^}]+\}/g, "").length,
          names,
          op,
          pathItem: item,
          id:
            typeof op["operationId"] === "string" ? op["operationId"] : `${method.toUpperCase()} ${template}`,
        });
      }
    }
    this.operations.sort((a, b) => b.literalLength - a.literalLength);
  }

  /** The operation serving `method path`, with its path parameters. */
  findOperation(
    method: string,
    path: string,
  ): { operationId: string; template: string; params: Record<string, string> } | undefined {
    const found = this.find(method, path);
    return found === undefined
      ? undefined
      : { operationId: found.operation.id, template: found.operation.template, params: found.params };
  }

  checkRequest(req: SpecRequest): { specOperation?: string; problems: string[] } {
    const found = this.find(req.method, req.path);
    if (found === undefined) return { problems: [`no operation for ${req.method} ${req.path}`] };
    const { operation, params } = found;
    const problems: string[] = [];
    const declared = this.parameters(operation);
    const queryNames = new Set<string>(this.opts.extraQueryParams ?? []);
    for (const p of declared) {
      const name = String(p["name"]);
      const where = String(p["in"]);
      const schemaPath = p["$path"] as string;
      let raw: string | undefined;
      if (where === "path") raw = params[name];
      else if (where === "query") {
        queryNames.add(name);
        raw = req.query.get(name) ?? undefined;
      } else if (where === "header") {
        const h = req.headers[name.toLowerCase()];
        raw = Array.isArray(h) ? h[0] : h;
      } else continue;
      if (raw === undefined) {
        if (p["required"] === true) problems.push(`${where} parameter ${name} is required`);
        continue;
      }
      if (!isObject(p["schema"])) continue;
      const schema = this.resolve(p["schema"]);
      // A query array as OpenAPI serializes it: style form, repeated keys unless explode is false.
      const value =
        where === "query" && schema["type"] === "array"
          ? p["explode"] === false
            ? raw.split(",")
            : req.query.getAll(name)
          : coerce(raw, schema);
      problems.push(...this.validate("request", `${schemaPath}/schema`, value, `${where} ${name}`));
    }
    for (const key of new Set(req.query.keys())) {
      if (!queryNames.has(key)) problems.push(`query parameter ${key} is not in the spec`);
    }
    const bodyRef = operation.op["requestBody"];
    const body = isObject(bodyRef) ? this.resolve(bodyRef) : undefined;
    const hasBody = req.body !== undefined;
    if (body === undefined) {
      if (hasBody) problems.push("the operation takes no request body");
    } else if (!hasBody) {
      if (body["required"] === true) problems.push("a request body is required");
    } else {
      const schemaPath = jsonSchemaPath(this.pathOf(bodyRef, `${opPointer(operation)}/requestBody`), body);
      if (schemaPath === undefined) problems.push("the spec has no JSON schema for the request body");
      else problems.push(...this.validate("request", schemaPath, req.body, "body"));
    }
    return { specOperation: operation.id, problems };
  }

  checkResponse(
    req: { readonly method: string; readonly path: string },
    res: SpecResponse,
  ): { specOperation?: string; problems: string[] } {
    const found = this.find(req.method, req.path);
    if (found === undefined) return { problems: [`no operation for ${req.method} ${req.path}`] };
    const { operation } = found;
    const responses = isObject(operation.op["responses"]) ? operation.op["responses"] : {};
    const status = String(res.status);
    const key = [status, `${status[0]}XX`, "default"].find((k) => responses[k] !== undefined);
    if (key === undefined) {
      return { specOperation: operation.id, problems: [`status ${status} is not a response of the spec`] };
    }
    const ref = responses[key];
    const response = isObject(ref) ? this.resolve(ref) : {};
    const pointer = this.pathOf(ref, `${opPointer(operation)}/responses/${escapePointer(key)}`);
    const schemaPath = jsonSchemaPath(pointer, response);
    const hasBody = res.body !== undefined && res.body !== "";
    if (schemaPath === undefined) {
      return {
        specOperation: operation.id,
        problems:
          hasBody && !isObject(response["content"]) ? [`status ${status} has no body in the spec`] : [],
      };
    }
    if (!hasBody) return { specOperation: operation.id, problems: [`status ${status} needs a JSON body`] };
    return { specOperation: operation.id, problems: this.validate("response", schemaPath, res.body, "body") };
  }

  private find(
    method: string,
    path: string,
  ): { operation: Operation; params: Record<string, string> } | undefined {
    const m = method.toUpperCase();
    for (const operation of this.operations) {
      if (operation.method !== m) continue;
      const found = operation.regex.exec(path);
      if (found === null) continue;
      const params: Record<string, string> = {};
      operation.names.forEach((name, i) => {
        params[name] = decodeURIComponent(found[i + 1] ?? "");
      });
      return { operation, params };
    }
    return undefined;
  }

  /** Path-item and operation parameters (the operation's win), each with its JSON pointer. */
  private parameters(operation: Operation): Json[] {
    const byKey = new Map<string, Json>();
    const base = `/paths/${escapePointer(operation.template)}`;
    const add = (list: unknown, at: string): void => {
      if (!Array.isArray(list)) return;
      list.forEach((ref: unknown, i) => {
        if (!isObject(ref)) return;
        const p = this.resolve(ref);
        byKey.set(`${String(p["in"])}\0${String(p["name"])}`, {
          ...p,
          $path: this.pathOf(ref, `${at}/${i}`),
        });
      });
    };
    add(operation.pathItem["parameters"], `${base}/parameters`);
    add(operation.op["parameters"], `${base}/${operation.method.toLowerCase()}/parameters`);
    return [...byKey.values()];
  }

  /** Follows a local `$ref` (repeatedly). */
  private resolve(node: Json): Json {
    let current = node;
    for (let i = 0; i < 20 && typeof current["$ref"] === "string"; i++) {
      const target = pointerGet(this.doc, current["$ref"]);
      if (!isObject(target)) throw new Error(`unresolvable $ref ${current["$ref"]}`);
      current = target;
    }
    return current;
  }

  /** The JSON pointer of `node` (its `$ref` target when it is a reference). */
  private pathOf(node: unknown, at: string): string {
    let pointer = at;
    let current = node;
    for (let i = 0; i < 20 && isObject(current) && typeof current["$ref"] === "string"; i++) {
      pointer = current["$ref"].replace(/^#/, "");
      current = pointerGet(this.doc, current["$ref"]);
    }
    return pointer;
  }

  private validate(which: "request" | "response", pointer: string, value: unknown, what: string): string[] {
    const key = `${which}#${pointer.split("/").map(encodeURIComponent).join("/")}`;
    let fn = this.compiled.get(key);
    if (fn === undefined) {
      fn = this.ajv.compile({ $ref: key });
      this.compiled.set(key, fn);
    }
    if (fn(value)) return [];
    return (fn.errors ?? []).map((e) => describeError(what, e));
  }
}

function describeError(what: string, e: ErrorObject): string {
  const at = e.instancePath === "" ? what : `${what}${e.instancePath}`;
  const extra =
    e.keyword === "additionalProperties"
      ? ` (${String((e.params as { additionalProperty?: unknown }).additionalProperty)})`
      : e.keyword === "enum"
        ? ` (${JSON.stringify((e.params as { allowedValues?: unknown }).allowedValues)})`
        : "";
  return `${at}: ${e.message ?? e.keyword}${extra}`;
}

/** The pointer of the JSON schema of a request body or response object at `pointer`. */
function jsonSchemaPath(pointer: string, obj: Json): string | undefined {
  const content = obj["content"];
  if (!isObject(content)) return undefined;
  const type = Object.keys(content).find((t) => /^application\/(.+\+)?json/.test(t) || t === "*/*");
  if (type === undefined || !isObject(content[type]) || content[type]["schema"] === undefined)
    return undefined;
  return `${pointer}/content/${escapePointer(type)}/schema`;
}

function opPointer(operation: Operation): string {
  return `/paths/${escapePointer(operation.template)}/${operation.method.toLowerCase()}`;
}

/** A parameter's string as the schema's type (query strings carry no types). */
function coerce(raw: string, schema: Json): unknown {
  const type = schema["type"];
  if ((type === "integer" || type === "number") && raw.trim() !== "" && !Number.isNaN(Number(raw)))
    return Number(raw);
  if (type === "boolean" && (raw === "true" || raw === "false")) return raw === "true";
  if (
    type === "object" ||
    type === "array" ||
    schema["oneOf"] !== undefined ||
    schema["anyOf"] !== undefined
  ) {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return raw;
    }
  }
  return raw;
}

/** A deep copy in which properties marked `flag` are dropped from `required`. */
function relaxRequired(node: unknown, flag: "readOnly" | "writeOnly"): unknown {
  if (Array.isArray(node)) return node.map((n) => relaxRequired(n, flag));
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = relaxRequired(v, flag);
  const props = node["properties"];
  if (Array.isArray(node["required"]) && isObject(props)) {
    out["required"] = (node["required"] as unknown[]).filter(
      (name) => !(typeof name === "string" && isObject(props[name]) && props[name][flag] === true),
    );
  }
  return out;
}

/**
 * OpenAPI 3.0's `nullable: true` as JSON Schema: `null` joins the type (and the enum), or,
 * without a type, the schema becomes "this or null".
 */
function nullableToJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableToJsonSchema);
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) if (k !== "nullable") out[k] = nullableToJsonSchema(v);
  if (node["nullable"] !== true) return out;
  if (Array.isArray(out["enum"])) out["enum"] = [...(out["enum"] as unknown[]), null];
  if (typeof out["type"] === "string") {
    out["type"] = [out["type"], "null"];
    return out;
  }
  return { anyOf: [out, { type: "null" }] };
}

/**
 * `allOf: [{properties: A, additionalProperties: false}, {properties: B}]` means "A and B"
 * to a spec's authors but fails every body under JSON Schema (each member refuses the other's
 * properties). Inline object members are merged into one schema: properties and `required`
 * united, closed when any member was.
 */
function mergeClosedAllOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(mergeClosedAllOf);
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = mergeClosedAllOf(v);
  const members = out["allOf"];
  if (
    !Array.isArray(members) ||
    !members.some((m) => isObject(m) && m["additionalProperties"] === false) ||
    !members.every((m) => isObject(m) && m["$ref"] === undefined && isObject(m["properties"]))
  ) {
    return out;
  }
  const properties: Json = {};
  const required = new Set<string>();
  let closed = false;
  for (const m of members as Json[]) {
    for (const [k, v] of Object.entries(m["properties"] as Json)) {
      properties[k] = properties[k] === undefined ? v : { allOf: [properties[k], v] };
    }
    if (Array.isArray(m["required"])) for (const r of m["required"]) required.add(String(r));
    if (m["additionalProperties"] === false) closed = true;
  }
  const { allOf: _merged, ...rest } = out;
  return {
    ...rest,
    type: "object",
    properties: { ...(isObject(rest["properties"]) ? rest["properties"] : {}), ...properties },
    ...(required.size > 0 && { required: [...required] }),
    ...(closed && { additionalProperties: false }),
  };
}

function formatsIn(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const n of node) formatsIn(n, out);
  else if (isObject(node)) {
    // Whatever the type: a nullable one is `[t, "null"]` once converted (as Octavia's are).
    if (typeof node["format"] === "string") out.add(node["format"]);
    for (const v of Object.values(node)) formatsIn(v, out);
  }
  return out;
}

function pointerGet(doc: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) throw new Error(`only local $refs are supported: ${ref}`);
  let current = doc;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(current) && !Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function escapePointer(s: string): string {
  return s.replace(/~/g, "~0").replace(/\//g, "~1");
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
