/**
 * A fake OpenStack cloud on the fake kit: Keystone v3 tokens (application credential or
 * password, a project scope), answered with `X-Subject-Token` and a service catalog of several
 * regions, each with `public` and `internal` endpoints of Nova, Neutron and Octavia, all served
 * here under `/<region>/<interface>/<service>`, and Cinder's v3 volumes (read only) as
 * `block-storage` (`…/volume/v3`, the project in each path) or, as older clouds register it,
 * `volumev3` (`…/volume/v3/<project_id>`); tokens expire (`tokenTtlMs`) and are refused
 * after with Keystone's 401. Nova servers (read only; microversions up to 2.96, the embedded
 * flavor from 2.47), Neutron ports (tags, security groups), floating IPs, router extra routes,
 * subnets and security groups with their rules, Octavia load
 * balancers with listeners, pools, batch-replaced members and health monitors. Octavia's
 * provisioning state machine runs on the fake's clock: every mutation leaves the load
 * balancer `PENDING_*` for `pendingMs`, and a mutation of it meanwhile is refused with 409,
 * as Octavia does. Paging with `limit`/`marker` and `<key>_links`. Each service's own error
 * body: Nova `{"itemNotFound": {...}}`, Neutron `{"NeutronError": {...}}`, Octavia
 * `{"faultcode", "faultstring", "debuginfo"}`, Keystone `{"error": {...}}`. With `spec`, every
 * exchange is checked against the subsets of gtema's generated OpenAPI (spec.ts), Cinder's
 * against its api-ref (cinder-spec.ts).
 */
import { type ErrorRenderer, FakeError } from "../fake-kit/errors.js";
import {
  type ListFaults,
  type VendorCall,
  VendorFake,
  type VendorListing,
  type VendorRoute,
} from "../fake-kit/vendor-fake.js";
import { openstackSpecChecker } from "./spec.js";
import {
  type FakeFloatingIp,
  type FakeHealthMonitor,
  type FakeListener,
  type FakeLoadBalancer,
  type FakeNetwork,
  type FakePool,
  type FakePort,
  type FakeProject,
  type FakeRouter,
  type FakeSecurityGroup,
  type FakeSecurityGroupRule,
  type FakeServer,
  type FakeVolume,
  OpenStackStore,
  type Provisioning,
  type ServerStatus,
} from "./store.js";

type Json = Record<string, unknown>;

export const OPENSTACK_SPEC = "openstack/*.ccm-subset.yaml";
/** Nova's microversions (the spec's), and the one that embeds the flavor in a server. */
export const NOVA_MAX_MICROVERSION = "2.96";
const NOVA_MIN_MICROVERSION = "2.1";

/** A page of one of the services' lists: items under `key`, a next link under `<key>_links`. */
interface Listing extends VendorListing {
  readonly list: readonly { readonly id: string; readonly wire: Json }[];
  readonly key: string;
  /** The service's own words for a bad marker. */
  readonly service: "nova" | "neutron" | "octavia" | "cinder";
}
type Route = VendorRoute<Listing>;

export interface OpenStackFakeOptions {
  readonly spec?: boolean;
  readonly seed?: number;
  readonly now?: () => number;
  /** The catalog's regions (default RegionOne and RegionTwo). */
  readonly regions?: readonly string[];
  /** How long a token lives (default an hour). */
  readonly tokenTtlMs?: number;
  /** How long each Octavia mutation leaves the load balancer PENDING_* (default 0: ACTIVE on the next read). */
  readonly pendingMs?: number;
  /** Cinder's catalog type (default `block-storage`; `volumev3` with the project in its URL, as older clouds). */
  readonly cinderCatalogType?: "block-storage" | "volumev3";
  /** Serve HTTPS with this certificate and key (PEM), as a private cloud with its own CA does. */
  readonly tls?: { readonly cert: string; readonly key: string };
}

interface Credential {
  readonly account: string;
  readonly kind: "application_credential" | "password";
  readonly id: string;
  readonly secret: string;
  readonly user: { readonly id: string; readonly name: string; readonly domain: string };
}

/** Keystone's ids are UUIDs in the generated spec (real ones are often 32 hex digits). */
const DOMAIN_ID = "d0000000-0000-4000-8000-000000000000";
const ms = (n: number) => new Date(n).toISOString().replace(/\.\d{3}Z$/, "Z");
const osTime = (n: number) => new Date(n).toISOString().replace(/\.\d{3}Z$/, "");

function versionParts(v: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)$/.exec(v.trim());
  return m === null ? undefined : [Number(m[1]), Number(m[2])];
}
function cmpVersion(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}

// ---- errors, each service in its own words ------------------------------------------------------

const NOVA_CODES: Record<number, string> = {
  400: "badRequest",
  401: "unauthorized",
  403: "forbidden",
  404: "itemNotFound",
  406: "notAcceptable",
  409: "conflictingRequest",
  429: "overLimit",
  500: "computeFault",
  503: "serviceUnavailable",
  504: "computeFault",
};

function renderer(): ErrorRenderer {
  return {
    render: (e, call) => {
      const headers: Record<string, string> = { ...e.headers };
      const op = call.operation;
      // Cinder's faults are Nova's (both webob): `{"itemNotFound": {"code", "message"}}`.
      if (op.startsWith("nova.") || op.startsWith("cinder.")) {
        const key = NOVA_CODES[e.status] ?? (e.status >= 500 ? "computeFault" : "badRequest");
        return { status: e.status, headers, body: { [key]: { code: e.status, message: e.message } } };
      }
      if (op.startsWith("neutron.")) {
        const type = e.kind === "request" ? e.code : e.kind === "throttled" ? "OverQuota" : "HTTPError";
        return {
          status: e.status,
          headers,
          body: { NeutronError: { type, message: e.message, detail: "" } },
        };
      }
      if (op.startsWith("octavia.")) {
        return {
          status: e.status,
          headers,
          body: { faultcode: e.status >= 500 ? "Server" : "Client", faultstring: e.message, debuginfo: null },
        };
      }
      const title = e.status === 401 ? "Unauthorized" : e.status === 404 ? "Not Found" : e.code;
      return { status: e.status, headers, body: { error: { code: e.status, message: e.message, title } } };
    },
  };
}

const novaNotFound = (what: string) => new FakeError(404, "itemNotFound", `${what} could not be found.`);
const neutronNotFound = (type: string, id: string) =>
  new FakeError(404, `${type}NotFound`, `${type} ${id} could not be found.`);
const octaviaNotFound = (type: string, id: string) =>
  new FakeError(404, "NotFound", `${type} ${id} not found.`);
const bad = (code: string, message: string) => new FakeError(400, code, message);

/** Neutron's tag filters: `tags` (all of a comma list) and `tags-any` (one of them). */
function tagsMatch(tags: readonly string[], q: URLSearchParams): boolean {
  const all = q.get("tags");
  const any = q.get("tags-any");
  return (
    (all === null || all.split(",").every((t) => tags.includes(t))) &&
    (any === null || any.split(",").some((t) => tags.includes(t)))
  );
}

export class OpenStackFake extends VendorFake<Listing> {
  readonly store = new OpenStackStore();
  readonly regions: readonly string[];
  private readonly tokenTtlMs: number;
  private pendingMs: number;
  /** Issued token → its project and expiry. */
  private readonly tokens = new Map<string, { account: string; expiresMs: number }>();
  private readonly credentials: Credential[] = [];
  /** Certificate references Octavia can retrieve (addCertificate). */
  private readonly certificates = new Set<string>();
  /** Load-balancer creates that are to end in ERROR. */
  private failingCreates = 0;
  private tokenSeq = 0;
  private readonly cinderCatalogType: "block-storage" | "volumev3";

  private constructor(opts: OpenStackFakeOptions) {
    super({
      vendor: "OpenStack",
      newToken: () => "unused",
      accountNoun: "project",
      ...(opts.seed !== undefined && { seed: opts.seed }),
      ...(opts.now !== undefined && { now: opts.now }),
      ...(opts.tls !== undefined && { tls: opts.tls }),
      ...(opts.spec && { spec: { checker: openstackSpecChecker(), fixture: OPENSTACK_SPEC } }),
      renderer: renderer(),
      requestIdHeader: "x-openstack-request-id",
      requestId: (n) => `req-${String(n).padStart(8, "0")}-0000-4000-8000-000000000000`,
      emptyBodyIsNone: true,
      tokenOf: (h) => {
        const t = h["x-auth-token"];
        return typeof t === "string" && t !== "" ? t : undefined;
      },
      refusals: {
        badBody: () => bad("BadRequest", "Malformed request body"),
        unauthenticated: () =>
          new FakeError(401, "Unauthorized", "The request you have made requires authentication.", {
            kind: "auth",
          }),
        notFound: () => new FakeError(404, "NotFound", "The resource could not be found."),
      },
    });
    this.regions = opts.regions ?? ["RegionOne", "RegionTwo"];
    this.tokenTtlMs = opts.tokenTtlMs ?? 3_600_000;
    this.pendingMs = opts.pendingMs ?? 0;
    this.cinderCatalogType = opts.cinderCatalogType ?? "block-storage";
  }

  static start(opts: OpenStackFakeOptions = {}): Promise<OpenStackFake> {
    return new OpenStackFake(opts).listen();
  }

  protected override accountOf(token: string): string | undefined {
    const t = this.tokens.get(token);
    if (t === undefined || t.expiresMs <= this.now()) return undefined;
    return t.account;
  }

  // ---- test and demo controls ---------------------------------------------------------------

  /** A project (the kit's account) in `domain`. */
  createProject(name: string, domain = "Default"): FakeProject {
    const p: FakeProject = { id: this.store.uuid(), name, domain };
    this.store.projects.set(name, p);
    return p;
  }

  /** An application credential of the project: what `POST /v3/auth/tokens` takes. */
  createApplicationCredential(project: string, id: string, secret: string): void {
    this.project(project);
    this.credentials.push({
      account: project,
      kind: "application_credential",
      id,
      secret,
      user: { id: this.store.uuid(), name: `app-${id}`, domain: "Default" },
    });
  }

  /** A user with a password and a role on the project. */
  createUser(project: string, user: { name: string; domain?: string; password: string }): void {
    this.project(project);
    this.credentials.push({
      account: project,
      kind: "password",
      id: user.name,
      secret: user.password,
      user: { id: this.store.uuid(), name: user.name, domain: user.domain ?? "Default" },
    });
  }

