/**
 * A fake Hetzner Cloud API v1 on the fake kit: servers (read only, made by test controls),
 * volumes (read only, made by test controls: get, list with name and label_selector), networks
 * with their routes (add_route / delete_route actions) and labels, load balancers
 * with services, targets, network attachment, algorithm, type, the public interface and delete
 * protection (each change an action; a protected one refuses DELETE), and
 * the actions resource: every mutation answers an action that stays `running` for a
 * configurable number of reads, then ends in `success` (or `error`, on request, undoing the
 * change it stood for). While an action of a resource runs, another action on it is refused
 * with 423 `locked`, as Hetzner does. Hetzner's page/per_page with meta.pagination,
 * label_selector, the error envelope {"error":{"code","message"}}, RateLimit-* headers on
 * every answer, Bearer tokens per project, the kit's faults and request log. With `spec`,
 * every request and answer is checked against the subset of the converted Hetzner spec.
 */
import { createHash, createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { byKind, type ErrorRenderer, FakeError } from "../fake-kit/errors.js";
import { OpenApiChecker } from "../fake-kit/openapi.js";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import {
  type KeyedListing,
  type ListFaults,
  type VendorCall,
  VendorFake,
  type VendorRoute,
} from "../fake-kit/vendor-fake.js";
import {
  type FakeAction,
  type FakeCertificate,
  type FakeLbService,
  type FakeLbTarget,
  type FakeLoadBalancer,
  type FakeNetwork,
  type FakeServer,
  type FakeVolume,
  HetznerStore,
  LB_TYPES,
  LOCATIONS,
  type ServerStatus,
} from "./store.js";
import {
  wireAction,
  wireCertificate,
  wireLoadBalancer,
  wireNetwork,
  wirePagination,
  wireServer,
  wireVolume,
} from "./wire.js";

/** The spec fixture: the operations of the converted hcloud spec the fake serves (sim/fixtures/README.md). */
export const HETZNER_SPEC = "hetzner/hcloud-openapi-5134cbc.ccm-subset.json";
/** Hetzner's documented limit: 3,600 requests an hour per project, one more each second. */
export const HETZNER_RATE_LIMIT = 3600;

type Json = Record<string, unknown>;

/**
 * The subset as the checker reads it. Two readings of the conversion, each noted in
 * sim/fixtures/README.md: its paths are below the server URL (https://api.hetzner.cloud/v1),
 * so the fake's /v1 paths are matched with the prefix added; its error responses are keyed
 * "4xx"/"5xx", which OpenAPI spells "4XX"/"5XX".
 */
export function hetznerSpecDocument(): Json {
  const doc = JSON.parse(readFileSync(fixtureSpecPath(HETZNER_SPEC), "utf8")) as Json;
  const paths: Json = {};
  for (const [path, item] of Object.entries(doc["paths"] as Json)) {
    const methods: Json = {};
    for (const [m, op] of Object.entries(item as Json)) {
      const o = op as Json;
      const responses = o["responses"] as Json | undefined;
      methods[m] =
        responses === undefined
          ? o
          : {
              ...o,
              responses: Object.fromEntries(
                Object.entries(responses).map(([k, v]) => [/^[1-5]xx$/.test(k) ? k.toUpperCase() : k, v]),
              ),
            };
    }
    paths[`/v1${path}`] = methods;
  }
  return { ...doc, paths };
}

let cachedChecker: OpenApiChecker | undefined;
export function hetznerSpecChecker(): OpenApiChecker {
  cachedChecker ??= new OpenApiChecker(hetznerSpecDocument());
  return cachedChecker;
}

function notFound(what = "resource"): FakeError {
  return new FakeError(404, "not_found", `${what} not found`);
}

function invalid(message: string): FakeError {
  return new FakeError(400, "invalid_input", message);
}

/**
 * Deleting a resource with delete protection. Hetzner's error table names the code `protected`;
 * neither the conversion nor the table kept here (sim/fixtures/README.md) gives its status, so
 * 423 is a guess.
 */
function protectedError(): FakeError {
  return new FakeError(423, "protected", "the resource is protected against deletion");
}

function locked(): FakeError {
  return new FakeError(423, "locked", "resource is locked by a running action");
}

type Call = VendorCall;
type Listing = KeyedListing;
type Route = VendorRoute<Listing>;
type Handler = Route["handle"];

/** Hetzner's envelope; a throttle also says, in RateLimit-*, when the budget is back. */
function hetznerRenderer(now: () => number): ErrorRenderer {
  return {
    render: (e) => {
      const code = byKind(
        e,
        {
          throttled: "rate_limit_exceeded",
          unavailable: "unavailable",
          timeout: "timeout",
          internal: "server_error",
          auth: "unauthorized",
        },
        e.code,
      );
      const headers: Record<string, string> = { ...e.headers };
      if (e.kind === "throttled") {
        const wait = Number(e.headers?.["retry-after"] ?? "1");
        headers["ratelimit-limit"] = String(HETZNER_RATE_LIMIT);
        headers["ratelimit-remaining"] = "0";
        headers["ratelimit-reset"] = String(Math.ceil(now() / 1000) + wait);
      }
      return { status: e.status, headers, body: { error: { code, message: e.message, details: null } } };
    },
  };
}

export interface HetznerFakeOptions {
  readonly spec?: boolean;
  readonly seed?: number;
  readonly now?: () => number;
}

export interface CreateServerSpec {
  readonly name: string;
  readonly location: string;
  readonly serverType?: string;
  readonly status?: ServerStatus;
  readonly labels?: Readonly<Record<string, string>>;
  /** Attached to these networks (ids), an address each. */
  readonly networks?: readonly number[];
  readonly noPublicIPv4?: boolean;
}

export interface CreateVolumeSpec {
  readonly name: string;
  readonly location: string;
  readonly size: number;
  readonly server?: number;
  readonly labels?: Readonly<Record<string, string>>;
}

/** A label selector term: `k=v`, `k==v`, `k!=v`, `k`, `!k`. */
type Term = { key: string; op: "=" | "!=" | "exists" | "absent"; value?: string };

export function parseLabelSelector(selector: string): Term[] {
  return selector
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "")
    .map((t): Term => {
      const ne = /^([^!=\s]+)\s*!=\s*(.*)$/.exec(t);
      if (ne) return { key: ne[1] ?? "", op: "!=", value: ne[2] ?? "" };
      const eq = /^([^!=\s]+)\s*==?\s*(.*)$/.exec(t);
      if (eq) return { key: eq[1] ?? "", op: "=", value: eq[2] ?? "" };
      if (t.startsWith("!")) return { key: t.slice(1), op: "absent" };
      if (/^[^\s=!]+$/.test(t)) return { key: t, op: "exists" };
      throw invalid(`invalid label_selector: ${t}`);
    });
}

