/**
 * A small Linode API v4 client on the REST kit (../../http): one per account (its token, re-read
 * per request so it rotates without a restart; its base URL; its timeout). Every HTTP request is
 * one `ctx.call` (the hub's rate limiter, metrics and shutdown signal); lists follow every page
 * of Linode's page envelope. It throws the contract errors of ../../errors.ts (see
 * toContractError) and never retries: the hub's one retry policy does, honouring Retry-After.
 */
import type { Clock } from "../../../util/clock.js";
import { type CalledRequestDeps, calledRequest } from "../../http/called-request.js";
import { collectPages, malformedPage } from "../../http/pages.js";
import { type HttpMethod, RestClient } from "../../http/rest-client.js";
import type { CloudCallWrapper } from "../../provider.js";
import { LINODE_LABEL, LinodeApiError, toContractError } from "./errors.js";

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

export class LinodeClient {
  private readonly called: CalledRequestDeps;
  readonly pageSize: number;

  constructor(config: LinodeClientConfig) {
    const size = config.pageSize ?? MAX_PAGE_SIZE;
    if (!Number.isInteger(size) || size < MIN_PAGE_SIZE || size > MAX_PAGE_SIZE)
      throw new Error(`Linode page size must be ${MIN_PAGE_SIZE}..${MAX_PAGE_SIZE}, got ${size}`);
    this.pageSize = size;
    const rest = new RestClient({
      baseUrl: `${config.endpoint.replace(/\/+$/, "")}/v4`,
      label: LINODE_LABEL,
      token: config.token,
      userAgent: "fleet-ccm",
      timeoutMs: config.requestTimeoutMs,
      clock: config.clock,
      statusError: LinodeApiError.from,
    });
    this.called = { rest, call: config.call, clock: config.clock, toContractError };
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
  async page<T>(op: string, path: string, page: number, opts: RequestOptions = {}): Promise<LinodePage<T>> {
    const answer = await this.request<LinodePage<T>>(op, "GET", path, undefined, opts, {
      page,
      page_size: this.pageSize,
    });
    return checkPage(answer, page, path);
  }

  /** A list the spec gives no paging parameters: its one page. */
  async unpaged<T>(op: string, path: string, opts: RequestOptions = {}): Promise<T[]> {
    const p = await this.request<LinodePage<T>>(op, "GET", path, undefined, opts);
    return [...checkPage(p, 1, path).data];
  }

  /** Every item of a list: page 1, then pages 2..pages (one call each). */
  list<T>(op: string, path: string, opts: RequestOptions = {}): Promise<T[]> {
    return collectPages({
      first: 1,
      fetch: (n: number) => this.page<T>(op, path, n, opts),
      items: (p) => p.data,
      next: (p, n) => (n < p.pages ? n + 1 : undefined),
    });
  }

  private request<T>(
    op: string,
    method: HttpMethod,
    path: string,
    body: unknown,
    opts: RequestOptions,
    query?: Readonly<Record<string, number>>,
  ): Promise<T> {
    const headers = opts.filter === undefined ? undefined : { "x-filter": JSON.stringify(opts.filter) };
    return calledRequest<T>(this.called, op, { method, path, query, body, headers }, opts.signal);
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
    throw malformedPage(LINODE_LABEL, path, `not a page ${asked} envelope`);
  return p;
}
