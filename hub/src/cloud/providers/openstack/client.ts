/**
 * A small OpenStack client on the REST kit (../../http): one per account and region. Each
 * request takes the account's Keystone token (keystone.ts: cached, renewed once for all
 * callers), finds its service in the token's catalog (the region's `public` or `internal`
 * endpoint, or the account's override), sends `X-Auth-Token` and, to Nova, the microversion
 * (`OpenStack-API-Version: compute 2.47`, for the embedded flavor); a 401 drops the token and
 * the request is sent once more with a new one. Every HTTP request is one `ctx.call`. Lists
 * follow `limit`/`marker` while the answer's `<key>_links` has a `next` link (never the link's
 * own address: it could name another host). Contract errors only (errors.ts); no retries, no
 * waiting on Octavia: the load balancers answer in-progress instead.
 */
import type { Clock } from "../../../util/clock.js";
import { CloudError } from "../../errors.js";
import { type CalledRequestDeps, calledRequest } from "../../http/called-request.js";
import { collectPages, malformedPage } from "../../http/pages.js";
import { type Fetch, type HttpMethod, type Query, RestClient } from "../../http/rest-client.js";
import type { CloudCallWrapper } from "../../provider.js";
import { isUnauthorized, OPENSTACK_LABEL, OpenStackApiError, toContractError } from "./errors.js";
import type { KeystoneAuth, KeystoneToken } from "./keystone.js";

export type ServiceType = "compute" | "network" | "load-balancer" | "block-storage";

/**
 * The catalog types each service is registered under: Cinder's official `block-storage`, and
 * `volumev3`, the type older clouds (and many still) register its v3 API as.
 */
const CATALOG_TYPES: Record<ServiceType, readonly string[]> = {
  compute: ["compute"],
  network: ["network"],
  "load-balancer": ["load-balancer"],
  "block-storage": ["block-storage", "volumev3"],
};

/** Nova's microversion we ask for: 2.47 embeds the flavor (original_name) in each server. */
export const COMPUTE_MICROVERSION = "2.47";
/** The API version below each catalog endpoint (Nova's catalog URL carries its own /v2.1). */
const VERSION_PATH: Record<ServiceType, string> = {
  compute: "",
  network: "/v2.0",
  "load-balancer": "/v2",
  // Cinder's catalog URL carries its version and mostly the project (…/v3/<project_id>): versionPath.
  "block-storage": "",
};

/**
 * What goes between the endpoint and a path: Cinder's paths are below `/v3/<project_id>`, which
 * its catalog URL carries whole (`…/v3/<project_id>`, the classic form), its version only
 * (`…/v3`), or neither.
 */
function versionPath(service: ServiceType, base: string, projectId: string): string {
  if (service !== "block-storage") return VERSION_PATH[service];
  if (base.endsWith(`/${projectId}`)) return "";
  return /\/v3$/.test(base) ? `/${projectId}` : `/v3/${projectId}`;
}

export interface OpenStackClientConfig {
  readonly auth: KeystoneAuth;
  readonly region: string;
  readonly interface: "public" | "internal";
  /** Per service, a URL that replaces the catalog's (the same form as the catalog's). */
  readonly endpoints: Partial<Record<ServiceType, string>>;
  readonly requestTimeoutMs: number;
  readonly clock: Clock;
  readonly call: CloudCallWrapper;
  readonly pageSize: number;
  readonly userAgent?: string | undefined;
  /** Sends the requests (one trusting the account's CA bundle); absent: the global fetch. */
  readonly fetch?: Fetch | undefined;
}

export interface RequestOptions {
  readonly query?: Query;
  readonly body?: unknown;
  readonly signal?: AbortSignal | undefined;
  /** More headers (Neutron's `If-Match: revision_number=<n>`, say). */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface OpenStackPage<T> {
  readonly items: readonly T[];
  /** The marker of the next page; absent on the last. */
  readonly next?: string;
}

export class OpenStackClient {
  private readonly rests = new Map<string, RestClient>();

  constructor(private readonly config: OpenStackClientConfig) {}

  get pageSize(): number {
    return this.config.pageSize;
  }

  get region(): string {
    return this.config.region;
  }

  /** The project the account's token is scoped to. */
  async projectId(signal?: AbortSignal): Promise<string> {
    return (await this.config.auth.token(signal)).projectId;
  }