function matchesSelector(labels: Readonly<Record<string, string>>, terms: readonly Term[]): boolean {
  return terms.every((t) => {
    const v = labels[t.key];
    if (t.op === "=") return v === t.value;
    if (t.op === "!=") return v !== t.value;
    if (t.op === "exists") return v !== undefined;
    return v === undefined;
  });
}

const LABEL_VALUE = /^(|[a-z0-9A-Z]|[a-z0-9A-Z][a-z0-9A-Z._-]{0,61}[a-z0-9A-Z])$/;
const LABEL_NAME = /^([a-z0-9A-Z]|[a-z0-9A-Z][a-z0-9A-Z._-]{0,61}[a-z0-9A-Z])$/;
/** A fully qualified domain name without trailing dot (change_dns_ptr's `dns_ptr`). */
const FQDN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

/** Hetzner's label rules (Kubernetes' own): an optional DNS-subdomain prefix, a name, a value. */
function checkLabels(raw: unknown): Record<string, string> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw invalid("labels must be an object");
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    const slash = k.lastIndexOf("/");
    const prefix = slash >= 0 ? k.slice(0, slash) : undefined;
    const name = slash >= 0 ? k.slice(slash + 1) : k;
    if (
      !LABEL_NAME.test(name) ||
      (prefix !== undefined && (prefix.length > 253 || !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(prefix))) ||
      typeof v !== "string" ||
      !LABEL_VALUE.test(v)
    )
      throw invalid(`invalid label ${k}=${String(v)}`);
    out[k] = v;
  }
  return out;
}

