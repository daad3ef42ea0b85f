/**
 * A fake DigitalOcean API v2 on the fake kit: Droplets (get; list with tag_name and name),
 * certificates (get; list with name; a Let's Encrypt renewal replaces one under a new id and
 * moves the load balancers using it, as DigitalOcean does), Block Storage volumes (get; list
 * with name and region) and load balancers (create, get, list, whole-object PUT, delete) whose status goes `new` →
 * `active` after a configurable number of reads and time, or `errored` for a failed creation.
 * DigitalOcean's wire shapes, page/per_page with `links.pages` and `meta.total`, its error
 * envelope {"id","message"}, the ratelimit-* headers on every answer, Bearer tokens per
 * account, the kit's faults (latency, 5xx, 429 with Retry-After, lost answers) and a request
 * log. With `spec`, every request and answer is checked against DigitalOcean's own OpenAPI
 * document (sim/fixtures/digitalocean/).
 */
import { byKind, type ErrorRenderer, FakeError } from "../fake-kit/errors.js";
import { parsePageSize } from "../fake-kit/pagination.js";
import {
  type KeyedListing,
  type VendorCall,
  VendorFake,
  type VendorMutation,
  type VendorRoute,
} from "../fake-kit/vendor-fake.js";
import { DIGITALOCEAN_SPEC, digitalOceanSpecChecker } from "./spec.js";
import {
  type CertificateType,
  DigitalOceanStore,
  type DropletStatus,
  type FakeCertificate,
  type FakeDroplet,
  type FakeForwardingRule,
  type FakeLoadBalancer,
  type FakeVolume,
  type LbSettings,
  uuidOf,
} from "./store.js";
import { wireCertificate, wireDroplet, wireLoadBalancer, wireVolume } from "./wire.js";

/** DigitalOcean's published limits: 5,000 requests an hour and 250 a minute per token. */
export const DO_HOURLY_LIMIT = 5000;

/** DigitalOcean's envelope: {"id": "<status word>", "message": "..."}. */
const renderer: ErrorRenderer = {
  render(e, call) {
    const id = byKind(
      e,
      {
        throttled: "too_many_requests",
        unavailable: "service_unavailable",
        timeout: "gateway_timeout",
        internal: "server_error",
      },
      e.code,
    );
    const message = byKind(e, { throttled: "API Rate limit exceeded.", internal: "Server Error" }, e.message);
    return {
      status: e.status,
      ...(e.headers !== undefined && { headers: e.headers }),
      body: { id, message, request_id: call.requestId },
    };
  },
};

function notFound(): FakeError {
  return new FakeError(404, "not_found", "The resource you requested could not be found.");
}

function unprocessable(message: string): FakeError {
  return new FakeError(422, "unprocessable_entity", message);
}

type Json = Record<string, unknown>;
type Call = VendorCall;
type Listing = KeyedListing;
type Route = VendorRoute<Listing>;
type Handler = Route["handle"];

export interface DigitalOceanFakeOptions {
  /** Check every request and answer against DigitalOcean's OpenAPI document. */
  readonly spec?: boolean;
  readonly seed?: number;
  readonly now?: () => number;
  /** A new load balancer turns `active` once read this many times (default 1) ... */
  readonly activateAfterPolls?: number;
  /** ... and this long after its creation (default 0). */
  readonly activateAfterMs?: number;
}

export interface CreateDropletSpec {
  readonly name: string;
  readonly region: string;
  readonly sizeSlug?: string;
  readonly status?: DropletStatus;
  readonly tags?: readonly string[];
  readonly vpcUuid?: string;
  /** No IPv6 address. */
  readonly noIPv6?: boolean;
  readonly noPrivateIP?: boolean;
  /** More IPv4 entries, listed after the usual private and public one. */
  readonly extraV4?: readonly { readonly ip: string; readonly type: "public" | "private" }[];
}

export interface CreateCertificateSpec {
  readonly name: string;
  readonly type?: CertificateType;
  readonly dnsNames?: readonly string[];
}

/** One recorded mutation with its body (the request log keeps no bodies). */
/** A Block Storage volume as the DigitalOcean CSI driver makes it (its description; `--do-tag` as a tag). */
export interface CreateVolumeSpec {
  readonly name: string;
  readonly region: string;
  readonly sizeGigabytes: number;
  readonly dropletId?: number;
  readonly tags?: readonly string[];
}