  /** Every token issued so far stops working (as a token revoked or past its expiry). */
  expireTokens(): void {
    for (const t of this.tokens.values()) t.expiresMs = 0;
  }

  /** How many tokens Keystone issued. */
  get tokensIssued(): number {
    return this.tokenSeq;
  }

  setPendingMs(n: number): void {
    this.pendingMs = n;
  }

  /** The next `n` load balancers created end in ERROR once provisioned. */
  failNextCreates(n: number): void {
    this.failingCreates += n;
  }

  createNetwork(
    account: string,
    region: string,
    spec: { name: string; cidr: string; external?: boolean },
  ): FakeNetwork {
    const n: FakeNetwork = {
      id: this.store.uuid(),
      account,
      region,
      name: spec.name,
      external: spec.external ?? false,
      subnets: [{ id: this.store.uuid(), cidr: spec.cidr }],
      nextHost: 3,
    };
    this.store.networks.set(n.id, n);
    return n;
  }

  createRouter(account: string, region: string, name: string): FakeRouter {
    const r: FakeRouter = { id: this.store.uuid(), account, region, name, routes: [], tags: [] };
    this.store.routers.set(r.id, r);
    return r;
  }

  /** A server with a port on each network given (its fixed IP from the network's subnet). */
  createServer(
    account: string,
    region: string,
    spec: {
      name: string;
      networks?: readonly FakeNetwork[];
      status?: ServerStatus;
      az?: string;
      flavor?: string;
      metadata?: Record<string, string>;
    },
  ): FakeServer {
    const s: FakeServer = {
      id: this.store.uuid(),
      account,
      region,
      name: spec.name,
      status: spec.status ?? "ACTIVE",
      az: spec.az ?? "nova",
      flavor: { name: spec.flavor ?? "m1.small", vcpus: 1, ram: 2048, disk: 20 },
      metadata: { ...(spec.metadata ?? {}) },
      createdMs: this.now(),
      updatedMs: this.now(),
    };
    this.store.servers.set(s.id, s);
    for (const n of spec.networks ?? []) this.createPort(n, s.id, "compute:nova");
    return s;
  }

  /**
   * One more port of the server on `network` (its fixed IP from the network's subnet), in Neutron
   * status `status` (a `DOWN` port: detached from the hypervisor, unbound, or still being built).
   */
  addServerPort(serverId: string, network: FakeNetwork, status: FakePort["status"] = "ACTIVE"): FakePort {
    if (!this.store.servers.has(serverId)) throw new Error(`no server ${serverId}`);
    const p = this.createPort(network, serverId, "compute:nova");
    p.status = status;
    return p;
  }

  setServerStatus(id: string, status: ServerStatus): void {
    const s = this.store.servers.get(id);
    if (s === undefined) throw new Error(`no server ${id}`);
    s.status = status;
    s.updatedMs = this.now();
  }

  deleteServer(id: string): void {
    const s = this.store.servers.get(id);
    if (s !== undefined) {
      s.status = "DELETED";
      s.updatedMs = this.now();
      this.store.deletedServers.set(id, s);
    }
    this.store.servers.delete(id);
    for (const p of [...this.store.ports.values()]) if (p.deviceId === id) this.deletePort(p.id);
  }

  /** A Cinder volume, `in-use` when attached to `serverId`, else `available`. */
  createVolume(
    account: string,
    region: string,
    spec: {
      name?: string;
      size: number;
      az?: string;
      serverId?: string;
      status?: string;
      metadata?: Record<string, string>;
    },
  ): FakeVolume {
    const v: FakeVolume = {
      id: this.store.uuid(),
      account,
      region,
      name: spec.name ?? "",
      size: spec.size,
      status: spec.status ?? (spec.serverId === undefined ? "available" : "in-use"),
      az: spec.az ?? "nova",
      ...(spec.serverId !== undefined && { serverId: spec.serverId }),
      metadata: { ...(spec.metadata ?? {}) },
      createdMs: this.now(),
    };
    this.store.volumes.set(v.id, v);
    return v;
  }

  /** A floating IP from `external` on the server's first port (as a user would attach one). */
  attachFloatingIp(serverId: string, external: FakeNetwork): FakeFloatingIp {
    const port = [...this.store.ports.values()].find((p) => p.deviceId === serverId);
    if (port === undefined) throw new Error(`server ${serverId} has no port`);
    return this.newFloatingIp(port.account, port.region, external.id, port.id, "");
  }

  /** A route another client put on the router. */
  addRouterRoute(routerId: string, destination: string, nexthop: string): void {
    this.router(routerId).routes.push({ destination, nexthop });
  }

  /** The load balancer's provisioning status now (settled on the fake's clock). */
  lbStatus(id: string): Provisioning | undefined {
    const lb = this.store.loadBalancers.get(id);
    return lb === undefined ? undefined : this.settle(lb);
  }

  /**
   * A load balancer built directly in the store (another client's, or one built as
   * openstack-cloud-controller-manager builds it), ACTIVE.
   */
  putLoadBalancer(
    account: string,
    region: string,
    spec: { name: string; description?: string; subnetId: string; tags?: string[]; provider?: string },
  ): FakeLoadBalancer {
    return this.newLoadBalancer(account, region, {
      name: spec.name,
      description: spec.description ?? "",
      subnetId: spec.subnetId,
      tags: spec.tags ?? [],
      ...(spec.provider !== undefined && { provider: spec.provider }),
      active: true,
    });
  }

  /**
   * A listener with its default pool and members on an ACTIVE load balancer, straight into the
   * store (as another client, or openstack-cloud-controller-manager, built it), and the pool's
   * health monitor when given.
   */
  putListener(
    lbId: string,
    spec: {
      protocol: string;
      port: number;
      members: readonly { address: string; port: number; monitorPort?: number }[];
      monitor?: { type: string; settings?: Record<string, unknown> };
    },
  ): void {
    const lb = this.store.loadBalancers.get(lbId);
    if (lb === undefined) throw new Error(`no load balancer ${lbId}`);
    const l: FakeListener = {
      id: this.store.uuid(),
      lbId,
      name: `listener_${spec.port}_${lb.name}`,
      description: "",
      protocol: spec.protocol,
      port: spec.port,
      defaultPoolId: null,
      settings: {},
      tags: [],
    };
    this.store.listeners.set(l.id, l);
    const pool: FakePool = {
      id: this.store.uuid(),
      lbId,
      listenerId: l.id,
      name: `pool_${spec.port}_${lb.name}`,
      description: "",
      protocol: spec.protocol,
      lbAlgorithm: "ROUND_ROBIN",
      sessionPersistence: null,
      members: spec.members.map((m) => ({
        id: this.store.uuid(),
        address: m.address,
        port: m.port,
        subnetId: lb.vipSubnetId,
        monitorPort: m.monitorPort ?? null,
        name: m.address,
      })),
      tags: [],
    };
    this.store.pools.set(pool.id, pool);
    l.defaultPoolId = pool.id;
    if (spec.monitor !== undefined) {
      const h: FakeHealthMonitor = {
        id: this.store.uuid(),
        poolId: pool.id,
        name: `monitor_${spec.port}_${lb.name}`,
        type: spec.monitor.type,
        settings: { ...spec.monitor.settings },
        tags: [],
      };
      this.store.healthMonitors.set(h.id, h);
    }
  }

  /** A floating IP from `external` on the load balancer's VIP port (upstream describes its own). */
  attachFloatingIpToLb(lbId: string, external: FakeNetwork, description = ""): FakeFloatingIp {
    const lb = this.store.loadBalancers.get(lbId);
    if (lb === undefined) throw new Error(`no load balancer ${lbId}`);
    return this.newFloatingIp(lb.account, lb.region, external.id, lb.vipPortId, description);
  }

  /** A floating IP from `external` on no port: an address the project reserved. */
  reserveFloatingIp(
    account: string,
    region: string,
    external: FakeNetwork,
    description = "",
  ): FakeFloatingIp {
    return this.newFloatingIp(account, region, external.id, null, description);
  }

  // ---- routes -------------------------------------------------------------------------------

