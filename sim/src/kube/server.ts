// HTTP front end of the Kubernetes API server simulator (node:http, plain HTTP).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import type { DeleteOptionsInput } from "./delete-options.js";
import {
  badRequest,
  fieldForbidden,
  fieldNotSupported,
  forbidden,
  internalError,
  invalid,
  KubeApiError,
  methodNotAllowed,
  notAcceptable,
  notFound,
  notFoundRoute,
  requestEntityTooLarge,
  type Status,
  unauthorized,
  unsupportedMediaType,
} from "./errors.js";
import {
  getObject,
  getString,
  isObject,
  type JsonObject,
  type JsonValue,
  parseJson,
  toJson,
} from "./json.js";
import { negotiateOutput } from "./negotiation.js";
import { buildOpenAPI, type OpenAPIDocs } from "./openapi.js";
import { type TableOptions, tableOptions, toTable } from "./printers.js";
import { allows, type RbacOptions, requestVerb } from "./rbac.js";
import {
  ALL_RESOURCES,
  type KindName,
  NODE_PORT_RANGE,
  type NodePortRange,
  type ResourceDef,
  resourceByKind,
  type Subresource,
} from "./resources.js";
import { type FieldValidation, KubeStore, type WriteResult } from "./store.js";
import type { WatchOptions } from "./watch.js";
import { WatchWrites } from "./watch-writes.js";

export interface KubeApiServerOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Listen address, default 127.0.0.1. */
  host?: string;
  /** Number of watch events kept for resuming watches (default 10000). Older resourceVersions get 410 Expired. */
  watchHistory?: number;
  /** If set, every API request must carry `Authorization: Bearer <token>` (else 401). */
  token?: string;
  /** If set, every resource request is authorized as `rbac.user` against `rbac.rules` (else 403). */
  rbac?: RbacOptions;
  /** Artificial latency added before every API request is handled (ms). */
  latencyMs?: number;
  /** Name used for the cluster/user/context in the generated kubeconfig (default "sim"). */
  name?: string;
  /** Reject namespaced creates in namespaces that do not exist (NamespaceLifecycle admission). Default false. */
  requireNamespaces?: boolean;
  /** Remove `orphan`/`foregroundDeletion` finalizers shortly after a delete, like the GC does. Default true. */
  simulateGarbageCollector?: boolean;
  /** Events expire after this many seconds (apiserver --event-ttl, default 3600). 0 disables. */
  eventTTLSeconds?: number;
  /** Interval of BOOKMARK events for watches with allowWatchBookmarks=true (default 60000 ms). */
  bookmarkIntervalMs?: number;
  /** gitVersion reported by /version (default v1.31.0-sim). */
  gitVersion?: string;
  /** kube-apiserver --service-node-port-range (default 30000-32767, 2,768 ports). */
  serviceNodePortRange?: NodePortRange;
}

/** Minimal KubeObjectMeta; other fields are kept as-is. */
export interface KubeObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [key: string]: unknown;
}