export interface DigitalOceanMutation {
  readonly account: string;
  readonly operation: string;
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

/** health_check.yml's fields with its defaults, and the extension beside them (DIGITALOCEAN_SPEC_EXTENSIONS). */
function healthCheck(raw: unknown): Json {
  const h = (raw ?? {}) as Json;
  const proxy = h["proxy_protocol"];
  if (proxy !== undefined && typeof proxy !== "boolean")
    throw unprocessable("health_check.proxy_protocol must be a boolean");
  const { proxy_protocol: _, ...documented } = h;
  return {
    protocol: "http",
    port: 80,
    path: "/",
    check_interval_seconds: 10,
    response_timeout_seconds: 5,
    unhealthy_threshold: 5,
    healthy_threshold: 3,
    ...documented,
    // godo's HealthCheck.ProxyProtocol: kept only when sent (unset, the check follows the load balancer).
    ...(proxy !== undefined && { proxy_protocol: proxy }),
  };
}

export class DigitalOceanFake extends VendorFake<Listing> {
  readonly store = new DigitalOceanStore();
  readonly mutations: DigitalOceanMutation[] = [];
  private activateAfterPolls: number;
  private activateAfterMs: number;
  private readonly failing = new Map<string, number>();
  /** Requests per account in the current hour, for ratelimit-remaining. */
  private readonly used = new Map<string, { hour: number; n: number }>();

  private constructor(opts: DigitalOceanFakeOptions) {
    super({
      vendor: "DigitalOcean",
      newToken: (name) => `dop_v1_${name}_${Math.random().toString(36).slice(2)}`,
      ...(opts.seed !== undefined && { seed: opts.seed }),
      ...(opts.now !== undefined && { now: opts.now }),
      ...(opts.spec && { spec: { checker: digitalOceanSpecChecker(), fixture: DIGITALOCEAN_SPEC } }),
      renderer,
      requestIdHeader: "x-request-id",
      requestId: (n) => uuidOf(n, "515850a0"),
      refusals: {
        badBody: () => new FakeError(400, "bad_request", "unable to parse the request body"),
        unauthenticated: () =>
          new FakeError(401, "unauthorized", "Unable to authenticate you", { kind: "auth" }),
        notFound,
      },
      rateHeadersOn: "every-answer",
    });
    this.activateAfterPolls = opts.activateAfterPolls ?? 1;
    this.activateAfterMs = opts.activateAfterMs ?? 0;
  }

  static start(opts: DigitalOceanFakeOptions = {}): Promise<DigitalOceanFake> {
    return new DigitalOceanFake(opts).listen();
  }

  // ---- test and demo controls ---------------------------------------------------------------

  createDroplet(account: string, spec: CreateDropletSpec): FakeDroplet {
    const id = 3_000_000 + this.store.nextSeq();
    const addr = this.store.freshAddresses();
    const d: FakeDroplet = {
      id,
      account,
      name: spec.name,
      region: spec.region,
      sizeSlug: spec.sizeSlug ?? "s-2vcpu-4gb",
      status: spec.status ?? "active",
      publicIPv4: addr.public,
      privateIPv4: spec.noPrivateIP ? null : addr.private,
      ipv6: spec.noIPv6 ? null : addr.ipv6,
      vpcUuid: spec.vpcUuid ?? null,
      tags: [...(spec.tags ?? [])],
      createdAtMs: this.now(),
      ...(spec.extraV4 !== undefined && { extraV4: [...spec.extraV4] }),
    };
    this.store.droplets.set(id, d);
    return d;
  }

  setDropletStatus(id: number, status: DropletStatus): void {
    const d = this.store.droplets.get(id);
    if (d === undefined) throw new Error(`no Droplet ${id}`);
    d.status = status;
  }

  deleteDroplet(id: number): void {
    this.store.droplets.delete(id);
    for (const lb of this.store.loadBalancers.values())
      lb.droplet_ids = lb.droplet_ids.filter((x) => x !== id);
  }

  createCertificate(account: string, spec: CreateCertificateSpec): FakeCertificate {
    const seq = this.store.nextSeq();
    const now = this.now();
    const c: FakeCertificate = {
      id: uuidOf(seq, "892071a0"),
      account,
      seq,
      name: spec.name,
      type: spec.type ?? "custom",
      dnsNames: [...(spec.dnsNames ?? ["www.example.com"])],
      createdAtMs: now,
      notAfterMs: now + 90 * 86_400_000,
    };
    this.store.certificates.set(c.id, c);
    return c;
  }

