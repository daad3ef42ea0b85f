/**
 * The botocore models of EC2 (protocol `ec2`), ELB, ELBv2 and STS (protocol `query`), used three
 * ways by the fake: to decode a form request into the operation's input (every parameter
 * checked against the input shape), to render a handler's answer as the protocol's XML (a
 * member the output shape lacks is a bug in the fake, thrown), and, independently of both, to
 * check an XML answer element by element (ModelChecker, the fake's SpecChecker).
 */
import { readFileSync } from "node:fs";
import type { SpecChecker, SpecRequest, SpecResponse } from "../fake-kit/index.js";
import { fixtureSpecPath } from "../fake-kit/index.js";
import { parseXml, type XmlElement } from "./xml.js";

interface Ref {
  readonly shape: string;
  readonly locationName?: string;
  readonly queryName?: string;
  readonly flattened?: boolean;
  readonly xmlAttribute?: boolean;
}

interface Shape {
  readonly type: string;
  /** An error shape: its wire code and HTTP status. */
  readonly exception?: boolean;
  readonly error?: { readonly code?: string; readonly httpStatusCode?: number };
  readonly members?: Readonly<Record<string, Ref>>;
  readonly required?: readonly string[];
  readonly member?: Ref;
  readonly key?: Ref;
  readonly value?: Ref;
  readonly flattened?: boolean;
  readonly enum?: readonly string[];
  readonly min?: number;
  readonly max?: number;
}

interface Operation {
  readonly name: string;
  readonly input?: { readonly shape: string };
  readonly output?: { readonly shape: string; readonly resultWrapper?: string };
}

interface BotocoreModel {
  readonly metadata: {
    readonly protocol: string;
    readonly apiVersion: string;
    readonly xmlNamespace?: string;
  };
  readonly operations: Readonly<Record<string, Operation>>;
  readonly shapes: Readonly<Record<string, Shape>>;
}

export type Protocol = "ec2" | "query";

/** A decoded value: structures are records by member name, lists arrays, scalars typed. */
export type Decoded = { [member: string]: DecodedValue };
export type DecodedValue = string | number | boolean | Date | Decoded | DecodedValue[];

const SCALARS = new Set(["string", "integer", "long", "boolean", "timestamp", "double", "float", "blob"]);

export class AwsModel {
  readonly protocol: Protocol;
  readonly apiVersion: string;
  readonly namespace: string;

  constructor(
    readonly service: string,
    private readonly model: BotocoreModel,
  ) {
    this.protocol = model.metadata.protocol === "ec2" ? "ec2" : "query";
    this.apiVersion = model.metadata.apiVersion;
    // EC2's model omits the trailing slash its answers carry.
    const ns = model.metadata.xmlNamespace ?? "";
    this.namespace = ns.endsWith("/") ? ns : `${ns}/`;
  }

  /** A model from the repository's vendor-spec fixtures (`sim/fixtures/`, by its relative path). */
  static load(service: string, relPath: string): AwsModel {
    return AwsModel.loadFile(service, fixtureSpecPath(relPath));
  }

  static loadFile(service: string, file: string): AwsModel {
    return new AwsModel(service, JSON.parse(readFileSync(file, "utf8")) as BotocoreModel);
  }

  has(operation: string): boolean {
    return this.model.operations[operation] !== undefined;
  }

  /** The HTTP status of a modeled error code (the query services model theirs; EC2 none). */
  errorStatus(code: string): number | undefined {
    this.errorStatuses ??= new Map(
      Object.entries(this.model.shapes).flatMap(([name, s]) =>
        s.exception === true ? [[s.error?.code ?? name, s.error?.httpStatusCode ?? 400] as const] : [],
      ),
    );
    return this.errorStatuses.get(code);
  }
  private errorStatuses: ReadonlyMap<string, number> | undefined;

  private shape(name: string): Shape {
    const s = this.model.shapes[name];
    if (s === undefined) throw new Error(`${this.service}: no shape ${name}`);
    return s;
  }

  // ---- requests --------------------------------------------------------------------------------

