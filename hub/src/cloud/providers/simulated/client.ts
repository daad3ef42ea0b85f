/**
 * The only file that speaks HTTP to the simulated cloud. It returns parsed JSON bodies
 * and throws the errors of ./errors.ts; it neither interprets answers nor retries.
 */
import type { Clock } from "../../../util/clock.js";
import { SimulatedApiError, SimulatedMalformedBodyError, SimulatedTransportError } from "./errors.js";

export interface SimulatedClientConfig {
  /** Base URL of the cloud, e.g. http://127.0.0.1:4100. */
  readonly endpoint: string;
  /** The account's API key; sent as a Bearer token, never logged. */
  /** The current API key (read per request: it may rotate). */
  readonly credential: () => string;
  readonly region: string;
  readonly requestTimeoutMs: number;
  readonly clock: Clock;
  readonly userAgent?: string;
}

export interface ListQuery {
  readonly name?: string;
  readonly pageSize?: number;
  readonly pageToken?: string;
  /** Resources carrying every one of these tags (`tag=k=v`, repeated). */
  readonly tags?: Readonly<Record<string, string>>;
  /** Listeners, pools, firewall rules of one load balancer. */
  readonly lbId?: string;
}

/** Top-level load-balancer resource collections of the public API. */
export type LbCollection = "load-balancers" | "listeners" | "pools" | "health-checks" | "firewall-rules";

type Method = "GET" | "POST" | "PATCH" | "DELETE";

export class SimulatedClient {
  private readonly base: string;
  private readonly regionBase: string;

  constructor(private readonly config: SimulatedClientConfig) {
    this.regionBase = `${config.endpoint.replace(/\/+$/, "")}/v1/regions/${encodeURIComponent(config.region)}`;
    this.base = `${this.regionBase}/instances`;
  }

  /** GET /v1/regions/{region}/instances/{id}. */
  getInstance(id: string, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.request(`${this.base}/${encodeURIComponent(id)}`, signals);
  }

  /** GET /v1/regions/{region}/instances?name=&page_size=&page_token=. */
  listInstances(query: ListQuery, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.request(withQuery(this.base, query), signals);
  }

  /** GET /v1/regions/{region}/{collection}?name=&tag=k=v&lb_id=&page_size=&page_token=. */
  listLbResources(
    collection: LbCollection,
    query: ListQuery,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.request(withQuery(`${this.regionBase}/${collection}`, query), signals);
  }

  /** POST /v1/regions/{region}/{collection}: the created resource. */
  createLbResource(
    collection: LbCollection,
    body: Readonly<Record<string, unknown>>,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.request(`${this.regionBase}/${collection}`, signals, "POST", body);
  }

  /** PATCH /v1/regions/{region}/{collection}/{id}: the updated resource. */
  updateLbResource(
    collection: LbCollection,
    id: string,
    body: Readonly<Record<string, unknown>>,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.request(`${this.regionBase}/${collection}/${encodeURIComponent(id)}`, signals, "PATCH", body);
  }

  /** DELETE /v1/regions/{region}/{collection}/{id}. */
  async deleteLbResource(
    collection: LbCollection,
    id: string,
    signals: readonly AbortSignal[],
  ): Promise<void> {
    await this.request(`${this.regionBase}/${collection}/${encodeURIComponent(id)}`, signals, "DELETE");
  }

  /** GET /v1/regions/{region}/networks. */
  listNetworks(signals: readonly AbortSignal[]): Promise<unknown> {
    return this.request(`${this.regionBase}/networks`, signals);
  }

  /** GET /v1/regions/{region}/networks/{network}/routes?page_size=&page_token=. */
  listRoutes(network: string, query: ListQuery, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.request(withQuery(this.routesBase(network), query), signals);
  }

  /** POST /v1/regions/{region}/networks/{network}/routes: the created route. */
  createRoute(
    network: string,
    body: Readonly<Record<string, unknown>>,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.request(this.routesBase(network), signals, "POST", body);
  }

  /** DELETE /v1/regions/{region}/networks/{network}/routes/{id}. */
  async deleteRoute(network: string, id: string, signals: readonly AbortSignal[]): Promise<void> {
    await this.request(`${this.routesBase(network)}/${encodeURIComponent(id)}`, signals, "DELETE");
  }

  private routesBase(network: string): string {
    return `${this.regionBase}/networks/${encodeURIComponent(network)}/routes`;
  }

  /** The parsed JSON body; null for 204 No Content. */
  private async request(
    url: string,
    signals: readonly AbortSignal[],
    method: Method = "GET",
    body?: Readonly<Record<string, unknown>>,
  ): Promise<unknown> {
    const { requestTimeoutMs, clock } = this.config;
    const timeout = new AbortController();
    const timer = clock.setTimeout(() => timeout.abort(), requestTimeoutMs);
    const signal = AbortSignal.any([timeout.signal, ...signals]);
    let status: number;
    let headers: Headers;
    let text: string;
    try {
      const res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.config.credential()}`,
          accept: "application/json",
          ...(this.config.userAgent !== undefined && { "user-agent": this.config.userAgent }),
          ...(body !== undefined && { "content-type": "application/json" }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        // A redirect is not an answer; following one could also carry the key elsewhere.
        redirect: "manual",
        signal,
      });
      status = res.status;
      headers = res.headers;
      text = await res.text();
    } catch (err) {
      if (timeout.signal.aborted) {
        throw new SimulatedTransportError("timeout", `no answer within ${requestTimeoutMs} ms`, {
          cause: err,
        });
      }
      if (signals.some((s) => s.aborted))
        throw new SimulatedTransportError("aborted", "request aborted", { cause: err });
      const message = err instanceof Error ? err.message : String(err);
      throw new SimulatedTransportError("network", `request failed: ${message}`, { cause: err });
    } finally {
      clock.clearTimeout(timer);
    }
    if (status < 200 || status > 299) throw apiError(status, headers, text);
    if (status === 204) return null;
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new SimulatedMalformedBodyError(`HTTP ${status} with a body that is not JSON`, { cause: err });
    }
  }
}

function withQuery(base: string, query: ListQuery): string {
  const params = new URLSearchParams();
  if (query.name !== undefined) params.set("name", query.name);
  for (const [k, v] of Object.entries(query.tags ?? {})) params.append("tag", `${k}=${v}`);
  if (query.lbId !== undefined) params.set("lb_id", query.lbId);
  if (query.pageSize !== undefined) params.set("page_size", String(query.pageSize));
  if (query.pageToken !== undefined) params.set("page_token", query.pageToken);
  const qs = params.toString();
  return qs === "" ? base : `${base}?${qs}`;
}

function apiError(status: number, headers: Headers, text: string): SimulatedApiError {
  let code: string | undefined;
  let message = text.slice(0, 200);
  let resource: { type: string; id: string } | undefined;
  try {
    const body = JSON.parse(text) as unknown;
    const error = typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined;
    if (typeof error === "object" && error !== null) {
      const e = error as { code?: unknown; message?: unknown; resource?: unknown };
      if (typeof e.code === "string") code = e.code;
      if (typeof e.message === "string") message = e.message;
      const r = e.resource as { type?: unknown; id?: unknown } | undefined;
      if (typeof r?.type === "string" && typeof r.id === "string") resource = { type: r.type, id: r.id };
    }
  } catch {
    // Not the cloud's JSON (a proxy page, say): the status alone decides.
  }
  return new SimulatedApiError(status, code, message, headers.get("retry-after") ?? undefined, resource);
}
