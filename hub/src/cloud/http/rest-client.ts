/**
 * One HTTP request to a vendor's REST API, for the providers without an SDK: JSON in and out,
 * the bearer token read per request (credentials rotate from files without a restart), one
 * timeout on the injected clock covering the whole exchange (headers and body), the callers'
 * abort signals, redirects never followed. It throws the errors of ./failures.ts and never
 * retries: the hub's one retry policy does. Rate limits and metrics are the caller's ctx.call;
 * the vendor's rate-limit headers, where it sends them, go to the account's limiter.
 */
import type { Clock } from "../../util/clock.js";
import { CallDeadline } from "../call-deadline.js";
import type { RateBudget } from "../provider.js";
import { HttpBodyError, HttpStatusError, HttpTransportError, type StatusAnswer } from "./failures.js";
import { type ResetMeaning, rateBudgetFrom } from "./rate-headers.js";
import { type AnswerHeaders, Cancel, fetchSend, type Send, undiciSend } from "./send.js";

/** A fetch a client may send with instead of the default transport (./send.ts). */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

export interface RestClientConfig {
  /** Prefix of every path, e.g. https://api.linode.com/v4. */
  readonly baseUrl: string;
  /** Names the API in error messages ("Linode API"). */
  readonly label: string;
  /** The current bearer token, called once per request; never logged. */
  readonly token: () => string;
  /**
   * `none`: no Authorization header; the caller sends its credential in its own header
   * (OpenStack's X-Auth-Token, fetched asynchronously from Keystone). Default `bearer`.
   */
  readonly authorization?: "bearer" | "none";
  readonly userAgent?: string | undefined;
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Builds the error of a non-2xx answer (a vendor reads its error body here). */
  readonly statusError?: (answer: StatusAnswer) => HttpStatusError;
  /** Sends the requests instead of undici's request (./send.ts): one trusting an account's own CA, say. */
  readonly fetch?: Fetch | undefined;
  /**
   * The vendor sends RateLimit-* headers on every answer (refusals too): each answer's budget
   * goes to `report` (the account's limiter, ProviderContext.rateBudget).
   */
  readonly rateHeaders?: {
    readonly reset: ResetMeaning;
    readonly report?: ((b: RateBudget) => void) | undefined;
  };
}

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Query values; an array repeats the parameter, undefined leaves it out. */
export type Query = Readonly<Record<string, string | number | readonly string[] | undefined>>;

export interface RestRequest {
  readonly method: HttpMethod;
  /** Below baseUrl; may carry a query of its own. */
  readonly path: string;
  readonly query?: Query | undefined;
  /** Sent as JSON. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Any of these aborting aborts the request (ctx.call's shutdown signal, the caller's). */
  readonly signals?: readonly (AbortSignal | undefined)[] | undefined;
  /** Given the headers of a 2xx answer (a token the API answers in a header, say). */
  readonly onHeaders?: ((headers: AnswerHeaders) => void) | undefined;
}

export class RestClient {
  private readonly base: string;
  private readonly send: Send;

  constructor(private readonly config: RestClientConfig) {
    this.base = config.baseUrl.replace(/\/+$/, "");
    this.send = config.fetch === undefined ? undiciSend : fetchSend(config.fetch);
  }

  /** The parsed JSON body; undefined for 204 or an empty body. */
  async request(req: RestRequest): Promise<unknown> {
    const { timeoutMs, clock, label } = this.config;
    const path = req.path.split("?")[0] ?? req.path;
    const what = `${label} ${req.method} ${path}`;
    // One cancel for the timeout and the callers' signals.
    const cancel = new Cancel();
    const deadline = new CallDeadline(clock, timeoutMs, req.signals ?? [], (_, reason) =>
      cancel.cancel(reason),
    );
    let status: number;
    let retryAfter: string | undefined;
    let text: string;
    let responseHeaders: AnswerHeaders | undefined;
    try {
      const res = await this.send(this.base + withQuery(req.path, req.query), {
        method: req.method,
        headers: this.headers(req),
        ...(req.body !== undefined && { body: JSON.stringify(req.body) }),
        cancel,
      });
      status = res.status;
      responseHeaders = res.headers;
      retryAfter = res.headers.get("retry-after") ?? undefined;
      this.reportBudget(res.headers);
      text = res.text;
    } catch (err) {
      if (deadline.ended === "timeout")
        throw new HttpTransportError("timeout", `${what}: no answer within ${timeoutMs} ms`, { cause: err });
      if (deadline.ended === "aborted")
        throw new HttpTransportError("aborted", `${what}: request aborted`, { cause: err });
      const code = systemCode(err);
      const detail = code === undefined ? errText(err) : `${errText(err)} (${code})`;
      throw new HttpTransportError("network", `${what}: request failed: ${detail}`, { cause: err, code });
    } finally {
      deadline.dispose();
    }
    if (status < 200 || status > 299) {
      const answer: StatusAnswer = {
        what: `${what}: HTTP ${status}`,
        method: req.method,
        path,
        status,
        retryAfter,
        text,
      };
      throw this.config.statusError?.(answer) ?? new HttpStatusError(status, retryAfter, answer.what);
    }
    if (responseHeaders !== undefined) req.onHeaders?.(responseHeaders);
    if (status === 204 || text === "") return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new HttpBodyError(`${what}: HTTP ${status} with a body that is not JSON`, { cause: err });
    }
  }

  private reportBudget(headers: AnswerHeaders): void {
    const rate = this.config.rateHeaders;
    if (rate?.report === undefined) return;
    const budget = rateBudgetFrom(headers, this.config.clock.now(), rate.reset);
    if (budget !== undefined) rate.report(budget);
  }

  private headers(req: RestRequest): Record<string, string> {
    return {
      accept: "application/json",
      ...(this.config.userAgent !== undefined && { "user-agent": this.config.userAgent }),
      ...(req.body !== undefined && { "content-type": "application/json" }),
      ...req.headers,
      ...(this.config.authorization !== "none" && { authorization: `Bearer ${this.config.token()}` }),
    };
  }
}

/** `path` with `query` appended (after any query the path already has). */
export function withQuery(path: string, query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined) continue;
    if (typeof v === "object") for (const one of v) params.append(k, one);
    else params.set(k, String(v));
  }
  const qs = params.toString();
  if (qs === "") return path;
  return `${path}${path.includes("?") ? "&" : "?"}${qs}`;
}

/**
 * fetch wraps socket failures in TypeError("fetch failed"), the system code on a cause; undici's
 * request has it on the error itself. Duck-typed: fetch's errors come from Node's own realm,
 * where `instanceof Error` may not hold.
 */
function systemCode(err: unknown): string | undefined {
  let e = err as { code?: unknown; cause?: unknown } | null | undefined;
  for (let depth = 0; typeof e === "object" && e !== null && depth < 4; depth++) {
    if (typeof e.code === "string") return e.code;
    e = e.cause as typeof e;
  }
  return undefined;
}

function errText(err: unknown): string {
  const e = err as { message?: unknown; cause?: { message?: unknown } } | null | undefined;
  if (typeof e?.message !== "string") return String(err);
  return typeof e.cause?.message === "string" ? `${e.message}: ${e.cause.message}` : e.message;
}