  /** The form parameters of `operation` decoded into its input; `problems` lists every parameter the model refuses. */
  decodeRequest(operation: string, params: URLSearchParams): { input: Decoded; problems: string[] } {
    const op = this.model.operations[operation];
    const problems: string[] = [];
    if (op === undefined) return { input: {}, problems: [`no operation ${operation} in ${this.service}`] };
    const tree: Trie = new Map();
    for (const [key, value] of params) {
      if (key === "Action" || key === "Version") continue;
      let node = tree;
      const parts = key.split(".");
      parts.forEach((part, i) => {
        let next = node.get(part);
        if (next === undefined) {
          next = { children: new Map() };
          node.set(part, next);
        }
        if (i === parts.length - 1) next.value = value;
        node = next.children;
      });
    }
    if (op.input === undefined) {
      for (const k of tree.keys()) problems.push(`${k}: ${operation} takes no parameters`);
      return { input: {}, problems };
    }
    const input = this.decodeStructure(this.shape(op.input.shape), tree, "", problems, op.input.shape);
    return { input, problems };
  }

  private memberKey(name: string, ref: Ref): string {
    if (this.protocol === "ec2") {
      if (ref.queryName !== undefined) return ref.queryName;
      if (ref.locationName !== undefined)
        return ref.locationName[0]!.toUpperCase() + ref.locationName.slice(1);
      return name;
    }
    return ref.locationName ?? name;
  }

  private decodeStructure(
    shape: Shape,
    tree: Trie,
    path: string,
    problems: string[],
    shapeName: string,
  ): Decoded {
    const out: Decoded = {};
    const known = new Map<string, [string, Ref]>();
    for (const [name, ref] of Object.entries(shape.members ?? {}))
      known.set(this.memberKey(name, ref), [name, ref]);
    for (const [key, node] of tree) {
      const member = known.get(key);
      if (member === undefined) {
        problems.push(`${path}${key}: not a member of ${shapeName}`);
        continue;
      }
      const [name, ref] = member;
      const v = this.decodeValue(ref, node, `${path}${key}`, problems);
      if (v !== undefined) out[name] = v;
    }
    for (const r of shape.required ?? [])
      if (out[r] === undefined) problems.push(`${path}${r}: required by ${shapeName}`);
    return out;
  }

  private decodeValue(ref: Ref, node: TrieNode, path: string, problems: string[]): DecodedValue | undefined {
    const shape = this.shape(ref.shape);
    if (SCALARS.has(shape.type)) {
      if (node.value === undefined || node.children.size > 0) {
        problems.push(`${path}: ${shape.type} expected`);
        return undefined;
      }
      return decodeScalar(ref.shape, shape, node.value, path, problems);
    }
    if (node.value !== undefined && node.value !== "") problems.push(`${path}: a ${shape.type} has no value`);
    if (shape.type === "structure")
      return this.decodeStructure(shape, node.children, `${path}.`, problems, ref.shape);
    if (shape.type === "list") {
      const member = shape.member!;
      let items = node.children;
      if (this.protocol === "query" && !(shape.flattened ?? false)) {
        const wrap = member.locationName ?? "member";
        const inner = items.get(wrap);
        if (items.size > 0 && (inner === undefined || items.size > 1)) {
          problems.push(`${path}: list items go under ${path}.${wrap}.N`);
          return undefined;
        }
        // An empty list is sent as `Name=` (query protocol).
        items = inner?.children ?? new Map();
        path = `${path}.${wrap}`;
      }
      return indexed(items, path, problems).flatMap(([i, n]) => {
        const v = this.decodeValue(member, n, `${path}.${i}`, problems);
        return v === undefined ? [] : [v];
      });
    }
    if (shape.type === "map") {
      const entries = node.children.get("entry");
      const out: Decoded = {};
      for (const [i, n] of indexed(entries?.children ?? new Map(), `${path}.entry`, problems)) {
        const k = n.children.get(shape.key?.locationName ?? "key")?.value;
        const v = n.children.get(shape.value?.locationName ?? "value");
        if (k === undefined || v === undefined) {
          problems.push(`${path}.entry.${i}: key and value required`);
          continue;
        }
        const value = this.decodeValue(shape.value!, v, `${path}.entry.${i}.value`, problems);
        if (value !== undefined) out[k] = value;
      }
      return out;
    }
    problems.push(`${path}: unsupported shape type ${shape.type}`);
    return undefined;
  }

