/**
 * A small DigitalOcean API v2 client on the REST kit (../../http): one per account (its token,
 * re-read per request so it rotates without a restart; its base URL; its timeout). Every HTTP
 * request is one `ctx.call` (the hub's rate limiter, metrics and shutdown signal). Lists follow
 * DigitalOcean's pages: `page`/`per_page` asked, `links.pages.next` present while there is more.
 * It throws the contract errors of ../../errors.ts and never retries.
 */
import type { Clock } from "../../../util/clock.js";
import { type CalledRequestDeps, calledRequest } from "../../http/called-request.js";
import { collectPages, malformedPage } from "../../http/pages.js";
import { type HttpMethod, type Query, RestClient } from "../../http/rest-client.js";
import type { CloudCallWrapper, RateBudget } from "../../provider.js";
import { DigitalOceanApiError, DO_LABEL, toContractError } from "./errors.js";

export const DEFAULT_DO_URL = "https://api.digitalocean.com";
/** DigitalOcean's per_page runs from 1 to 200. */
export const MAX_PAGE_SIZE = 200;

export interface DigitalOceanClientConfig {
  /** API base without the version, e.g. https://api.digitalocean.com or a fake's URL. */
  readonly endpoint: string;
  readonly token: () => string;
  readonly requestTimeoutMs: number;
  readonly clock: Clock;
  readonly call: CloudCallWrapper;
  readonly pageSize: number;
  readonly userAgent?: string | undefined;
  /** Where each answer's RateLimit-* headers go (ProviderContext.rateBudget). */
  readonly rateBudget?: ((budget: RateBudget) => void) | undefined;
}

/** One page of a list: its items (under the list's key) and whether another follows. */
export interface DoPage<T> {
  readonly items: readonly T[];
  readonly hasNext: boolean;
}

export class DigitalOceanClient {
  private readonly called: CalledRequestDeps;

  constructor(private readonly config: DigitalOceanClientConfig) {
    const rest = new RestClient({
      baseUrl: `${config.endpoint.replace(/\/+$/, "")}/v2`,
      label: DO_LABEL,
      token: config.token,
      userAgent: config.userAgent ?? "fleet-ccm",
      timeoutMs: config.requestTimeoutMs,
      clock: config.clock,
      rateHeaders: { reset: "next-free", report: config.rateBudget },
      statusError: DigitalOceanApiError.from,
    });
    this.called = { rest, call: config.call, clock: config.clock, toContractError };
  }

  get pageSize(): number {
    return this.config.pageSize;
  }

  get<T>(op: string, path: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>(op, "GET", path, undefined, signal);
  }

  post<T>(op: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.request<T>(op, "POST", path, body, signal);
  }

  put<T>(op: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.request<T>(op, "PUT", path, body, signal);
  }

  async delete(op: string, path: string, signal?: AbortSignal): Promise<void> {
    await this.request<unknown>(op, "DELETE", path, undefined, signal);
  }

  /** Page `page` (from 1) of a list whose items are under `key`. */
  async page<T>(
    op: string,
    path: string,
    key: string,
    page: number,
    query: Query = {},
    signal?: AbortSignal,
  ): Promise<DoPage<T>> {
    const answer = await this.request<Record<string, unknown>>(op, "GET", path, undefined, signal, {
      ...query,
      page,
      per_page: this.config.pageSize,
    });
    const items = answer[key];
    const links = answer["links"] as { pages?: { next?: unknown } } | undefined;
    if (!Array.isArray(items) || (links !== undefined && (typeof links !== "object" || links === null)))
      throw malformedPage(DO_LABEL, path, `not a page of ${key}`);
    return { items: items as T[], hasNext: typeof links?.pages?.next === "string" };
  }

  /** Every item of a list: page 1, then each next page while links.pages.next says there is one. */
  list<T>(op: string, path: string, key: string, query: Query = {}, signal?: AbortSignal): Promise<T[]> {
    return collectPages({
      first: 1,
      fetch: (n: number) => this.page<T>(op, path, key, n, query, signal),
      items: (p) => p.items,
      // A page that says "more" but holds nothing would loop for ever: the list ends there.
      next: (p, n) => (p.hasNext && p.items.length > 0 ? n + 1 : undefined),
    });
  }

  private request<T>(
    op: string,
    method: HttpMethod,
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    query?: Query,
  ): Promise<T> {
    return calledRequest<T>(this.called, op, { method, path, query, body }, signal);
  }
}