  protected routes(): readonly Route[] {
    const svc = (service: string, rest: string) =>
      new RegExp(`^/([^/]+)/(?:public|internal)/${service}${rest}/?$`);
    const R = this.regions[0] ?? "RegionOne";
    const id = "5e0c0000-0000-4000-8000-000000000001";
    return [
      {
        method: "POST",
        pattern: /^\/v3\/auth\/tokens\/?$/,
        op: "keystone.tokens.create",
        example: "/v3/auth/tokens",
        anonymous: true,
        handle: (c) => this.issueToken(c),
      },
      {
        method: "GET",
        pattern: svc("compute", "/v2\\.1/servers/detail"),
        op: "nova.servers.list",
        example: `/${R}/public/compute/v2.1/servers/detail`,
        handle: (c) => this.listServers(c),
      },
      {
        method: "GET",
        pattern: svc("compute", "/v2\\.1/servers/([^/]+)"),
        op: "nova.servers.get",
        example: `/${R}/public/compute/v2.1/servers/${id}`,
        handle: (c) => this.getServer(c),
      },
      {
        method: "GET",
        pattern: svc("volume", "/v3/([^/]+)/volumes/detail"),
        op: "cinder.volumes.list",
        example: `/${R}/public/volume/v3/${id}/volumes/detail`,
        handle: (c) => {
          const mine = this.volumesOf(c);
          return this.listing(
            c,
            "volumes",
            "cinder",
            mine.map((v) => ({ id: v.id, wire: this.wireVolume(v) })),
          );
        },
      },
      {
        method: "GET",
        pattern: svc("volume", "/v3/([^/]+)/volumes/([^/]+)"),
        op: "cinder.volumes.get",
        example: `/${R}/public/volume/v3/${id}/volumes/${id}`,
        handle: (c) => {
          const v = this.volumesOf(c).find((x) => x.id === c.params[2]);
          if (v === undefined) throw novaNotFound(`Volume ${c.params[2]}`);
          return { body: { volume: this.wireVolume(v) } };
        },
      },
      {
        method: "GET",
        pattern: svc("network", "/v2\\.0/ports"),
        op: "neutron.ports.list",
        example: `/${R}/public/network/v2.0/ports`,
        handle: (c) => this.listPorts(c),
      },
      {
        method: "PUT",
        pattern: svc("network", "/v2\\.0/ports/([^/]+)"),
        op: "neutron.ports.update",
        example: `/${R}/public/network/v2.0/ports/${id}`,
        handle: (c) => {
          const p = this.portIn(c.account, c.params[0] ?? "", c.params[1] ?? "");
          this.ifMatch(c, p);
          const pairs = (c.body["port"] as Json | undefined)?.["allowed_address_pairs"];
          if (pairs !== undefined) p.allowedAddressPairs = this.pairs(p, pairs);
          const groups = (c.body["port"] as Json | undefined)?.["security_groups"];
          if (groups !== undefined) p.securityGroups = this.groupsFor(p, groups);
          p.revision++;
          return { body: { port: this.wirePort(p) } };
        },
      },
      {
        method: "PUT",
        pattern: svc("network", "/v2\\.0/ports/([^/]+)/add_allowed_address_pairs"),
        op: "neutron.ports.add_allowed_address_pairs",
        example: `/${R}/public/network/v2.0/ports/${id}/add_allowed_address_pairs`,
        handle: (c) => {
          const p = this.portIn(c.account, c.params[0] ?? "", c.params[1] ?? "");
          const added = this.pairs(p, (c.body["port"] as Json | undefined)?.["allowed_address_pairs"]);
          for (const a of added)
            if (
              !p.allowedAddressPairs.some(
                (x) => x.ip_address === a.ip_address && x.mac_address === a.mac_address,
              )
            )
              p.allowedAddressPairs.push(a);
          return { body: { port: this.wirePort(p) } };
        },
      },
      {
        method: "GET",
        pattern: svc("network", "/v2\\.0/floatingips"),
        op: "neutron.floatingips.list",
        example: `/${R}/public/network/v2.0/floatingips`,
        handle: (c) => this.listFloatingIps(c),
      },
      {
        method: "POST",
        pattern: svc("network", "/v2\\.0/floatingips"),
        op: "neutron.floatingips.create",
        example: `/${R}/public/network/v2.0/floatingips`,
        handle: (c) => this.createFloatingIp(c),
      },
      {
        method: "GET",
        pattern: svc("network", "/v2\\.0/floatingips/([^/]+)"),
        op: "neutron.floatingips.get",
        example: `/${R}/public/network/v2.0/floatingips/${id}`,
        handle: (c) => ({ body: { floatingip: this.wireFip(this.fip(c)) } }),
      },
      {
        method: "PUT",
        pattern: svc("network", "/v2\\.0/floatingips/([^/]+)"),
        op: "neutron.floatingips.update",
        example: `/${R}/public/network/v2.0/floatingips/${id}`,
        handle: (c) => this.updateFloatingIp(c),
      },
      {
        method: "DELETE",
        pattern: svc("network", "/v2\\.0/floatingips/([^/]+)"),
        op: "neutron.floatingips.delete",
        example: `/${R}/public/network/v2.0/floatingips/${id}`,
        handle: (c) => {
          this.store.floatingIps.delete(this.fip(c).id);
          return { status: 204 };
        },
      },
      {
        method: "GET",
        pattern: svc("network", "/v2\\.0/routers/([^/]+)"),
        op: "neutron.routers.get",
        example: `/${R}/public/network/v2.0/routers/${id}`,
        handle: (c) => ({ body: { router: this.wireRouter(this.routerOf(c)) } }),
      },
      {
        method: "PUT",
        pattern: svc("network", "/v2\\.0/routers/([^/]+)/add_extraroutes"),
        op: "neutron.routers.add_extraroutes",
        example: `/${R}/public/network/v2.0/routers/${id}/add_extraroutes`,
        handle: (c) => this.extraRoutes(c, "add"),
      },
      {
        method: "PUT",
        pattern: svc("network", "/v2\\.0/routers/([^/]+)/remove_extraroutes"),
        op: "neutron.routers.remove_extraroutes",
        example: `/${R}/public/network/v2.0/routers/${id}/remove_extraroutes`,
        handle: (c) => this.extraRoutes(c, "remove"),
      },
      {
        method: "PUT",
        pattern: svc("network", "/v2\\.0/routers/([^/]+)/tags/([^/]+)"),
        op: "neutron.routers.tags.add",
        example: `/${R}/public/network/v2.0/routers/${id}/tags/x`,
        handle: (c) => {
          const r = this.routerOf(c);
          const t = c.params[2] ?? "";
          if (t.length > 255 || t.includes(","))
            throw bad("InvalidInput", `Invalid input for operation: '${t}' is not a valid tag.`);
          if (!r.tags.includes(t)) r.tags.push(t);
          return { status: 201, body: "" };
        },
      },
      {
        method: "DELETE",
        pattern: svc("network", "/v2\\.0/routers/([^/]+)/tags/([^/]+)"),
        op: "neutron.routers.tags.delete",
        example: `/${R}/public/network/v2.0/routers/${id}/tags/x`,
        handle: (c) => {
          const r = this.routerOf(c);
          const t = c.params[2] ?? "";
          if (!r.tags.includes(t)) throw neutronNotFound("Tag", t);
          r.tags = r.tags.filter((x) => x !== t);
          return { status: 204 };
        },
      },
      ...this.securityGroupRoutes(R, id),
      ...this.octaviaRoutes(R, id),
    ];
  }

  /** Neutron's security groups and rules, port tags and subnets (upstream's manage-security-groups). */
  private securityGroupRoutes(R: string, id: string): Route[] {
    const at = (rest: string) => new RegExp(`^/([^/]+)/(?:public|internal)/network/v2\\.0/${rest}/?$`);
    const ex = (rest: string) => `/${R}/public/network/v2.0/${rest}`;
    return [
      {
        method: "PUT",
        pattern: at("ports/([^/]+)/tags/([^/]+)"),
        op: "neutron.ports.tags.add",
        example: ex(`ports/${id}/tags/x`),
        handle: (c) => {
          const p = this.portIn(c.account, c.params[0] ?? "", c.params[1] ?? "");
          const t = this.validTag(c.params[2] ?? "");
          if (!p.tags.includes(t)) {
            p.tags.push(t);
            p.revision++;
          }
          return { status: 201, body: "" };
        },
      },
      {
        method: "DELETE",
        pattern: at("ports/([^/]+)/tags/([^/]+)"),
        op: "neutron.ports.tags.delete",
        example: ex(`ports/${id}/tags/x`),
        handle: (c) => {
          const p = this.portIn(c.account, c.params[0] ?? "", c.params[1] ?? "");
          const t = c.params[2] ?? "";
          if (!p.tags.includes(t)) throw neutronNotFound("Tag", t);
          p.tags = p.tags.filter((x) => x !== t);
          p.revision++;
          return { status: 204 };
        },
      },
      {
        method: "GET",
        pattern: at("subnets/([^/]+)"),
        op: "neutron.subnets.get",
        example: ex(`subnets/${id}`),
        handle: (c) => {
          const wanted = c.params[1] ?? "";
          for (const n of this.store.networks.values()) {
            const sub = n.subnets.find((x) => x.id === wanted);
            if (sub === undefined || n.region !== c.params[0]) continue;
            const project = this.project(n.account);
            return {
              body: {
                subnet: {
                  id: sub.id,
                  name: "",
                  network_id: n.id,
                  cidr: sub.cidr,
                  ip_version: sub.cidr.includes(":") ? 6 : 4,
                  tenant_id: project.id,
                  project_id: project.id,
                  enable_dhcp: true,
                  tags: [],
                  revision_number: 1,
                },
              },
            };
          }
          throw neutronNotFound("Subnet", wanted);
        },
      },
      {
        method: "GET",
        pattern: at("security-groups"),
        op: "neutron.security_groups.list",
        example: ex("security-groups"),
        handle: (c) => {
          const name = c.query.get("name");
          const groups = [...this.store.securityGroups.values()].filter(
            (g) =>
              g.account === c.account &&
              g.region === c.params[0] &&
              (name === null || g.name === name) &&
              tagsMatch(g.tags, c.query),
          );
          return this.listing(
            c,
            "security_groups",
            "neutron",
            groups.map((g) => ({ id: g.id, wire: this.wireGroup(g) })),
          );
        },
      },
      {
        method: "POST",
        pattern: at("security-groups"),
        op: "neutron.security_groups.create",
        example: ex("security-groups"),
        handle: (c) => {
          const b = (c.body["security_group"] as Json | undefined) ?? {};
          const g: FakeSecurityGroup = {
            id: this.store.uuid(),
            account: c.account,
            region: c.params[0] ?? "",
            name: typeof b["name"] === "string" ? b["name"] : "",
            description: typeof b["description"] === "string" ? b["description"] : "",
            // Neutron gives a new group its two egress rules.
            rules: (["IPv4", "IPv6"] as const).map((ethertype) => ({
              id: this.store.uuid(),
              direction: "egress",
              ethertype,
              protocol: null,
              portRangeMin: null,
              portRangeMax: null,
              remoteIpPrefix: null,
            })),
            tags: [],
          };
          this.store.securityGroups.set(g.id, g);
          return { status: 201, body: { security_group: this.wireGroup(g) } };
        },
      },
      {
        method: "DELETE",
        pattern: at("security-groups/([^/]+)"),
        op: "neutron.security_groups.delete",
        example: ex(`security-groups/${id}`),
        handle: (c) => {
          const g = this.groupIn(c.account, c.params[0] ?? "", c.params[1] ?? "");
          if ([...this.store.ports.values()].some((p) => p.securityGroups.includes(g.id)))
            throw new FakeError(409, "SecurityGroupInUse", `Security Group ${g.id} in use.`);
          this.store.securityGroups.delete(g.id);
          return { status: 204 };
        },
      },
      {
        method: "PUT",
        pattern: at("security-groups/([^/]+)/tags/([^/]+)"),
        op: "neutron.security_groups.tags.add",
        example: ex(`security-groups/${id}/tags/x`),
        handle: (c) => {
          const g = this.groupIn(c.account, c.params[0] ?? "", c.params[1] ?? "");
          const t = this.validTag(c.params[2] ?? "");
          if (!g.tags.includes(t)) g.tags.push(t);
          return { status: 201, body: "" };
        },
      },
      {
        method: "GET",
        pattern: at("security-group-rules"),
        op: "neutron.security_group_rules.list",
        example: ex("security-group-rules"),
        handle: (c) => {
          const sg = c.query.get("security_group_id");
          const rules = [...this.store.securityGroups.values()]
            .filter(
              (g) => g.account === c.account && g.region === c.params[0] && (sg === null || g.id === sg),
            )
            .flatMap((g) => g.rules.map((r) => ({ id: r.id, wire: this.wireRule(g, r) })));
          return this.listing(c, "security_group_rules", "neutron", rules);
        },
      },
      {
        method: "POST",
        pattern: at("security-group-rules"),
        op: "neutron.security_group_rules.create",
        example: ex("security-group-rules"),
        handle: (c) => {
          const b = (c.body["security_group_rule"] as Json | undefined) ?? {};
          const g = this.groupIn(c.account, c.params[0] ?? "", String(b["security_group_id"]));
          const num = (k: string) => (typeof b[k] === "number" ? (b[k] as number) : null);
          const str = (k: string) => (typeof b[k] === "string" ? (b[k] as string) : null);
          const direction = b["direction"] === "egress" ? "egress" : "ingress";
          const r: FakeSecurityGroupRule = {
            id: this.store.uuid(),
            direction,
            ethertype: b["ethertype"] === "IPv6" ? "IPv6" : "IPv4",
            protocol: str("protocol"),
            portRangeMin: num("port_range_min"),
            portRangeMax: num("port_range_max"),
            remoteIpPrefix: str("remote_ip_prefix"),
          };
          const same = g.rules.find(
            (x) =>
              x.direction === r.direction &&
              x.ethertype === r.ethertype &&
              x.protocol === r.protocol &&
              x.portRangeMin === r.portRangeMin &&
              x.portRangeMax === r.portRangeMax &&
              x.remoteIpPrefix === r.remoteIpPrefix,
          );
          if (same !== undefined)
            throw new FakeError(
              409,
              "SecurityGroupRuleExists",
              `Security group rule already exists. Rule id is ${same.id}.`,
            );
          g.rules.push(r);
          return { status: 201, body: { security_group_rule: this.wireRule(g, r) } };
        },
      },
      {
        method: "DELETE",
        pattern: at("security-group-rules/([^/]+)"),
        op: "neutron.security_group_rules.delete",
        example: ex(`security-group-rules/${id}`),
        handle: (c) => {
          const ruleId = c.params[1] ?? "";
          const g = [...this.store.securityGroups.values()].find(
            (x) =>
              x.account === c.account && x.region === c.params[0] && x.rules.some((r) => r.id === ruleId),
          );
          if (g === undefined) throw neutronNotFound("SecurityGroupRule", ruleId);
          g.rules = g.rules.filter((r) => r.id !== ruleId);
          return { status: 204 };
        },
      },
    ];
  }