/** Parses an IPv4 CIDR into [base as number, prefix]. */
function ipv4Cidr(cidr: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (m === null) return undefined;
  const parts = m.slice(1, 5).map(Number);
  const prefix = Number(m[5]);
  if (parts.some((p) => p > 255) || prefix > 32) return undefined;
  return [((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0, prefix];
}

function ipv4In(ip: string, cidr: string): boolean {
  const c = ipv4Cidr(cidr);
  const i = ipv4Cidr(`${ip}/32`);
  if (c === undefined || i === undefined) return false;
  const mask = c[1] === 0 ? 0 : (~0 << (32 - c[1])) >>> 0;
  return (i[0] & mask) === (c[0] & mask);
}

export class HetznerFake extends VendorFake<Listing> {
  readonly store = new HetznerStore();
  /** Reads an action stays `running` (0: it answers `success` at once). */
  private actionPolls = 0;
  /** Commands whose next actions end in error, with how many are left. */
  private readonly failing = new Map<string, number>();
  /** Requests counted per project in the current hour-long window (RateLimit-*). */
  private readonly budget = new Map<string, { used: number; sinceMs: number }>();

  private constructor(opts: HetznerFakeOptions) {
    super({
      vendor: "Hetzner",
      newToken: (name) => `hc-${name}-${Math.random().toString(36).slice(2)}`,
      accountNoun: "project",
      ...(opts.seed !== undefined && { seed: opts.seed }),
      ...(opts.now !== undefined && { now: opts.now }),
      ...(opts.spec && { spec: { checker: hetznerSpecChecker(), fixture: HETZNER_SPEC } }),
      renderer: hetznerRenderer(opts.now ?? Date.now),
      requestIdHeader: "x-correlation-id",
      refusals: {
        badBody: () => new FakeError(400, "json_error", "invalid JSON"),
        unauthenticated: () => new FakeError(401, "unauthorized", "unable to authenticate", { kind: "auth" }),
        notFound: () => notFound(),
      },
      rateHeadersOn: "handled-calls",
      // The body-less actions (enable/disable_public_interface) take none: an empty POST has none.
      emptyBodyIsNone: true,
    });
  }

  static start(opts: HetznerFakeOptions = {}): Promise<HetznerFake> {
    return new HetznerFake(opts).listen();
  }

  // ---- test and demo controls ---------------------------------------------------------------

  /** How many reads each new action answers `running` before it ends. */
  setActionPolls(n: number): void {
    this.actionPolls = n;
  }

  /** The next `n` actions of `command` (e.g. "create_load_balancer") end in error. */
  failNextActions(command: string, n: number): void {
    this.failing.set(command, (this.failing.get(command) ?? 0) + n);
  }

  createNetwork(account: string, spec: { name: string; ipRange: string; networkZone?: string }): FakeNetwork {
    const n: FakeNetwork = {
      id: this.store.nextId(),
      account,
      name: spec.name,
      ipRange: spec.ipRange,
      networkZone: spec.networkZone ?? "eu-central",
      labels: {},
      routes: [],
      createdMs: this.now(),
      nextHost: 2,
    };
    this.store.networks.set(n.id, n);
    return n;
  }

  createServer(account: string, spec: CreateServerSpec): FakeServer {
    const id = this.store.nextId();
    const pub = this.store.freshPublic();
    const s: FakeServer = {
      id,
      account,
      name: spec.name,
      location: spec.location,
      serverType: spec.serverType ?? "cx22",
      status: spec.status ?? "running",
      labels: { ...(spec.labels ?? {}) },
      ipv4: spec.noPublicIPv4 ? null : pub.ipv4,
      ipv6: pub.ipv6,
      privateNet: (spec.networks ?? []).map((nid) => ({ network: nid, ip: this.hostIn(nid) })),
      createdMs: this.now(),
    };
    this.store.servers.set(id, s);
    return s;
  }

  /** A volume as the hcloud CSI driver makes it (its `managed-by` label, the extra labels given). */
  createVolume(account: string, spec: CreateVolumeSpec): FakeVolume {
    const id = this.store.nextId();
    const v: FakeVolume = {
      id,
      account,
      name: spec.name,
      location: spec.location,
      size: spec.size,
      server: spec.server ?? null,
      labels: checkLabels({ "managed-by": "csi-driver", ...(spec.labels ?? {}) }),
      createdMs: this.now(),
    };
    this.store.volumes.set(id, v);
    return v;
  }

  setServerStatus(id: number, status: ServerStatus): void {
    const s = this.store.servers.get(id);
    if (s === undefined) throw new Error(`no server ${id}`);
    s.status = status;
  }

  deleteServer(id: number): void {
    this.store.servers.delete(id);
    for (const lb of this.store.loadBalancers.values()) {
      const i = lb.targets.findIndex((t) => t.server === id);
      if (i >= 0) lb.targets.splice(i, 1);
    }
  }

  /** A route made by another client (the Hetzner CCM, a user). */
  addRoute(network: number, destination: string, gateway: string): void {
    const n = this.store.networks.get(network);
    if (n === undefined) throw new Error(`no network ${network}`);
    n.routes.push({ destination, gateway });
  }

  /** A load balancer made by another client, as it was made (no action, no checks beyond the shapes). */
  putLoadBalancer(
    lb: Omit<FakeLoadBalancer, "id" | "ipv4" | "ipv6" | "createdMs" | "networkZone">,
  ): FakeLoadBalancer {
    const pub = this.store.freshPublic();
    const made: FakeLoadBalancer = {
      ...lb,
      id: this.store.nextId(),
      ipv4: pub.ipv4,
      ipv6: pub.ipv6.replace("::/64", "::1"),
      networkZone: LOCATIONS[lb.location]?.zone ?? "eu-central",
      createdMs: this.now(),
    };
    this.store.loadBalancers.set(made.id, made);
    return made;
  }

  private setPublicInterface(lb: FakeLoadBalancer, enabled: boolean): { undo: () => void } {
    const old = lb.publicEnabled;
    lb.publicEnabled = enabled;
    return { undo: () => (lb.publicEnabled = old) };
  }

  private hostIn(networkId: number): string {
    const n = this.store.networks.get(networkId);
    if (n === undefined) throw new Error(`no network ${networkId}`);
    const base = n.ipRange.split("/")[0]!.split(".").map(Number);
    const host = n.nextHost++;
    return `${base[0]}.${base[1]}.${Math.floor(host / 250)}.${(host % 250) + 2}`;
  }

  // ---- the vendor's parts of the kit's pipeline --------------------------------------------

  /** Calls that reach a handler count; one request back per second, up to the hourly limit (Hetzner's documented refill). */
  protected override rateHeaders(account: string, nowMs: number): Record<string, string> {
    let b = this.budget.get(account);
    if (b === undefined) b = { used: 0, sinceMs: nowMs };
    const refill = Math.floor((nowMs - b.sinceMs) / 1000);
    if (refill > 0) b = { used: Math.max(0, b.used - refill), sinceMs: b.sinceMs + refill * 1000 };
    b.used = Math.min(HETZNER_RATE_LIMIT, b.used + 1);
    this.budget.set(account, b);
    return {
      "ratelimit-limit": String(HETZNER_RATE_LIMIT),
      "ratelimit-remaining": String(HETZNER_RATE_LIMIT - b.used),
      "ratelimit-reset": String(Math.ceil(nowMs / 1000) + b.used),
    };
  }

  /** Hetzner's page/per_page (at most 50, docs.hetzner.cloud "Pagination") with meta.pagination. */
  protected page({ list, key }: Listing, c: Call, faults: ListFaults): Json {
    const perPage = Number(c.query.get("per_page") ?? "25");
    const page = Number(c.query.get("page") ?? "1");
    if (!Number.isInteger(perPage) || perPage < 1 || perPage > 50) throw invalid("invalid per_page");
    if (!Number.isInteger(page) || page < 1) throw invalid("invalid page");
    const items = faults.empty(list);
    const kept = faults.drop(items.slice((page - 1) * perPage, page * perPage));
    return { [key]: kept, meta: wirePagination(page, perPage, items.length) };
  }

  // ---- routes -------------------------------------------------------------------------------

  protected routes(): Route[] {
    const ID = "\\/(\\d+)";
    const r = (method: Route["method"], path: string, op: string, handle: Handler): Route => {
      const pattern = new RegExp(`^\\/v1${path}\\/?$`);
      const example = `/v1${path.replaceAll(ID, "/1").replaceAll("\\/", "/")}`;
      if (!pattern.test(example)) throw new Error(`route ${method} ${pattern}: no example (${example})`);
      return { method, pattern, op, handle, example };
    };
    const lbAction = (name: string, fn: (c: Call, lb: FakeLoadBalancer) => { undo?: () => void }) =>
      r("POST", `\\/load_balancers${ID}\\/actions\\/${name}`, `load_balancers.${name}`, (c) => {
        const lb = this.lb(c);
        this.assertUnlocked(c.account, lb.id, "load_balancer");
        const change = fn(c, lb);
        return {
          status: 201,
          body: { action: wireAction(this.startAction(c, name, lb.id, "load_balancer", change.undo)) },
        };
      });
    return [
      r("GET", `\\/actions${ID}`, "actions.get", (c) => {
        const a = this.store.actions.get(Number(c.params[0]));
        if (a === undefined || a.account !== c.account) throw notFound("action");
        return { body: { action: wireAction(this.read(a)) } };
      }),
      r("GET", "\\/servers", "servers.list", (c) => {
        const name = c.query.get("name");
        const terms = parseLabelSelector(c.query.get("label_selector") ?? "");
        return {
          key: "servers",
          list: this.store
            .serversOf(c.account)
            .filter((s) => (name === null || s.name === name) && matchesSelector(s.labels, terms))
            .map(wireServer),
        };
      }),
      r("GET", `\\/servers${ID}`, "servers.get", (c) => {
        const s = this.store.servers.get(Number(c.params[0]));
        if (s === undefined || s.account !== c.account) throw notFound("server");
        return { body: { server: wireServer(s) } };
      }),
      r("GET", "\\/volumes", "volumes.list", (c) => {
        const name = c.query.get("name");
        const terms = parseLabelSelector(c.query.get("label_selector") ?? "");
        return {
          key: "volumes",
          list: this.store
            .volumesOf(c.account)
            .filter((v) => (name === null || v.name === name) && matchesSelector(v.labels, terms))
            .map(wireVolume),
        };
      }),
      r("GET", `\\/volumes${ID}`, "volumes.get", (c) => {
        const v = this.store.volumes.get(Number(c.params[0]));
        if (v === undefined || v.account !== c.account) throw notFound("volume");
        return { body: { volume: wireVolume(v) } };
      }),
      r("GET", "\\/load_balancers", "load_balancers.list", (c) => {
        const name = c.query.get("name");
        const terms = parseLabelSelector(c.query.get("label_selector") ?? "");
        return {
          key: "load_balancers",
          list: this.store
            .loadBalancersOf(c.account)
            .filter((l) => (name === null || l.name === name) && matchesSelector(l.labels, terms))
            .map(wireLoadBalancer),
        };
      }),
      r("POST", "\\/load_balancers", "load_balancers.create", (c) => this.createLoadBalancer(c)),
      r("GET", `\\/load_balancers${ID}`, "load_balancers.get", (c) => ({
        body: { load_balancer: wireLoadBalancer(this.lb(c)) },
      })),
      r("PUT", `\\/load_balancers${ID}`, "load_balancers.update", (c) => {
        const lb = this.lb(c);
        if (c.body["labels"] !== undefined) lb.labels = checkLabels(c.body["labels"]);
        if (typeof c.body["name"] === "string") lb.name = c.body["name"];
        return { body: { load_balancer: wireLoadBalancer(lb) } };
      }),
      r("DELETE", `\\/load_balancers${ID}`, "load_balancers.delete", (c) => {
        const lb = this.lb(c);
        if (lb.deleteProtected === true) throw protectedError();
        this.store.loadBalancers.delete(lb.id);
        return { status: 204 };
      }),
      r("GET", `\\/load_balancers${ID}\\/actions`, "load_balancers.actions.list", (c) => {
        const lb = this.lb(c);
        return { key: "actions", list: this.actionsOf(c, lb.id, "load_balancer") };
      }),
      lbAction("add_service", (c, lb) => {
        const s = this.service(c.body, undefined, c.account);
        if (lb.services.some((x) => x.listen_port === s.listen_port))
          throw new FakeError(409, "conflict", `listen_port ${s.listen_port} already in use`);
        const type = LB_TYPES.find((t) => t.name === lb.type);
        if (type !== undefined && lb.services.length >= type.maxServices)
          throw new FakeError(
            403,
            "resource_limit_exceeded",
            `load balancer type ${type.name} takes at most ${type.maxServices} services`,
          );
        this.assertCertificateQuota(lb.type, [...lb.services, s]);
        lb.services.push(s);
        return { undo: () => this.removeService(lb, s.listen_port) };
      }),
      lbAction("update_service", (_c, lb) => {
        const port = Number(_c.body["listen_port"]);
        const i = lb.services.findIndex((x) => x.listen_port === port);
        const old = lb.services[i];
        if (old === undefined) throw notFound("service");
        const next = this.service(_c.body, old, _c.account);
        this.assertCertificateQuota(
          lb.type,
          lb.services.map((x) => (x === old ? next : x)),
        );
        lb.services[i] = next;
        return { undo: () => lb.services.splice(lb.services.indexOf(next), 1, old) };
      }),
      lbAction("delete_service", (c, lb) => {
        const port = Number(c.body["listen_port"]);
        const old = lb.services.find((x) => x.listen_port === port);
        if (old === undefined) throw notFound("service");
        this.removeService(lb, port);
        return { undo: () => lb.services.push(old) };
      }),
      lbAction("add_target", (c, lb) => {
        const t = this.target(c.body, lb);
        if (lb.targets.some((x) => x.type === t.type && x.server === t.server && x.ip === t.ip))
          throw new FakeError(409, "target_already_defined", "target already defined");
        const type = LB_TYPES.find((x) => x.name === lb.type);
        if (type !== undefined && lb.targets.length >= type.maxTargets)
          throw new FakeError(
            403,
            "resource_limit_exceeded",
            `load balancer type ${type.name} takes at most ${type.maxTargets} targets`,
          );
        lb.targets.push(t);
        return { undo: () => lb.targets.splice(lb.targets.indexOf(t), 1) };
      }),
      lbAction("remove_target", (c, lb) => {
        const server = (c.body["server"] as Json | undefined)?.["id"];
        const ip = (c.body["ip"] as Json | undefined)?.["ip"];
        const i = lb.targets.findIndex(
          (x) => x.type === c.body["type"] && x.server === server && x.ip === ip,
        );
        const old = lb.targets[i];
        if (old === undefined) throw notFound("target");
        lb.targets.splice(i, 1);
        return { undo: () => lb.targets.push(old) };
      }),
      lbAction("attach_to_network", (c, lb) => {
        const n = this.store.networks.get(Number(c.body["network"]));
        if (n === undefined || n.account !== c.account) throw notFound("network");
        if (lb.privateNet.some((p) => p.network === n.id))
          throw new FakeError(
            409,
            "load_balancer_already_attached",
            "load balancer already attached to network",
          );
        const entry = { network: n.id, ip: this.hostIn(n.id) };
        lb.privateNet.push(entry);
        return { undo: () => lb.privateNet.splice(lb.privateNet.indexOf(entry), 1) };
      }),
      lbAction("change_algorithm", (c, lb) => {
        const old = lb.algorithm;
        const type = c.body["type"];
        if (type !== "round_robin" && type !== "least_connections") throw invalid("invalid algorithm");
        lb.algorithm = type;
        return { undo: () => (lb.algorithm = old) };
      }),
      lbAction("enable_public_interface", (_c, lb) => this.setPublicInterface(lb, true)),
      lbAction("disable_public_interface", (_c, lb) => {
        // The operation's own errors (the spec lists them without a status).
        if (lb.privateNet.length === 0)
          throw new FakeError(
            422,
            "load_balancer_not_attached_to_network",
            "the load balancer is not attached to a network",
          );
        if (lb.targets.some((t) => !t.use_private_ip))
          throw new FakeError(
            422,
            "targets_without_use_private_ip",
            "the load balancer has targets that use the public IP instead of the private IP",
          );
        return this.setPublicInterface(lb, false);
      }),
      lbAction("change_protection", (c, lb) => {
        const old = lb.deleteProtected;
        const want = c.body["delete"];
        if (want !== undefined && typeof want !== "boolean") throw invalid("delete must be a boolean");
        if (want !== undefined) lb.deleteProtected = want;
        return { undo: () => (lb.deleteProtected = old) };
      }),
      lbAction("change_dns_ptr", (c, lb) => {
        const ip = c.body["ip"];
        const ptr = c.body["dns_ptr"];
        if (ip !== lb.ipv4 && ip !== lb.ipv6) throw invalid("ip is not a public IP of this load balancer");
        // "must be a fully qualified domain name (FQDN) without trailing dot"; null: the default again.
        if (ptr !== null && (typeof ptr !== "string" || !FQDN.test(ptr)))
          throw invalid("dns_ptr must be a fully qualified domain name without trailing dot");
        const old = lb.dnsPtr;
        const next = { ...old };
        if (ptr === null) delete next[ip];
        else next[ip] = ptr;
        lb.dnsPtr = next;
        return { undo: () => (lb.dnsPtr = old) };
      }),
      lbAction("change_type", (c, lb) => {
        const old = lb.type;
        const t = LB_TYPES.find((x) => x.name === c.body["load_balancer_type"]);
        if (t === undefined) throw invalid("unknown load_balancer_type");
        if (lb.services.length > t.maxServices || lb.targets.length > t.maxTargets)
          throw new FakeError(403, "resource_limit_exceeded", `too many services or targets for ${t.name}`);
        this.assertCertificateQuota(t.name, lb.services);
        lb.type = t.name;
        return { undo: () => (lb.type = old) };
      }),
      r("GET", "\\/certificates", "certificates.list", (c) => {
        const name = c.query.get("name");
        const types = c.query.getAll("type");
        const terms = parseLabelSelector(c.query.get("label_selector") ?? "");
        return {
          key: "certificates",
          list: this.store
            .certificatesOf(c.account)
            .filter(
              (x) =>
                (name === null || x.name === name) &&
                (types.length === 0 || types.includes(x.type)) &&
                matchesSelector(x.labels, terms),
            )
            .map((x) => this.wireCert(x)),
        };
      }),
      r("POST", "\\/certificates", "certificates.create", (c) => this.createCertificate(c)),
      r("GET", `\\/certificates${ID}`, "certificates.get", (c) => ({
        body: { certificate: this.wireCert(this.cert(c)) },
      })),
      r("PUT", `\\/certificates${ID}`, "certificates.update", (c) => {
        const x = this.cert(c);
        if (c.body["labels"] !== undefined) x.labels = checkLabels(c.body["labels"]);
        if (typeof c.body["name"] === "string") {
          const name = c.body["name"];
          if (this.store.certificatesOf(c.account).some((o) => o.id !== x.id && o.name === name))
            throw new FakeError(409, "uniqueness_error", "name is already used");
          x.name = name;
        }
        return { body: { certificate: this.wireCert(x) } };
      }),
      r("DELETE", `\\/certificates${ID}`, "certificates.delete", (c) => {
        this.store.certificates.delete(this.cert(c).id);
        return { status: 204 };
      }),
      r("GET", `\\/certificates${ID}\\/actions`, "certificates.actions.list", (c) => {
        const x = this.cert(c);
        return { key: "actions", list: this.actionsOf(c, x.id, "certificate") };
      }),
      r("GET", "\\/networks", "networks.list", (c) => {
        const name = c.query.get("name");
        const terms = parseLabelSelector(c.query.get("label_selector") ?? "");
        return {
          key: "networks",
          list: this.store
            .networksOf(c.account)
            .filter((n) => (name === null || n.name === name) && matchesSelector(n.labels, terms))
            .map((n) => this.wireNet(n)),
        };
      }),
      r("GET", `\\/networks${ID}`, "networks.get", (c) => ({
        body: { network: this.wireNet(this.network(c)) },
      })),
      r("PUT", `\\/networks${ID}`, "networks.update", (c) => {
        const n = this.network(c);
        if (c.body["labels"] !== undefined) n.labels = checkLabels(c.body["labels"]);
        return { body: { network: this.wireNet(n) } };
      }),
      r("GET", `\\/networks${ID}\\/actions`, "networks.actions.list", (c) => {
        const n = this.network(c);
        return { key: "actions", list: this.actionsOf(c, n.id, "network") };
      }),
      r("POST", `\\/networks${ID}\\/actions\\/add_route`, "networks.add_route", (c) => {
        const n = this.network(c);
        this.assertUnlocked(c.account, n.id, "network");
        const route = this.route(c.body, n);
        if (n.routes.some((x) => x.destination === route.destination))
          throw new FakeError(409, "conflict", `route to ${route.destination} already exists`);
        n.routes.push(route);
        const undo = () => n.routes.splice(n.routes.indexOf(route), 1);
        return {
          status: 201,
          body: { action: wireAction(this.startAction(c, "add_route", n.id, "network", undo)) },
        };
      }),
      r("POST", `\\/networks${ID}\\/actions\\/delete_route`, "networks.delete_route", (c) => {
        const n = this.network(c);
        this.assertUnlocked(c.account, n.id, "network");
        const route = this.route(c.body, n);
        const i = n.routes.findIndex(
          (x) => x.destination === route.destination && x.gateway === route.gateway,
        );
        const old = n.routes[i];
        if (old === undefined) throw notFound("route");
        n.routes.splice(i, 1);
        const undo = () => n.routes.push(old);
        return {
          status: 201,
          body: { action: wireAction(this.startAction(c, "delete_route", n.id, "network", undo)) },
        };
      }),
    ];
  }

  // ---- resources ----------------------------------------------------------------------------

  private lb(c: Call): FakeLoadBalancer {
    const lb = this.store.loadBalancers.get(Number(c.params[0]));
    if (lb === undefined || lb.account !== c.account) throw notFound("load_balancer");
    return lb;
  }

  private network(c: Call): FakeNetwork {
    const n = this.store.networks.get(Number(c.params[0]));
    if (n === undefined || n.account !== c.account) throw notFound("network");
    return n;
  }

  private cert(c: Call): FakeCertificate {
    const x = this.store.certificates.get(Number(c.params[0]));
    if (x === undefined || x.account !== c.account) throw notFound("certificate");
    return x;
  }

  private wireCert(x: FakeCertificate): Json {
    const usedBy = this.store
      .loadBalancersOf(x.account)
      .filter((lb) =>
        lb.services.some((s) => ((s.http?.["certificates"] as number[] | undefined) ?? []).includes(x.id)),
      )
      .map((lb) => lb.id);
    return wireCertificate(x, usedBy);
  }

  /**
   * POST /certificates: an uploaded one (its PEM parsed, the key matched, its names and validity
   * read from it; no action), or a managed one, issued by its create_certificate action:
   * `pending` while it runs, then `completed` (or `failed`, with the action's error).
   */
  private createCertificate(c: Call): { status: number; body: unknown } {
    const b = c.body;
    const name = b["name"];
    if (typeof name !== "string" || name === "") throw invalid("name is required");
    if (this.store.certificatesOf(c.account).some((x) => x.name === name))
      throw new FakeError(409, "uniqueness_error", "name is already used");
    const type = b["type"] ?? "uploaded";
    const labels = b["labels"] === undefined ? {} : checkLabels(b["labels"]);
    const base = { id: this.store.nextId(), account: c.account, name, labels, createdMs: c.nowMs };
    if (type === "uploaded") {
      const pem = b["certificate"];
      const key = b["private_key"];
      if (typeof pem !== "string" || typeof key !== "string")
        throw invalid("certificate and private_key are required for type uploaded");
      let x509: X509Certificate;
      try {
        x509 = new X509Certificate(pem);
        if (!x509.checkPrivateKey(createPrivateKey(key))) throw new Error("key mismatch");
      } catch {
        throw invalid("certificate or private_key is invalid, or they do not match");
      }
      const sans = (x509.subjectAltName ?? "")
        .split(",")
        .map((n) => n.trim())
        .filter((n) => n.startsWith("DNS:"))
        .map((n) => n.slice(4));
      const cn = /CN=([^\n,]+)/.exec(x509.subject)?.[1];
      const cert: FakeCertificate = {
        ...base,
        type: "uploaded",
        domainNames: sans.length > 0 ? sans : cn === undefined ? [] : [cn],
        certificate: pem,
        fingerprint: x509.fingerprint,
        notValidBefore: Date.parse(x509.validFrom),
        notValidAfter: Date.parse(x509.validTo),
        status: null,
      };
      this.store.certificates.set(cert.id, cert);
      return { status: 201, body: { certificate: this.wireCert(cert), action: null } };
    }
    if (type !== "managed") throw invalid("invalid type");
    const domains = b["domain_names"];
    if (
      !Array.isArray(domains) ||
      domains.length === 0 ||
      domains.some((d) => typeof d !== "string" || !/^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(d))
    )
      throw invalid("domain_names are required for type managed");
    const cert: FakeCertificate = {
      ...base,
      type: "managed",
      domainNames: domains as string[],
      certificate: null,
      fingerprint: null,
      notValidBefore: null,
      notValidAfter: null,
      status: { issuance: "pending", renewal: "unavailable", error: null },
    };
    this.store.certificates.set(cert.id, cert);
    const issued = () => {
      const now = this.now();
      cert.certificate = `-----BEGIN CERTIFICATE-----\nfake Let's Encrypt certificate ${cert.id} for ${cert.domainNames.join(" ")}\n-----END CERTIFICATE-----\n`;
      cert.fingerprint = (createHash("sha1").update(cert.certificate).digest("hex").match(/../g) ?? []).join(
        ":",
      );
      cert.notValidBefore = now;
      cert.notValidAfter = now + 90 * 86_400_000;
      cert.status = { issuance: "completed", renewal: "unavailable", error: null };
    };
    const failed = () => {
      cert.status = {
        issuance: "failed",
        renewal: "unavailable",
        error: { code: "action_failed", message: "Action failed" },
      };
    };
    const action = this.startAction(c, "create_certificate", cert.id, "certificate", failed, issued);
    return { status: 201, body: { certificate: this.wireCert(cert), action: wireAction(action) } };
  }

  private wireNet(n: FakeNetwork): Json {
    const servers = this.store
      .serversOf(n.account)
      .filter((s) => s.privateNet.some((p) => p.network === n.id));
    const lbs = this.store
      .loadBalancersOf(n.account)
      .filter((l) => l.privateNet.some((p) => p.network === n.id));
    return wireNetwork(
      n,
      servers.map((s) => s.id),
      lbs.map((l) => l.id),
    );
  }

  private route(body: Json, n: FakeNetwork): { destination: string; gateway: string } {
    const destination = body["destination"];
    const gateway = body["gateway"];
    if (typeof destination !== "string" || ipv4Cidr(destination) === undefined)
      throw invalid("destination must be an IPv4 network");
    if (typeof gateway !== "string" || !ipv4In(gateway, n.ipRange))
      throw invalid("gateway must be an address of the network");
    return { destination, gateway };
  }

  /**
   * A service from add_service's body, or update_service's over the old one (the fields the
   * body leaves out kept). HTTP settings only for http and https, with Hetzner's defaults
   * filled in as it answers them; certificates only for https, which needs at least one of the
   * project's; redirect_http only for https (docs.hetzner.cloud, "Load Balancers").
   */
  private service(body: Json, old: FakeLbService | undefined, account: string): FakeLbService {
    const protocol = body["protocol"] ?? old?.protocol;
    if (protocol !== "tcp" && protocol !== "http" && protocol !== "https") throw invalid("invalid protocol");
    const listen = Number(body["listen_port"]);
    const dest = Number(body["destination_port"] ?? old?.destination_port);
    if (!Number.isInteger(listen) || listen < 1 || listen > 65535) throw invalid("invalid listen_port");
    if (!Number.isInteger(dest) || dest < 1 || dest > 65535) throw invalid("invalid destination_port");
    const hcBody = body["health_check"] as Json | undefined;
    const hc: Json = { ...(old?.health_check ?? {}), ...(hcBody ?? {}) };
    if (hc["protocol"] !== "tcp" && hc["protocol"] !== "http") throw invalid("invalid health_check");
    for (const k of ["port", "interval", "timeout", "retries"] as const)
      if (!Number.isInteger(hc[k]) || (hc[k] as number) < (k === "retries" ? 0 : 1))
        throw invalid(`invalid health_check.${k}`);
    const hcHttp =
      hc["protocol"] === "http"
        ? {
            domain: null,
            path: "/",
            response: "",
            status_codes: ["2??", "3??"],
            tls: false,
            ...(old?.health_check.protocol === "http" ? (old.health_check.http ?? {}) : {}),
            ...((hcBody?.["http"] as Json | undefined) ?? {}),
          }
        : undefined;
    if (hcHttp !== undefined) {
      const codes = hcHttp.status_codes as unknown;
      if (!Array.isArray(codes) || codes.some((c) => typeof c !== "string" || !/^[1-5][0-9?]{2}$/.test(c)))
        throw invalid("invalid health_check.http.status_codes");
    }
    const httpBody = body["http"] as Json | undefined;
    if (protocol === "tcp" && httpBody !== undefined)
      throw invalid("http settings are only available for protocol http and https");
    let http: Record<string, unknown> | undefined;
    if (protocol !== "tcp") {
      http = {
        cookie_name: "HCLBSTICKY",
        cookie_lifetime: 300,
        certificates: [],
        redirect_http: false,
        sticky_sessions: false,
        ...(old?.protocol !== "tcp" ? (old?.http ?? {}) : {}),
        ...(httpBody ?? {}),
      };
      const certs = http["certificates"] as unknown;
      if (!Array.isArray(certs) || certs.some((c) => !Number.isSafeInteger(c)))
        throw invalid("invalid http.certificates");
      for (const id of certs as number[]) {
        const cert = this.store.certificates.get(id);
        if (cert === undefined || cert.account !== account) throw notFound("certificate");
      }
      if (protocol === "http" && certs.length > 0)
        throw invalid("certificates are only available for protocol https");
      if (protocol === "https" && certs.length === 0)
        throw invalid("protocol https needs at least one certificate");
      if (protocol === "http" && http["redirect_http"] === true)
        throw invalid("redirect_http is only available for protocol https");
      const lifetime = http["cookie_lifetime"];
      if (!Number.isInteger(lifetime) || (lifetime as number) < 1)
        throw invalid("invalid http.cookie_lifetime");
      if (typeof http["cookie_name"] !== "string" || http["cookie_name"] === "")
        throw invalid("invalid http.cookie_name");
      const idle = http["timeout_idle"];
      if (idle !== undefined && (!Number.isInteger(idle) || (idle as number) < 1))
        throw invalid("invalid http.timeout_idle");
    }
    return {
      protocol,
      listen_port: listen,
      destination_port: dest,
      proxyprotocol: (body["proxyprotocol"] ?? old?.proxyprotocol) === true,
      health_check: {
        protocol: hc["protocol"],
        port: hc["port"] as number,
        interval: hc["interval"] as number,
        timeout: hc["timeout"] as number,
        retries: hc["retries"] as number,
        ...(hcHttp !== undefined && {
          http: hcHttp as NonNullable<FakeLbService["health_check"]["http"]>,
        }),
      },
      ...(http !== undefined && { http }),
    };
  }

  /** Distinct certificates assigned across a load balancer's services, at most its type's. */
  private assertCertificateQuota(typeName: string, services: readonly FakeLbService[]): void {
    const type = LB_TYPES.find((t) => t.name === typeName);
    const ids = new Set(services.flatMap((x) => (x.http?.["certificates"] as number[] | undefined) ?? []));
    if (type !== undefined && ids.size > type.maxCertificates)
      throw new FakeError(
        403,
        "resource_limit_exceeded",
        `load balancer type ${type.name} takes at most ${type.maxCertificates} certificates`,
      );
  }

  private removeService(lb: FakeLoadBalancer, port: number): void {
    const i = lb.services.findIndex((x) => x.listen_port === port);
    if (i >= 0) lb.services.splice(i, 1);
  }

  private target(body: Json, lb: FakeLoadBalancer): FakeLbTarget {
    const usePrivate = body["use_private_ip"] === true;
    if (body["type"] === "server") {
      const id = Number((body["server"] as Json | undefined)?.["id"]);
      const s = this.store.servers.get(id);
      if (s === undefined || s.account !== lb.account) throw notFound("server");
      // A private target needs the server and the load balancer in one network.
      if (usePrivate && !s.privateNet.some((p) => lb.privateNet.some((q) => q.network === p.network)))
        throw new FakeError(
          422,
          "server_not_attached_to_network",
          "server not attached to a network of the load balancer",
        );
      return { type: "server", server: id, use_private_ip: usePrivate };
    }
    if (body["type"] === "ip") {
      const ip = (body["ip"] as Json | undefined)?.["ip"];
      if (typeof ip !== "string") throw invalid("invalid ip target");
      return { type: "ip", ip, use_private_ip: false };
    }
    throw invalid("unsupported target type");
  }

  private createLoadBalancer(c: Call): { status: number; body: unknown } {
    const b = c.body;
    const type = LB_TYPES.find((t) => t.name === b["load_balancer_type"]);
    if (type === undefined) throw invalid("unknown load_balancer_type");
    if (typeof b["name"] !== "string" || b["name"] === "") throw invalid("name is required");
    if (this.store.loadBalancersOf(c.account).some((l) => l.name === b["name"]))
      throw new FakeError(409, "uniqueness_error", "name is already used");
    const location = typeof b["location"] === "string" ? b["location"] : undefined;
    const zone = typeof b["network_zone"] === "string" ? b["network_zone"] : undefined;
    if (location === undefined && zone === undefined) throw invalid("location or network_zone is required");
    if (location !== undefined && LOCATIONS[location] === undefined) throw invalid("unknown location");
    const loc = location ?? Object.entries(LOCATIONS).find(([, l]) => l.zone === zone)?.[0] ?? undefined;
    if (loc === undefined) throw invalid("unknown network_zone");
    const algorithm = (b["algorithm"] as Json | undefined)?.["type"] ?? "round_robin";
    if (algorithm !== "round_robin" && algorithm !== "least_connections") throw invalid("invalid algorithm");
    const pub = this.store.freshPublic();
    const lb: FakeLoadBalancer = {
      id: this.store.nextId(),
      account: c.account,
      name: b["name"],
      type: type.name,
      location: loc,
      networkZone: LOCATIONS[loc]?.zone ?? "eu-central",
      algorithm,
      labels: b["labels"] === undefined ? {} : checkLabels(b["labels"]),
      publicEnabled: b["public_interface"] !== false,
      ipv4: pub.ipv4,
      ipv6: pub.ipv6.replace("::/64", "::1"),
      privateNet: [],
      services: [],
      targets: [],
      createdMs: c.nowMs,
    };
    if (b["network"] !== undefined) {
      const n = this.store.networks.get(Number(b["network"]));
      if (n === undefined || n.account !== c.account) throw notFound("network");
      lb.privateNet.push({ network: n.id, ip: this.hostIn(n.id) });
    }
    if (!lb.publicEnabled && lb.privateNet.length === 0)
      throw invalid("a load balancer without a public interface needs a network");
    const services = Array.isArray(b["services"]) ? (b["services"] as Json[]) : [];
    if (services.length > type.maxServices)
      throw new FakeError(
        403,
        "resource_limit_exceeded",
        `load balancer type ${type.name} takes at most ${type.maxServices} services`,
      );
    for (const s of services) lb.services.push(this.service(s, undefined, c.account));
    this.assertCertificateQuota(type.name, lb.services);
    for (const t of Array.isArray(b["targets"]) ? (b["targets"] as Json[]) : [])
      lb.targets.push(this.target(t, lb));
    this.store.loadBalancers.set(lb.id, lb);
    const action = this.startAction(c, "create_load_balancer", lb.id, "load_balancer");
    return { status: 201, body: { load_balancer: wireLoadBalancer(lb), action: wireAction(action) } };
  }

  // ---- actions ------------------------------------------------------------------------------

  private startAction(
    c: Call,
    command: string,
    id: number,
    type: string,
    undo?: () => void,
    done?: () => void,
  ): FakeAction {
    const left = this.failing.get(command) ?? 0;
    if (left > 0) this.failing.set(command, left - 1);
    const a: FakeAction = {
      id: this.store.nextId(),
      account: c.account,
      command,
      resources: [{ id, type }],
      status: "running",
      startedMs: c.nowMs,
      finishedMs: null,
      error: null,
      pollsLeft: this.actionPolls,
      fails: left > 0,
      ...(undo !== undefined && { undo }),
      ...(done !== undefined && { done }),
    };
    this.store.actions.set(a.id, a);
    if (a.pollsLeft === 0) this.finish(a);
    return a;
  }

  /** One read of an action: a running one counts down its polls, then ends. */
  private read(a: FakeAction): FakeAction {
    if (a.status !== "running") return a;
    if (a.pollsLeft > 0) a.pollsLeft--;
    else this.finish(a);
    return a;
  }

  private finish(a: FakeAction): void {
    a.finishedMs = this.now();
    if (a.fails) {
      a.status = "error";
      a.error = { code: "action_failed", message: "Action failed" };
      a.undo?.();
    } else {
      a.status = "success";
      a.done?.();
    }
  }

  private assertUnlocked(account: string, id: number, type: string): void {
    for (const a of this.store.actions.values())
      if (
        a.account === account &&
        a.status === "running" &&
        a.resources.some((r) => r.id === id && r.type === type)
      )
        throw locked();
  }

  /** The resource's actions, newest first when asked (`sort=id:desc`), filtered by `status`. */
  private actionsOf(c: Call, id: number, type: string): Json[] {
    const statuses = c.query.getAll("status");
    const sort = c.query.getAll("sort");
    const all = [...this.store.actions.values()]
      .filter((a) => a.account === c.account && a.resources.some((r) => r.id === id && r.type === type))
      .map((a) => this.read(a))
      .filter((a) => statuses.length === 0 || statuses.includes(a.status));
    if (sort.includes("id:desc")) all.sort((x, y) => y.id - x.id);
    else all.sort((x, y) => x.id - y.id);
    return all.map(wireAction);
  }
}