  // ---- answers ---------------------------------------------------------------------------------

  /**
   * Members of `operation`'s output shape an answer leaves out, as paths (`Subnets[].SubnetArn`):
   * into every structure the answer has, and every item of its lists.
   */
  absentMembers(operation: string, output: Readonly<Record<string, unknown>>): string[] {
    const op = this.model.operations[operation];
    if (op?.output === undefined) return [];
    const out = new Set<string>();
    this.absentIn(this.shape(op.output.shape), output, "", out);
    return [...out];
  }

  private absentIn(shape: Shape, value: unknown, path: string, out: Set<string>): void {
    if (shape.type === "structure") {
      if (typeof value !== "object" || value === null || value instanceof Date) return;
      const record = value as Record<string, unknown>;
      for (const [name, ref] of Object.entries(shape.members ?? {})) {
        const at = path === "" ? name : `${path}.${name}`;
        if (record[name] === undefined) out.add(at);
        else this.absentIn(this.shape(ref.shape), record[name], at, out);
      }
    } else if (shape.type === "list" && Array.isArray(value)) {
      for (const item of value) this.absentIn(this.shape(shape.member!.shape), item, `${path}[]`, out);
    }
  }

  /** The XML answer of `operation` for `output` (member names as in the model). */
  renderResponse(operation: string, output: Readonly<Record<string, unknown>>, requestId: string): string {
    const op = this.model.operations[operation];
    if (op === undefined) throw new Error(`${this.service}: no operation ${operation}`);
    const body =
      op.output === undefined ? "" : this.renderMembers(this.shape(op.output.shape), output, op.output.shape);
    const root = `${operation}Response`;
    const head = `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${this.namespace}">`;
    if (this.protocol === "ec2") return `${head}<requestId>${requestId}</requestId>${body}</${root}>`;
    const wrapper = op.output?.resultWrapper;
    const result = wrapper === undefined ? body : `<${wrapper}>${body}</${wrapper}>`;
    return `${head}${result}<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${root}>`;
  }