  /** Neutron's `If-Match: revision_number=<n>` (revision-if-match): 412 when the port moved on. */
  private ifMatch(c: VendorCall, p: FakePort): void {
    const raw = c.headers["if-match"];
    const m = typeof raw === "string" ? /^revision_number=(\d+)$/.exec(raw.trim()) : null;
    if (m !== null && Number(m[1]) !== p.revision)
      throw new FakeError(
        412,
        "RevisionNumberConstraintFailed",
        `Constrained to ${m[1]}, but current revision is ${p.revision}`,
      );
  }

  private validTag(t: string): string {
    if (t.length > 255 || t.includes(","))
      throw bad("InvalidInput", `Invalid input for operation: '${t}' is not a valid tag.`);
    return t;
  }

  private groupIn(account: string, region: string, id: string): FakeSecurityGroup {
    const g = this.store.securityGroups.get(id);
    if (g === undefined || g.account !== account || g.region !== region)
      throw neutronNotFound("SecurityGroup", id);
    return g;
  }

  /** A port's new security groups: each of the project's, and none on a port without port security. */
  private groupsFor(p: FakePort, raw: unknown): string[] {
    if (!Array.isArray(raw)) throw bad("InvalidInput", "security_groups must be a list");
    const ids = raw.map(String);
    for (const g of ids) this.groupIn(p.account, p.region, g);
    if (ids.length > 0 && !p.portSecurityEnabled)
      throw new FakeError(
        409,
        "PortSecurityAndIPRequiredForSecurityGroups",
        "Port security must be enabled and port must have an IP address in order to use security groups.",
      );
    return [...new Set(ids)];
  }

  private wireGroup(g: FakeSecurityGroup): Json {
    const project = this.project(g.account);
    return {
      id: g.id,
      name: g.name,
      description: g.description,
      tenant_id: project.id,
      project_id: project.id,
      security_group_rules: g.rules.map((r) => this.wireRule(g, r)),
      tags: g.tags,
      stateful: true,
      shared: false,
      revision_number: 1,
    };
  }

  private wireRule(g: FakeSecurityGroup, r: FakeSecurityGroupRule): Json {
    const project = this.project(g.account);
    return {
      id: r.id,
      security_group_id: g.id,
      direction: r.direction,
      ethertype: r.ethertype,
      protocol: r.protocol,
      port_range_min: r.portRangeMin,
      port_range_max: r.portRangeMax,
      remote_ip_prefix: r.remoteIpPrefix,
      remote_group_id: null,
      tenant_id: project.id,
      project_id: project.id,
      description: "",
      revision_number: 1,
    };
  }

  private octaviaRoutes(R: string, id: string): Route[] {
    const at = (rest: string) =>
      new RegExp(`^/([^/]+)/(?:public|internal)/load-balancer/v2/lbaas/${rest}/?$`);
    const ex = (rest: string) => `/${R}/public/load-balancer/v2/lbaas/${rest}`;
    const kinds = ["loadbalancers", "listeners", "pools", "healthmonitors"] as const;
    const routes: Route[] = [];
    for (const kind of kinds) {
      routes.push(
        {
          method: "GET",
          pattern: at(kind),
          op: `octavia.${kind}.list`,
          example: ex(kind),
          handle: (c) => this.octaviaList(kind, c),
        },
        {
          method: "POST",
          pattern: at(kind),
          op: `octavia.${kind}.create`,
          example: ex(kind),
          handle: (c) => this.octaviaCreate(kind, c),
        },
        {
          method: "PUT",
          pattern: at(`${kind}/([^/]+)`),
          op: `octavia.${kind}.update`,
          example: ex(`${kind}/${id}`),
          handle: (c) => this.octaviaUpdate(kind, c),
        },
        {
          method: "DELETE",
          pattern: at(`${kind}/([^/]+)`),
          op: `octavia.${kind}.delete`,
          example: ex(`${kind}/${id}`),
          handle: (c) => this.octaviaDelete(kind, c),
        },
      );
    }
    routes.push(
      {
        method: "GET",
        pattern: at("loadbalancers/([^/]+)"),
        op: "octavia.loadbalancers.get",
        example: ex(`loadbalancers/${id}`),
        handle: (c) => ({ body: { loadbalancer: this.wireLb(this.lbOf(c, c.params[1] ?? "")) } }),
      },
      {
        method: "GET",
        pattern: at("pools/([^/]+)/members"),
        op: "octavia.members.list",
        example: ex(`pools/${id}/members`),
        handle: (c) => {
          const pool = this.poolOf(c, c.params[1] ?? "");
          return this.listing(
            c,
            "members",
            "octavia",
            pool.members.map((m) => ({ id: m.id, wire: this.wireMember(pool, m) })),
          );
        },
      },
      {
        method: "PUT",
        pattern: at("pools/([^/]+)/members"),
        op: "octavia.members.replace",
        example: ex(`pools/${id}/members`),
        handle: (c) => this.replaceMembers(c),
      },
    );
    return routes;
  }

  // ---- paging -------------------------------------------------------------------------------

  private listing(c: VendorCall, key: string, service: Listing["service"], items: Listing["list"]): Listing {
    void c;
    return { list: items, key, service };
  }

  protected page(listing: Listing, c: VendorCall, faults: ListFaults): unknown {
    const limitRaw = c.query.get("limit");
    const limit = limitRaw === null ? 1000 : Number(limitRaw);
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw bad("BadRequest", `limit must be an integer 0 or greater`);
    const marker = c.query.get("marker");
    let from = 0;
    if (marker !== null) {
      const at = listing.list.findIndex((i) => i.id === marker);
      if (at < 0) {
        if (listing.service === "nova") throw bad("badRequest", `marker [${marker}] not found`);
        if (listing.service === "neutron") throw neutronNotFound("Marker", marker);
        if (listing.service === "cinder") throw novaNotFound(`Marker ${marker}`);
        throw octaviaNotFound("Marker", marker);
      }
      from = at + 1;
    }
    const size = limit === 0 ? 1000 : limit;
    const slice = listing.list.slice(from, from + size);
    const more = from + size < listing.list.length;
    const items = faults.drop(faults.empty(slice.map((i) => i.wire)));
    const last = slice.at(-1);
    // Cinder leaves `volumes_links` out when there is no next page.
    if (listing.service === "cinder" && !more) return { [listing.key]: items };
    const links =
      more && last !== undefined
        ? [{ rel: "next", href: `${this.url}${c.path}?${nextQuery(c.query, last.id)}` }]
        : [];
    return { [listing.key]: items, [`${listing.key}_links`]: links };
  }

  // ---- Keystone -----------------------------------------------------------------------------

