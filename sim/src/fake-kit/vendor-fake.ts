/**
 * The request pipeline of a JSON REST vendor fake, written once. A fake extends VendorFake
 * and gives only what is its vendor's: the token → account lookup, the error renderer and the
 * pipeline's refusals in the vendor's words, its routes, how a list is paged, rate-limit
 * headers, and what it records of mutations. Every call then goes the same way:
 *
 *   match the route → read the JSON body (POST, PUT) → check the request against the spec →
 *   authenticate the Bearer token → refuse an unknown path (404) or method (405) → injected
 *   faults (latency, hang, throttle, 5xx) → the handler → page a list (with the list faults) or
 *   record a mutation and maybe lose its answer → answer (logged once, checked against the spec).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { type ErrorRenderer, FakeError } from "./errors.js";
import { type FaultConfig, FaultInjector } from "./faults.js";
import {
  DEFAULT_MAX_BODY_BYTES,
  Exchange,
  FakeHttpServer,
  type RouteLike,
  Router,
  readJsonBody,
  startFake,
} from "./http.js";
import { seededRandom } from "./random.js";
import { RequestLog } from "./request-log.js";
import { type SpecChecker, type SpecHook, type SpecProblem, specHook } from "./spec.js";

type Json = Record<string, unknown>;

/** What a handler is given. */
export interface VendorCall {
  readonly account: string;
  /** The route pattern's groups, URI-decoded. */
  readonly params: readonly string[];
  /** The path without the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** The JSON body when it is an object, else {}. */
  readonly body: Json;
  readonly nowMs: number;
}

/** A handler's answer: status (default 200) and a JSON body (none for 204). */
export interface VendorAnswer {
  readonly status?: number;
  readonly body?: unknown;
  /** Headers of the answer, over the rate-limit ones: OpenStack's X-Subject-Token, an ETag, an operation to poll. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A list a handler returns instead of an answer; the fake's `page` turns it into one page. */
export interface VendorListing {
  readonly list: readonly unknown[];
}

/** A list answered under a key of the body (`{"droplets": [...], "meta": ...}`), as most JSON APIs do. */
export interface KeyedListing extends VendorListing {
  readonly list: readonly Json[];
  readonly key: string;
}

export interface VendorRoute<L extends VendorListing> extends RouteLike {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  /** A path the route serves, to find its operation in the spec. */
  readonly example: string;
  readonly handle: (c: VendorCall) => VendorAnswer | L;
  /** Served without a token (a token endpoint, such as Keystone's); the call's account is "". */
  readonly anonymous?: boolean;
}

/** The list faults of this call, for `page` to apply where the vendor's paging puts them. */
export interface ListFaults {
  /** No items at all (emptyListRate). */
  empty<T>(items: readonly T[]): readonly T[];
  /** Some items left out of the page (dropFromListRate). */
  drop<T>(items: readonly T[]): readonly T[];
}

/** A mutating call whose handler succeeded, with its body as sent (the request log keeps none). */
export interface VendorMutation {
  readonly account: string;
  readonly operation: string;
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

/** A spec checker that can also say whether it has an operation for a path. */
export interface ServingChecker extends SpecChecker {
  findOperation(method: string, path: string): unknown;
}

export interface VendorFakeConfig {
  /** The vendor's name, in errors about its spec fixture. */
  readonly vendor: string;
  readonly seed?: number;
  readonly now?: () => number;
  /** Check every request and answer against this spec; each route's operation must be in it. */
  readonly spec?: { readonly checker: ServingChecker; readonly fixture: string };
  /** A new account's token when the test names none (the vendor's token format). */
  readonly newToken: (account: string) => string;
  /** What the vendor calls an account (default "account"), in errors of the test controls. */
  readonly accountNoun?: string;
  readonly renderer: ErrorRenderer;
  /** The header carrying the request id in every answer. */
  readonly requestIdHeader: string;
  /** The id of the n-th call (default `req-<n>`). */
  readonly requestId?: (n: number) => string;
  /** The vendor's answers to calls the pipeline refuses before any handler runs. */
  readonly refusals: {
    /** The body is not JSON (or too large). */
    badBody(): FakeError;
    /** No Bearer token, or one of no account. */
    unauthenticated(): FakeError;
    /** No route serves the path. */
    notFound(): FakeError;
    /** Routes serve the path, with other methods (default: notFound). */
    methodNotAllowed?(allow: string): FakeError;
  };
  /** The token a request carries (default: `Authorization: Bearer <token>`; OpenStack's X-Auth-Token). */
  readonly tokenOf?: (headers: IncomingHttpHeaders) => string | undefined;
  /** A POST or PUT without a body has none (default: `{}`), for vendors with body-less PUTs (Neutron's tags). */
  readonly emptyBodyIsNone?: boolean;
  /**
   * Which answers carry `rateHeaders`: `every-answer` (counted as each answer goes, with no
   * account before authentication), or `handled-calls` (counted once a call reaches its
   * handler, on the handler's answers and errors, not on the kit's faults). Default: none.
   */
  readonly rateHeadersOn?: "every-answer" | "handled-calls";
  /** Serve HTTPS with this certificate and key (PEM) instead of plain HTTP. */
  readonly tls?: { readonly cert: string; readonly key: string };
}

const BODY_METHODS = new Set(["POST", "PUT"]);

export abstract class VendorFake<L extends VendorListing> {
  readonly log: RequestLog;
  readonly faults: FaultInjector;
  protected readonly now: () => number;
  protected readonly spec: SpecHook | undefined;
  // ES private fields, so that no name of a fake's own can clash with them.
  readonly #config: VendorFakeConfig;
  readonly #server: FakeHttpServer;
  #router = new Router<VendorRoute<L>>([]);
  /** Account name → its Bearer token. */
  readonly #tokens = new Map<string, string>();
  #requestSeq = 0;