  private renderMembers(shape: Shape, value: Readonly<Record<string, unknown>>, shapeName: string): string {
    let xml = "";
    for (const [name, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const ref = shape.members?.[name];
      if (ref === undefined) throw new Error(`${this.service}: ${name} is not a member of ${shapeName}`);
      xml += this.renderValue(ref.locationName ?? name, ref, v);
    }
    return xml;
  }

  private renderValue(element: string, ref: Ref, v: unknown): string {
    const shape = this.shape(ref.shape);
    switch (shape.type) {
      case "structure":
        return `<${element}>${this.renderMembers(shape, v as Record<string, unknown>, ref.shape)}</${element}>`;
      case "list": {
        if (!Array.isArray(v)) throw new Error(`${this.service}: ${element} must be an array`);
        const member = shape.member!;
        if (shape.flattened ?? false)
          return v.map((item) => this.renderValue(member.locationName ?? element, member, item)).join("");
        const itemName = member.locationName ?? (this.protocol === "ec2" ? "item" : "member");
        return `<${element}>${v.map((item) => this.renderValue(itemName, member, item)).join("")}</${element}>`;
      }
      case "map": {
        const entries = Object.entries(v as Record<string, unknown>)
          .map(
            ([k, val]) =>
              `<entry>${this.renderValue(shape.key?.locationName ?? "key", shape.key!, k)}${this.renderValue(
                shape.value?.locationName ?? "value",
                shape.value!,
                val,
              )}</entry>`,
          )
          .join("");
        return `<${element}>${entries}</${element}>`;
      }
      default:
        return `<${element}>${escapeXml(renderScalar(element, shape, v))}</${element}>`;
    }
  }

  // ---- the independent check of an answer ------------------------------------------------------

  /** Every element of an XML answer against the operation's output shape. */
  checkResponseXml(root: XmlElement): string[] {
    const problems: string[] = [];
    const operation = root.name.replace(/Response$/, "");
    const op = this.model.operations[operation];
    if (op === undefined || !root.name.endsWith("Response"))
      return [`<${root.name}>: not the answer of a ${this.service} operation`];
    if (root.attributes.xmlns !== this.namespace)
      problems.push(`<${root.name}>: xmlns ${root.attributes.xmlns} is not ${this.namespace}`);
    let children = root.children;
    if (this.protocol === "ec2") {
      const [first, ...rest] = children;
      if (first?.name !== "requestId") problems.push(`<${root.name}>: requestId must come first`);
      children = rest;
    } else {
      const meta = children.at(-1);
      if (meta?.name !== "ResponseMetadata" || meta.children[0]?.name !== "RequestId")
        problems.push(`<${root.name}>: ResponseMetadata/RequestId must come last`);
      children = children.slice(0, -1);
      const wrapper = op.output?.resultWrapper;
      if (wrapper !== undefined) {
        if (children.length !== 1 || children[0]!.name !== wrapper) {
          problems.push(`<${root.name}>: the result goes in <${wrapper}>`);
          return problems;
        }
        children = children[0]!.children;
      }
    }
    if (op.output === undefined) {
      if (children.length > 0) problems.push(`${operation} has no output`);
      return problems;
    }
    this.checkMembers(this.shape(op.output.shape), op.output.shape, children, `/${root.name}`, problems);
    return problems;
  }

  private checkMembers(
    shape: Shape,
    shapeName: string,
    children: readonly XmlElement[],
    path: string,
    problems: string[],
  ): void {
    const byElement = new Map<string, Ref>();
    for (const [name, ref] of Object.entries(shape.members ?? {})) {
      const s = this.shape(ref.shape);
      const flattenedList = s.type === "list" && (s.flattened ?? false);
      byElement.set(
        flattenedList ? (s.member?.locationName ?? ref.locationName ?? name) : (ref.locationName ?? name),
        ref,
      );
    }
    const seen = new Set<string>();
    for (const child of children) {
      const ref = byElement.get(child.name);
      if (ref === undefined) {
        problems.push(`${path}/${child.name}: not an element of ${shapeName}`);
        continue;
      }
      const s = this.shape(ref.shape);
      const flattenedList = s.type === "list" && (s.flattened ?? false);
      if (seen.has(child.name) && !flattenedList) problems.push(`${path}/${child.name}: repeated`);
      seen.add(child.name);
      if (flattenedList) this.checkElement(s.member!, child, `${path}/${child.name}`, problems);
      else this.checkElement(ref, child, `${path}/${child.name}`, problems);
    }
  }

  private checkElement(ref: Ref, el: XmlElement, path: string, problems: string[]): void {
    const shape = this.shape(ref.shape);
    if (shape.type === "structure") {
      this.checkMembers(shape, ref.shape, el.children, path, problems);
      return;
    }
    if (shape.type === "list") {
      const itemName = shape.member?.locationName ?? (this.protocol === "ec2" ? "item" : "member");
      el.children.forEach((item, i) => {
        if (item.name !== itemName) problems.push(`${path}/${item.name}: list items are <${itemName}>`);
        else this.checkElement(shape.member!, item, `${path}/${itemName}[${i}]`, problems);
      });
      return;
    }
    if (shape.type === "map") {
      for (const entry of el.children) {
        const k = entry.children.find((c) => c.name === (shape.key?.locationName ?? "key"));
        const v = entry.children.find((c) => c.name === (shape.value?.locationName ?? "value"));
        if (entry.name !== "entry" || k === undefined || v === undefined)
          problems.push(`${path}: map entries are <entry><key/><value/></entry>`);
        else this.checkElement(shape.value!, v, `${path}/entry`, problems);
      }
      return;
    }
    if (el.children.length > 0) {
      problems.push(`${path}: ${shape.type} expected, got elements`);
      return;
    }
    decodeScalar(ref.shape, shape, el.text, path, problems);
  }
}

type Trie = Map<string, TrieNode>;
interface TrieNode {
  value?: string;
  children: Trie;
}

/** Children named 1..N in order; a gap or a non-number is a problem. */
function indexed(items: Trie, path: string, problems: string[]): Array<[number, TrieNode]> {
  const out: Array<[number, TrieNode]> = [];
  for (const [k, n] of items) {
    const i = Number(k);
    if (!/^[1-9]\d*$/.test(k)) problems.push(`${path}.${k}: list index expected`);
    else out.push([i, n]);
  }
  out.sort((a, b) => a[0] - b[0]);
  out.forEach(([i], pos) => {
    if (i !== pos + 1) problems.push(`${path}: list indexes must run 1..N (got ${i} at position ${pos + 1})`);
  });
  return out;
}

function decodeScalar(
  name: string,
  shape: Shape,
  raw: string,
  path: string,
  problems: string[],
): DecodedValue | undefined {
  switch (shape.type) {
    case "integer":
    case "long": {
      if (!/^-?\d+$/.test(raw)) {
        problems.push(`${path}: ${name} must be an integer, got "${raw}"`);
        return undefined;
      }
      const n = Number(raw);
      if ((shape.min !== undefined && n < shape.min) || (shape.max !== undefined && n > shape.max))
        problems.push(`${path}: ${n} outside ${shape.min ?? "-inf"}..${shape.max ?? "inf"}`);
      return n;
    }
    case "double":
    case "float":
      if (!Number.isFinite(Number(raw))) problems.push(`${path}: ${name} must be a number`);
      return Number(raw);
    case "boolean":
      if (raw !== "true" && raw !== "false")
        problems.push(`${path}: ${name} must be true or false, got "${raw}"`);
      return raw === "true";
    case "timestamp": {
      const d = new Date(raw);
      if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(raw) || Number.isNaN(d.getTime()))
        problems.push(`${path}: ${name} must be an ISO 8601 UTC timestamp, got "${raw}"`);
      return d;
    }
    default:
      if (shape.enum !== undefined && !shape.enum.includes(raw))
        problems.push(`${path}: "${raw}" is not one of ${name} (${shape.enum.join(", ")})`);
      if (shape.min !== undefined && raw.length < shape.min)
        problems.push(`${path}: shorter than ${shape.min}`);
      if (shape.max !== undefined && raw.length > shape.max)
        problems.push(`${path}: longer than ${shape.max}`);
      return raw;
  }
}