  private issueToken(c: VendorCall): { status: number; body: Json; headers: Record<string, string> } {
    const identity = (c.body["auth"] as Json | undefined)?.["identity"] as Json | undefined;
    const methods = identity?.["methods"];
    const refused = () =>
      new FakeError(401, "Unauthorized", "The request you have made requires authentication.", {
        kind: "auth",
      });
    if (!Array.isArray(methods) || methods.length !== 1)
      throw bad("ValidationError", "one auth method expected");
    const method = methods[0];
    let cred: Credential | undefined;
    if (method === "application_credential") {
      const ac = identity?.["application_credential"] as Json | undefined;
      cred = this.credentials.find(
        (k) => k.kind === "application_credential" && k.id === ac?.["id"] && k.secret === ac?.["secret"],
      );
    } else if (method === "password") {
      const user = (identity?.["password"] as Json | undefined)?.["user"] as Json | undefined;
      const domain = (user?.["domain"] as Json | undefined)?.["name"] ?? "Default";
      cred = this.credentials.find(
        (k) =>
          k.kind === "password" &&
          k.id === user?.["name"] &&
          k.user.domain === domain &&
          k.secret === user?.["password"],
      );
      const scope = (c.body["auth"] as Json)["scope"] as Json | undefined;
      const project = scope?.["project"] as Json | undefined;
      const p = cred === undefined ? undefined : this.store.projects.get(cred.account);
      if (
        cred !== undefined &&
        p !== undefined &&
        project !== undefined &&
        project["id"] !== p.id &&
        project["name"] !== p.name
      )
        throw refused();
    } else throw bad("ValidationError", `unsupported auth method ${String(method)}`);
    if (cred === undefined) throw refused();
    const project = this.project(cred.account);
    const token = `gAAAAA${(++this.tokenSeq).toString(36).padStart(8, "0")}${Math.random().toString(36).slice(2)}`;
    const expiresMs = c.nowMs + this.tokenTtlMs;
    this.tokens.set(token, { account: cred.account, expiresMs });
    const iso = (n: number) => new Date(n).toISOString().replace(/Z$/, "000Z");
    return {
      status: 201,
      headers: { "x-subject-token": token },
      body: {
        token: {
          methods: [method],
          expires_at: iso(expiresMs),
          issued_at: iso(c.nowMs),
          audit_ids: [`a${this.tokenSeq}`],
          user: { id: cred.user.id, name: cred.user.name, domain: { id: DOMAIN_ID, name: cred.user.domain } },
          project: { id: project.id, name: project.name, domain: { id: DOMAIN_ID, name: project.domain } },
          is_domain: false,
          roles: [
            { id: "60000000-0000-4000-8000-000000000001", name: "member" },
            { id: "60000000-0000-4000-8000-000000000002", name: "load-balancer_member" },
          ],
          catalog: this.catalog(project.id),
        },
      },
    };
  }

