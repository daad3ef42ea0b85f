/**
 * The public API, the one providers call (snake_case JSON, see wire.ts):
 *
 *   GET    /v1/regions/{region}/instances/{id}
 *   GET    /v1/regions/{region}/instances?name=X&page_size=N&page_token=T
 *
 *   GET    /v1/regions/{region}/{collection}?name=X&tag=k=v&tag=...&lb_id=L&page_size=N&page_token=T
 *   POST   /v1/regions/{region}/{collection}                  → 201 the resource
 *   GET    /v1/regions/{region}/{collection}/{id}
 *   PATCH  /v1/regions/{region}/{collection}/{id}             → 200 the resource
 *   DELETE /v1/regions/{region}/{collection}/{id}             → 204
 *     collection: load-balancers | listeners | pools | health-checks | firewall-rules
 *     (load balancers cannot filter on lb_id; health checks neither)
 *
 *   GET    /v1/regions/{region}/networks
 *   GET    /v1/regions/{region}/networks/{network}/routes?tag=k=v&page_size=N&page_token=T
 *   POST   /v1/regions/{region}/networks/{network}/routes     → 201 the route
 *   GET    /v1/regions/{region}/networks/{network}/routes/{id}
 *   DELETE /v1/regions/{region}/networks/{network}/routes/{id} → 204
 *
 * Every call is authenticated with `Authorization: Bearer <api key>`, counted as
 * (account, operation, outcome), and passes through the account's rate limit and the
 * fault config in force. List faults (empty answer, dropped items) apply to every list,
 * stale reads and empty answers to every get, lost answers to every change.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readJsonBody, sendJson, sleep } from "./http.js";
import type { LbStore } from "./lb-store.js";
import type { RandomSource } from "./random.js";
import { resourceRoutes } from "./resource-api.js";
import type { RouteStore } from "./route-store.js";
import type { CallCounter } from "./stats.js";
import { type AccountRecord, type CloudStore, type ReadView, SimCloudError } from "./store.js";
import type { CloudFaultConfig } from "./types.js";
import { decodePageToken, encodePageToken, toWireInstance, type WireError } from "./wire.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
/** Public API bodies are small. */
const MAX_API_BODY_BYTES = 1024 * 1024;

/** Stats key for calls that never authenticated. */
export const UNAUTHENTICATED = "(unauthenticated)";

export interface ApiDeps {
  readonly store: CloudStore;
  readonly lbs: LbStore;
  readonly routes: RouteStore;
  readonly counter: CallCounter;
  readonly random: RandomSource;
  readonly now: () => number;
  faultsFor(account: string): CloudFaultConfig;
  /**
   * Calls in flight; close() aborts them all, so every pending latency or hang ends at once.
   * (A set rather than AbortSignal.any over one long-lived signal, which retains a little
   * memory per call on Node 20.)
   */
  readonly inFlight: Set<AbortController>;
  nextRequestId(): string;
}

/** What a handler gets: the caller's account, the path parameters after the region, and so on. */
export interface ApiCall {
  readonly account: AccountRecord;
  readonly region: string;
  /** Path parameters after the region. */
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  /** The JSON object body of a POST or PATCH; {} otherwise. */
  readonly body: Record<string, unknown>;
  readonly view: ReadView;
  readonly deps: ApiDeps;
}

/** Paging and filters of a list call, checked before the handler runs. */
export interface ListParams {
  readonly pageSize: number;
  readonly afterSeq?: number;
  readonly name?: string;
  /** `tag=k=v`, repeatable: all must match. */
  readonly tags?: Readonly<Record<string, string>>;
  readonly lbId?: string;
}

export interface ListAnswer {
  readonly items: readonly unknown[];
  readonly nextAfterSeq?: number;
}

