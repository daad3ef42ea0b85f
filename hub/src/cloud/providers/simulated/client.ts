/**
 * The only file that speaks HTTP to the simulated cloud, on the REST kit (../../http). It
 * returns parsed JSON bodies and throws the kit's errors (SimulatedApiError for a non-2xx);
 * it neither interprets answers nor retries. Callers map errors with ./errors.ts.
 */
import type { Clock } from "../../../util/clock.js";
import { type Query, RestClient, type RestRequest } from "../../http/rest-client.js";
import { SIMULATED_LABEL, SimulatedApiError } from "./errors.js";

export interface SimulatedClientConfig {
  /** Base URL of the cloud, e.g. http://127.0.0.1:4100. */
  readonly endpoint: string;
  /** The current API key (read per request: it may rotate); sent as a Bearer token, never logged. */
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
  /** Disks of these ids (`id=X`, repeated). */
  readonly ids?: readonly string[];
}

/** Top-level load-balancer resource collections of the public API. */
export type LbCollection = "load-balancers" | "listeners" | "pools" | "health-checks" | "firewall-rules";

export class SimulatedClient {
  private readonly rest: RestClient;

  constructor(config: SimulatedClientConfig) {
    this.rest = new RestClient({
      baseUrl: `${config.endpoint.replace(/\/+$/, "")}/v1/regions/${encodeURIComponent(config.region)}`,
      label: SIMULATED_LABEL,
      token: config.credential,
      userAgent: config.userAgent,
      timeoutMs: config.requestTimeoutMs,
      clock: config.clock,
      statusError: SimulatedApiError.from,
    });
  }

  /** GET /v1/regions/{region}/instances/{id}. */
  getInstance(id: string, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.send({ method: "GET", path: `/instances/${encodeURIComponent(id)}` }, signals);
  }

  /** GET /v1/regions/{region}/instances?name=&page_size=&page_token=. */
  listInstances(query: ListQuery, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.send({ method: "GET", path: "/instances", query: toQuery(query) }, signals);
  }

  /** GET /v1/regions/{region}/disks/{id}. */
  getDisk(id: string, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.send({ method: "GET", path: `/disks/${encodeURIComponent(id)}` }, signals);
  }

  /** GET /v1/regions/{region}/disks?id=&tag=k=v&page_size=&page_token=. */
  listDisks(query: ListQuery, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.send({ method: "GET", path: "/disks", query: toQuery(query) }, signals);
  }

  /** GET /v1/regions/{region}/{collection}?name=&tag=k=v&lb_id=&page_size=&page_token=. */
  listLbResources(
    collection: LbCollection,
    query: ListQuery,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.send({ method: "GET", path: `/${collection}`, query: toQuery(query) }, signals);
  }

  /** POST /v1/regions/{region}/{collection}: the created resource. */
  createLbResource(
    collection: LbCollection,
    body: Readonly<Record<string, unknown>>,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.send({ method: "POST", path: `/${collection}`, body }, signals);
  }

  /** PATCH /v1/regions/{region}/{collection}/{id}: the updated resource. */
  updateLbResource(
    collection: LbCollection,
    id: string,
    body: Readonly<Record<string, unknown>>,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.send({ method: "PATCH", path: `/${collection}/${encodeURIComponent(id)}`, body }, signals);
  }

  /** DELETE /v1/regions/{region}/{collection}/{id}. */
  async deleteLbResource(
    collection: LbCollection,
    id: string,
    signals: readonly AbortSignal[],
  ): Promise<void> {
    await this.send({ method: "DELETE", path: `/${collection}/${encodeURIComponent(id)}` }, signals);
  }

  /** GET /v1/regions/{region}/networks. */
  listNetworks(signals: readonly AbortSignal[]): Promise<unknown> {
    return this.send({ method: "GET", path: "/networks" }, signals);
  }

  /** GET /v1/regions/{region}/networks/{network}/routes?page_size=&page_token=. */
  listRoutes(network: string, query: ListQuery, signals: readonly AbortSignal[]): Promise<unknown> {
    return this.send({ method: "GET", path: this.routesBase(network), query: toQuery(query) }, signals);
  }

  /** POST /v1/regions/{region}/networks/{network}/routes: the created route. */
  createRoute(
    network: string,
    body: Readonly<Record<string, unknown>>,
    signals: readonly AbortSignal[],
  ): Promise<unknown> {
    return this.send({ method: "POST", path: this.routesBase(network), body }, signals);
  }

  /** DELETE /v1/regions/{region}/networks/{network}/routes/{id}. */
  async deleteRoute(network: string, id: string, signals: readonly AbortSignal[]): Promise<void> {
    await this.send(
      { method: "DELETE", path: `${this.routesBase(network)}/${encodeURIComponent(id)}` },
      signals,
    );
  }

  private routesBase(network: string): string {
    return `/networks/${encodeURIComponent(network)}/routes`;
  }

  /** The parsed JSON body; null for 204 No Content. */
  private async send(req: Omit<RestRequest, "signals">, signals: readonly AbortSignal[]): Promise<unknown> {
    return (await this.rest.request({ ...req, signals })) ?? null;
  }
}

function toQuery(query: ListQuery): Query {
  return {
    name: query.name,
    tag: Object.entries(query.tags ?? {}).map(([k, v]) => `${k}=${v}`),
    lb_id: query.lbId,
    id: query.ids,
    page_size: query.pageSize,
    page_token: query.pageToken,
  };
}