/** A Kubernetes object as plain JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: KubeObjectMeta;
  [key: string]: unknown;
}

export interface KubeConfigCluster {
  name: string;
  server: string;
  skipTLSVerify: boolean;
}
export interface KubeConfigUser {
  name: string;
  token?: string;
}
export interface KubeConfigContext {
  name: string;
  cluster: string;
  user: string;
}
export interface KubeConfigOptions {
  clusters: KubeConfigCluster[];
  users: KubeConfigUser[];
  contexts: KubeConfigContext[];
  currentContext: string;
}

export type KubePatchType = "json" | "merge" | "strategic";

export interface KubeApiServer {
  /** e.g. http://127.0.0.1:40123 */
  readonly url: string;
  readonly port: number;
  /** Ready for `new KubeConfig().loadFromOptions(...)` (skipTLSVerify: true). */
  kubeConfigOptions(): KubeConfigOptions;
  /** The same as kubeconfig file text. */
  kubeconfigYaml(): string;
  create(kind: KindName, obj: object): KubeObject;
  get(kind: KindName, namespace: string | undefined, name: string): KubeObject | undefined;
  list(kind: KindName, namespace?: string): KubeObject[];
  /** Like PUT (unconditional when metadata.resourceVersion is empty). */
  update(kind: KindName, obj: object): KubeObject;
  /** Like PUT on /status. */
  updateStatus(kind: KindName, obj: object): KubeObject;
  /** Like PATCH (type json | merge | strategic), optionally on /status. */
  patch(
    kind: KindName,
    namespace: string | undefined,
    name: string,
    type: KubePatchType,
    patch: unknown,
    subresource?: "status",
  ): KubeObject;
  /** Like DELETE (finalizers are honoured; throws KubeApiError 404 if missing). */
  delete(kind: KindName, namespace: string | undefined, name: string, options?: DeleteOptionsInput): void;
  /** HTTP requests served (all, or one method such as "PATCH"). */
  requestCount(method?: string): number;
  /** Current global resourceVersion. */
  resourceVersion(): string;
  /** Number of open watch streams. */
  watchCount(): number;
  /** Changes the artificial latency. */
  setLatencyMs(ms: number): void;
  /** Ends every open watch stream cleanly (clients re-watch from their last resourceVersion). */
  closeWatches(): void;
  /** Ends open watches and closes the server. */
  close(): Promise<void>;
}

const MAX_BODY = 3 * 1024 * 1024;
const JSON_HEADERS = { "Content-Type": "application/json", "Cache-Control": "no-cache, private" } as const;
const BODY_MEDIA_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];

const PATCH_CONTENT_TYPES: Record<KubePatchType, string> = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

interface ResourceRoute {
  def: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  sub: Subresource;
  watchPath: boolean;
}

type Route =
  | { type: "resource"; route: ResourceRoute }
  | { type: "json"; body: JsonValue }
  | { type: "notFoundStatus" }
  | { type: "notFoundText" };

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * A boolean query parameter as apimachinery's Convert_Slice_string_To_bool reads it: absent → unset;
 * "false" (any case) or "0" → false; any other value, the empty string included → true.
 */
export function boolParam(v: string | null): boolean | undefined {
  if (v === null) return undefined;
  const lower = v.toLowerCase();
  return !(lower === "false" || v === "0");
}