export type ApiRoute =
  | {
      readonly method: "GET";
      readonly pattern: RegExp;
      readonly op: string;
      readonly kind: "get";
      /** The wire body; throws SimCloudError (404) when absent. */
      handle(c: ApiCall): unknown;
    }
  | {
      readonly method: "GET";
      readonly pattern: RegExp;
      readonly op: string;
      readonly kind: "list";
      /** The answer's array field, e.g. "instances". */
      readonly collection: string;
      /** Query parameters this list accepts beyond page_size and page_token. */
      readonly filters: readonly ("name" | "tag" | "lb_id")[];
      handle(c: ApiCall, list: ListParams): ListAnswer;
    }
  | {
      readonly method: "POST" | "PATCH" | "DELETE";
      readonly pattern: RegExp;
      readonly op: string;
      readonly kind: "mutate";
      /** The wire body of a 200/201; undefined answers 204. */
      handle(c: ApiCall): { status: number; body?: unknown };
    };

const INSTANCE_ROUTES: readonly ApiRoute[] = [
  {
    method: "GET",
    pattern: /^\/v1\/regions\/([^/]+)\/instances\/?$/,
    op: "instances.list",
    kind: "list",
    collection: "instances",
    filters: ["name"],
    handle: ({ deps, account, region, view }, list) => {
      const page = deps.store.page(
        {
          account: account.name,
          region,
          pageSize: list.pageSize,
          ...(list.name !== undefined && { name: list.name }),
          ...(list.afterSeq !== undefined && { afterSeq: list.afterSeq }),
        },
        view,
      );
      return {
        items: page.instances.map(toWireInstance),
        ...(page.nextAfterSeq !== undefined && { nextAfterSeq: page.nextAfterSeq }),
      };
    },
  },
  {
    method: "GET",
    pattern: /^\/v1\/regions\/([^/]+)\/instances\/([^/]+)\/?$/,
    op: "instances.get",
    kind: "get",
    handle: ({ deps, account, region, params, view }) => {
      const id = params[0] ?? "";
      const instance = deps.store.read(account.name, region, id, view);
      if (instance === undefined) {
        throw new SimCloudError(404, "NotFound", `instance ${id} not found in region ${region}`, {
          type: "instance",
          id,
        });
      }
      return toWireInstance(instance);
    },
  },
];

const ROUTES: readonly ApiRoute[] = [...INSTANCE_ROUTES, ...resourceRoutes];

/** One answer per call: records the outcome exactly once and writes unless the client left. */
class Exchange {
  private done = false;
  /** Aborts when the client leaves or the cloud closes. */
  readonly clientGone: AbortSignal;
  account = UNAUTHENTICATED;

  constructor(
    private readonly res: ServerResponse,
    private readonly counter: CallCounter,
    readonly operation: string,
    readonly requestId: string,
    inFlight: Set<AbortController>,
  ) {
    const gone = new AbortController();
    inFlight.add(gone);
    res.on("close", () => {
      inFlight.delete(gone);
      if (!res.writableFinished) gone.abort();
      if (!this.done) {
        this.done = true;
        this.counter.record(this.account, this.operation, "aborted");
      }
    });
    this.clientGone = gone.signal;
  }

  answer(status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (this.done) return;
    this.done = true;
    this.counter.record(this.account, this.operation, String(status));
    sendJson(this.res, status, body, { "x-request-id": this.requestId, ...headers });
  }

  fail(
    status: number,
    code: string,
    message: string,
    extra: { headers?: Record<string, string>; resource?: { type: string; id: string } } = {},
  ): void {
    const body: WireError = { error: { code, message, request_id: this.requestId } };
    if (extra.resource !== undefined) body.error.resource = { ...extra.resource };
    this.answer(status, body, extra.headers);
  }
}

type Match =
  | { kind: "found"; route: ApiRoute; region: string; params: string[] }
  | { kind: "method"; op: string; allow: string }
  | { kind: "unknown" };

function match(method: string, pathname: string): Match {
  let pathOp: string | undefined;
  const allow: string[] = [];
  for (const route of ROUTES) {
    const m = route.pattern.exec(pathname);
    if (m === null) continue;
    const decoded = m.slice(1).map((p) => safeDecode(p ?? ""));
    const [region, ...params] = decoded;
    if (region === undefined || decoded.some((p) => p === undefined)) return { kind: "unknown" };
    pathOp ??= route.op;
    allow.push(route.method);
    if (route.method === method) return { kind: "found", route, region, params: params as string[] };
  }
  return pathOp === undefined ? { kind: "unknown" } : { kind: "method", op: pathOp, allow: allow.join(", ") };
}