function renderScalar(element: string, shape: Shape, v: unknown): string {
  switch (shape.type) {
    case "integer":
    case "long":
      if (typeof v !== "number" || !Number.isInteger(v)) throw new Error(`${element} must be an integer`);
      return String(v);
    case "boolean":
      if (typeof v !== "boolean") throw new Error(`${element} must be a boolean`);
      return String(v);
    case "timestamp":
      if (!(v instanceof Date)) throw new Error(`${element} must be a Date`);
      return v.toISOString();
    default:
      if (typeof v !== "string" && typeof v !== "number") throw new Error(`${element} must be a string`);
      return String(v);
  }
}

/** EC2's server-side error codes and their statuses (EC2 API reference, "Error codes"). */
const EC2_SERVER_ERRORS: Readonly<Record<string, number>> = {
  InternalError: 500,
  InsufficientInstanceCapacity: 500,
  RequestLimitExceeded: 503,
  Unavailable: 503,
  ServiceUnavailable: 503,
  // The kit's timeout fault: what a gateway answers for a call that never came back.
  GatewayTimeout: 504,
};

/**
 * Errors every query service answers without modeling them (the AWS "Common Errors" page, and
 * STS's and the query services' authentication and throttling answers), with their statuses.
 */
const QUERY_COMMON_ERRORS: Readonly<Record<string, number>> = {
  AccessDenied: 403,
  AccessDeniedException: 400,
  ExpiredToken: 400,
  IncompleteSignature: 400,
  InternalFailure: 500,
  InvalidAction: 400,
  InvalidClientTokenId: 403,
  InvalidParameterCombination: 400,
  InvalidParameterValue: 400,
  InvalidQueryParameter: 400,
  MalformedQueryString: 404,
  MissingAction: 400,
  MissingAuthenticationToken: 403,
  MissingParameter: 400,
  NotAuthorized: 400,
  OptInRequired: 403,
  RequestExpired: 400,
  ServiceUnavailable: 503,
  SignatureDoesNotMatch: 403,
  Throttling: 400,
  ThrottlingException: 400,
  ValidationError: 400,
  GatewayTimeout: 504,
};