  private catalog(projectId: string): Json[] {
    const services = [
      { type: "compute", name: "nova", path: "compute/v2.1" },
      { type: "network", name: "neutron", path: "network" },
      { type: "load-balancer", name: "octavia", path: "load-balancer" },
      this.cinderCatalogType === "block-storage"
        ? { type: "block-storage", name: "cinder", path: "volume/v3" }
        : { type: "volumev3", name: "cinderv3", path: `volume/v3/${projectId}` },
    ];
    let n = 0;
    const epId = () => `e0000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
    return [
      {
        id: "50000000-0000-4000-8000-000000000000",
        type: "identity",
        name: "keystone",
        endpoints: this.regions.map((region) => ({
          id: epId(),
          interface: "public",
          region,
          region_id: region,
          url: `${this.url}/v3`,
        })),
      },
      ...services.map((s, i) => ({
        id: `50000000-0000-4000-8000-00000000000${i + 1}`,
        type: s.type,
        name: s.name,
        endpoints: this.regions.flatMap((region) =>
          ["public", "internal"].map((iface) => ({
            id: epId(),
            interface: iface,
            region,
            region_id: region,
            url: `${this.url}/${region}/${iface}/${s.path}`,
          })),
        ),
      })),
    ];
  }

  // ---- Cinder -------------------------------------------------------------------------------

  /** The project's volumes of the path's region; a project id in the path not the token's is refused, as Cinder does. */
  private volumesOf(c: VendorCall): FakeVolume[] {
    if (c.params[1] !== this.project(c.account).id)
      throw new FakeError(403, "forbidden", "Policy doesn't allow volume:get_all to be performed.");
    return [...this.store.volumes.values()].filter(
      (v) => v.account === c.account && v.region === c.params[0],
    );
  }

  /** A volume as Cinder's v3.0 answers a project member (the admin-only `os-vol-*` attributes left out). */
  private wireVolume(v: FakeVolume): Json {
    const project = this.project(v.account);
    const self = `${this.url}/${v.region}/public/volume/v3/${project.id}/volumes/${v.id}`;
    return {
      attachments:
        v.serverId === undefined
          ? []
          : [
              {
                server_id: v.serverId,
                attachment_id: `a${v.id.slice(1)}`,
                attached_at: osTime(v.createdMs),
                host_name: null,
                volume_id: v.id,
                device: "/dev/vdb",
                id: v.id,
              },
            ],
      availability_zone: v.az,
      bootable: "false",
      consistencygroup_id: null,
      created_at: `${osTime(v.createdMs)}.000000`,
      description: null,
      encrypted: false,
      id: v.id,
      links: [
        { href: self, rel: "self" },
        { href: self.replace("/v3/", "/"), rel: "bookmark" },
      ],
      metadata: { ...v.metadata },
      migration_status: null,
      multiattach: false,
      name: v.name === "" ? null : v.name,
      "os-vol-tenant-attr:tenant_id": project.id,
      replication_status: null,
      size: v.size,
      snapshot_id: null,
      source_volid: null,
      status: v.status,
      updated_at: null,
      user_id: "c853ca26-e8ea-4797-8a52-ee124a013d0e",
      volume_type: "__DEFAULT__",
    };
  }

  // ---- Nova ---------------------------------------------------------------------------------

  /** The microversion asked (OpenStack-API-Version or the legacy header), checked against Nova's range. */
  private novaVersion(c: VendorCall): [number, number] {
    const h = c.headers["openstack-api-version"];
    const legacy = c.headers["x-openstack-nova-api-version"];
    let asked: string | undefined;
    if (typeof h === "string") asked = /^\s*compute\s+(\S+)\s*$/i.exec(h)?.[1];
    else if (typeof legacy === "string") asked = legacy;
    const min = versionParts(NOVA_MIN_MICROVERSION) as [number, number];
    const max = versionParts(NOVA_MAX_MICROVERSION) as [number, number];
    if (asked === undefined) return min;
    if (asked === "latest") return max;
    const v = versionParts(asked);
    if (v === undefined) throw bad("badRequest", `Invalid format for API version ${asked}`);
    if (cmpVersion(v, min) < 0 || cmpVersion(v, max) > 0)
      throw new FakeError(
        406,
        "notAcceptable",
        `Version ${asked} is not supported by the API. Minimum is ${NOVA_MIN_MICROVERSION} and maximum is ${NOVA_MAX_MICROVERSION}.`,
      );
    return v;
  }

  private novaHeaders(v: [number, number]): Record<string, string> {
    const s = `${v[0]}.${v[1]}`;
    return {
      "openstack-api-version": `compute ${s}`,
      "x-openstack-nova-api-version": s,
      vary: "OpenStack-API-Version, X-OpenStack-Nova-API-Version",
    };
  }

  private listServers(c: VendorCall): Listing | { body: Json; headers: Record<string, string> } {
    const region = c.params[0] ?? "";
    const v = this.novaVersion(c);
    const since = c.query.get("changes-since");
    const sinceMs = since === null ? undefined : Date.parse(since.endsWith("Z") ? since : `${since}Z`);
    const name = c.query.get("name");
    // Nova's changes-since also lists the servers deleted since (status DELETED).
    const candidates = [
      ...this.store.servers.values(),
      ...(sinceMs === undefined ? [] : this.store.deletedServers.values()),
    ];
    const servers = candidates.filter(
      (s) =>
        s.account === c.account &&
        s.region === region &&
        (sinceMs === undefined || s.updatedMs >= sinceMs) &&
        (name === null || new RegExp(name).test(s.name)),
    );
    // Answer headers are the page's: a listing carries none, so the version is read from the request.
    return this.listing(
      c,
      "servers",
      "nova",
      servers.map((s) => ({ id: s.id, wire: this.wireServer(s, v) })),
    );
  }

  private getServer(c: VendorCall): { body: Json; headers: Record<string, string> } {
    const v = this.novaVersion(c);
    const s = this.store.servers.get(c.params[1] ?? "");
    if (s === undefined || s.account !== c.account || s.region !== c.params[0])
      throw novaNotFound(`Instance ${c.params[1]}`);
    return { body: { server: this.wireServer(s, v) }, headers: this.novaHeaders(v) };
  }

  private wireServer(s: FakeServer, v: [number, number]): Json {
    const project = this.project(s.account);
    const addresses: Record<string, Json[]> = {};
    for (const p of this.store.ports.values()) {
      if (p.deviceId !== s.id) continue;
      const net = this.store.networks.get(p.networkId);
      const name = net?.name ?? p.networkId;
      const list = addresses[name] ?? [];
      addresses[name] = list;
      for (const ip of p.fixedIps)
        list.push({
          addr: ip.ip_address,
          version: 4,
          "OS-EXT-IPS:type": "fixed",
          "OS-EXT-IPS-MAC:mac_addr": p.mac,
        });
      for (const f of this.store.floatingIps.values())
        if (f.portId === p.id)
          list.push({
            addr: f.address,
            version: 4,
            "OS-EXT-IPS:type": "floating",
            "OS-EXT-IPS-MAC:mac_addr": p.mac,
          });
    }
    const embedded = cmpVersion(v, [2, 47]) >= 0;
    return {
      id: s.id,
      name: s.name,
      status: s.status,
      tenant_id: project.id,
      user_id: "u-nova",
      metadata: s.metadata,
      hostId: "",
      created: ms(s.createdMs),
      updated: ms(s.updatedMs),
      addresses,
      flavor: embedded
        ? {
            original_name: s.flavor.name,
            vcpus: s.flavor.vcpus,
            ram: s.flavor.ram,
            disk: s.flavor.disk,
            ephemeral: 0,
            swap: 0,
            extra_specs: {},
          }
        : { id: s.flavor.name, links: [{ rel: "bookmark", href: `${this.url}/flavors/${s.flavor.name}` }] },
      image: { id: "0a9e0000-0000-4000-8000-000000000000", links: [] },
      links: [{ rel: "self", href: `${this.url}/${s.region}/public/compute/v2.1/servers/${s.id}` }],
      "OS-EXT-AZ:availability_zone": s.az,
      "OS-EXT-STS:vm_state":
        s.status === "SHUTOFF"
          ? "stopped"
          : s.status === "SOFT_DELETED"
            ? "soft-delete"
            : s.status.toLowerCase(),
      "OS-EXT-STS:power_state": s.status === "ACTIVE" ? 1 : 4,
      "OS-DCF:diskConfig": "MANUAL",
      progress: 0,
      config_drive: "",
      security_groups: [{ name: "default" }],
      "os-extended-volumes:volumes_attached": [],
      locked: false,
      tags: [],
    };
  }

  // ---- Neutron ------------------------------------------------------------------------------

  private createPort(network: FakeNetwork, deviceId: string, owner: string): FakePort {
    const p: FakePort = {
      id: this.store.uuid(),
      account: network.account,
      region: network.region,
      networkId: network.id,
      deviceId,
      deviceOwner: owner,
      mac: this.store.mac(),
      fixedIps: [{ subnet_id: network.subnets[0]?.id ?? "", ip_address: this.store.hostIn(network) }],
      allowedAddressPairs: [],
      name: "",
      securityGroups: [],
      portSecurityEnabled: true,
      tags: [],
      revision: 1,
    };
    this.store.ports.set(p.id, p);
    return p;
  }

  private deletePort(id: string): void {
    this.store.ports.delete(id);
    // Neutron disassociates a floating IP whose port goes.
    for (const f of this.store.floatingIps.values())
      if (f.portId === id) {
        f.portId = null;
        f.fixedIp = null;
      }
  }

  private listPorts(c: VendorCall): Listing {
    const region = c.params[0] ?? "";
    const devices = c.query.getAll("device_id");
    const network = c.query.get("network_id");
    // Neutron's `security_groups` filter: the ports holding one of the groups.
    const groups = c.query.getAll("security_groups");
    const ports = [...this.store.ports.values()].filter(
      (p) =>
        p.account === c.account &&
        p.region === region &&
        (devices.length === 0 || devices.includes(p.deviceId)) &&
        (network === null || p.networkId === network) &&
        (groups.length === 0 || groups.some((g) => p.securityGroups.includes(g))) &&
        tagsMatch(p.tags, c.query),
    );
    return this.listing(
      c,
      "ports",
      "neutron",
      ports.map((p) => ({ id: p.id, wire: this.wirePort(p) })),
    );
  }

  /** Allowed address pairs as Neutron keeps them (the port's MAC where none is given). */
  private pairs(p: FakePort, raw: unknown): { ip_address: string; mac_address: string }[] {
    if (!Array.isArray(raw)) throw bad("InvalidInput", "allowed_address_pairs must be a list");
    return (raw as Json[]).map((x) => ({
      ip_address: String(x["ip_address"]),
      mac_address: typeof x["mac_address"] === "string" ? x["mac_address"] : p.mac,
    }));
  }

  private wirePort(p: FakePort): Json {
    const project = this.project(p.account);
    return {
      id: p.id,
      name: p.name,
      network_id: p.networkId,
      tenant_id: project.id,
      project_id: project.id,
      mac_address: p.mac,
      admin_state_up: true,
      status: p.status ?? "ACTIVE",
      device_id: p.deviceId,
      device_owner: p.deviceOwner,
      fixed_ips: p.fixedIps,
      allowed_address_pairs: p.allowedAddressPairs,
      security_groups: p.securityGroups,
      port_security_enabled: p.portSecurityEnabled,
      description: "",
      tags: p.tags,
      revision_number: p.revision,
    };
  }

  private fip(c: VendorCall): FakeFloatingIp {
    const f = this.store.floatingIps.get(c.params[1] ?? "");
    if (f === undefined || f.account !== c.account || f.region !== c.params[0])
      throw neutronNotFound("FloatingIP", c.params[1] ?? "");
    return f;
  }

  private listFloatingIps(c: VendorCall): Listing {
    const region = c.params[0] ?? "";
    const q = c.query;
    const fips = [...this.store.floatingIps.values()].filter(
      (f) =>
        f.account === c.account &&
        f.region === region &&
        (!q.has("port_id") || (f.portId !== null && q.getAll("port_id").includes(f.portId))) &&
        (!q.has("floating_ip_address") || f.address === q.get("floating_ip_address")) &&
        (!q.has("floating_network_id") || f.floatingNetworkId === q.get("floating_network_id")) &&
        (!q.has("description") || f.description === q.get("description")),
    );
    return this.listing(
      c,
      "floatingips",
      "neutron",
      fips.map((f) => ({ id: f.id, wire: this.wireFip(f) })),
    );
  }

  private newFloatingIp(
    account: string,
    region: string,
    networkId: string,
    portId: string | null,
    description: string,
    address?: string,
  ): FakeFloatingIp {
    const port = portId === null ? undefined : this.store.ports.get(portId);
    const f: FakeFloatingIp = {
      id: this.store.uuid(),
      account,
      region,
      floatingNetworkId: networkId,
      address: address ?? this.store.freshPublicIp(),
      portId: port?.id ?? null,
      fixedIp: port?.fixedIps[0]?.ip_address ?? null,
      description,
      tags: [],
      createdMs: this.now(),
    };
    this.store.floatingIps.set(f.id, f);
    return f;
  }

  private createFloatingIp(c: VendorCall): { status: number; body: Json } {
    const region = c.params[0] ?? "";
    const b = c.body["floatingip"] as Json | undefined;
    const netId = b?.["floating_network_id"];
    const net = typeof netId === "string" ? this.store.networks.get(netId) : undefined;
    if (net === undefined || net.region !== region) throw neutronNotFound("Network", String(netId));
    if (!net.external)
      throw bad("BadRequest", `Bad floatingip request: Network ${net.id} is not a valid external network.`);
    const portId = typeof b?.["port_id"] === "string" ? (b["port_id"] as string) : null;
    if (portId !== null) this.portIn(c.account, region, portId);
    const address =
      typeof b?.["floating_ip_address"] === "string" ? (b["floating_ip_address"] as string) : undefined;
    if (address !== undefined && [...this.store.floatingIps.values()].some((f) => f.address === address))
      throw new FakeError(
        409,
        "IpAddressInUse",
        `Unable to complete operation for network ${net.id}. The IP address ${address} is in use.`,
      );
    const f = this.newFloatingIp(
      c.account,
      region,
      net.id,
      portId,
      typeof b?.["description"] === "string" ? (b["description"] as string) : "",
      address,
    );
    return { status: 201, body: { floatingip: this.wireFip(f) } };
  }

  private portIn(account: string, region: string, id: string): FakePort {
    const p = this.store.ports.get(id);
    if (p === undefined || p.account !== account || p.region !== region) throw neutronNotFound("Port", id);
    return p;
  }

  private updateFloatingIp(c: VendorCall): { body: Json } {
    const f = this.fip(c);
    const b = (c.body["floatingip"] as Json | undefined) ?? {};
    if ("port_id" in b) {
      const portId = b["port_id"];
      if (portId === null) {
        f.portId = null;
        f.fixedIp = null;
      } else if (typeof portId === "string") {
        const p = this.portIn(c.account, f.region, portId);
        f.portId = p.id;
        f.fixedIp = p.fixedIps[0]?.ip_address ?? null;
      }
    }
    if (typeof b["description"] === "string") f.description = b["description"];
    return { body: { floatingip: this.wireFip(f) } };
  }

  private wireFip(f: FakeFloatingIp): Json {
    const project = this.project(f.account);
    return {
      id: f.id,
      floating_ip_address: f.address,
      floating_network_id: f.floatingNetworkId,
      port_id: f.portId,
      fixed_ip_address: f.fixedIp,
      router_id: null,
      status: f.portId === null ? "DOWN" : "ACTIVE",
      tenant_id: project.id,
      project_id: project.id,
      description: f.description,
      tags: f.tags,
      revision_number: 1,
      created_at: ms(f.createdMs),
      updated_at: ms(f.createdMs),
      qos_policy_id: null,
    };
  }

  private router(id: string): FakeRouter {
    const r = this.store.routers.get(id);
    if (r === undefined) throw new Error(`no router ${id}`);
    return r;
  }

  private routerOf(c: VendorCall): FakeRouter {
    const r = this.store.routers.get(c.params[1] ?? "");
    if (r === undefined || r.account !== c.account || r.region !== c.params[0])
      throw neutronNotFound("Router", c.params[1] ?? "");
    return r;
  }

  private extraRoutes(c: VendorCall, how: "add" | "remove"): { body: Json } {
    const r = this.routerOf(c);
    const routes = ((c.body["router"] as Json | undefined)?.["routes"] ?? []) as unknown;
    if (!Array.isArray(routes)) throw bad("BadRequest", "routes must be a list");
    for (const raw of routes as Json[]) {
      const destination = String(raw["destination"]);
      const nexthop = String(raw["nexthop"]);
      const at = r.routes.findIndex((x) => x.destination === destination && x.nexthop === nexthop);
      if (how === "add" && at < 0) r.routes.push({ destination, nexthop });
      if (how === "remove" && at >= 0) r.routes.splice(at, 1);
    }
    return { body: { router: this.wireRouter(r) } };
  }

  private wireRouter(r: FakeRouter): Json {
    const project = this.project(r.account);
    return {
      id: r.id,
      name: r.name,
      status: "ACTIVE",
      admin_state_up: true,
      tenant_id: project.id,
      project_id: project.id,
      routes: r.routes,
      description: "",
      tags: r.tags,
      revision_number: 1,
    };
  }

  // ---- Octavia ------------------------------------------------------------------------------

  /** The load balancer's status now: a pending state ends at its time. */
  private settle(lb: FakeLoadBalancer): Provisioning {
    if (lb.status.startsWith("PENDING_") && this.now() >= lb.pendingUntilMs) {
      if (lb.status === "PENDING_DELETE") {
        this.dropLoadBalancer(lb);
        lb.status = "DELETED";
      } else if (lb.status === "PENDING_CREATE" && lb.failing) lb.status = "ERROR";
      else lb.status = "ACTIVE";
    }
    return lb.status;
  }

  private pend(lb: FakeLoadBalancer, status: Provisioning): void {
    lb.status = status;
    lb.pendingUntilMs = this.now() + this.pendingMs;
  }

  /** Octavia refuses to change a load balancer (or anything of it) that is not ACTIVE. */
  private mutable(lb: FakeLoadBalancer): void {
    const status = this.settle(lb);
    // An ERROR load balancer may still be changed or deleted (how a user recovers it).
    if (status !== "ACTIVE" && status !== "ERROR")
      throw new FakeError(409, "Conflict", `Load Balancer ${lb.id} is immutable and cannot be updated.`);
  }

  private lbOf(c: VendorCall, id: string): FakeLoadBalancer {
    const lb = this.store.loadBalancers.get(id);
    if (
      lb === undefined ||
      lb.account !== c.account ||
      lb.region !== c.params[0] ||
      this.settle(lb) === "DELETED"
    )
      throw octaviaNotFound("Load Balancer", id);
    return lb;
  }

  private poolOf(c: VendorCall, id: string): FakePool {
    const p = this.store.pools.get(id);
    if (p === undefined) throw octaviaNotFound("Pool", id);
    this.lbOf(c, p.lbId);
    return p;
  }

  private newLoadBalancer(
    account: string,
    region: string,
    spec: {
      name: string;
      description: string;
      subnetId?: string;
      networkId?: string;
      tags: string[];
      flavorId?: string | null;
      az?: string | null;
      provider?: string;
      address?: string;
      active: boolean;
    },
  ): FakeLoadBalancer {
    const net = [...this.store.networks.values()].find(
      (n) =>
        n.account === account &&
        n.region === region &&
        (spec.subnetId !== undefined
          ? n.subnets.some((s) => s.id === spec.subnetId)
          : n.id === spec.networkId),
    );
    if (net === undefined)
      throw bad(
        "ValidationException",
        `Validation failure: subnet or network not found (${spec.subnetId ?? spec.networkId}).`,
      );
    const port = this.createPort(net, "", "Octavia");
    const lb: FakeLoadBalancer = {
      id: this.store.uuid(),
      account,
      region,
      name: spec.name,
      description: spec.description,
      vipSubnetId: spec.subnetId ?? net.subnets[0]?.id ?? "",
      vipNetworkId: net.id,
      vipAddress: port.fixedIps[0]?.ip_address ?? "",
      vipPortId: port.id,
      tags: spec.tags,
      flavorId: spec.flavorId ?? null,
      az: spec.az ?? null,
      provider: spec.provider ?? "amphora",
      status: spec.active ? "ACTIVE" : "PENDING_CREATE",
      pendingUntilMs: this.now() + (spec.active ? 0 : this.pendingMs),
      failing: false,
      createdMs: this.now(),
    };
    port.deviceId = `lb-${lb.id}`;
    this.store.loadBalancers.set(lb.id, lb);
    return lb;
  }

  private dropLoadBalancer(lb: FakeLoadBalancer): void {
    for (const l of [...this.store.listeners.values()])
      if (l.lbId === lb.id) this.store.listeners.delete(l.id);
    for (const p of [...this.store.pools.values()])
      if (p.lbId === lb.id) {
        for (const h of [...this.store.healthMonitors.values()])
          if (h.poolId === p.id) this.store.healthMonitors.delete(h.id);
        this.store.pools.delete(p.id);
      }
    this.deletePort(lb.vipPortId);
    this.store.loadBalancers.delete(lb.id);
  }

  private tagsOf(b: Json): string[] {
    const t = b["tags"];
    return Array.isArray(t) ? t.map(String) : [];
  }

  private octaviaList(kind: string, c: VendorCall): Listing {
    const region = c.params[0] ?? "";
    const q = c.query;
    const name = q.get("name");
    const lbFilter = q.get("loadbalancer_id");
    const tags = q.get("tags")?.split(",");
    const keep = (o: { name: string; tags: string[] }, lbId: string) =>
      (name === null || o.name === name) &&
      (lbFilter === null || lbId === lbFilter) &&
      (tags === undefined || tags.every((t) => o.tags.includes(t)));
    const mine = (lbId: string) => {
      const lb = this.store.loadBalancers.get(lbId);
      return (
        lb !== undefined && lb.account === c.account && lb.region === region && this.settle(lb) !== "DELETED"
      );
    };
    if (kind === "loadbalancers") {
      const lbs = [...this.store.loadBalancers.values()].filter((l) => mine(l.id) && keep(l, l.id));
      return this.listing(
        c,
        kind,
        "octavia",
        lbs.map((l) => ({ id: l.id, wire: this.wireLb(l) })),
      );
    }
    if (kind === "listeners") {
      const ls = [...this.store.listeners.values()].filter((l) => mine(l.lbId) && keep(l, l.lbId));
      return this.listing(
        c,
        kind,
        "octavia",
        ls.map((l) => ({ id: l.id, wire: this.wireListener(l) })),
      );
    }
    if (kind === "pools") {
      const ps = [...this.store.pools.values()].filter((p) => mine(p.lbId) && keep(p, p.lbId));
      return this.listing(
        c,
        kind,
        "octavia",
        ps.map((p) => ({ id: p.id, wire: this.wirePool(p) })),
      );
    }
    const hs = [...this.store.healthMonitors.values()].filter((h) => {
      const pool = this.store.pools.get(h.poolId);
      return pool !== undefined && mine(pool.lbId) && keep(h, pool.lbId);
    });
    return this.listing(
      c,
      kind,
      "octavia",
      hs.map((h) => ({ id: h.id, wire: this.wireHm(h) })),
    );
  }

  private octaviaCreate(kind: string, c: VendorCall): { status: number; body: Json } {
    const region = c.params[0] ?? "";
    if (kind === "loadbalancers") {
      const b = (c.body["loadbalancer"] as Json | undefined) ?? {};
      const lb = this.newLoadBalancer(c.account, region, {
        name: String(b["name"] ?? ""),
        description: String(b["description"] ?? ""),
        ...(typeof b["vip_subnet_id"] === "string" && { subnetId: b["vip_subnet_id"] }),
        ...(typeof b["vip_network_id"] === "string" && { networkId: b["vip_network_id"] }),
        tags: this.tagsOf(b),
        flavorId: typeof b["flavor_id"] === "string" ? b["flavor_id"] : null,
        az: typeof b["availability_zone"] === "string" ? b["availability_zone"] : null,
        ...(typeof b["provider"] === "string" && { provider: b["provider"] }),
        active: false,
      });
      if (this.failingCreates > 0) {
        this.failingCreates--;
        lb.failing = true;
      }
      return { status: 201, body: { loadbalancer: this.wireLb(lb) } };
    }
    if (kind === "listeners") {
      const b = (c.body["listener"] as Json | undefined) ?? {};
      const lb = this.lbOf(c, String(b["loadbalancer_id"] ?? ""));
      this.mutable(lb);
      const port = Number(b["protocol_port"]);
      const protocol = String(b["protocol"]);
      if (
        [...this.store.listeners.values()].some(
          (l) => l.lbId === lb.id && l.port === port && l.protocol === protocol,
        )
      )
        throw new FakeError(
          409,
          "Conflict",
          `Another Listener on this Load Balancer is already using protocol_port ${port}`,
        );
      this.checkCertificate(protocol, b["default_tls_container_ref"]);
      const {
        name,
        description,
        protocol: _p,
        protocol_port: _pp,
        loadbalancer_id: _l,
        tags: _t,
        default_pool_id: _d,
        ...settings
      } = b;
      const l: FakeListener = {
        id: this.store.uuid(),
        lbId: lb.id,
        name: String(name ?? ""),
        description: String(description ?? ""),
        protocol,
        port,
        defaultPoolId: null,
        settings,
        tags: this.tagsOf(b),
      };
      this.store.listeners.set(l.id, l);
      this.pend(lb, "PENDING_UPDATE");
      return { status: 201, body: { listener: this.wireListener(l) } };
    }
    if (kind === "pools") {
      const b = (c.body["pool"] as Json | undefined) ?? {};
      const listener =
        typeof b["listener_id"] === "string" ? this.store.listeners.get(b["listener_id"]) : undefined;
      const lbId = listener?.lbId ?? String(b["loadbalancer_id"] ?? "");
      const lb = this.lbOf(c, lbId);
      this.mutable(lb);
      if (listener !== undefined && listener.defaultPoolId !== null)
        throw new FakeError(409, "Conflict", `Listener ${listener.id} already has a default pool`);
      const p: FakePool = {
        id: this.store.uuid(),
        lbId: lb.id,
        listenerId: listener?.id ?? null,
        name: String(b["name"] ?? ""),
        description: String(b["description"] ?? ""),
        protocol: String(b["protocol"]),
        lbAlgorithm: String(b["lb_algorithm"] ?? "ROUND_ROBIN"),
        sessionPersistence: (b["session_persistence"] as Json | undefined) ?? null,
        members: [],
        tags: this.tagsOf(b),
      };
      this.store.pools.set(p.id, p);
      if (listener !== undefined) listener.defaultPoolId = p.id;
      this.pend(lb, "PENDING_UPDATE");
      return { status: 201, body: { pool: this.wirePool(p) } };
    }
    const b = (c.body["healthmonitor"] as Json | undefined) ?? {};
    const pool = this.poolOf(c, String(b["pool_id"] ?? ""));
    const lb = this.lbOf(c, pool.lbId);
    this.mutable(lb);
    if ([...this.store.healthMonitors.values()].some((h) => h.poolId === pool.id))
      throw new FakeError(409, "Conflict", `This Octavia pool ${pool.id} already has a health monitor`);
    // ovn-octavia-provider monitors TCP, UDP-CONNECT and SCTP only; Octavia answers its refusal 501.
    if (lb.provider === "ovn" && !["TCP", "UDP-CONNECT", "SCTP"].includes(String(b["type"])))
      throw new FakeError(
        501,
        "ProviderUnsupportedOptionError",
        `Provider 'ovn' does not support a requested option: OVN provider does not support ${String(b["type"])} health monitor type. Supported types: TCP, UDP-CONNECT and SCTP`,
      );
    const { name, type, pool_id: _p, tags: _t, ...settings } = b;
    const h: FakeHealthMonitor = {
      id: this.store.uuid(),
      poolId: pool.id,
      name: String(name ?? ""),
      type: String(type),
      settings,
      tags: this.tagsOf(b),
    };
    this.store.healthMonitors.set(h.id, h);
    this.pend(lb, "PENDING_UPDATE");
    return { status: 201, body: { healthmonitor: this.wireHm(h) } };
  }

  private octaviaUpdate(kind: string, c: VendorCall): { status: number; body: Json } {
    const id = c.params[1] ?? "";
    if (kind === "loadbalancers") {
      const lb = this.lbOf(c, id);
      this.mutable(lb);
      const b = (c.body["loadbalancer"] as Json | undefined) ?? {};
      if (typeof b["name"] === "string") lb.name = b["name"];
      if (typeof b["description"] === "string") lb.description = b["description"];
      if (Array.isArray(b["tags"])) lb.tags = b["tags"].map(String);
      this.pend(lb, "PENDING_UPDATE");
      return { status: 200, body: { loadbalancer: this.wireLb(lb) } };
    }
    if (kind === "listeners") {
      const l = this.store.listeners.get(id);
      if (l === undefined) throw octaviaNotFound("Listener", id);
      const lb = this.lbOf(c, l.lbId);
      this.mutable(lb);
      const {
        name,
        description,
        tags,
        default_pool_id: _d,
        ...settings
      } = (c.body["listener"] as Json | undefined) ?? {};
      if ("default_tls_container_ref" in settings)
        this.checkCertificate(l.protocol, settings["default_tls_container_ref"]);
      if (typeof name === "string") l.name = name;
      if (typeof description === "string") l.description = description;
      if (Array.isArray(tags)) l.tags = tags.map(String);
      l.settings = { ...l.settings, ...settings };
      this.pend(lb, "PENDING_UPDATE");
      return { status: 200, body: { listener: this.wireListener(l) } };
    }
    if (kind === "pools") {
      const p = this.poolOf(c, id);
      const lb = this.lbOf(c, p.lbId);
      this.mutable(lb);
      const b = (c.body["pool"] as Json | undefined) ?? {};
      if (typeof b["name"] === "string") p.name = b["name"];
      if (typeof b["lb_algorithm"] === "string") p.lbAlgorithm = b["lb_algorithm"];
      if ("session_persistence" in b)
        p.sessionPersistence = (b["session_persistence"] as Json | null) ?? null;
      if (Array.isArray(b["tags"])) p.tags = b["tags"].map(String);
      this.pend(lb, "PENDING_UPDATE");
      return { status: 200, body: { pool: this.wirePool(p) } };
    }
    const h = this.store.healthMonitors.get(id);
    if (h === undefined) throw octaviaNotFound("Health Monitor", id);
    const pool = this.poolOf(c, h.poolId);
    const lb = this.lbOf(c, pool.lbId);
    this.mutable(lb);
    const { name, tags, ...settings } = (c.body["healthmonitor"] as Json | undefined) ?? {};
    if (typeof name === "string") h.name = name;
    if (Array.isArray(tags)) h.tags = tags.map(String);
    h.settings = { ...h.settings, ...settings };
    this.pend(lb, "PENDING_UPDATE");
    return { status: 200, body: { healthmonitor: this.wireHm(h) } };
  }

  private octaviaDelete(kind: string, c: VendorCall): { status: number } {
    const id = c.params[1] ?? "";
    if (kind === "loadbalancers") {
      const lb = this.lbOf(c, id);
      this.mutable(lb);
      const cascade = c.query.get("cascade") === "true";
      const children =
        [...this.store.listeners.values()].some((l) => l.lbId === lb.id) ||
        [...this.store.pools.values()].some((p) => p.lbId === lb.id);
      if (children && !cascade)
        throw new FakeError(
          400,
          "ValidationException",
          `Cannot delete Load Balancer ${lb.id} - it has children`,
        );
      this.pend(lb, "PENDING_DELETE");
      this.settle(lb);
      return { status: 204 };
    }
    if (kind === "listeners") {
      const l = this.store.listeners.get(id);
      if (l === undefined) throw octaviaNotFound("Listener", id);
      const lb = this.lbOf(c, l.lbId);
      this.mutable(lb);
      for (const p of this.store.pools.values()) if (p.listenerId === l.id) l.defaultPoolId = null;
      this.store.listeners.delete(l.id);
      this.pend(lb, "PENDING_UPDATE");
      return { status: 204 };
    }
    if (kind === "pools") {
      const p = this.poolOf(c, id);
      const lb = this.lbOf(c, p.lbId);
      this.mutable(lb);
      for (const h of [...this.store.healthMonitors.values()])
        if (h.poolId === p.id) this.store.healthMonitors.delete(h.id);
      for (const l of this.store.listeners.values()) if (l.defaultPoolId === p.id) l.defaultPoolId = null;
      this.store.pools.delete(p.id);
      this.pend(lb, "PENDING_UPDATE");
      return { status: 204 };
    }
    const h = this.store.healthMonitors.get(id);
    if (h === undefined) throw octaviaNotFound("Health Monitor", id);
    const pool = this.poolOf(c, h.poolId);
    const lb = this.lbOf(c, pool.lbId);
    this.mutable(lb);
    this.store.healthMonitors.delete(h.id);
    this.pend(lb, "PENDING_UPDATE");
    return { status: 204 };
  }

  private replaceMembers(c: VendorCall): { status: number; body: string } {
    const pool = this.poolOf(c, c.params[1] ?? "");
    const lb = this.lbOf(c, pool.lbId);
    this.mutable(lb);
    const raw = c.body["members"];
    if (!Array.isArray(raw)) throw bad("ValidationException", "members must be a list");
    const next = (raw as Json[]).map((m) => {
      const address = String(m["address"]);
      const port = Number(m["protocol_port"]);
      const old = pool.members.find((x) => x.address === address && x.port === port);
      return {
        id: old?.id ?? this.store.uuid(),
        address,
        port,
        subnetId: typeof m["subnet_id"] === "string" ? m["subnet_id"] : null,
        monitorPort: typeof m["monitor_port"] === "number" ? m["monitor_port"] : null,
        name: String(m["name"] ?? ""),
      };
    });
    pool.members = next;
    this.pend(lb, "PENDING_UPDATE");
    // No body, as Octavia answers (api-ref: "There is no body content for the response").
    return { status: 202, body: "" };
  }

  private childStatus(lb: FakeLoadBalancer | undefined): Provisioning {
    if (lb === undefined) return "DELETED";
    const s = this.settle(lb);
    return s === "PENDING_CREATE" || s === "PENDING_DELETE" ? "PENDING_UPDATE" : s;
  }

  private wireLb(lb: FakeLoadBalancer): Json {
    const project = this.project(lb.account);
    const status = this.settle(lb);
    return {
      id: lb.id,
      name: lb.name,
      description: lb.description,
      project_id: project.id,
      vip_address: lb.vipAddress,
      vip_port_id: lb.vipPortId,
      vip_subnet_id: lb.vipSubnetId,
      vip_network_id: lb.vipNetworkId,
      vip_qos_policy_id: null,
      provisioning_status: status,
      operating_status: status === "ACTIVE" ? "ONLINE" : "OFFLINE",
      admin_state_up: true,
      provider: lb.provider,
      flavor_id: lb.flavorId,
      availability_zone: lb.az,
      tags: lb.tags,
      listeners: [...this.store.listeners.values()]
        .filter((l) => l.lbId === lb.id)
        .map((l) => ({ id: l.id })),
      pools: [...this.store.pools.values()].filter((p) => p.lbId === lb.id).map((p) => ({ id: p.id })),
      created_at: osTime(lb.createdMs),
      updated_at: osTime(lb.createdMs),
    };
  }

  /** A certificate reference Octavia can retrieve (from Barbican, in a real cloud). */
  addCertificate(ref: string): void {
    this.certificates.add(ref);
  }

  /** Octavia's checks of a listener's certificate: required on TERMINATED_HTTPS, retrievable, only there. */
  private checkCertificate(protocol: string, ref: unknown): void {
    const given = typeof ref === "string" && ref !== "";
    if (protocol === "TERMINATED_HTTPS" && !given)
      throw bad(
        "ValidationException",
        "An SNI or default certificate container reference must be provided for TERMINATED_HTTPS listeners.",
      );
    if (protocol !== "TERMINATED_HTTPS" && given)
      throw bad(
        "ValidationException",
        "Certificate container references are only allowed on TERMINATED_HTTPS protocol listeners.",
      );
    if (given && !this.certificates.has(ref))
      throw bad("CertificateRetrievalException", `Could not retrieve certificate: ['${ref}']`);
  }

  private wireListener(l: FakeListener): Json {
    const lb = this.store.loadBalancers.get(l.lbId);
    return {
      id: l.id,
      name: l.name,
      description: l.description,
      protocol: l.protocol,
      protocol_port: l.port,
      default_pool_id: l.defaultPoolId,
      loadbalancers: [{ id: l.lbId }],
      project_id: lb === undefined ? "" : this.project(lb.account).id,
      provisioning_status: this.childStatus(lb),
      operating_status: "ONLINE",
      admin_state_up: true,
      connection_limit: -1,
      timeout_client_data: 50000,
      timeout_member_connect: 5000,
      timeout_member_data: 50000,
      timeout_tcp_inspect: 0,
      insert_headers: {},
      allowed_cidrs: null,
      tags: l.tags,
      ...l.settings,
    };
  }

  private wirePool(p: FakePool): Json {
    const lb = this.store.loadBalancers.get(p.lbId);
    return {
      id: p.id,
      name: p.name,
      description: p.description,
      protocol: p.protocol,
      lb_algorithm: p.lbAlgorithm,
      session_persistence: p.sessionPersistence,
      loadbalancers: [{ id: p.lbId }],
      listeners: p.listenerId === null ? [] : [{ id: p.listenerId }],
      members: p.members.map((m) => ({ id: m.id })),
      healthmonitor_id: [...this.store.healthMonitors.values()].find((h) => h.poolId === p.id)?.id ?? null,
      project_id: lb === undefined ? "" : this.project(lb.account).id,
      provisioning_status: this.childStatus(lb),
      operating_status: "ONLINE",
      admin_state_up: true,
      tags: p.tags,
    };
  }

  private wireMember(pool: FakePool, m: FakePool["members"][number]): Json {
    const lb = this.store.loadBalancers.get(pool.lbId);
    return {
      id: m.id,
      name: m.name,
      address: m.address,
      protocol_port: m.port,
      subnet_id: m.subnetId,
      monitor_port: m.monitorPort,
      weight: 1,
      backup: false,
      admin_state_up: true,
      provisioning_status: this.childStatus(lb),
      operating_status: "NO_MONITOR",
      project_id: lb === undefined ? "" : this.project(lb.account).id,
      tags: [],
    };
  }

  private wireHm(h: FakeHealthMonitor): Json {
    const pool = this.store.pools.get(h.poolId);
    const lb = pool === undefined ? undefined : this.store.loadBalancers.get(pool.lbId);
    return {
      id: h.id,
      name: h.name,
      type: h.type,
      pools: [{ id: h.poolId }],
      delay: 10,
      timeout: 5,
      max_retries: 3,
      max_retries_down: 3,
      admin_state_up: true,
      provisioning_status: this.childStatus(lb),
      operating_status: "ONLINE",
      project_id: lb === undefined ? "" : this.project(lb.account).id,
      tags: h.tags,
      ...h.settings,
    };
  }

  private project(name: string): FakeProject {
    const p = this.store.projects.get(name);
    if (p === undefined) throw new Error(`no project ${name}`);
    return p;
  }
}

function nextQuery(q: URLSearchParams, marker: string): string {
  const out = new URLSearchParams(q);
  out.set("marker", marker);
  return out.toString();
}
