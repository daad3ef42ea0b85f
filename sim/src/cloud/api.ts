/**
 * The public API, the one providers call:
 *
 *   GET /v1/regions/{region}/instances/{id}
 *   GET /v1/regions/{region}/instances?name=X&page_size=N&page_token=T
 *
 * Every call is authenticated with `Authorization: Bearer <api key>`, counted as
 * (account, operation, outcome), and passes through the account's rate limit and the
 * fault config in force.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson, sleep } from "./http.js";
import type { RandomSource } from "./random.js";
import type { CallCounter } from "./stats.js";
import type { AccountRecord, CloudStore, ReadView } from "./store.js";
import type { CloudFaultConfig } from "./types.js";
import {
  decodePageToken,
  encodePageToken,
  toWireInstance,
  type WireError,
  type WireInstanceList,
} from "./wire.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;

/** Stats key for calls that never authenticated. */
export const UNAUTHENTICATED = "(unauthenticated)";

export const OPERATIONS = {
  get: "instances.get",
  list: "instances.list",
  unknown: "unknown",
} as const;

export interface ApiDeps {
  readonly store: CloudStore;
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

type Route =
  | { kind: "get"; region: string; id: string }
  | { kind: "list"; region: string }
  | { kind: "unknown" };

const INSTANCE_PATH = /^\/v1\/regions\/([^/]+)\/instances(?:\/([^/]+))?\/?$/;

function route(pathname: string): Route {
  const m = INSTANCE_PATH.exec(pathname);
  const region = m?.[1] === undefined ? undefined : safeDecode(m[1]);
  if (m === null || region === undefined) return { kind: "unknown" };
  if (m[2] === undefined) return { kind: "list", region };
  const id = safeDecode(m[2]);
  return id === undefined ? { kind: "unknown" } : { kind: "get", region, id };
}

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
    if (extra.resource !== undefined) body.error.resource = extra.resource;
    this.answer(status, body, extra.headers);
  }
}

export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  deps: ApiDeps,
): Promise<void> {
  const r = route(url.pathname);
  const ex = new Exchange(res, deps.counter, OPERATIONS[r.kind], deps.nextRequestId(), deps.inFlight);

  const account = authenticate(req, deps.store);
  if (account === undefined) {
    ex.fail(401, "Unauthorized", "missing or invalid API key", {
      headers: { "www-authenticate": 'Bearer realm="simulated-cloud"' },
    });
    return;
  }
  ex.account = account.name;
  if (r.kind === "unknown") {
    ex.fail(404, "RouteNotFound", `no route for ${req.method} ${url.pathname}`);
    return;
  }
  if (req.method !== "GET") {
    ex.fail(405, "MethodNotAllowed", `${req.method} is not allowed here`, { headers: { allow: "GET" } });
    return;
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

  if (!deps.store.hasRegion(r.region)) {
    ex.fail(400, "InvalidRegion", `unknown region "${r.region}"`);
    return;
  }
  const view: ReadView = { nowMs: deps.now(), staleReadMs: faults.staleReadMs };
  if (r.kind === "get") answerGet(ex, account, r.region, r.id, view, faults, deps);
  else answerList(ex, account, r.region, url.searchParams, view, faults, deps);
}

function authenticate(req: IncomingMessage, store: CloudStore): AccountRecord | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(header.trim());
  return m?.[1] === undefined ? undefined : store.accountByKey(m[1]);
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

function answerGet(
  ex: Exchange,
  account: AccountRecord,
  region: string,
  id: string,
  view: ReadView,
  f: CloudFaultConfig,
  deps: ApiDeps,
): void {
  const instance = deps.store.read(account.name, region, id, view);
  if (instance === undefined) {
    ex.fail(404, "NotFound", `instance ${id} not found in region ${region}`, {
      resource: { type: "instance", id },
    });
    return;
  }
  if (chance(f.emptyGetRate, deps.random)) {
    ex.answer(200, {});
    return;
  }
  ex.answer(200, toWireInstance(instance));
}

function answerList(
  ex: Exchange,
  account: AccountRecord,
  region: string,
  params: URLSearchParams,
  view: ReadView,
  f: CloudFaultConfig,
  deps: ApiDeps,
): void {
  const name = params.get("name") ?? undefined;
  if (name === "") {
    ex.fail(400, "InvalidParameter", "name must not be empty");
    return;
  }
  const sizeParam = params.get("page_size");
  let pageSize = DEFAULT_PAGE_SIZE;
  if (sizeParam !== null) {
    const n = Number(sizeParam);
    if (!/^\d+$/.test(sizeParam) || !Number.isSafeInteger(n) || n < 1) {
      ex.fail(400, "InvalidParameter", "page_size must be a positive integer");
      return;
    }
    pageSize = Math.min(n, MAX_PAGE_SIZE);
  }
  const tokenParam = params.get("page_token");
  let afterSeq: number | undefined;
  if (tokenParam !== null && tokenParam !== "") {
    afterSeq = decodePageToken(tokenParam);
    if (afterSeq === undefined) {
      ex.fail(400, "InvalidPageToken", "page_token is not valid");
      return;
    }
  }
  if (chance(f.emptyListRate, deps.random)) {
    ex.answer(200, { instances: [] } satisfies WireInstanceList);
    return;
  }
  const page = deps.store.page(
    {
      account: account.name,
      region,
      pageSize,
      ...(name !== undefined && { name }),
      ...(afterSeq !== undefined && { afterSeq }),
    },
    view,
  );
  const kept =
    f.dropFromListRate > 0
      ? page.instances.filter(() => !chance(f.dropFromListRate, deps.random))
      : page.instances;
  const body: WireInstanceList = { instances: kept.map(toWireInstance) };
  if (page.nextAfterSeq !== undefined) body.next_page_token = encodePageToken(page.nextAfterSeq);
  ex.answer(200, body);
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
