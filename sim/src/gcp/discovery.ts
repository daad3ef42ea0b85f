/**
 * A SpecChecker over a Google API discovery document (the Compute Engine v1 subset in
 * sim/fixtures/gcp/): finds the method by HTTP method and path template, checks path parameters
 * against their patterns, query parameters against the method's and the document's system
 * parameters (types, enums, minimum/maximum, required), the JSON body against the request schema
 * and a 200 answer against the response schema. Discovery documents say nothing of errors, so an
 * error answer is checked against Google's JSON error envelope
 * (`{"error":{"code","message","errors":[{"reason","domain","message"}]}}`).
 */
import { readFileSync } from "node:fs";
import type { SpecChecker, SpecRequest, SpecResponse } from "../fake-kit/spec.js";

type Json = Record<string, unknown>;

interface DiscoveryParam {
  readonly type?: string;
  readonly location?: string;
  readonly required?: boolean;
  readonly pattern?: string;
  readonly enum?: readonly string[];
  readonly minimum?: string;
  readonly maximum?: string;
  readonly format?: string;
  readonly repeated?: boolean;
}

export interface DiscoverySchema {
  readonly type?: string;
  readonly $ref?: string;
  readonly properties?: Readonly<Record<string, DiscoverySchema>>;
  readonly additionalProperties?: DiscoverySchema;
  readonly items?: DiscoverySchema;
  readonly enum?: readonly string[];
  readonly format?: string;
}

interface DiscoveryMethod {
  readonly id: string;
  readonly httpMethod: string;
  readonly path: string;
  readonly parameters?: Readonly<Record<string, DiscoveryParam>>;
  readonly request?: { readonly $ref: string };
  readonly response?: { readonly $ref: string };
}

export interface DiscoveryDocument {
  readonly servicePath: string;
  readonly parameters: Readonly<Record<string, DiscoveryParam>>;
  readonly schemas: Readonly<Record<string, DiscoverySchema>>;
  readonly resources: Readonly<
    Record<string, { readonly methods?: Readonly<Record<string, DiscoveryMethod>> }>
  >;
}

interface CompiledMethod {
  readonly method: DiscoveryMethod;
  readonly regex: RegExp;
  readonly names: readonly string[];
}

/**
 * The query parameter gax's REST transport adds to every call (`$alt=json;enum-encoding=int`):
 * the `$`-prefixed form of the system parameter `alt`, which Google's front end accepts.
 */
const GAX_ALT = "$alt";

export class DiscoveryChecker implements SpecChecker {
  private readonly methods: CompiledMethod[] = [];

  constructor(readonly doc: DiscoveryDocument) {
    for (const resource of Object.values(doc.resources))
      for (const method of Object.values(resource.methods ?? {})) {
        const names: string[] = [];
        const source = `/${doc.servicePath}${method.path}`.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
        const pattern = source.replace(/\\?\{\+?([A-Za-z_]+)\\?\}|\{\+?([A-Za-z_]+)\}/g, (_m, a, b) => {
          names.push(String(a ?? b));
          return "([^/]+)";
        });
        this.methods.push({ method, regex: new RegExp(`^${pattern}$`), names });
      }
  }

  static fromFile(path: string): DiscoveryChecker {
    return new DiscoveryChecker(JSON.parse(readFileSync(path, "utf8")) as DiscoveryDocument);
  }

  /** The discovery method id (`compute.instances.get`) serving a call, if any. */
  findMethod(httpMethod: string, path: string): { id: string; params: Record<string, string> } | undefined {
    const found = this.find(httpMethod, path);
    return found === undefined ? undefined : { id: found.compiled.method.id, params: found.params };
  }

  /** Whether the document has the method (for the fake's start-up check). */
  hasMethod(id: string): boolean {
    return this.methods.some((m) => m.method.id === id);
  }

  checkRequest(request: SpecRequest): { specOperation?: string; problems: string[] } {
    const found = this.find(request.method, request.path);
    if (found === undefined) return { problems: [`no method for ${request.method} ${request.path}`] };
    const { method } = found.compiled;
    const problems: string[] = [];
    const params = method.parameters ?? {};
    for (const [name, value] of Object.entries(found.params)) {
      const p = params[name];
      if (p?.pattern !== undefined && !new RegExp(`^(?:${p.pattern})$`).test(value))
        problems.push(`path parameter ${name}=${value} does not match ${p.pattern}`);
    }
    const seen = new Set<string>();
    for (const [name, value] of request.query) {
      seen.add(name);
      if (name === GAX_ALT) {
        if (!/^json(;enum-encoding=int)?$/.test(value)) problems.push(`${GAX_ALT}=${value}: not a JSON alt`);
        continue;
      }
      const p = params[name] ?? this.doc.parameters[name];
      if (p === undefined || (p.location !== undefined && p.location !== "query")) {
        problems.push(`unknown query parameter ${name}`);
        continue;
      }
      problems.push(...paramProblems(name, value, p));
    }
    for (const [name, p] of Object.entries(params))
      if (p.required && p.location === "query" && !seen.has(name))
        problems.push(`missing query parameter ${name}`);
    if (method.request !== undefined) {
      if (request.body === undefined) problems.push("missing request body");
      else problems.push(...this.valueProblems("body", request.body, { $ref: method.request.$ref }));
    } else if (request.body !== undefined && request.body !== "" && method.httpMethod !== "GET")
      problems.push("the method takes no request body");
    return { specOperation: method.id, problems };
  }