export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  deps: ApiDeps,
): Promise<void> {
  const method = req.method ?? "GET";
  const m = match(method, url.pathname);
  const op = m.kind === "found" ? m.route.op : m.kind === "method" ? m.op : "unknown";
  const ex = new Exchange(res, deps.counter, op, deps.nextRequestId(), deps.inFlight);

  const account = authenticate(req, deps.store);
  if (account === undefined) {
    ex.fail(401, "Unauthorized", "missing or invalid API key", {
      headers: { "www-authenticate": 'Bearer realm="simulated-cloud"' },
    });
    return;
  }
  ex.account = account.name;
  if (m.kind === "unknown") {
    ex.fail(404, "RouteNotFound", `no route for ${method} ${url.pathname}`);
    return;
  }
  if (m.kind === "method") {
    ex.fail(405, "MethodNotAllowed", `${method} is not allowed here`, { headers: { allow: m.allow } });
    return;
  }
  const { route, region, params } = m;
  let body: Record<string, unknown> = {};
  if (route.method === "POST" || route.method === "PATCH") {
    try {
      body = await readApiBody(req);
    } catch (err) {
      if (!(err instanceof SimCloudError)) throw err;
      ex.fail(err.status, err.code, err.message);
      return;
    }
  }
  if (account.suspended) {
    ex.fail(403, "AccountSuspended", `account ${account.name} is suspended`);
    return;
  }
  const waitMs = account.bucket.take(deps.now());
  if (waitMs > 0) {
    ex.fail(429, "RateLimitExceeded", `account rate limit of ${account.rateLimitPerSecond}/s exceeded`, {
      headers: { "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))) },
    });
    return;
  }

  const faults = deps.faultsFor(account.name);
  if (!(await injectCallFaults(ex, faults, deps))) return;

  if (!deps.store.hasRegion(region)) {
    ex.fail(400, "InvalidRegion", `unknown region "${region}"`);
    return;
  }
  const call: ApiCall = {
    account,
    region,
    params,
    query: url.searchParams,
    body,
    view: { nowMs: deps.now(), staleReadMs: faults.staleReadMs },
    deps,
  };
  try {
    switch (route.kind) {
      case "get":
        answerGet(ex, route.handle(call), faults, deps);
        return;
      case "list":
        answerList(ex, route, call, faults, deps);
        return;
      case "mutate":
        answerMutation(ex, route.handle(call), faults, deps);
        return;
    }
  } catch (err) {
    if (!(err instanceof SimCloudError)) throw err;
    ex.fail(err.status, err.code, err.message, err.resource === undefined ? {} : { resource: err.resource });
  }
}

function authenticate(req: IncomingMessage, store: CloudStore): AccountRecord | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(header.trim());
  return m?.[1] === undefined ? undefined : store.accountByKey(m[1]);
}

async function readApiBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > MAX_API_BODY_BYTES)
    throw new SimCloudError(413, "PayloadTooLarge", "request body too large");
  const body = await readJsonBody(req);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new SimCloudError(400, "InvalidParameter", "request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function chance(rate: number, random: RandomSource): boolean {
  return rate > 0 && random.next() < rate;
}

/** Latency, hang, throttle, error. Returns false when the call has been answered (or abandoned). */
async function injectCallFaults(ex: Exchange, f: CloudFaultConfig, deps: ApiDeps): Promise<boolean> {
  const delayMs = f.latencyMs + (f.latencyJitterMs > 0 ? deps.random.next() * f.latencyJitterMs : 0);
  if (delayMs > 0 && !(await sleep(delayMs, ex.clientGone))) return false;
  if (chance(f.timeoutRate, deps.random)) {
    if (await sleep(f.timeoutHangMs, ex.clientGone)) {
      ex.fail(504, "GatewayTimeout", "the request timed out upstream");
    }
    return false;
  }
  if (chance(f.throttleRate, deps.random)) {
    ex.fail(429, "Throttling", "rate exceeded", {
      headers: { "retry-after": String(f.throttleRetryAfterSeconds) },
    });
    return false;
  }
  if (chance(f.errorRate, deps.random)) {
    if (deps.random.next() < 0.5) {
      ex.fail(500, "InternalError", "an internal error occurred");
    } else {
      const headers: Record<string, string> =
        deps.random.next() < 0.5 ? { "retry-after": String(f.errorRetryAfterSeconds) } : {};
      ex.fail(503, "ServiceUnavailable", "the service is temporarily unavailable", { headers });
    }
    return false;
  }
  return true;
}