  createVolume(account: string, spec: CreateVolumeSpec): FakeVolume {
    const seq = this.store.nextSeq();
    const v: FakeVolume = {
      id: uuidOf(seq, "506f78a4"),
      account,
      seq,
      name: spec.name,
      region: spec.region,
      sizeGigabytes: spec.sizeGigabytes,
      description: "Created by DigitalOcean CSI driver",
      dropletIds: spec.dropletId === undefined ? [] : [spec.dropletId],
      tags: [...(spec.tags ?? [])],
      createdAtMs: this.now(),
    };
    this.store.volumes.set(v.id, v);
    return v;
  }

  /**
   * A Let's Encrypt renewal as DigitalOcean does it: a new certificate (new id, same name), the
   * load balancers using the old one moved to it, the old one gone.
   */
  renewCertificate(id: string): FakeCertificate {
    const old = this.store.certificates.get(id);
    if (old === undefined) throw new Error(`no certificate ${id}`);
    const renewed = this.createCertificate(old.account, {
      name: old.name,
      type: old.type,
      dnsNames: old.dnsNames,
    });
    for (const lb of this.store.loadBalancers.values())
      for (const r of lb.forwarding_rules) if (r.certificate_id === id) r.certificate_id = renewed.id;
    this.store.certificates.delete(id);
    return renewed;
  }

  deleteCertificate(id: string): void {
    this.store.certificates.delete(id);
  }

  /** A load balancer made by another client (the DigitalOcean CCM, a user), through the same rules as POST. */
  createLoadBalancer(account: string, body: Json): FakeLoadBalancer {
    return this.newLoadBalancer(account, body);
  }

  /** The account's next `n` load-balancer creations end `errored` instead of `active`. */
  failNextCreates(account: string, n: number): void {
    this.failing.set(account, (this.failing.get(account) ?? 0) + n);
  }

  /** How a new load balancer becomes active: after this many reads and this long. */
  setActivation(polls: number, ms = 0): void {
    this.activateAfterPolls = polls;
    this.activateAfterMs = ms;
  }

  override resetFaults(): void {
    super.resetFaults();
    this.failing.clear();
  }

  // ---- the vendor's parts of the kit's pipeline --------------------------------------------

  /** Every answer counts against the account's hour (none before it is known). */
  protected override rateHeaders(account: string | undefined, now: number): Record<string, string> {
    const hour = Math.floor(now / 3_600_000);
    let n = 0;
    if (account !== undefined) {
      const u = this.used.get(account);
      n = u !== undefined && u.hour === hour ? u.n + 1 : 1;
      this.used.set(account, { hour, n });
    }
    return {
      "ratelimit-limit": String(DO_HOURLY_LIMIT),
      "ratelimit-remaining": String(Math.max(0, DO_HOURLY_LIMIT - n)),
      "ratelimit-reset": String(Math.ceil((hour + 1) * 3600)),
    };
  }

  protected override recordMutation(m: VendorMutation): void {
    this.mutations.push(m);
  }

  /**
   * DigitalOcean's page: the items under `key`, links.pages (first/prev, next/last) with
   * absolute URLs, meta.total. Its lists draw no list faults (empty lists, dropped items).
   */
  protected page({ list: items, key }: Listing, c: Call): Json {
    const perPage = parsePageSize(c.query.get("per_page"), {
      param: "per_page",
      defaultSize: 20,
      min: 1,
      max: 200,
      overMax: "clamp",
      code: "bad_request",
    });
    const raw = c.query.get("page");
    const page = raw === null ? 1 : Number(raw);
    if (!Number.isInteger(page) || page < 1)
      throw new FakeError(400, "bad_request", "page must be a positive integer");
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const link = (n: number) => {
      const u = new URL(`${this.url}${c.path}`);
      for (const [k, v] of c.query) if (k !== "page") u.searchParams.set(k, v);
      u.searchParams.set("page", String(n));
      return u.toString();
    };
    const pages: Record<string, string> = {};
    if (page > 1) Object.assign(pages, { first: link(1), prev: link(page - 1) });
    if (page < last) Object.assign(pages, { last: link(last), next: link(page + 1) });
    return {
      [key]: items.slice((page - 1) * perPage, page * perPage),
      links: { pages },
      meta: { total: items.length },
    };
  }