function intParam(name: string, v: string | null): number | undefined {
  if (v === null || v === "") return undefined;
  if (!/^-?\d+$/.test(v))
    throw badRequest(`${name}: strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  return Number(v);
}

function strParam(v: string | null): string | undefined {
  return v === null || v === "" ? undefined : v;
}

function verbsFor(def: ResourceDef): string[] {
  return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"].filter(
    (v) => def.kind !== "Namespace" || v !== "deletecollection",
  );
}

function apiResourceList(groupVersion: string, defs: readonly ResourceDef[]): JsonObject {
  const resources: JsonValue[] = [];
  for (const d of defs) {
    const r: JsonObject = {
      name: d.plural,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: verbsFor(d),
    };
    if (d.shortNames.length > 0) r["shortNames"] = [...d.shortNames];
    // `kubectl get all` expands the "all" category from discovery.
    if (d.kind === "Pod" || d.kind === "Service") r["categories"] = ["all"];
    resources.push(r);
    if (d.hasStatus) {
      resources.push({
        name: `${d.plural}/status`,
        singularName: "",
        namespaced: d.namespaced,
        kind: d.kind,
        verbs: ["get", "patch", "update"],
      });
    }
  }
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion, resources };
}

class SimServer implements KubeApiServer {
  readonly store: KubeStore;
  private server: Server | undefined;
  url = "";
  port = 0;
  private latencyMs: number;
  private readonly counts = new Map<string, number>();
  private total = 0;
  private readonly name: string;
  private readonly watchWrites = new WatchWrites();

  constructor(private readonly opts: KubeApiServerOptions) {
    this.latencyMs = opts.latencyMs ?? 0;
    this.name = opts.name ?? "sim";
    this.store = new KubeStore({
      watchHistory: opts.watchHistory ?? 10000,
      requireNamespaces: opts.requireNamespaces ?? false,
      simulateGarbageCollector: opts.simulateGarbageCollector ?? true,
      eventTTLSeconds: opts.eventTTLSeconds ?? 3600,
      futureResourceVersionWaitMs: 3000,
      nodePortRange: opts.serviceNodePortRange ?? NODE_PORT_RANGE,
    });
    for (const ns of ["default", "kube-system", "kube-public", "kube-node-lease"]) {
      this.store.create(resourceByKind("Namespace"), undefined, { metadata: { name: ns } });
    }
    // The Service kube-apiserver's controller keeps in every cluster, on the range's first address.
    this.store.create(resourceByKind("Service"), "default", {
      metadata: { name: "kubernetes", labels: { component: "apiserver", provider: "kubernetes" } },
      spec: {
        type: "ClusterIP",
        clusterIP: "10.96.0.1",
        ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: 6443 }],
      },
    });
  }

  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        this.sendError(res, e);
      });
    });
    server.keepAliveTimeout = 30_000;
    this.server = server;
    const host = this.opts.host ?? "127.0.0.1";
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.opts.port ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const addr = server.address() as AddressInfo;
    this.port = addr.port;
    const shownHost = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host;
    this.url = `http://${shownHost}:${addr.port}`;
  }

  // -------------------------------------------------------------------------------------------
  // Public API

  kubeConfigOptions(): KubeConfigOptions {
    const user: KubeConfigUser = { name: this.name };
    if (this.opts.token !== undefined) user.token = this.opts.token;
    return {
      clusters: [{ name: this.name, server: this.url, skipTLSVerify: true }],
      users: [user],
      contexts: [{ name: this.name, cluster: this.name, user: this.name }],
      currentContext: this.name,
    };
  }

  kubeconfigYaml(): string {
    const user: Record<string, string> = {};
    if (this.opts.token !== undefined) user["token"] = this.opts.token;
    return stringifyYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: this.name, cluster: { server: this.url, "insecure-skip-tls-verify": true } }],
      users: [{ name: this.name, user }],
      contexts: [{ name: this.name, context: { cluster: this.name, user: this.name } }],
      "current-context": this.name,
    });
  }

  private static parse(r: WriteResult | string): KubeObject {
    const text = typeof r === "string" ? r : r.json;
    return JSON.parse(text) as KubeObject;
  }

  private static metaOf(obj: JsonValue): { namespace: string | undefined; name: string } {
    const m = isObject(obj) && isObject(obj["metadata"]) ? obj["metadata"] : {};
    return { namespace: getString(m, "namespace"), name: getString(m, "name") ?? "" };
  }

  create(kind: KindName, obj: object): KubeObject {
    const def = resourceByKind(kind);
    const body = toJson(obj);
    const { namespace } = SimServer.metaOf(body);
    return SimServer.parse(
      this.store.create(def, def.namespaced ? (namespace ?? "default") : undefined, body),
    );
  }

  get(kind: KindName, namespace: string | undefined, name: string): KubeObject | undefined {
    const def = resourceByKind(kind);
    const e = this.store.get(def, def.namespaced ? (namespace ?? "default") : undefined, name);
    return e === undefined ? undefined : SimServer.parse(e.json);
  }

  list(kind: KindName, namespace?: string): KubeObject[] {
    const def = resourceByKind(kind);
    return this.store
      .entries(def, def.namespaced ? namespace : undefined)
      .map((e) => SimServer.parse(e.json));
  }

  private put(kind: KindName, obj: object, sub: Subresource): KubeObject {
    const def = resourceByKind(kind);
    const body = toJson(obj);
    const { namespace, name } = SimServer.metaOf(body);
    const ns = def.namespaced ? (namespace ?? "default") : undefined;
    return SimServer.parse(this.store.update(def, ns, name, body, sub));
  }

  update(kind: KindName, obj: object): KubeObject {
    return this.put(kind, obj, "");
  }

  updateStatus(kind: KindName, obj: object): KubeObject {
    return this.put(kind, obj, "status");
  }

  patch(
    kind: KindName,
    namespace: string | undefined,
    name: string,
    type: KubePatchType,
    patch: unknown,
    subresource?: "status",
  ): KubeObject {
    const def = resourceByKind(kind);
    const ns = def.namespaced ? (namespace ?? "default") : undefined;
    const text = JSON.stringify(patch) ?? "null";
    return SimServer.parse(
      this.store.patch(
        def,
        ns,
        name,
        PATCH_CONTENT_TYPES[type],
        text,
        subresource === "status" ? "status" : "",
      ),
    );
  }

  delete(
    kind: KindName,
    namespace: string | undefined,
    name: string,
    options: DeleteOptionsInput = {},
  ): void {
    const def = resourceByKind(kind);
    this.store.delete(def, def.namespaced ? (namespace ?? "default") : undefined, name, options);
  }

  requestCount(method?: string): number {
    if (method === undefined) return this.total;
    return this.counts.get(method.toUpperCase()) ?? 0;
  }

  resourceVersion(): string {
    return String(this.store.resourceVersion);
  }

  watchCount(): number {
    return this.store.watcherCount();
  }

  setLatencyMs(ms: number): void {
    this.latencyMs = ms;
  }

  closeWatches(): void {
    this.store.closeAllWatchers();
  }

  async close(): Promise<void> {
    this.store.close();
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  // -------------------------------------------------------------------------------------------
  // HTTP

  private sendJson(res: ServerResponse, code: number, body: string, warnings: readonly string[] = []): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (warnings.length > 0) {
      // RFC 7234 warn-code 299 with a quoted text, one header per warning, as k8s.io/apiserver's warning recorder.
      res.setHeader(
        "Warning",
        warnings.map((w) => `299 - ${JSON.stringify(w)}`),
      );
    }
    res.writeHead(code, { ...JSON_HEADERS, "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  }

  private writeResult(res: ServerResponse, r: WriteResult): void {
    this.sendJson(res, r.code, r.json, r.warnings);
  }

  private fieldValidation(q: URLSearchParams, optionsKind: string): FieldValidation | undefined {
    const v = q.get("fieldValidation");
    if (v === null || v === "") return undefined;
    if (v === "Ignore" || v === "Warn" || v === "Strict") return v;
    throw invalid("meta.k8s.io", optionsKind, "", [
      fieldNotSupported("fieldValidation", v, ["", "Ignore", "Strict", "Warn"]),
    ]);
  }

  private sendStatus(res: ServerResponse, s: Status): void {
    const headers: Record<string, string | number> = { ...JSON_HEADERS };
    const retry = s.details?.retryAfterSeconds;
    if (retry !== undefined && retry > 0) headers["Retry-After"] = retry;
    const body = JSON.stringify(s);
    if (res.headersSent) {
      res.end();
      return;
    }
    headers["Content-Length"] = Buffer.byteLength(body);
    res.writeHead(s.code ?? 500, headers);
    res.end(body);
  }

  private sendError(res: ServerResponse, e: unknown): void {
    if (e instanceof KubeApiError) {
      this.sendStatus(res, e.status);
      return;
    }
    const msg = e instanceof Error ? e.message : String(e);
    this.sendStatus(res, internalError(msg).status);
  }

  private async readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > MAX_BODY) throw requestEntityTooLarge(`Request entity too large: limit is ${MAX_BODY}`);
      chunks.push(b);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  private decodeBody(req: IncomingMessage, text: string): JsonValue {
    const ct = (req.headers["content-type"] ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? "";
    if (ct === "application/yaml" || ct === "application/x-yaml" || ct === "text/yaml") {
      try {
        return toJson(parseYaml(text));
      } catch (e) {
        throw badRequest(
          `couldn't get version/kind; json parse error: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    }
    if (ct !== "application/json" && ct !== "" && ct !== "*/*") throw unsupportedMediaType(BODY_MEDIA_TYPES);
    if (text.trim() === "") throw badRequest("Object 'Kind' is missing in ''");
    try {
      return parseJson(text);
    } catch (e) {
      throw badRequest(
        `couldn't get version/kind; json parse error: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  private route(pathname: string): Route {
    let segs: string[];
    try {
      segs = pathname
        .split("/")
        .filter((s) => s !== "")
        .map((s) => decodeURIComponent(s));
    } catch {
      return { type: "notFoundText" };
    }
    let groupVersion: string;
    let rest: string[];
    if (segs[0] === "api") {
      if (segs.length === 1) {
        return {
          type: "json",
          body: {
            kind: "APIVersions",
            versions: ["v1"],
            serverAddressByClientCIDRs: [
              { clientCIDR: "0.0.0.0/0", serverAddress: this.url.replace(/^http:\/\//, "") },
            ],
          },
        };
      }
      if (segs[1] !== "v1") return { type: "notFoundText" };
      groupVersion = "v1";
      rest = segs.slice(2);
    } else if (segs[0] === "apis") {
      const groups = [...new Set(ALL_RESOURCES.filter((d) => d.group !== "").map((d) => d.group))];
      const groupDoc = (g: string): JsonObject => ({
        name: g,
        versions: [{ groupVersion: `${g}/v1`, version: "v1" }],
        preferredVersion: { groupVersion: `${g}/v1`, version: "v1" },
      });
      if (segs.length === 1) {
        return {
          type: "json",
          body: { kind: "APIGroupList", apiVersion: "v1", groups: groups.map(groupDoc) },
        };
      }
      const g = segs[1] ?? "";
      if (!groups.includes(g)) return { type: "notFoundText" };
      if (segs.length === 2)
        return { type: "json", body: { kind: "APIGroup", apiVersion: "v1", ...groupDoc(g) } };
      if (segs[2] !== "v1") return { type: "notFoundText" };
      groupVersion = `${g}/v1`;
      rest = segs.slice(3);
    } else {
      return { type: "notFoundText" };
    }
    const defs = ALL_RESOURCES.filter((d) => d.apiVersion === groupVersion);
    if (rest.length === 0) return { type: "json", body: apiResourceList(groupVersion, defs) };
    let watchPath = false;
    if (rest[0] === "watch") {
      watchPath = true;
      rest = rest.slice(1);
    }
    const byPlural = (p: string | undefined): ResourceDef | undefined => defs.find((d) => d.plural === p);
    let def: ResourceDef | undefined;
    let namespace: string | undefined;
    let name: string | undefined;
    let subName: string | undefined;
    let extra: string[] = [];
    const nsDef = rest[0] === "namespaces" && rest.length >= 3 ? byPlural(rest[2]) : undefined;
    if (nsDef?.namespaced) {
      def = nsDef;
      namespace = rest[1];
      name = rest[3];
      subName = rest[4];
      extra = rest.slice(5);
    } else {
      def = byPlural(rest[0]);
      name = rest[1];
      subName = rest[2];
      extra = rest.slice(3);
      if (def?.namespaced && name !== undefined) return { type: "notFoundStatus" };
    }
    if (def === undefined || extra.length > 0) return { type: "notFoundStatus" };
    let sub: Subresource = "";
    if (subName !== undefined) {
      if (subName !== "status" || !def.hasStatus || watchPath) return { type: "notFoundStatus" };
      sub = "status";
    }
    return { type: "resource", route: { def, namespace, name, sub, watchPath } };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? "GET").toUpperCase();
    this.total++;
    this.counts.set(method, (this.counts.get(method) ?? 0) + 1);
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;
    if (/^\/(healthz|livez|readyz)(\/.*)?$/.test(path)) {
      res.writeHead(200, {
        "Content-Type": "text/plain; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
      });
      res.end("ok");
      return;
    }
    if (path === "/version" || path === "/version/") {
      const gitVersion = this.opts.gitVersion ?? "v1.31.0-sim";
      const m = /^v(\d+)\.(\d+)/.exec(gitVersion);
      this.sendJson(
        res,
        200,
        JSON.stringify({
          major: m?.[1] ?? "1",
          minor: m?.[2] ?? "31",
          gitVersion,
          gitCommit: "0000000000000000000000000000000000000000",
          gitTreeState: "clean",
          buildDate: "2026-01-01T00:00:00Z",
          goVersion: "go1.22.0",
          compiler: "gc",
          platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}`,
        }),
      );
      return;
    }
    if (this.opts.token !== undefined && req.headers.authorization !== `Bearer ${this.opts.token}`) {
      this.sendStatus(res, unauthorized().status);
      return;
    }
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    if (path === "/openapi/v2" || path.startsWith("/openapi/v3")) {
      this.serveOpenAPI(req, res, method, path);
      return;
    }
    const r = this.route(path);
    if (r.type === "notFoundText") {
      res.writeHead(404, {
        "Content-Type": "text/plain; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
      });
      res.end("404 page not found\n");
      return;
    }
    if (r.type === "notFoundStatus") {
      this.sendStatus(res, notFoundRoute().status);
      return;
    }
    if (r.type === "json") {
      if (method !== "GET") throw methodNotAllowed();
      this.sendJson(res, 200, JSON.stringify(r.body));
      return;
    }
    await this.handleResource(req, res, method, url.searchParams, r.route);
  }

  private openapi: OpenAPIDocs | undefined;

  private serveOpenAPI(req: IncomingMessage, res: ServerResponse, method: string, path: string): void {
    if (method !== "GET") throw methodNotAllowed();
    this.openapi ??= buildOpenAPI(this.opts.gitVersion ?? "v1.31.0-sim");
    const docs = this.openapi;
    if (path === "/openapi/v2") {
      // client-go asks for the protobuf form only; JSON is served to whoever accepts it.
      const accept = req.headers.accept ?? "";
      if (accept !== "" && !/application\/json|\*\/\*|application\/\*/.test(accept)) {
        throw notAcceptable("only the following media types are accepted: application/json");
      }
      this.sendJson(res, 200, docs.v2);
      return;
    }
    const rest = path.replace(/^\/openapi\/v3\/?/, "");
    const body = rest === "" ? docs.index : docs.groupVersions.get(rest);
    if (body === undefined) {
      res.writeHead(404, {
        "Content-Type": "text/plain; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
      });
      res.end("404 page not found\n");
      return;
    }
    this.sendJson(res, 200, body);
  }

  private listOptions(q: URLSearchParams, rt: ResourceRoute): WatchOptions {
    return {
      namespace: rt.namespace,
      labelSelector: strParam(q.get("labelSelector")),
      fieldSelector: strParam(q.get("fieldSelector")),
      limit: intParam("limit", q.get("limit")),
      continue: strParam(q.get("continue")),
      resourceVersion: strParam(q.get("resourceVersion")),
      resourceVersionMatch: strParam(q.get("resourceVersionMatch")),
      sendInitialEvents: boolParam(q.get("sendInitialEvents")),
      allowWatchBookmarks: boolParam(q.get("allowWatchBookmarks")),
    };
  }

  private dryRun(q: URLSearchParams, optionsKind: string): boolean {
    const values = q.getAll("dryRun");
    if (values.length === 0) return false;
    for (const v of values) {
      if (v !== "All")
        throw invalid("meta.k8s.io", optionsKind, "", [fieldNotSupported("dryRun", v, ["All"])]);
    }
    return true;
  }

  private async handleResource(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    q: URLSearchParams,
    rt: ResourceRoute,
  ): Promise<void> {
    const { def } = rt;
    const ns = def.namespaced ? rt.namespace : undefined;
    const rbac = this.opts.rbac;
    if (rbac !== undefined) {
      const watch = rt.watchPath || (method === "GET" && boolParam(q.get("watch")) === true);
      const verb = requestVerb(method, rt.name !== undefined, watch);
      const attrs = { verb, group: def.group, resource: def.plural, subresource: rt.sub, name: rt.name };
      if (!allows(rbac.rules, attrs))
        throw forbidden(rbac.user, verb, { group: def.group, resource: def.plural }, rt.sub, rt.name, ns);
    }
    let table: TableOptions | undefined;
    if (method === "GET") {
      const form = negotiateOutput(req.headers.accept);
      if (form.table !== undefined) table = tableOptions(form.table, q.get("includeObject"));
    }
    if (rt.name === undefined) {
      // collection
      const isWatch = rt.watchPath || boolParam(q.get("watch")) === true;
      if (method === "GET") {
        const o = this.listOptions(q, rt);
        if (isWatch) {
          this.serveWatch(res, def, o, q, table);
          return;
        }
        this.store.validateListOptions(o);
        const target = this.store.listWaitTarget(o);
        if (target !== undefined) await this.store.waitForResourceVersion(target, 3000);
        const body = this.store.list(def, o);
        this.sendJson(res, 200, table === undefined ? body : SimServer.listAsTable(def, body, table));
        return;
      }
      if (rt.watchPath) throw methodNotAllowed();
      if (method === "POST") {
        if (def.namespaced && rt.namespace === undefined) throw methodNotAllowed();
        const dry = this.dryRun(q, "CreateOptions");
        const fieldValidation = this.fieldValidation(q, "CreateOptions");
        const body = this.decodeBody(req, await this.readBody(req));
        this.writeResult(res, this.store.create(def, ns, body, { dryRun: dry, fieldValidation }));
        return;
      }
      if (method === "DELETE") {
        const opts = await this.deleteOptions(req, q);
        const o = this.listOptions(q, rt);
        this.sendJson(res, 200, this.store.deleteCollection(def, o, opts));
        return;
      }
      throw methodNotAllowed();
    }
    const name = rt.name;
    if (rt.watchPath) {
      if (method !== "GET") throw methodNotAllowed();
      const o = this.listOptions(q, rt);
      const selector = `metadata.name=${name.replace(/\\/g, "\\\\").replace(/,/g, "\\,").replace(/=/g, "\\=")}`;
      o.fieldSelector = o.fieldSelector ? `${o.fieldSelector},${selector}` : selector;
      this.serveWatch(res, def, o, q, table);
      return;
    }
    switch (method) {
      case "GET": {
        const e = this.store.get(def, ns, name);
        if (e === undefined) throw notFound({ group: def.group, resource: def.plural }, name);
        if (table === undefined) {
          this.sendJson(res, 200, e.json);
          return;
        }
        const obj = SimServer.parseObjectText(e.json);
        const t = toTable(def, [obj], { resourceVersion: String(e.rv) }, table);
        this.sendJson(res, 200, JSON.stringify(t));
        return;
      }
      case "PUT": {
        const dry = this.dryRun(q, "UpdateOptions");
        const fieldValidation = this.fieldValidation(q, "UpdateOptions");
        const body = this.decodeBody(req, await this.readBody(req));
        this.writeResult(
          res,
          this.store.update(def, ns, name, body, rt.sub, { dryRun: dry, fieldValidation }),
        );
        return;
      }
      case "PATCH": {
        const dry = this.dryRun(q, "PatchOptions");
        if (q.has("force")) {
          throw invalid("meta.k8s.io", "PatchOptions", "", [
            fieldForbidden("force", "may not be specified for non-apply patch"),
          ]);
        }
        const text = await this.readBody(req);
        const fieldValidation = this.fieldValidation(q, "PatchOptions");
        const r = this.store.patch(def, ns, name, req.headers["content-type"] ?? "", text, rt.sub, {
          dryRun: dry,
          fieldValidation,
        });
        this.writeResult(res, r);
        return;
      }
      case "DELETE": {
        if (rt.sub !== "") throw methodNotAllowed();
        const opts = await this.deleteOptions(req, q);
        const r = this.store.delete(def, ns, name, opts);
        this.sendJson(res, r.code, r.json);
        return;
      }
      default:
        throw methodNotAllowed();
    }
  }

  private async deleteOptions(req: IncomingMessage, q: URLSearchParams): Promise<DeleteOptionsInput> {
    const text = await this.readBody(req);
    const opts: DeleteOptionsInput = {};
    if (text.trim() !== "") {
      let body: JsonValue;
      try {
        body = parseJson(text);
      } catch (e) {
        throw badRequest(
          `couldn't get version/kind; json parse error: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
      if (!isObject(body)) throw badRequest("DeleteOptions must be a JSON object");
      const pre = body["preconditions"];
      if (isObject(pre)) {
        opts.preconditions = {
          uid: typeof pre["uid"] === "string" ? pre["uid"] : undefined,
          resourceVersion: typeof pre["resourceVersion"] === "string" ? pre["resourceVersion"] : undefined,
        };
      }
      const pp = body["propagationPolicy"];
      if (typeof pp === "string") opts.propagationPolicy = pp;
      const od = body["orphanDependents"];
      if (typeof od === "boolean") opts.orphanDependents = od;
      const gps = body["gracePeriodSeconds"];
      if (typeof gps === "number") opts.gracePeriodSeconds = gps;
      const dr = body["dryRun"];
      if (Array.isArray(dr) && dr.length > 0) {
        for (const v of dr) {
          if (v !== "All")
            throw invalid("meta.k8s.io", "DeleteOptions", "", [fieldNotSupported("dryRun", v, ["All"])]);
        }
        opts.dryRun = true;
      }
    } else {
      const pp = strParam(q.get("propagationPolicy"));
      if (pp !== undefined) opts.propagationPolicy = pp;
      const od = boolParam(q.get("orphanDependents"));
      if (od !== undefined) opts.orphanDependents = od;
      const gps = intParam("gracePeriodSeconds", q.get("gracePeriodSeconds"));
      if (gps !== undefined) opts.gracePeriodSeconds = gps;
      const uid = strParam(q.get("preconditions.uid"));
      const rv = strParam(q.get("preconditions.resourceVersion"));
      if (uid !== undefined || rv !== undefined) opts.preconditions = { uid, resourceVersion: rv };
      if (this.dryRun(q, "DeleteOptions")) opts.dryRun = true;
    }
    return opts;
  }

  private static parseObjectText(text: string): JsonObject {
    const v = parseJson(text);
    if (!isObject(v)) throw internalError("stored object is not an object");
    return v;
  }

  private static listAsTable(def: ResourceDef, listBody: string, opts: TableOptions): string {
    const list = SimServer.parseObjectText(listBody);
    const items = Array.isArray(list["items"]) ? list["items"].filter(isObject) : [];
    return JSON.stringify(toTable(def, items, getObject(list, "metadata") ?? {}, opts));
  }

  /** A watch event line with its object turned into a one-row Table (column definitions only in the first). */
  private static watchLineAsTable(def: ResourceDef, line: string, opts: TableOptions): string {
    const ev = SimServer.parseObjectText(line);
    const type = ev["type"];
    const obj = ev["object"];
    if ((type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED") || !isObject(obj)) return line;
    const rv = getString(getObject(obj, "metadata"), "resourceVersion") ?? "";
    const t = toTable(def, [obj], { resourceVersion: rv }, opts);
    opts.noHeaders = true;
    return `${JSON.stringify({ type, object: t })}\n`;
  }

  private serveWatch(
    res: ServerResponse,
    def: ResourceDef,
    o: WatchOptions,
    q: URLSearchParams,
    table: TableOptions | undefined,
  ): void {
    const plan = this.store.planWatch(def, o);
    const timeoutSeconds = intParam("timeoutSeconds", q.get("timeoutSeconds"));
    res.writeHead(200, { ...JSON_HEADERS, "Transfer-Encoding": "chunked" });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    const sink = this.watchWrites.sink(res, (line) =>
      table === undefined ? line : SimServer.watchLineAsTable(def, line, table),
    );
    const w = this.store.startWatch(plan, sink);
    if (w === undefined) return;
    res.on("close", () => w.close());
    const seconds =
      timeoutSeconds !== undefined && timeoutSeconds > 0
        ? timeoutSeconds
        : 1800 + Math.floor(Math.random() * 1800);
    const t = setTimeout(() => w.close(), seconds * 1000);
    t.unref();
    w.addTimer(t);
    if (plan.allowBookmarks) {
      const every = this.opts.bookmarkIntervalMs ?? 60_000;
      const interval = setInterval(() => w.bookmark(this.store.resourceVersion, false), every);
      interval.unref();
      w.addTimer(interval);
    }
  }
}

export async function startKubeApiServer(opts: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const s = new SimServer(opts);
  await s.listen();
  return s;
}