function answerGet(ex: Exchange, body: unknown, f: CloudFaultConfig, deps: ApiDeps): void {
  if (chance(f.emptyGetRate, deps.random)) {
    ex.answer(200, {});
    return;
  }
  ex.answer(200, body);
}

function answerList(
  ex: Exchange,
  route: Extract<ApiRoute, { kind: "list" }>,
  call: ApiCall,
  f: CloudFaultConfig,
  deps: ApiDeps,
): void {
  const list = listParams(call.query, route.filters);
  if (chance(f.emptyListRate, deps.random)) {
    ex.answer(200, { [route.collection]: [] });
    return;
  }
  const page = route.handle(call, list);
  const kept =
    f.dropFromListRate > 0 ? page.items.filter(() => !chance(f.dropFromListRate, deps.random)) : page.items;
  const body: Record<string, unknown> = { [route.collection]: kept };
  if (page.nextAfterSeq !== undefined) body["next_page_token"] = encodePageToken(page.nextAfterSeq);
  ex.answer(200, body);
}

function answerMutation(
  ex: Exchange,
  result: { status: number; body?: unknown },
  f: CloudFaultConfig,
  deps: ApiDeps,
): void {
  if (chance(f.lostResponseRate, deps.random)) {
    // The change is made; only its answer is lost.
    ex.fail(504, "GatewayTimeout", "the request timed out upstream");
    return;
  }
  if (result.body === undefined) ex.answer(204, undefined);
  else ex.answer(result.status, result.body);
}

/** Checks paging and filter parameters; throws 400 SimCloudError. */
function listParams(q: URLSearchParams, filters: readonly ("name" | "tag" | "lb_id")[]): ListParams {
  const name = filters.includes("name") ? (q.get("name") ?? undefined) : undefined;
  if (name === "") throw new SimCloudError(400, "InvalidParameter", "name must not be empty");
  const sizeParam = q.get("page_size");
  let pageSize = DEFAULT_PAGE_SIZE;
  if (sizeParam !== null) {
    const n = Number(sizeParam);
    if (!/^\d+$/.test(sizeParam) || !Number.isSafeInteger(n) || n < 1) {
      throw new SimCloudError(400, "InvalidParameter", "page_size must be a positive integer");
    }
    pageSize = Math.min(n, MAX_PAGE_SIZE);
  }
  const tokenParam = q.get("page_token");
  let afterSeq: number | undefined;
  if (tokenParam !== null && tokenParam !== "") {
    afterSeq = decodePageToken(tokenParam);
    if (afterSeq === undefined) throw new SimCloudError(400, "InvalidPageToken", "page_token is not valid");
  }
  let tags: Record<string, string> | undefined;
  if (filters.includes("tag")) {
    for (const t of q.getAll("tag")) {
      const eq = t.indexOf("=");
      if (eq <= 0)
        throw new SimCloudError(400, "InvalidParameter", `tag filter ${JSON.stringify(t)} is not k=v`);
      const key = t.slice(0, eq);
      const value = t.slice(eq + 1);
      tags ??= {};
      if (tags[key] !== undefined && tags[key] !== value) {
        throw new SimCloudError(400, "InvalidParameter", `tag filter ${key} given with two values`);
      }
      tags[key] = value;
    }
  }
  const lbId = filters.includes("lb_id") ? (q.get("lb_id") ?? undefined) : undefined;
  if (lbId === "") throw new SimCloudError(400, "InvalidParameter", "lb_id must not be empty");
  return {
    pageSize,
    ...(afterSeq !== undefined && { afterSeq }),
    ...(name !== undefined && { name }),
    ...(tags !== undefined && { tags }),
    ...(lbId !== undefined && { lbId }),
  };
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
