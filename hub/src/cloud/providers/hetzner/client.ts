/**
 * A small Hetzner Cloud API v1 client on the REST kit (../../http): one per account (its API
 * token, re-read per request so it rotates without a restart; its endpoint; its timeout).
 * Every HTTP request is one `ctx.call` (the hub's rate limiter, metrics and shutdown signal);
 * lists follow Hetzner's page/per_page and meta.pagination.next_page. It throws the contract
 * errors of ../../errors.ts (toContractError) and never retries nor waits on an action: the
 * caller polls an action once per call and answers in-progress (actions.ts).
 */
import type { Clock } from "../../../util/clock.js";
import { type CalledRequestDeps, calledRequest } from "../../http/called-request.js";
import { collectPages, malformedPage } from "../../http/pages.js";
import { type HttpMethod, type Query, RestClient } from "../../http/rest-client.js";
import type { CloudCallWrapper, RateBudget } from "../../provider.js";
import { HETZNER_LABEL, HetznerApiError, toContractError } from "./errors.js";
import type { WirePagination } from "./wire.js";

export const DEFAULT_HETZNER_URL = "https://api.hetzner.cloud/v1";
/** docs.hetzner.cloud, "Pagination": per_page defaults to 25, at most 50. */
export const MAX_PAGE_SIZE = 50;

export interface HetznerClientConfig {
  /** API base with its version, e.g. https://api.hetzner.cloud/v1 or a fake's URL + /v1. */
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

export interface HetznerPage<T> {
  readonly items: readonly T[];
  /** Absent on the last page. */
  readonly next?: number;
}

export class HetznerClient {
  private readonly called: CalledRequestDeps;

  constructor(private readonly config: HetznerClientConfig) {
    const rest = new RestClient({
      baseUrl: config.endpoint,
      label: HETZNER_LABEL,
      token: config.token,
      userAgent: config.userAgent ?? "fleet-ccm",
      timeoutMs: config.requestTimeoutMs,
      clock: config.clock,
      rateHeaders: { reset: "full", report: config.rateBudget },
      statusError: HetznerApiError.from,
    });
    this.called = { rest, call: config.call, clock: config.clock, toContractError };
  }

  get pageSize(): number {
    return this.config.pageSize;
  }

  get<T>(op: string, path: string, signal?: AbortSignal, query?: Query): Promise<T> {
    return this.request<T>(op, "GET", path, undefined, signal, query);
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

  /** One page (from 1) of a list whose items are under `key`. */
  async page<T>(
    op: string,
    path: string,
    key: string,
    page: number,
    signal?: AbortSignal,
    query: Query = {},
  ): Promise<HetznerPage<T>> {
    const answer = await this.get<Record<string, unknown>>(op, path, signal, {
      ...query,
      page,
      per_page: this.config.pageSize,
    });
    const items = answer[key];
    const p = (answer["meta"] as { pagination?: Partial<WirePagination> } | undefined)?.pagination;
    if (!Array.isArray(items) || typeof p !== "object" || p === null || p.page !== page)
      throw malformedPage(HETZNER_LABEL, path, `not a page ${page} of ${key}`);
    const next = p.next_page;
    if (next !== null && next !== undefined && (!Number.isSafeInteger(next) || next <= page))
      throw malformedPage(HETZNER_LABEL, path, `next_page ${String(next)} after page ${page}`);
    return { items: items as T[], ...(typeof next === "number" && { next }) };
  }

  /** Every item of a list: page 1, then each next_page (one call each). */
  list<T>(op: string, path: string, key: string, signal?: AbortSignal, query: Query = {}): Promise<T[]> {
    return collectPages({
      first: 1,
      fetch: (n: number) => this.page<T>(op, path, key, n, signal, query),
      items: (p) => p.items,
      next: (p) => p.next,
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