  // ---- routes ---------------------------------------------------------------------------------

  protected routes(): Route[] {
    const r = (
      method: Route["method"],
      path: string,
      op: string,
      handle: Handler,
      example: string,
    ): Route => {
      const pattern = new RegExp(`^\\/v2${path}\\/?$`);
      if (!pattern.test(example)) throw new Error(`route ${method} ${pattern}: bad example ${example}`);
      return { method, pattern, op, handle, example };
    };
    const LB = "\\/load_balancers\\/([^/]+)";
    return [
      r(
        "GET",
        "\\/certificates",
        "certificates.list",
        (c) => {
          // DigitalOcean's name filter is an exact match.
          const name = c.query.get("name");
          const list = this.store
            .certificatesOf(c.account)
            .filter((x) => name === null || name === "" || x.name === name)
            .map(wireCertificate);
          return { key: "certificates", list };
        },
        "/v2/certificates",
      ),
      r(
        "GET",
        "\\/certificates\\/([^/]+)",
        "certificates.get",
        (c) => ({ body: { certificate: wireCertificate(this.certificate(c)) } }),
        "/v2/certificates/x",
      ),
      r(
        "GET",
        "\\/volumes",
        "volumes.list",
        (c) => {
          // DigitalOcean filters volumes by exact name and region slug only (no tag filter).
          const name = c.query.get("name");
          const region = c.query.get("region");
          const list = this.store
            .volumesOf(c.account)
            .filter((v) => name === null || v.name === name)
            .filter((v) => region === null || v.region === region)
            .map(wireVolume);
          return { key: "volumes", list };
        },
        "/v2/volumes",
      ),
      r(
        "GET",
        "\\/volumes\\/([^/]+)",
        "volumes.get",
        (c) => {
          const v = this.store.volumes.get(c.params[0] ?? "");
          if (v === undefined || v.account !== c.account) throw notFound();
          return { body: { volume: wireVolume(v) } };
        },
        "/v2/volumes/x",
      ),
      r("GET", "\\/droplets", "droplets.list", (c) => this.listDroplets(c), "/v2/droplets"),
      r(
        "GET",
        "\\/droplets\\/([^/]+)",
        "droplets.get",
        (c) => ({ body: { droplet: wireDroplet(this.droplet(c)) } }),
        "/v2/droplets/1",
      ),
      r(
        "POST",
        "\\/load_balancers",
        "loadBalancers.create",
        (c) => ({
          status: 202,
          body: { load_balancer: wireLoadBalancer(this.newLoadBalancer(c.account, c.body)) },
        }),
        "/v2/load_balancers",
      ),
      r(
        "GET",
        "\\/load_balancers",
        "loadBalancers.list",
        (c) => ({
          key: "load_balancers",
          list: this.store
            .loadBalancersOf(c.account)
            .map((lb) => wireLoadBalancer(this.advance(lb, c.nowMs))),
        }),
        "/v2/load_balancers",
      ),
      r(
        "GET",
        LB,
        "loadBalancers.get",
        (c) => ({
          body: { load_balancer: wireLoadBalancer(this.advance(this.loadBalancer(c), c.nowMs)) },
        }),
        "/v2/load_balancers/x",
      ),
      r("PUT", LB, "loadBalancers.update", (c) => this.updateLoadBalancer(c), "/v2/load_balancers/x"),
      r(
        "DELETE",
        LB,
        "loadBalancers.delete",
        (c) => {
          const lb = this.loadBalancer(c);
          this.store.loadBalancers.delete(lb.id);
          return { status: 204 };
        },
        "/v2/load_balancers/x",
      ),
    ];
  }

  private listDroplets(c: Call) {
    const tag = c.query.get("tag_name");
    const name = c.query.get("name");
    const list = this.store
      .dropletsOf(c.account)
      .filter((d) => tag === null || d.tags.includes(tag))
      // The name filter matches the name exactly (upstream also finds Droplets by an address).
      .filter((d) => name === null || d.name === name || d.publicIPv4 === name || d.privateIPv4 === name)
      .map(wireDroplet);
    return { key: "droplets", list };
  }

  private droplet(c: Call): FakeDroplet {
    const id = Number(c.params[0]);
    const d = Number.isSafeInteger(id) ? this.store.droplets.get(id) : undefined;
    if (d === undefined || d.account !== c.account) throw notFound();
    return d;
  }