  async request<T>(
    service: ServiceType,
    op: string,
    method: HttpMethod,
    path: string,
    opts: RequestOptions = {},
  ): Promise<T> {
    const first = await this.config.auth.token(opts.signal);
    try {
      return await this.send<T>(first, service, op, method, path, opts);
    } catch (err) {
      if (!isUnauthorized(err)) throw err;
      // The token was revoked or expired early: one new token, one more try.
      this.config.auth.invalidate(first.token);
      const second = await this.config.auth.token(opts.signal);
      return this.send<T>(second, service, op, method, path, opts);
    }
  }

  get<T>(service: ServiceType, op: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>(service, op, "GET", path, opts);
  }

  /** One page of a list whose items are under `key`. */
  async page<T extends { id: string }>(
    service: ServiceType,
    op: string,
    path: string,
    key: string,
    marker: string | undefined,
    opts: RequestOptions = {},
  ): Promise<OpenStackPage<T>> {
    const answer = await this.get<Record<string, unknown>>(service, op, path, {
      ...opts,
      query: { ...opts.query, limit: this.config.pageSize, marker },
    });
    const items = answer[key];
    if (!Array.isArray(items)) throw malformedPage(OPENSTACK_LABEL, path, `no ${key} list`);
    const links = answer[`${key}_links`];
    const hasNext = Array.isArray(links) && links.some((l: { rel?: unknown }) => l?.rel === "next");
    const last = (items.at(-1) as { id?: unknown } | undefined)?.id;
    if (hasNext && typeof last !== "string")
      throw malformedPage(OPENSTACK_LABEL, path, `a next link after a page without ids`);
    if (hasNext && last === marker)
      throw malformedPage(OPENSTACK_LABEL, path, `the next page repeats ${marker}`);
    return { items: items as T[], ...(hasNext && typeof last === "string" && { next: last }) };
  }

  /** Every item of a list, page after page. */
  list<T extends { id: string }>(
    service: ServiceType,
    op: string,
    path: string,
    key: string,
    opts: RequestOptions = {},
  ): Promise<T[]> {
    // The cursor is an object: the first page has no marker, and undefined ends the walk.
    return collectPages({
      first: { marker: undefined as string | undefined },
      fetch: (c) => this.page<T>(service, op, path, key, c.marker, opts),
      items: (p) => p.items,
      next: (p) => (p.next === undefined ? undefined : { marker: p.next }),
    });
  }

  private async send<T>(
    token: KeystoneToken,
    service: ServiceType,
    op: string,
    method: HttpMethod,
    path: string,
    opts: RequestOptions,
  ): Promise<T> {
    const { rest, base } = this.rest(token, service);
    const headers: Record<string, string> = { ...opts.headers, "x-auth-token": token.token };
    if (service === "compute") headers["openstack-api-version"] = `compute ${COMPUTE_MICROVERSION}`;
    const deps: CalledRequestDeps = {
      rest,
      call: this.config.call,
      clock: this.config.clock,
      toContractError,
    };
    return calledRequest<T>(
      deps,
      op,
      {
        method,
        path: versionPath(service, base, token.projectId) + path,
        query: opts.query,
        body: opts.body,
        headers,
      },
      opts.signal,
    );
  }

  private rest(token: KeystoneToken, service: ServiceType): { rest: RestClient; base: string } {
    const base =
      this.config.endpoints[service] ?? endpointOf(token, service, this.config.region, this.config.interface);
    let rest = this.rests.get(base);
    if (rest === undefined) {
      rest = new RestClient({
        baseUrl: base,
        label: OPENSTACK_LABEL,
        token: () => "",
        authorization: "none",
        userAgent: this.config.userAgent ?? "fleet-ccm",
        timeoutMs: this.config.requestTimeoutMs,
        clock: this.config.clock,
        statusError: OpenStackApiError.from,
        fetch: this.config.fetch,
      });
      this.rests.set(base, rest);
    }
    return { rest, base };
  }
}

/** The catalog's URL of `service` in `region` for `iface`; a catalog without one is the account's error. */
export function endpointOf(
  token: KeystoneToken,
  service: ServiceType,
  region: string,
  iface: string,
): string {
  // The first type (in CATALOG_TYPES' order) with an endpoint of the region and interface.
  const ep = CATALOG_TYPES[service]
    .flatMap((type) => token.catalog.filter((s) => s.type === type))
    .flatMap((s) => s.endpoints)
    .find((e) => e.region === region && e.interface === iface);
  if (ep === undefined)
    throw new CloudError(
      `the Keystone catalog has no ${iface} ${service} endpoint in region ${region} (set options.endpoints.${service} to give one)`,
    );
  return ep.url.replace(/\/+$/, "");
}