  protected constructor(config: VendorFakeConfig) {
    this.#config = config;
    this.now = config.now ?? Date.now;
    this.log = new RequestLog(this.now);
    this.faults = new FaultInjector(seededRandom(config.seed ?? 1));
    this.spec = config.spec === undefined ? undefined : specHook(config.spec.checker);
    this.#server = new FakeHttpServer((req, res) => this.handle(req, res), undefined, config.tls);
  }

  // ---- the vendor's parts ---------------------------------------------------------------------

  /** Tried in order; built once, when the fake starts. */
  protected abstract routes(): readonly VendorRoute<L>[];
  /** One page of a listing as the vendor answers it (may throw a FakeError for bad paging). */
  protected abstract page(listing: L, call: VendorCall, faults: ListFaults): unknown;
  /** Rate-limit headers for an answer (see `rateHeadersOn`); counting is the fake's. */
  protected rateHeaders(_account: string | undefined, _nowMs: number): Record<string, string> {
    return {};
  }
  /** Called for each mutation whose handler succeeded, before its answer may be lost. */
  protected recordMutation(_mutation: VendorMutation): void {}

  /** The account a Bearer token belongs to: one made by createAccount, by default. */
  protected accountOf(token: string): string | undefined {
    for (const [name, t] of this.#tokens) if (t === token) return name;
    return undefined;
  }

  // ---- start, stop and test controls ---------------------------------------------------------

  /** An account and its Bearer token (a fresh one in the vendor's format unless given). */
  createAccount(name: string, token = this.#config.newToken(name)): { name: string; token: string } {
    this.#tokens.set(name, token);
    return { name, token };
  }

  /** The account's token changes: the old one is refused from now on. */
  rotateToken(account: string, token: string): void {
    if (!this.#tokens.has(account)) throw new Error(`no ${this.#config.accountNoun ?? "account"} ${account}`);
    this.#tokens.set(account, token);
  }

  /** Checks that the spec serves every route, then listens on an ephemeral loopback port. */
  protected listen(at: { readonly port?: number; readonly host?: string } = {}): Promise<this> {
    const routes = this.routes();
    const spec = this.#config.spec;
    if (spec !== undefined) {
      const missing = routes.filter((r) => spec.checker.findOperation(r.method, r.example) === undefined);
      if (missing.length > 0)
        return Promise.reject(
          new Error(
            `the ${this.#config.vendor} spec fixture (${spec.fixture}) has no operation for ${missing.map((r) => `${r.method} ${r.example}`).join(", ")}: ` +
              "add its operationId to scripts/vendor-specs.mjs and run it (sim/fixtures/README.md)",
          ),
        );
    }
    this.#router = new Router(routes);
    return startFake(this, this.#server, at);
  }

  get url(): string {
    return this.#server.url;
  }

  close(): Promise<void> {
    return this.#server.close();
  }

  setFaults(faults: Partial<FaultConfig>, account?: string): void {
    this.faults.set(faults, account);
  }

  resetFaults(): void {
    this.faults.reset();
  }

  /** Every spec problem so far (none when built without a spec). */
  specProblems(): readonly SpecProblem[] {
    return this.spec?.problems() ?? [];
  }

  /** Forgets the spec problems seen so far (a test that sends a bad request on purpose). */
  resetSpecProblems(): void {
    this.spec?.reset();
  }

  assertSpecClean(): void {
    this.spec?.assertClean();
  }

  // ---- the pipeline ---------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const config = this.#config;
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const method = req.method ?? "GET";
    const m = this.#router.match(method, url.pathname);
    const op = m.kind === "found" ? m.route.op : m.kind === "method" ? m.op : "unknown";
    const n = ++this.#requestSeq;
    const ex = new Exchange(req, res, {
      log: this.log,
      renderer: config.renderer,
      inFlight: this.#server.inFlight,
      operation: op,
      requestId: config.requestId?.(n) ?? `req-${n}`,
      requestIdHeader: config.requestIdHeader,
      ...(this.spec !== undefined && { spec: this.spec }),
    });
    let account: string | undefined;
    let handled: Record<string, string> | undefined;
    // The headers an answer carries: `fromHandler` for the handler's own answers and errors.
    const rate = (fromHandler: boolean): Record<string, string> | undefined =>
      config.rateHeadersOn === "every-answer"
        ? this.rateHeaders(account, this.now())
        : fromHandler
          ? handled
          : undefined;
    const fail = (err: FakeError, fromHandler = false): void => ex.fail(withHeaders(err, rate(fromHandler)));

    let body: unknown;
    if (BODY_METHODS.has(method)) {
      try {
        body = await readJsonBody(req, DEFAULT_MAX_BODY_BYTES);
        if (config.emptyBodyIsNone && req.headers["content-length"] === "0") body = undefined;
      } catch (err) {
        if (!(err instanceof FakeError)) throw err;
        fail(config.refusals.badBody());
        return;
      }
    }
    this.spec?.checkRequest(op, {
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      ...(body !== undefined && { body }),
    });
    const token = config.tokenOf
      ? config.tokenOf(req.headers)
      : /^Bearer\s+(\S+)$/i.exec((req.headers.authorization ?? "").trim())?.[1];
    account =
      m.kind === "found" && m.route.anonymous === true
        ? ""
        : token === undefined
          ? undefined
          : this.accountOf(token);
    if (account === undefined) {
      fail(config.refusals.unauthenticated());
      return;
    }
    ex.account = account;
    if (m.kind !== "found") {
      fail(
        m.kind === "method" && config.refusals.methodNotAllowed !== undefined
          ? config.refusals.methodNotAllowed(m.allow)
          : config.refusals.notFound(),
      );
      return;
    }
    const faults = this.faults.config(account);
    const injected = await this.faults.beforeCall(faults, ex.clientGone);
    if (injected.kind === "abandoned") return;
    if (injected.kind === "error") {
      ex.fault = injected.fault;
      fail(injected.error);
      return;
    }
    const nowMs = this.now();
    if (config.rateHeadersOn === "handled-calls") handled = this.rateHeaders(account, nowMs);
    const route = m.route;
    try {
      const call: VendorCall = {
        account,
        params: m.params,
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Json) : {},
        nowMs,
      };
      const result = route.handle(call);
      if ("list" in result) {
        const page = this.page(result, call, listFaults(this.faults, faults, ex));
        ex.answer(200, page, rate(true));
        return;
      }
      if (route.method !== "GET") {
        this.recordMutation({ account, operation: op, method, path: url.pathname, body: body ?? null });
        const lost = this.faults.lostResponse(faults);
        if (lost !== undefined) {
          ex.fault = "lost-response";
          fail(lost);
          return;
        }
      }
      ex.answer(result.status ?? 200, result.body, { ...rate(true), ...result.headers });
    } catch (err) {
      if (!(err instanceof FakeError)) throw err;
      fail(err, true);
    }
  }
}

/** `err` with `headers` under its own. */
function withHeaders(err: FakeError, headers: Record<string, string> | undefined): FakeError {
  if (headers === undefined) return err;
  return new FakeError(err.status, err.code, err.message, {
    ...err.extra,
    headers: { ...headers, ...(err.extra.headers ?? {}) },
  });
}

function listFaults(injector: FaultInjector, config: FaultConfig, ex: Exchange): ListFaults {
  return {
    empty(items) {
      if (!injector.emptyList(config)) return items;
      ex.fault = "empty-list";
      return [];
    },
    drop(items) {
      const kept = injector.dropFromList(config, items);
      if (kept.length < items.length) ex.fault = "dropped-items";
      return kept;
    },
  };
}