  private certificate(c: Call): FakeCertificate {
    const cert = this.store.certificates.get(c.params[0] ?? "");
    if (cert === undefined || cert.account !== c.account) throw notFound();
    return cert;
  }

  private loadBalancer(c: Call): FakeLoadBalancer {
    const lb = this.store.loadBalancers.get(c.params[0] ?? "");
    if (lb === undefined || lb.account !== c.account) throw notFound();
    return lb;
  }

  /** A read of a `new` load balancer: it becomes active (or errored) after enough reads and time. */
  private advance(lb: FakeLoadBalancer, nowMs: number): FakeLoadBalancer {
    if (lb.status !== "new") return lb;
    lb.polls++;
    if (lb.polls < this.activateAfterPolls || nowMs - lb.createdAtMs < this.activateAfterMs) return lb;
    lb.status = lb.fails ? "errored" : "active";
    if (!lb.fails) {
      const addr = this.store.freshAddresses();
      // An internal load balancer's address is in its VPC.
      lb.ip = lb.network === "INTERNAL" ? addr.private : addr.public.replace(/^104\.131\./, "159.203.");
      lb.ipv6 = lb.network_stack === "DUALSTACK" ? addr.ipv6.replace(":10::", ":14::") : "";
    }
    return lb;
  }

  private newLoadBalancer(account: string, body: Json): FakeLoadBalancer {
    const settings = this.settings(account, body, undefined);
    const left = this.failing.get(account) ?? 0;
    if (left > 0) this.failing.set(account, left - 1);
    const seq = this.store.nextSeq();
    const lb: FakeLoadBalancer = {
      ...settings,
      id: uuidOf(seq),
      account,
      seq,
      status: "new",
      ip: "",
      ipv6: "",
      createdAtMs: this.now(),
      polls: 0,
      fails: left > 0,
    };
    this.store.loadBalancers.set(lb.id, lb);
    return lb;
  }

  private updateLoadBalancer(c: Call) {
    const lb = this.loadBalancer(c);
    if (lb.status === "new") throw unprocessable("Load Balancer can't be updated while it is being created");
    const settings = this.settings(c.account, c.body, lb);
    Object.assign(lb, settings);
    return { body: { load_balancer: wireLoadBalancer(lb) } };
  }