export function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * The fake's SpecChecker: requests by Version and Action against the model of that service,
 * answers (success and error envelopes) parsed back from their XML.
 */
export class ModelChecker implements SpecChecker {
  private readonly byVersion: ReadonlyMap<string, AwsModel>;
  private readonly byNamespace: ReadonlyMap<string, AwsModel>;

  constructor(models: readonly AwsModel[]) {
    this.byVersion = new Map(models.map((m) => [m.apiVersion, m]));
    this.byNamespace = new Map(models.map((m) => [m.namespace, m]));
  }

  checkRequest(request: SpecRequest): { specOperation?: string; problems: string[] } {
    const params = request.query;
    const version = params.get("Version") ?? "";
    const action = params.get("Action") ?? "";
    const model = this.byVersion.get(version);
    if (model === undefined) return { problems: [`no model for Version=${version}`] };
    if (request.method !== "POST") return { specOperation: action, problems: [`${action} must be a POST`] };
    return { specOperation: action, problems: model.decodeRequest(action, params).problems };
  }

  checkResponse(
    _request: { readonly method: string; readonly path: string },
    response: SpecResponse,
  ): { specOperation?: string; problems: string[] } {
    if (typeof response.body !== "string") return { problems: ["the answer is not XML text"] };
    let root: XmlElement;
    try {
      root = parseXml(response.body);
    } catch (err) {
      return { problems: [`the answer is not XML: ${(err as Error).message}`] };
    }
    const operation = root.name.replace(/Response$/, "");
    if (root.name === "Response" || root.name === "ErrorResponse")
      return { problems: this.checkErrorEnvelope(root, response.status) };
    if (response.status !== 200)
      return { specOperation: operation, problems: [`a ${response.status} answer carries a result`] };
    const ns = root.attributes.xmlns ?? "";
    const model = this.byNamespace.get(ns);
    if (model === undefined) return { problems: [`no model for xmlns ${ns}`] };
    return { specOperation: operation, problems: model.checkResponseXml(root) };
  }

  /** EC2: <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/>; query: <ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>. */
  private checkErrorEnvelope(root: XmlElement, status: number): string[] {
    const problems: string[] = [];
    if (status < 400) problems.push(`an error envelope with status ${status}`);
    const names = (el: XmlElement | undefined) => el?.children.map((c) => c.name).join(",");
    if (root.name === "Response") {
      if (names(root) !== "Errors,RequestID")
        problems.push(`<Response> holds ${names(root)}, not Errors,RequestID`);
      const error = root.children[0]?.children[0];
      if (error?.name !== "Error" || names(error) !== "Code,Message")
        problems.push("<Errors><Error> holds Code,Message");
      // EC2 models no errors: its server-side codes are 5xx, every other code a 4xx.
      const code = error?.children[0]?.text ?? "";
      const server = EC2_SERVER_ERRORS[code];
      if (status >= 400 && (server !== undefined ? status !== server : status >= 500))
        problems.push(`EC2's ${code} is not a ${status}${server === undefined ? "" : ` (it is ${server})`}`);
    } else {
      const ns = root.attributes.xmlns ?? "";
      const found = this.byNamespace.get(ns);
      const model = found?.protocol === "query" ? found : undefined;
      if (model === undefined) problems.push(`<ErrorResponse>: xmlns ${ns} is not a query service's`);
      if (names(root) !== "Error,RequestId")
        problems.push(`<ErrorResponse> holds ${names(root)}, not Error,RequestId`);
      const error = root.children[0];
      if (names(error) !== "Type,Code,Message") problems.push("<Error> holds Type,Code,Message");
      const type = error?.children[0]?.text;
      if (type !== "Sender" && type !== "Receiver")
        problems.push(`<Type> is Sender or Receiver, not ${type}`);
      const code = error?.children[1]?.text ?? "";
      const expected = model?.errorStatus(code) ?? QUERY_COMMON_ERRORS[code];
      if (model !== undefined && expected === undefined)
        problems.push(`${code} is neither an error of ${model.service}'s model nor a common AWS error`);
      else if (expected !== undefined && expected !== status && status >= 400)
        problems.push(`${code} is a ${expected}, not a ${status}`);
    }
    return problems;
  }
}