  checkResponse(
    request: { readonly method: string; readonly path: string },
    response: SpecResponse,
  ): { specOperation?: string; problems: string[] } {
    const found = this.find(request.method, request.path);
    if (found === undefined) return { problems: [] }; // the request's problem is reported already
    const { method } = found.compiled;
    if (response.status === 200 && method.response !== undefined)
      return {
        specOperation: method.id,
        problems: this.valueProblems("response", response.body, { $ref: method.response.$ref }),
      };
    if (response.status >= 400)
      return { specOperation: method.id, problems: errorEnvelopeProblems(response) };
    // A method without a response schema answers an empty body ("the response body is empty").
    if ((response.status === 200 || response.status === 204) && method.response === undefined) {
      const b = response.body;
      const empty =
        b === undefined || b === "" || (typeof b === "object" && b !== null && Object.keys(b).length === 0);
      return { specOperation: method.id, problems: empty ? [] : [`${method.id} answers an empty body`] };
    }
    return {
      specOperation: method.id,
      problems: [`status ${response.status} is not an answer of ${method.id}`],
    };
  }

  /** Problems of `value` against `schema` (resolving `$ref`s), each naming its JSON path. */
  valueProblems(at: string, value: unknown, schema: DiscoverySchema): string[] {
    if (schema.$ref !== undefined) {
      const target = this.doc.schemas[schema.$ref];
      if (target === undefined) return [`${at}: schema ${schema.$ref} is not in the document`];
      return this.valueProblems(at, value, target);
    }
    const problems: string[] = [];
    switch (schema.type) {
      case "object": {
        if (typeof value !== "object" || value === null || Array.isArray(value))
          return [`${at}: must be object`];
        for (const [k, v] of Object.entries(value as Json)) {
          const prop = schema.properties?.[k] ?? schema.additionalProperties;
          if (prop === undefined) problems.push(`${at}.${k}: not a property of the schema`);
          else problems.push(...this.valueProblems(`${at}.${k}`, v, prop));
        }
        return problems;
      }
      case "array":
        if (!Array.isArray(value)) return [`${at}: must be array`];
        value.forEach((v, i) => {
          if (schema.items !== undefined)
            problems.push(...this.valueProblems(`${at}[${i}]`, v, schema.items));
        });
        return problems;
      case "string":
        if (typeof value !== "string") return [`${at}: must be string`];
        if (schema.enum !== undefined && !schema.enum.includes(value))
          return [`${at}: ${value} is not one of the enum`];
        if ((schema.format === "int64" || schema.format === "uint64") && !/^-?\d+$/.test(value))
          return [`${at}: must be a ${schema.format} string`];
        return [];
      case "integer":
        return typeof value === "number" && Number.isInteger(value) ? [] : [`${at}: must be integer`];
      case "number":
        return typeof value === "number" ? [] : [`${at}: must be number`];
      case "boolean":
        return typeof value === "boolean" ? [] : [`${at}: must be boolean`];
      default:
        return [];
    }
  }

  private find(httpMethod: string, path: string) {
    for (const compiled of this.methods) {
      if (compiled.method.httpMethod !== httpMethod) continue;
      const m = compiled.regex.exec(path);
      if (m === null) continue;
      const params: Record<string, string> = {};
      compiled.names.forEach((n, i) => {
        params[n] = decodeURIComponent(m[i + 1] ?? "");
      });
      return { compiled, params };
    }
    return undefined;
  }
}

function paramProblems(name: string, value: string, p: DiscoveryParam): string[] {
  switch (p.type) {
    case "integer": {
      if (!/^-?\d+$/.test(value)) return [`query ${name}=${value}: must be integer`];
      const n = Number(value);
      if (p.minimum !== undefined && n < Number(p.minimum))
        return [`query ${name}=${value}: below ${p.minimum}`];
      if (p.maximum !== undefined && n > Number(p.maximum))
        return [`query ${name}=${value}: above ${p.maximum}`];
      return [];
    }
    case "boolean":
      return value === "true" || value === "false" ? [] : [`query ${name}=${value}: must be boolean`];
    default:
      return p.enum !== undefined && !p.enum.includes(value)
        ? [`query ${name}=${value}: not one of the enum`]
        : [];
  }
}

function errorEnvelopeProblems(response: SpecResponse): string[] {
  const body = response.body as { error?: Json } | undefined;
  const e = body?.error;
  if (typeof e !== "object" || e === null) return ["error answer: no error object"];
  const problems: string[] = [];
  if (e.code !== response.status)
    problems.push(`error.code ${String(e.code)} is not the status ${response.status}`);
  if (typeof e.message !== "string") problems.push("error.message: must be string");
  if (!Array.isArray(e.errors) || e.errors.length === 0)
    problems.push("error.errors: must be a non-empty array");
  else
    for (const item of e.errors as Json[])
      if (
        typeof item.reason !== "string" ||
        typeof item.domain !== "string" ||
        typeof item.message !== "string"
      )
        problems.push("error.errors[]: reason, domain and message must be strings");
  return problems;
}