  /** The writable fields of a create or whole-object update, with DigitalOcean's defaults and rules. */
  private settings(account: string, b: Json, current: FakeLoadBalancer | undefined): LbSettings {
    const str = (k: string, dflt: string) => (typeof b[k] === "string" ? (b[k] as string) : dflt);
    const bool = (k: string) => b[k] === true;
    const name = str("name", "");
    if (name === "" || name.length > 255 || !/^[A-Za-z0-9][A-Za-z0-9.-]*$/.test(name))
      throw unprocessable(
        "name must start with an alphanumeric character and hold only alphanumerics, '.' and '-', at most 255",
      );
    const region = str("region", "");
    if (region === "") throw unprocessable("region is required");
    if (current !== undefined && region !== current.region) throw unprocessable("region cannot be changed");
    const rules = Array.isArray(b["forwarding_rules"]) ? (b["forwarding_rules"] as FakeForwardingRule[]) : [];
    if (rules.length === 0) throw unprocessable("at least one forwarding rule is required");
    const entries = new Set<string>();
    for (const r of rules) {
      // HTTP/3 is QUIC, over UDP: it shares its port with an https or http2 rule.
      const key = `${r.entry_protocol === "udp" || r.entry_protocol === "http3" ? "udp" : "tcp"}/${r.entry_port}`;
      if (entries.has(key)) throw unprocessable(`entry port ${r.entry_port} is used by two forwarding rules`);
      entries.add(key);
      if ((r.entry_protocol === "udp") !== (r.target_protocol === "udp"))
        throw unprocessable("udp entry protocol requires udp target protocol");
      const secure =
        r.entry_protocol === "https" || r.entry_protocol === "http2" || r.entry_protocol === "http3";
      const cert = r.certificate_id ?? "";
      if (secure && cert === "" && r.tls_passthrough !== true)
        throw unprocessable(`${r.entry_protocol} forwarding rules need a certificate or TLS passthrough`);
      if (cert !== "" && r.tls_passthrough === true)
        throw unprocessable("a forwarding rule takes a certificate or TLS passthrough, not both");
      if (r.entry_protocol === "http3" && r.tls_passthrough === true)
        throw unprocessable("http3 forwarding rules cannot use TLS passthrough");
      if (cert !== "") {
        const found = this.store.certificates.get(cert);
        if (found === undefined || found.account !== account)
          throw unprocessable(`certificate ${cert} not found`);
      }
    }
    for (const r of rules)
      if (
        r.entry_protocol === "http3" &&
        !rules.some(
          (x) =>
            x.entry_port === r.entry_port && (x.entry_protocol === "https" || x.entry_protocol === "http2"),
        )
      )
        throw unprocessable(`http3 entry port ${r.entry_port} needs an https or http2 rule on the same port`);
    const ids = Array.isArray(b["droplet_ids"]) ? (b["droplet_ids"] as number[]) : [];
    const tag = str("tag", "");
    if (ids.length > 0 && tag !== "") throw unprocessable("droplet_ids and tag are mutually exclusive");
    for (const id of ids) {
      const d = this.store.droplets.get(id);
      if (d === undefined || d.account !== account) throw unprocessable(`Droplet ${id} not found`);
    }
    const vpc = str("vpc_uuid", current?.vpc_uuid ?? "");
    // A load balancer reaches its Droplets over its VPC: every one must be in it.
    for (const id of ids) {
      const d = this.store.droplets.get(id);
      if (vpc !== "" && d !== undefined && d.vpcUuid !== null && d.vpcUuid !== vpc)
        throw unprocessable(`Droplet ${id} is not in the load balancer's VPC ${vpc}`);
    }
    if (current !== undefined && current.vpc_uuid !== "" && vpc !== current.vpc_uuid)
      throw unprocessable("vpc_uuid cannot be changed");
    const network = str("network", current?.network ?? "EXTERNAL") as LbSettings["network"];
    if (current !== undefined && network !== current.network)
      throw unprocessable("network cannot be changed");
    const stack = str("network_stack", current?.network_stack ?? "IPV4") as LbSettings["network_stack"];
    // "This property cannot be updated after creating the load balancer" (load_balancer_base.yml,
    // network_stack), as for network.
    if (current !== undefined && stack !== current.network_stack)
      throw unprocessable("network_stack cannot be changed");
    const fw = (b["firewall"] ?? {}) as { allow?: unknown; deny?: unknown };
    const fwList = (v: unknown) => {
      const list = Array.isArray(v) ? (v as string[]) : [];
      for (const e of list)
        if (!/^(ip:[0-9a-fA-F.:]+|cidr:[0-9a-fA-F.:]+\/\d{1,3})$/.test(e))
          throw unprocessable(`firewall rule ${JSON.stringify(e)} is not ip:<address> or cidr:<range>`);
      return [...list];
    };
    const timeout =
      typeof b["http_idle_timeout_seconds"] === "number" ? (b["http_idle_timeout_seconds"] as number) : 60;
    if (timeout < 30 || timeout > 600) throw unprocessable("http_idle_timeout_seconds must be 30..600");
    const sizeUnit = typeof b["size_unit"] === "number" ? (b["size_unit"] as number) : undefined;
    return {
      name,
      region,
      ...(sizeUnit !== undefined ? { size_unit: sizeUnit } : b["size"] === undefined ? { size_unit: 1 } : {}),
      ...(typeof b["size"] === "string" && { size: b["size"] as string }),
      forwarding_rules: rules.map((r) => ({ ...r })),
      health_check: healthCheck(b["health_check"]),
      sticky_sessions: { type: "none", ...((b["sticky_sessions"] as Json | undefined) ?? {}) },
      redirect_http_to_https: bool("redirect_http_to_https"),
      enable_proxy_protocol: bool("enable_proxy_protocol"),
      enable_backend_keepalive: bool("enable_backend_keepalive"),
      http_idle_timeout_seconds: timeout,
      vpc_uuid: vpc,
      disable_lets_encrypt_dns_records: bool("disable_lets_encrypt_dns_records"),
      firewall: { allow: fwList(fw.allow), deny: fwList(fw.deny) },
      network,
      network_stack: stack,
      type: str("type", current?.type ?? "REGIONAL") as LbSettings["type"],
      droplet_ids: [...new Set(ids)].sort((x, y) => x - y),
      tag,
    };
  }
}
