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
 * Every call is authenticated with `Authorization: Bearer <api key>`, logged as
 * (account, operation, outcome) in the kit's request log, and passes through the account's rate limit and the
 * fault config in force. List faults (empty answer, dropped items) apply to every list,
 * stale reads and empty answers to every get, lost answers to every change.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { FakeError } from "../fake-kit/errors.js";
import type { FaultConfig, FaultInjector } from "../fake-kit/faults.js";
import { Exchange, Router, readJsonBody } from "../fake-kit/http.js";
import { parsePageSize, parseSeqToken } from "../fake-kit/pagination.js";
import type { RequestLog } from "../fake-kit/request-log.js";
import { type DiskStore, diskRoutes, MAX_DISK_IDS } from "./disks.js";
import type { LbStore } from "./lb-store.js";
import { resourceRoutes } from "./resource-api.js";
import type { RouteStore } from "./route-store.js";
import { type AccountRecord, type CloudStore, type ReadView, SimCloudError } from "./store.js";
import { encodePageToken, simErrorRenderer, toWireInstance } from "./wire.js";

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
  readonly disks: DiskStore;
  readonly log: RequestLog;
  readonly faults: FaultInjector;
  readonly now: () => number;
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
  /** `id=X`, repeatable: only these. */
  readonly ids?: readonly string[];
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
      readonly filters: readonly ListFilter[];
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

type ListFilter = "name" | "tag" | "lb_id" | "id";

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

const ROUTES: readonly ApiRoute[] = [...INSTANCE_ROUTES, ...diskRoutes, ...resourceRoutes];

const ROUTER = new Router<ApiRoute>(ROUTES);

export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  deps: ApiDeps,
): Promise<void> {
  const method = req.method ?? "GET";
  const m = ROUTER.match(method, url.pathname);
  const op = m.kind === "found" ? m.route.op : m.kind === "method" ? m.op : "unknown";
  const ex = new Exchange(
    req,
    res,
    {
      log: deps.log,
      renderer: simErrorRenderer,
      inFlight: deps.inFlight,
      operation: op,
      requestId: deps.nextRequestId(),
      requestIdHeader: "x-request-id",
    },
    UNAUTHENTICATED,
  );

  const account = authenticate(req, deps.store);
  if (account === undefined) {
    ex.fail(
      new FakeError(401, "Unauthorized", "missing or invalid API key", {
        kind: "auth",
        headers: { "www-authenticate": 'Bearer realm="simulated-cloud"' },
      }),
    );
    return;
  }
  ex.account = account.name;
  if (m.kind === "unknown") {
    ex.fail(new FakeError(404, "RouteNotFound", `no route for ${method} ${url.pathname}`));
    return;
  }
  if (m.kind === "method") {
    ex.fail(
      new FakeError(405, "MethodNotAllowed", `${method} is not allowed here`, {
        headers: { allow: m.allow },
      }),
    );
    return;
  }
  const { route } = m;
  const [region = "", ...params] = m.params;
  let body: Record<string, unknown> = {};
  if (route.method === "POST" || route.method === "PATCH") {
    try {
      body = await readApiBody(req);
    } catch (err) {
      if (!(err instanceof FakeError)) throw err;
      ex.fail(err);
      return;
    }
  }
  if (account.suspended) {
    ex.fail(new FakeError(403, "AccountSuspended", `account ${account.name} is suspended`, { kind: "auth" }));
    return;
  }
  const waitMs = account.bucket.take(deps.now());
  if (waitMs > 0) {
    ex.fail(
      new FakeError(
        429,
        "RateLimitExceeded",
        `account rate limit of ${account.rateLimitPerSecond}/s exceeded`,
        {
          kind: "throttled",
          headers: { "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))) },
        },
      ),
    );
    return;
  }

  const faults = deps.faults.config(account.name);
  const injected = await deps.faults.beforeCall(faults, ex.clientGone);
  if (injected.kind === "abandoned") return;
  if (injected.kind === "error") {
    ex.fault = injected.fault;
    ex.fail(injected.error);
    return;
  }

  if (!deps.store.hasRegion(region)) {
    ex.fail(new SimCloudError(400, "InvalidRegion", `unknown region "${region}"`));
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
    if (!(err instanceof FakeError)) throw err;
    ex.fail(err);
  }
}

function authenticate(req: IncomingMessage, store: CloudStore): AccountRecord | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(header.trim());
  return m?.[1] === undefined ? undefined : store.accountByKey(m[1]);
}

async function readApiBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJsonBody(req, MAX_API_BODY_BYTES);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new SimCloudError(400, "InvalidParameter", "request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function answerGet(ex: Exchange, body: unknown, f: FaultConfig, deps: ApiDeps): void {
  if (deps.faults.emptyGet(f)) {
    ex.fault = "empty-get";
    ex.answer(200, {});
    return;
  }
  ex.answer(200, body);
}

function answerList(
  ex: Exchange,
  route: Extract<ApiRoute, { kind: "list" }>,
  call: ApiCall,
  f: FaultConfig,
  deps: ApiDeps,
): void {
  const list = listParams(call.query, route.filters);
  if (deps.faults.emptyList(f)) {
    ex.fault = "empty-list";
    ex.answer(200, { [route.collection]: [] });
    return;
  }
  const page = route.handle(call, list);
  const kept = deps.faults.dropFromList(f, page.items);
  if (kept.length < page.items.length) ex.fault = "dropped-items";
  const body: Record<string, unknown> = { [route.collection]: kept };
  if (page.nextAfterSeq !== undefined) body["next_page_token"] = encodePageToken(page.nextAfterSeq);
  ex.answer(200, body);
}

function answerMutation(
  ex: Exchange,
  result: { status: number; body?: unknown },
  f: FaultConfig,
  deps: ApiDeps,
): void {
  const lost = deps.faults.lostResponse(f);
  if (lost !== undefined) {
    // The change is made; only its answer is lost.
    ex.fault = "lost-response";
    ex.fail(lost);
    return;
  }
  if (result.body === undefined) ex.answer(204, undefined);
  else ex.answer(result.status, result.body);
}

/** Checks paging and filter parameters; throws 400 SimCloudError. */
function listParams(q: URLSearchParams, filters: readonly ListFilter[]): ListParams {
  const name = filters.includes("name") ? (q.get("name") ?? undefined) : undefined;
  if (name === "") throw new SimCloudError(400, "InvalidParameter", "name must not be empty");
  const pageSize = parsePageSize(q.get("page_size"), {
    param: "page_size",
    defaultSize: DEFAULT_PAGE_SIZE,
    max: MAX_PAGE_SIZE,
  });
  const afterSeq = parseSeqToken(q.get("page_token"), "page_token");
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
  const ids = filters.includes("id") && q.has("id") ? q.getAll("id") : undefined;
  if (ids !== undefined && (ids.length > MAX_DISK_IDS || ids.some((i) => i === "")))
    throw new SimCloudError(400, "InvalidParameter", `id takes 1 to ${MAX_DISK_IDS} non-empty values`);
  return {
    pageSize,
    ...(ids !== undefined && { ids }),
    ...(afterSeq !== undefined && { afterSeq }),
    ...(name !== undefined && { name }),
    ...(tags !== undefined && { tags }),
    ...(lbId !== undefined && { lbId }),
  };
}
