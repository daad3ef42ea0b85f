/**
 * A small Linode API v4 client of our own: one per account (its token, re-read per request so
 * it rotates without a restart; its base URL; its timeout). Every HTTP request is one
 * `ctx.call` (the hub's rate limiter, metrics and shutdown signal); lists follow every page.
 * It throws the contract errors of ../../errors.ts (see toContractError) and never retries:
 * the hub's one retry policy does, honouring Retry-After.
 */
import type { Clock } from "../../../util/clock.js";
import type { CloudCallWrapper } from "../../provider.js";
import { LinodeApiError, LinodeTransportError, toContractError } from "./errors.js";

export const DEFAULT_LINODE_URL = "https://api.linode.com";
/** Linode's page sizes run from 25 to 500. */
export const MAX_PAGE_SIZE = 500;
export const MIN_PAGE_SIZE = 25;

export interface LinodeClientConfig {
  /** API base without the version, e.g. https://api.linode.com or a fake's URL. */
  readonly endpoint: string;
  /** The current token (read per request); never logged. */
  readonly token: () => string;
  readonly requestTimeoutMs: number;
  readonly clock: Clock;
  readonly call: CloudCallWrapper;
  /** Items per list page (25..500). */
  readonly pageSize?: number;
}

/** Linode's page envelope. */
export interface LinodePage<T> {
  readonly data: readonly T[];
  readonly page: number;
  readonly pages: number;
  readonly results: number;
}

/** An X-Filter object (https://techdocs.akamai.com/linode-api/reference/filtering-and-sorting). */
export type LinodeFilter = Readonly<Record<string, unknown>>;

export interface RequestOptions {
  readonly signal?: AbortSignal | undefined;
  readonly filter?: LinodeFilter | undefined;
}

type Method = "GET" | "POST" | "PUT" | "DELETE";

export class LinodeClient {
  private readonly base: string;
  readonly pageSize: number;

  constructor(private readonly config: LinodeClientConfig) {
    this.base = `${config.endpoint.replace(/\/+$/, "")}/v4`;
    const size = config.pageSize ?? MAX_PAGE_SIZE;
    if (!Number.isInteger(size) || size < MIN_PAGE_SIZE || size > MAX_PAGE_SIZE)
      throw new Error(`Linode page size must be ${MIN_PAGE_SIZE}..${MAX_PAGE_SIZE}, got ${size}`);
    this.pageSize = size;
  }

  get<T>(op: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>(op, "GET", path, undefined, opts);
  }

  post<T>(op: string, path: string, body: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>(op, "POST", path, body, opts);
  }

  put<T>(op: string, path: string, body: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>(op, "PUT", path, body, opts);
  }

  async delete(op: string, path: string, opts: RequestOptions = {}): Promise<void> {
    await this.request<unknown>(op, "DELETE", path, undefined, opts);
  }

  /** One page (from 1) of a list. */
  page<T>(op: string, path: string, page: number, opts: RequestOptions = {}): Promise<LinodePage<T>> {
    const sep = path.includes("?") ? "&" : "?";
    return this.request<LinodePage<T>>(
      op,
      "GET",
      `${path}${sep}page=${page}&page_size=${this.pageSize}`,
      undefined,
      opts,
    ).then((p) => checkPage(p, page, path));
  }

  /** A list the spec gives no paging parameters: its one page. */
  async unpaged<T>(op: string, path: string, opts: RequestOptions = {}): Promise<T[]> {
    const p = await this.request<LinodePage<T>>(op, "GET", path, undefined, opts);
    return [...checkPage(p, 1, path).data];
  }

  /** Every item of a list: page 1, then pages 2..pages (one call each). */
  async list<T>(op: string, path: string, opts: RequestOptions = {}): Promise<T[]> {
    const first = await this.page<T>(op, path, 1, opts);
    const items = [...first.data];
    for (let p = 2; p <= first.pages; p++) items.push(...(await this.page<T>(op, path, p, opts)).data);
    return items;
  }

  private request<T>(
    op: string,
    method: Method,
    path: string,
    body: unknown,
    opts: RequestOptions,
  ): Promise<T> {
    return this.config.call(op, async (callSignal) => {
      try {
        return (await this.send(method, path, body, opts, callSignal)) as T;
      } catch (err) {
        throw toContractError(err, this.config.clock.now());
      }
    });
  }

  private async send(
    method: Method,
    path: string,
    body: unknown,
    opts: RequestOptions,
    callSignal: AbortSignal,
  ): Promise<unknown> {
    const { requestTimeoutMs, clock } = this.config;
    const timeout = new AbortController();
    const timer = clock.setTimeout(() => timeout.abort(), requestTimeoutMs);
    const signals = [timeout.signal, callSignal, ...(opts.signal === undefined ? [] : [opts.signal])];
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.config.token()}`,
      accept: "application/json",
      "user-agent": "fleet-ccm",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (opts.filter !== undefined) headers["x-filter"] = JSON.stringify(opts.filter);
    let status: number;
    let resHeaders: Headers;
    let text: string;
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        ...(body !== undefined && { body: JSON.stringify(body) }),
        // A redirect is not an answer, and following one could carry the token elsewhere.
        redirect: "manual",
        signal: AbortSignal.any(signals),
      });
      status = res.status;
      resHeaders = res.headers;
      text = await res.text();
    } catch (err) {
      if (timeout.signal.aborted)
        throw new LinodeTransportError("timeout", `no answer within ${requestTimeoutMs} ms`, { cause: err });
      if (callSignal.aborted || opts.signal?.aborted)
        throw new LinodeTransportError("aborted", "request aborted", { cause: err });
      const message = err instanceof Error ? err.message : String(err);
      throw new LinodeTransportError("network", `request failed: ${message}`, { cause: err });
    } finally {
      clock.clearTimeout(timer);
    }
    if (status < 200 || status > 299) throw LinodeApiError.from(method, path, status, resHeaders, text);
    if (status === 204 || text === "") return {};
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new LinodeApiError(method, path, status, [{ reason: "answer is not JSON" }], undefined, {
        cause: err,
      });
    }
  }
}

/** The answer to a list must be Linode's envelope of the page asked; the error names the list's path. */
export function checkPage<T>(p: LinodePage<T>, asked: number, path: string): LinodePage<T> {
  if (
    typeof p !== "object" ||
    p === null ||
    !Array.isArray(p.data) ||
    !Number.isSafeInteger(p.pages) ||
    p.pages < 0 ||
    (typeof p.page === "number" && p.page !== asked)
  )
    throw toContractError(
      new LinodeApiError("GET", path, 200, [{ reason: `not a page ${asked} envelope` }], undefined),
      0,
    );
  return p;
}
