/**
 * A fake Linode API v4 on the fake kit: Linodes (IPs, configs and their VPC interfaces),
 * NodeBalancers with configs, nodes and rebuild, Cloud Firewalls with devices and rules,
 * VPCs with subnets and their IP listing. Linode's wire shapes, numbered pages
 * (page/pages/results, page_size 25..500), X-Filter on the fields providers use, the error
 * envelope {"errors":[{"reason","field"}]}, Bearer tokens per account, the kit's faults
 * (latency, 5xx, 429 with Retry-After, lost answers) and a list lag in which a just-created
 * Linode is missing from lists. With `spec`, every request and answer is checked against
 * Linode's OpenAPI document.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { parse as parseYaml } from "yaml";
import { byKind, type ErrorRenderer, FakeError } from "../fake-kit/errors.js";
import { OpenApiChecker } from "../fake-kit/openapi.js";
import { numberedPage, parsePageSize } from "../fake-kit/pagination.js";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import {
  type ListFaults,
  type VendorAnswer,
  type VendorCall,
  VendorFake,
  type VendorMutation,
  type VendorRoute,
} from "../fake-kit/vendor-fake.js";
import { withHandAddedLinodeOperations } from "./spec-additions.js";
import {
  type FakeConfigInterface,
  type FakeFirewall,
  type FakeLinode,
  type FakeNbConfig,
  type FakeNbNode,
  type FakeNodeBalancer,
  type FakeVolume,
  type FakeVpc,
  type FirewallRules,
  LinodeStore,
} from "./store.js";
import {
  wireFirewall,
  wireFirewallDevice,
  wireFirewallRules,
  wireInterface,
  wireLinode,
  wireLinodeConfig,
  wireLinodeInterface,
  wireLinodeIps,
  wireNbConfig,
  wireNbNode,
  wireNodeBalancer,
  wireSubnet,
  wireVolume,
  wireVpc,
} from "./wire.js";

/** The spec fixture: the operations of linode-openapi-v4.189.0.yaml the fake serves (sim/fixtures/README.md). */
export const LINODE_SPEC = "linode/linode-openapi-v4.189.0.ccm-subset.yaml";
/** Linode's date-times carry no offset ("2018-01-01T00:01:01"). */
export const LINODE_FORMATS = { "date-time": /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$/ };

let cachedChecker: OpenApiChecker | undefined;
/** The spec checker (with the hand-added newer parts), parsed once per process. */
export function linodeSpecChecker(): OpenApiChecker {
  cachedChecker ??= new OpenApiChecker(
    withHandAddedLinodeOperations(parseYaml(readFileSync(fixtureSpecPath(LINODE_SPEC), "utf8"))),
    { formats: LINODE_FORMATS },
  );
  return cachedChecker;
}

/** Linode's envelope; a throttle is the API's own 429 answer. */
const renderer: ErrorRenderer = {
  render(e) {
    const reason = byKind(
      e,
      {
        throttled: "Too many requests",
        unavailable: "Service Unavailable",
        timeout: "Gateway Timeout",
        internal: "Internal Server Error",
      },
      e.message,
    );
    return {
      status: e.status,
      ...(e.headers !== undefined && { headers: e.headers }),
      body: { errors: [{ reason, ...(e.field !== undefined && { field: e.field }) }] },
    };
  },
};

function notFound(): FakeError {
  return new FakeError(404, "NotFound", "Not found");
}

function bad(reason: string, field?: string): FakeError {
  return new FakeError(400, "BadRequest", reason, field === undefined ? {} : { field });
}

type Json = Record<string, unknown>;
type Call = VendorCall;

/** A list: `list` (the fields X-Filter sees), each page's items expanded to wire shape by `expand`. */
interface Listing {
  readonly list: readonly Json[];
  readonly expand?: (item: Json) => Json;
  /** The X-Filter of the call, on a filterable route. */
  readonly filter?: unknown;
}

type Handler = (c: Call) => VendorAnswer | Listing;

type Route = VendorRoute<Listing>;

/** One recorded mutation with its body (the request log keeps no bodies). */
export interface LinodeMutation {
  readonly seq: number;
  readonly account: string;
  readonly operation: string;
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

export interface LinodeFakeOptions {
  /** Check every request and answer against Linode's OpenAPI spec (needs the spec file). */
  readonly spec?: boolean;
  readonly seed?: number;
  readonly now?: () => number;
}

export interface CreateVolumeSpec {
  readonly label: string;
  readonly region: string;
  /** GB; default 20. */
  readonly size?: number;
  readonly linodeId?: number;
  readonly tags?: readonly string[];
}

export interface CreateLinodeSpec {
  readonly label: string;
  readonly region: string;
  readonly type?: string;
  readonly tags?: readonly string[];
  readonly status?: FakeLinode["status"];
  /** No private IPv4 (public only). */
  readonly noPrivateIP?: boolean;
  /** Attach a VPC interface in this subnet. */
  readonly vpcSubnetId?: number;
  /** Its interfaces on the newer Linode interfaces API instead of its config. */
  readonly linodeInterfaces?: boolean;
}

export interface LinodeInventory {
  readonly nodeBalancers: readonly (Json & { configs: readonly (Json & { nodes: readonly Json[] })[] })[];
  readonly firewalls: readonly (Json & { devices: readonly { type: string; id: number }[] })[];
}

export class LinodeFake extends VendorFake<Listing> {
  readonly store = new LinodeStore();
  readonly mutations: LinodeMutation[] = [];
  private listLagMs = 0;

  private constructor(opts: LinodeFakeOptions) {
    super({
      vendor: "Linode",
      newToken: (name) => `tok-${name}-${Math.random().toString(36).slice(2)}`,
      ...(opts.seed !== undefined && { seed: opts.seed }),
      ...(opts.now !== undefined && { now: opts.now }),
      ...(opts.spec && { spec: { checker: linodeSpecChecker(), fixture: LINODE_SPEC } }),
      renderer,
      requestIdHeader: "x-request-id",
      refusals: {
        badBody: () => bad("Invalid JSON"),
        unauthenticated: () => new FakeError(401, "Unauthorized", "Invalid Token", { kind: "auth" }),
        notFound,
        methodNotAllowed: (allow) =>
          new FakeError(405, "MethodNotAllowed", "Method Not Allowed", { headers: { allow } }),
      },
    });
  }

  static start(opts: LinodeFakeOptions = {}): Promise<LinodeFake> {
    return new LinodeFake(opts).listen();
  }

  // ---- test and demo controls ---------------------------------------------------------------

  createLinode(account: string, spec: CreateLinodeSpec): FakeLinode {
    const id = this.store.nextId();
    const addr = this.store.freshAddresses();
    const interfaces: FakeConfigInterface[] = [
      {
        id: this.store.nextId(),
        purpose: "public",
        primary: true,
        subnetId: null,
        vpcId: null,
        vpcIPv4: null,
        ipRanges: [],
      },
    ];
    if (spec.vpcSubnetId !== undefined) {
      const vpc = this.vpcOfSubnet(account, spec.vpcSubnetId);
      const subnet = vpc.subnets.find((s) => s.id === spec.vpcSubnetId);
      const base = (subnet?.ipv4 ?? "10.0.0.0/24").split("/")[0]!.split(".").slice(0, 3).join(".");
      interfaces.push({
        id: this.store.nextId(),
        purpose: "vpc",
        primary: false,
        subnetId: spec.vpcSubnetId,
        vpcId: vpc.id,
        vpcIPv4: `${base}.${(addr.host % 250) + 2}`,
        ipRanges: [],
      });
    }
    const linode: FakeLinode = {
      id,
      account,
      label: spec.label,
      region: spec.region,
      type: spec.type ?? "g6-standard-2",
      status: spec.status ?? "running",
      publicIPv4: addr.public,
      privateIPv4: spec.noPrivateIP ? null : addr.private,
      ipv6: addr.ipv6,
      tags: [...(spec.tags ?? [])],
      configId: this.store.nextId(),
      interfaceGeneration: spec.linodeInterfaces ? "linode" : "legacy_config",
      interfaces,
      createdAtMs: this.now(),
    };
    this.store.linodes.set(id, linode);
    return linode;
  }

  /** A Block Storage Volume, as if made in the Cloud Manager (the fake serves volumes read-only). */
  createVolume(account: string, spec: CreateVolumeSpec): FakeVolume {
    const v: FakeVolume = {
      id: this.store.nextId(),
      account,
      label: spec.label,
      region: spec.region,
      size: spec.size ?? 20,
      status: "active",
      linodeId: spec.linodeId ?? null,
      tags: [...(spec.tags ?? [])],
      createdAtMs: this.now(),
    };
    this.store.volumes.set(v.id, v);
    return v;
  }

  private wireVolume(v: FakeVolume): Record<string, unknown> {
    return wireVolume(v, v.linodeId === null ? null : (this.store.linodes.get(v.linodeId)?.label ?? null));
  }

  setLinodeStatus(id: number, status: FakeLinode["status"]): void {
    const l = this.store.linodes.get(id);
    if (l === undefined) throw new Error(`no Linode ${id}`);
    l.status = status;
  }

  deleteLinode(id: number): void {
    this.store.linodes.delete(id);
    for (const f of this.store.firewalls.values()) {
      const i = f.devices.findIndex((d) => d.type === "linode" && d.entityId === id);
      if (i >= 0) f.devices.splice(i, 1);
    }
  }

  createVpc(
    account: string,
    spec: { label: string; region: string; subnets: { label: string; ipv4: string }[] },
  ) {
    const vpc: FakeVpc = {
      id: this.store.nextId(),
      account,
      label: spec.label,
      region: spec.region,
      subnets: spec.subnets.map((s) => ({ id: this.store.nextId(), label: s.label, ipv4: s.ipv4 })),
    };
    this.store.vpcs.set(vpc.id, vpc);
    return vpc;
  }

  /** A NodeBalancer made by another client (the Linode CCM, a user), with one TCP config per port. */
  createNodeBalancer(
    account: string,
    spec: {
      label: string;
      region: string;
      tags?: readonly string[];
      ports?: readonly number[];
      nodes?: readonly string[];
    },
  ): FakeNodeBalancer {
    const nb = this.newNodeBalancer(account, spec.label, spec.region, spec.tags ?? [], 0, "common");
    for (const port of spec.ports ?? [])
      nb.configs.push(
        this.newConfig(nb.id, {
          port,
          protocol: "tcp",
          nodes: (spec.nodes ?? []).map((address) => ({ address })),
        }),
      );
    return nb;
  }

  createFirewall(
    account: string,
    label: string,
    rules: FirewallRules,
    tags: readonly string[] = [],
  ): FakeFirewall {
    const fw: FakeFirewall = {
      id: this.store.nextId(),
      account,
      label,
      tags: [...tags],
      rules,
      version: 1,
      devices: [],
      createdAtMs: this.now(),
    };
    this.store.firewalls.set(fw.id, fw);
    return fw;
  }

  /** A reserved IPv4 address in the account and region (POST /networking/reserved/ips, newer than the spec). */
  reserveIPv4(account: string, region: string): string {
    const n = this.store.nextId();
    const address = `172.106.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
    this.store.reservedIPs.set(address, { address, account, region });
    return address;
  }

  /** A just-created Linode is missing from lists for this long (direct gets see it). */
  setListLag(ms: number): void {
    this.listLagMs = ms;
  }

  override resetFaults(): void {
    super.resetFaults();
    this.listLagMs = 0;
  }

  /** Everything NodeBalancer-related of an account, as the API would answer it. */
  inventory(account: string): LinodeInventory {
    return {
      nodeBalancers: this.store.nodeBalancersOf(account).map((nb) => ({
        ...wireNodeBalancer(nb),
        configs: nb.configs.map((c) => ({ ...wireNbConfig(c), nodes: c.nodes.map((n) => wireNbNode(c, n)) })),
      })),
      firewalls: this.store.firewallsOf(account).map((f) => ({
        ...wireFirewall(f),
        devices: f.devices.map((d) => ({ type: d.type, id: d.entityId })),
      })),
    };
  }

  // ---- the vendor's parts of the kit's pipeline --------------------------------------------

  protected override recordMutation(m: VendorMutation): void {
    this.mutations.push({ seq: this.log.mark() + 1, ...m });
  }

  /** Linode's numbered page (page_size 25..500), X-Filter applied before paging. */
  protected page(listing: Listing, c: Call, faults: ListFaults): unknown {
    const pageSize = parsePageSize(c.query.get("page_size"), {
      param: "page_size",
      defaultSize: 100,
      min: 25,
      max: 500,
      overMax: "refuse",
    });
    const pageRaw = c.query.get("page");
    const page = pageRaw === null ? 1 : Number(pageRaw);
    if (!Number.isInteger(page) || page < 1) throw bad("Must be an integer greater than 0", "page");
    const items = faults.empty(listing.list.filter((i) => matchFilter(i, listing.filter)));
    const numbered = numberedPage(items, page, pageSize);
    const expand = listing.expand;
    const answer = expand === undefined ? numbered : { ...numbered, data: numbered.data.map(expand) };
    return { ...answer, data: faults.drop(answer.data) };
  }

  // ---- routes ---------------------------------------------------------------------------------

  protected routes(): Route[] {
    const V = String.raw`^\/(?:v4|v4beta)`;
    const ID = "\\/(\\d+)";
    const r = (
      method: Route["method"],
      path: string,
      op: string,
      handle: Handler,
      filterable?: string[],
    ): Route => {
      const pattern = new RegExp(`${V}${path}\\/?$`);
      const example = `/v4${path.replaceAll(ID, "/1").replace("([^/]+)", "192.0.2.1").replaceAll("\\/", "/")}`;
      if (!pattern.test(example)) throw new Error(`route ${method} ${pattern}: no example path (${example})`);
      return {
        method,
        pattern,
        op,
        example,
        handle: filterable === undefined ? handle : filtered(handle, filterable),
      };
    };
    return [
      r("GET", "\\/linode\\/instances", "linodes.list", (c) => this.listLinodes(c), [
        "id",
        "label",
        "region",
        "tags",
        "status",
        "type",
      ]),
      r("GET", `\\/linode\\/instances${ID}`, "linodes.get", (c) => ({ body: wireLinode(this.linode(c)) })),
      r("PUT", `\\/linode\\/instances${ID}`, "linodes.update", (c) => this.updateLinode(c)),
      r("GET", `\\/linode\\/instances${ID}\\/ips`, "linodes.ips", (c) => ({
        body: wireLinodeIps(this.linode(c)),
      })),
      r("GET", `\\/linode\\/instances${ID}\\/configs`, "linodes.configs.list", (c) => {
        const l = this.linode(c);
        // A Linode on the newer interfaces API has configs without interfaces.
        return {
          list: [wireLinodeConfig(l.interfaceGeneration === "linode" ? { ...l, interfaces: [] } : l)],
        };
      }),
      r("GET", `\\/linode\\/instances${ID}\\/interfaces`, "linodes.interfaces.list", (c) => {
        const l = this.linode(c);
        if (l.interfaceGeneration !== "linode") throw bad("This Linode uses config interfaces");
        return { body: { interfaces: l.interfaces.map(wireLinodeInterface) } };
      }),
      r("PUT", `\\/linode\\/instances${ID}\\/interfaces${ID}`, "linodes.linodeinterfaces.update", (c) => {
        const l = this.linode(c);
        if (l.interfaceGeneration !== "linode") throw bad("This Linode uses config interfaces");
        const iface = l.interfaces.find((i) => i.id === Number(c.params[1]));
        if (iface === undefined) throw notFound();
        const vpc = c.body["vpc"] as { ipv4?: { ranges?: { range?: unknown }[] } } | undefined;
        if (vpc?.ipv4?.ranges !== undefined) {
          if (iface.purpose !== "vpc") throw bad("Only VPC interfaces may have IP ranges", "vpc.ipv4.ranges");
          const ranges = vpc.ipv4.ranges.map((r) => String(r.range));
          for (const r of ranges)
            if (!/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(r)) throw bad(`Invalid IP range ${r}`, "vpc.ipv4.ranges");
          iface.ipRanges = ranges;
        }
        return { body: wireLinodeInterface(iface) };
      }),
      r(
        "PUT",
        `\\/linode\\/instances${ID}\\/configs${ID}\\/interfaces${ID}`,
        "linodes.interfaces.update",
        (c) => this.updateInterface(c),
      ),
      r(
        "GET",
        "\\/nodebalancers",
        "nodebalancers.list",
        (c) => ({
          list: this.store.nodeBalancersOf(c.account).map(wireNodeBalancer),
        }),
        ["id", "label", "ipv4", "ipv6", "region", "tags", "hostname"],
      ),
      r("POST", "\\/nodebalancers", "nodebalancers.create", (c) => this.createNb(c)),
      r("GET", `\\/nodebalancers${ID}`, "nodebalancers.get", (c) => ({ body: wireNodeBalancer(this.nb(c)) })),
      r("PUT", `\\/nodebalancers${ID}`, "nodebalancers.update", (c) => this.updateNb(c)),
      r("DELETE", `\\/nodebalancers${ID}`, "nodebalancers.delete", (c) => this.deleteNb(c)),
      r("GET", `\\/nodebalancers${ID}\\/configs`, "nodebalancers.configs.list", (c) => ({
        list: this.nb(c).configs.map(wireNbConfig),
      })),
      r("POST", `\\/nodebalancers${ID}\\/configs`, "nodebalancers.configs.create", (c) =>
        this.createConfig(c),
      ),
      r("GET", `\\/nodebalancers${ID}\\/configs${ID}`, "nodebalancers.configs.get", (c) => ({
        body: wireNbConfig(this.config(c)),
      })),
      r("PUT", `\\/nodebalancers${ID}\\/configs${ID}`, "nodebalancers.configs.update", (c) => {
        const cfg = this.config(c);
        applyConfig(cfg, c.body);
        return { body: wireNbConfig(cfg) };
      }),
      r("DELETE", `\\/nodebalancers${ID}\\/configs${ID}`, "nodebalancers.configs.delete", (c) => {
        const nb = this.nb(c);
        const cfg = this.config(c);
        nb.configs.splice(nb.configs.indexOf(cfg), 1);
        return { body: {} };
      }),
      r("POST", `\\/nodebalancers${ID}\\/configs${ID}\\/rebuild`, "nodebalancers.configs.rebuild", (c) =>
        this.rebuild(c),
      ),
      r("GET", `\\/nodebalancers${ID}\\/configs${ID}\\/nodes`, "nodebalancers.nodes.list", (c) => {
        const cfg = this.config(c);
        return { list: cfg.nodes.map((n) => wireNbNode(cfg, n)) };
      }),
      r("GET", `\\/nodebalancers${ID}\\/firewalls`, "nodebalancers.firewalls.list", (c) => {
        const nb = this.nb(c);
        return { list: this.store.firewallsOfDevice(c.account, "nodebalancer", nb.id).map(wireFirewall) };
      }),
      r(
        "GET",
        "\\/volumes",
        "volumes.list",
        (c) => ({ list: this.store.volumesOf(c.account).map((v) => this.wireVolume(v)) }),
        ["id", "label", "region", "tags"],
      ),
      r("GET", `\\/volumes${ID}`, "volumes.get", (c) => {
        const v = this.store.volumes.get(Number(c.params[0]));
        if (v === undefined || v.account !== c.account) throw notFound();
        return { body: this.wireVolume(v) };
      }),
      r(
        "GET",
        "\\/networking\\/firewalls",
        "firewalls.list",
        (c) => ({
          list: this.store.firewallsOf(c.account).map(wireFirewall),
        }),
        ["id", "label", "tags"],
      ),
      r("POST", "\\/networking\\/firewalls", "firewalls.create", (c) => this.createFw(c)),
      r("GET", `\\/networking\\/firewalls${ID}`, "firewalls.get", (c) => ({
        body: wireFirewall(this.fw(c)),
      })),
      r("PUT", `\\/networking\\/firewalls${ID}`, "firewalls.update", (c) => {
        const fw = this.fw(c);
        if (c.body["tags"] !== undefined) fw.tags = tagList(c.body["tags"]);
        if (typeof c.body["label"] === "string") fw.label = c.body["label"];
        return { body: wireFirewall(fw) };
      }),
      r("DELETE", `\\/networking\\/firewalls${ID}`, "firewalls.delete", (c) => {
        this.store.firewalls.delete(this.fw(c).id);
        return { body: {} };
      }),
      r("PUT", `\\/networking\\/firewalls${ID}\\/rules`, "firewalls.rules.update", (c) => {
        const fw = this.fw(c);
        fw.rules = parseRules(c.body);
        fw.version++;
        return { body: wireFirewallRules(fw) };
      }),
      r("GET", `\\/networking\\/firewalls${ID}\\/devices`, "firewalls.devices.list", (c) => {
        const fw = this.fw(c);
        return { list: fw.devices.map((d) => wireFirewallDevice(fw, d, this.deviceLabel(d))) };
      }),
      r("POST", `\\/networking\\/firewalls${ID}\\/devices`, "firewalls.devices.create", (c) =>
        this.addDevice(c),
      ),
      r("DELETE", `\\/networking\\/firewalls${ID}\\/devices${ID}`, "firewalls.devices.delete", (c) => {
        const fw = this.fw(c);
        const i = fw.devices.findIndex((d) => d.id === Number(c.params[1]));
        if (i < 0) throw notFound();
        fw.devices.splice(i, 1);
        return { body: {} };
      }),
      r("DELETE", "\\/networking\\/reserved\\/ips\\/([^/]+)", "reservedips.delete", (c) => {
        const r = this.store.reservedIPs.get(c.params[0] ?? "");
        if (r === undefined || r.account !== c.account) throw notFound();
        this.store.reservedIPs.delete(r.address);
        return { body: {} };
      }),
      r(
        "GET",
        "\\/vpcs",
        "vpcs.list",
        (c) => ({
          list: this.store.vpcsOf(c.account).map((v) => wireVpc(v, (s) => this.subnetLinodes(s))),
        }),
        ["id", "label", "region"],
      ),
      r("GET", `\\/vpcs${ID}`, "vpcs.get", (c) => ({
        body: wireVpc(this.vpc(c), (s) => this.subnetLinodes(s)),
      })),
      r("GET", `\\/vpcs${ID}\\/subnets`, "vpcs.subnets.list", (c) => ({
        list: this.vpc(c).subnets.map((s) => wireSubnet(s, this.subnetLinodes(s.id))),
      })),
      r("GET", `\\/vpcs${ID}\\/ips`, "vpcs.ips.list", (c) => ({ list: this.vpcIps(this.vpc(c)) }), [
        "subnet_id",
        "linode_id",
      ]),
    ];
  }

  // ---- handlers -------------------------------------------------------------------------------

  /** Filtered on the filterable fields alone; only the page asked for is rendered in full. */
  private listLinodes(c: Call) {
    const byId = new Map<number, FakeLinode>();
    const list = this.store
      .linodesOf(c.account)
      .filter((l) => this.listLagMs <= 0 || c.nowMs - l.createdAtMs >= this.listLagMs)
      .map((l) => {
        byId.set(l.id, l);
        return { id: l.id, label: l.label, region: l.region, tags: l.tags, status: l.status, type: l.type };
      });
    return { list, expand: (item: Json) => wireLinode(byId.get(item["id"] as number) as FakeLinode) };
  }

  private linode(c: Call): FakeLinode {
    const l = this.store.linodes.get(Number(c.params[0]));
    if (l === undefined || l.account !== c.account) throw notFound();
    return l;
  }

  private updateLinode(c: Call) {
    const l = this.linode(c);
    if (c.body["tags"] !== undefined) l.tags = tagList(c.body["tags"]);
    if (typeof c.body["label"] === "string") l.label = c.body["label"];
    return { body: wireLinode(l) };
  }

  private updateInterface(c: Call) {
    const l = this.linode(c);
    if (Number(c.params[1]) !== l.configId) throw notFound();
    const iface = l.interfaces.find((i) => i.id === Number(c.params[2]));
    if (iface === undefined) throw notFound();
    if (c.body["ip_ranges"] !== undefined) {
      if (iface.purpose !== "vpc") throw bad("Only VPC interfaces may have IP ranges", "ip_ranges");
      const ranges = c.body["ip_ranges"] === null ? [] : stringList(c.body["ip_ranges"], "ip_ranges");
      for (const r of ranges)
        if (!/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(r)) throw bad(`Invalid IP range ${r}`, "ip_ranges");
      iface.ipRanges = ranges;
    }
    return { body: wireInterface(iface) };
  }

  private nb(c: Call): FakeNodeBalancer {
    const nb = this.store.nodeBalancers.get(Number(c.params[0]));
    if (nb === undefined || nb.account !== c.account) throw notFound();
    return nb;
  }

  private config(c: Call): FakeNbConfig {
    const cfg = this.nb(c).configs.find((x) => x.id === Number(c.params[1]));
    if (cfg === undefined) throw notFound();
    return cfg;
  }

  private newNodeBalancer(
    account: string,
    label: string,
    region: string,
    tags: readonly string[],
    throttle: number,
    type: FakeNodeBalancer["type"],
    reservedIPv4?: string,
    backendSubnets: readonly number[] = [],
    frontend?: { subnetId: number; base: string },
  ): FakeNodeBalancer {
    const addr = this.store.freshAddresses();
    const id = this.store.nextId();
    const ipv4 =
      frontend !== undefined
        ? `${frontend.base}.${(addr.host % 250) + 2}`
        : (reservedIPv4 ?? addr.public.replace(/^45\.79\./, "172.105."));
    const nb: FakeNodeBalancer = {
      id,
      account,
      label,
      region,
      tags: [...tags],
      clientConnThrottle: throttle,
      type,
      ipv4,
      ipv6: addr.ipv6.replace(/\/128$/, ""),
      hostname: `${ipv4.replaceAll(".", "-")}.ip.linodeusercontent.com`,
      configs: [],
      backendSubnets,
      frontendSubnetId: frontend?.subnetId ?? null,
      createdAtMs: this.now(),
      updatedAtMs: this.now(),
    };
    this.store.nodeBalancers.set(id, nb);
    return nb;
  }

  private newConfig(nodeBalancerId: number, body: Json): FakeNbConfig {
    const cfg: FakeNbConfig = {
      id: this.store.nextId(),
      nodeBalancerId,
      port: 80,
      protocol: "http",
      algorithm: "roundrobin",
      stickiness: "none",
      check: "none",
      checkInterval: 31,
      checkTimeout: 30,
      checkAttempts: 3,
      checkPath: "",
      checkBody: "",
      checkPassive: true,
      proxyProtocol: "none",
      cipherSuite: "recommended",
      udpCheckPort: 80,
      sslCert: null,
      sslKey: null,
      sslFingerprint: "",
      sslCommonName: "",
      nodes: [],
    };
    applyConfig(cfg, body);
    if (body["nodes"] !== undefined) cfg.nodes = this.nodesOf(cfg, body["nodes"], []);
    return cfg;
  }

  private nodesOf(cfg: FakeNbConfig, raw: unknown, existing: readonly FakeNbNode[]): FakeNbNode[] {
    if (!Array.isArray(raw)) throw bad("Must be an array", "nodes");
    const subnets = this.store.nodeBalancers.get(cfg.nodeBalancerId)?.backendSubnets ?? [];
    const seen = new Set<string>();
    return raw.map((n: unknown, i) => {
      const o = (typeof n === "object" && n !== null ? n : {}) as Json;
      const address = o["address"];
      if (typeof address !== "string" || !/^(\d+\.){3}\d+:\d+$|^\[[0-9a-f:]+\]:\d+$/i.test(address))
        throw bad("Must be a valid IPv4 or IPv6 address with a port", `nodes[${i}].address`);
      // "This _must_ be a private IP address" (the spec): IPv4 backends are RFC 1918 addresses.
      if (!address.startsWith("[") && !/^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)/.test(address))
        throw bad("Must be a private IP address", `nodes[${i}].address`);
      if (seen.has(address)) throw bad("Duplicate node address", `nodes[${i}].address`);
      seen.add(address);
      const id = typeof o["id"] === "number" ? o["id"] : undefined;
      if (id !== undefined && !existing.some((e) => e.id === id))
        throw bad("Node not found in this config", `nodes[${i}].id`);
      if (cfg.protocol === "https" && (cfg.sslCert === null || cfg.sslKey === null))
        throw bad("SSL certificate and key are required for https", "ssl_cert");
      const subnetId = typeof o["subnet_id"] === "number" ? o["subnet_id"] : null;
      if (subnetId !== null && !subnets.includes(subnetId))
        throw bad("subnet_id must be one of the NodeBalancer's backend VPC subnets", `nodes[${i}].subnet_id`);
      if (subnetId === null && subnets.length > 0)
        throw bad("A NodeBalancer with VPC backends needs subnet_id on each node", `nodes[${i}].subnet_id`);
      return {
        id: id ?? this.store.nextId(),
        subnetId,
        address,
        label: typeof o["label"] === "string" ? o["label"] : `node-${i}`,
        weight: typeof o["weight"] === "number" ? o["weight"] : 100,
        mode: (typeof o["mode"] === "string" ? o["mode"] : "accept") as FakeNbNode["mode"],
      };
    });
  }

  private createNb(c: Call) {
    const region = c.body["region"];
    if (typeof region !== "string" || region === "") throw bad("Region is required", "region");
    const label =
      typeof c.body["label"] === "string" ? c.body["label"] : `nodebalancer${this.store.nextId()}`;
    if (this.store.nodeBalancersOf(c.account).some((n) => n.label === label))
      throw bad("Label must be unique among your NodeBalancers", "label");
    const fwId = c.body["firewall_id"];
    if (fwId !== undefined) {
      const fw = this.store.firewalls.get(Number(fwId));
      if (fw === undefined || fw.account !== c.account) throw bad("Firewall not found", "firewall_id");
    }
    const type = c.body["type"] ?? "common";
    if (type !== "common" && type !== "premium" && type !== "premium_40gb")
      throw bad("Must be common, premium or premium_40gb", "type");
    const reserved = c.body["ipv4"];
    if (reserved !== undefined) {
      const r = this.store.reservedIPs.get(String(reserved));
      if (r === undefined || r.account !== c.account || r.region !== region)
        throw bad("Must be a reserved IPv4 address of yours in this region", "ipv4");
      if (this.store.nodeBalancersOf(c.account).some((n) => n.ipv4 === reserved))
        throw bad("This reserved IPv4 address is already assigned", "ipv4");
    }
    const backendSubnets = Array.isArray(c.body["backend_vpcs"])
      ? (c.body["backend_vpcs"] as { subnet_id?: unknown }[]).map((b) => Number(b.subnet_id))
      : [];
    for (const id of backendSubnets)
      if (
        !this.store.vpcsOf(c.account).some((v) => v.region === region && v.subnets.some((x) => x.id === id))
      )
        throw bad("Subnet not found in this region", "backend_vpcs");
    const nb = this.newNodeBalancer(
      c.account,
      label,
      region,
      c.body["tags"] === undefined ? [] : tagList(c.body["tags"]),
      typeof c.body["client_conn_throttle"] === "number" ? c.body["client_conn_throttle"] : 0,
      type,
      typeof reserved === "string" ? reserved : undefined,
      backendSubnets,
      this.frontendOf(c, region),
    );
    const configs = Array.isArray(c.body["configs"]) ? (c.body["configs"] as Json[]) : [];
    try {
      for (const cfg of configs) nb.configs.push(this.newConfig(nb.id, cfg));
    } catch (err) {
      this.store.nodeBalancers.delete(nb.id);
      throw err;
    }
    if (fwId !== undefined)
      this.store.firewalls.get(Number(fwId))?.devices.push(this.device("nodebalancer", nb.id));
    return { body: wireNodeBalancer(nb) };
  }

  private frontendOf(c: Call, region: string): { subnetId: number; base: string } | undefined {
    const f = c.body["frontend_vpcs"];
    if (!Array.isArray(f) || f.length === 0) return undefined;
    const subnetId = Number((f[0] as { subnet_id?: unknown }).subnet_id);
    const vpc = this.store
      .vpcsOf(c.account)
      .find((v) => v.region === region && v.subnets.some((x) => x.id === subnetId));
    const subnet = vpc?.subnets.find((x) => x.id === subnetId);
    if (subnet === undefined) throw bad("Subnet not found in this region", "frontend_vpcs");
    return { subnetId, base: subnet.ipv4.split("/")[0]!.split(".").slice(0, 3).join(".") };
  }

  private updateNb(c: Call) {
    const nb = this.nb(c);
    if (typeof c.body["label"] === "string") nb.label = c.body["label"];
    if (c.body["tags"] !== undefined) nb.tags = tagList(c.body["tags"]);
    if (typeof c.body["client_conn_throttle"] === "number")
      nb.clientConnThrottle = c.body["client_conn_throttle"];
    nb.updatedAtMs = c.nowMs;
    return { body: wireNodeBalancer(nb) };
  }

  private deleteNb(c: Call) {
    const nb = this.nb(c);
    this.store.nodeBalancers.delete(nb.id);
    for (const fw of this.store.firewallsOf(c.account)) {
      const i = fw.devices.findIndex((d) => d.type === "nodebalancer" && d.entityId === nb.id);
      if (i >= 0) fw.devices.splice(i, 1);
    }
    return { body: {} };
  }

  private createConfig(c: Call) {
    const nb = this.nb(c);
    const port = c.body["port"] ?? 80;
    if (nb.configs.some((x) => x.port === port))
      throw bad("Port is already in use by another config", "port");
    const cfg = this.newConfig(nb.id, c.body);
    nb.configs.push(cfg);
    return { body: wireNbConfig(cfg) };
  }

  private rebuild(c: Call) {
    const nb = this.nb(c);
    const cfg = this.config(c);
    const port = c.body["port"];
    if (typeof port === "number" && port !== cfg.port && nb.configs.some((x) => x.port === port))
      throw bad("Port is already in use by another config", "port");
    const next = { ...cfg };
    applyConfig(next, c.body);
    const nodes = this.nodesOf(next, c.body["nodes"], cfg.nodes);
    Object.assign(cfg, next, { nodes });
    return { body: wireNbConfig(cfg) };
  }

  private fw(c: Call): FakeFirewall {
    const fw = this.store.firewalls.get(Number(c.params[0]));
    if (fw === undefined || fw.account !== c.account) throw notFound();
    return fw;
  }

  private device(type: "linode" | "nodebalancer", entityId: number) {
    return { id: this.store.nextId(), type, entityId };
  }

  private deviceLabel(d: { type: string; entityId: number }): string {
    return d.type === "linode"
      ? (this.store.linodes.get(d.entityId)?.label ?? "gone")
      : (this.store.nodeBalancers.get(d.entityId)?.label ?? "gone");
  }

  private createFw(c: Call) {
    const label = c.body["label"];
    if (typeof label !== "string" || !/^[a-zA-Z]((?!--|__|\.\.)[a-zA-Z0-9-_.]){2,31}$/.test(label))
      throw bad("Label must be 3-32 characters, start with a letter", "label");
    if (this.store.firewallsOf(c.account).some((f) => f.label === label))
      throw bad("Label must be unique among your Firewalls", "label");
    const devices = (c.body["devices"] ?? {}) as { nodebalancers?: unknown; linodes?: unknown };
    const nbs = Array.isArray(devices.nodebalancers) ? devices.nodebalancers.map(Number) : [];
    for (const id of nbs) {
      const nb = this.store.nodeBalancers.get(id);
      if (nb === undefined || nb.account !== c.account)
        throw bad("NodeBalancer not found", "devices.nodebalancers");
      if (this.store.firewallsOfDevice(c.account, "nodebalancer", id).length > 0)
        throw bad("NodeBalancer already has a Firewall", "devices.nodebalancers");
    }
    const fw = this.createFirewall(
      c.account,
      label,
      parseRules(c.body["rules"]),
      c.body["tags"] === undefined ? [] : tagList(c.body["tags"]),
    );
    for (const id of nbs) fw.devices.push(this.device("nodebalancer", id));
    return { body: wireFirewall(fw) };
  }

  private addDevice(c: Call) {
    const fw = this.fw(c);
    const type = c.body["type"];
    const id = Number(c.body["id"]);
    if (type !== "nodebalancer" && type !== "linode") throw bad("Must be linode or nodebalancer", "type");
    const exists = type === "linode" ? this.store.linodes.get(id) : this.store.nodeBalancers.get(id);
    if (exists === undefined || exists.account !== c.account) throw bad("Device not found", "id");
    if (fw.devices.some((d) => d.type === type && d.entityId === id))
      throw bad("Device already attached", "id");
    if (type === "nodebalancer" && this.store.firewallsOfDevice(c.account, "nodebalancer", id).length > 0)
      throw bad("NodeBalancer already has a Firewall", "id");
    const d = this.device(type, id);
    fw.devices.push(d);
    return { body: wireFirewallDevice(fw, d, this.deviceLabel(d)) };
  }

  private vpc(c: Call): FakeVpc {
    const v = this.store.vpcs.get(Number(c.params[0]));
    if (v === undefined || v.account !== c.account) throw notFound();
    return v;
  }

  private vpcOfSubnet(account: string, subnetId: number): FakeVpc {
    const v = this.store.vpcsOf(account).find((x) => x.subnets.some((s) => s.id === subnetId));
    if (v === undefined) throw new Error(`no subnet ${subnetId} in account ${account}`);
    return v;
  }

  private subnetLinodes(subnetId: number): { id: number; iface: number }[] {
    const out: { id: number; iface: number }[] = [];
    for (const l of this.store.linodes.values())
      for (const i of l.interfaces) if (i.subnetId === subnetId) out.push({ id: l.id, iface: i.id });
    return out;
  }

  /** GET /vpcs/{id}/ips: each interface's address, then one entry per routed range. */
  private vpcIps(v: FakeVpc): Json[] {
    const out: Json[] = [];
    for (const l of this.store.linodes.values()) {
      for (const i of l.interfaces) {
        if (i.vpcId !== v.id) continue;
        const base = {
          active: true,
          config_id: l.configId,
          gateway: null,
          interface_id: i.id,
          linode_id: l.id,
          nat_1_1: l.publicIPv4,
          region: l.region,
          subnet_id: i.subnetId,
          subnet_mask: "255.255.255.0",
          vpc_id: v.id,
        };
        out.push({ ...base, address: i.vpcIPv4, address_range: null, prefix: 24 });
        for (const range of i.ipRanges)
          out.push({ ...base, address: null, address_range: range, prefix: null });
      }
    }
    return out;
  }
}

/** Tags as Linode takes them: strings of 3 to 50 characters (POST /tags' label). */
function tagList(v: unknown): string[] {
  const tags = stringList(v, "tags");
  for (const t of tags)
    if (t.length < 3 || t.length > 50) throw bad("Length must be 3-50 characters", "tags");
  return tags;
}

function stringList(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string"))
    throw bad("Must be a list of strings", field);
  return v as string[];
}

function parseRules(raw: unknown): FirewallRules {
  const r = (typeof raw === "object" && raw !== null ? raw : {}) as Json;
  const list = (v: unknown) => (Array.isArray(v) ? (v as FirewallRules["inbound"]) : []);
  // The spec: "A Firewall may have up to 25 rules across its inbound and outbound rulesets."
  if (list(r["inbound"]).length + list(r["outbound"]).length > 25)
    throw bad("A Firewall holds at most 25 rules, inbound and outbound together", "rules.inbound");
  for (const way of ["inbound", "outbound"] as const)
    for (const [i, rule] of list(r[way]).entries()) checkRulePorts(rule, `rules.${way}[${i}].ports`);
  return {
    inbound: list(r["inbound"]),
    inbound_policy: r["inbound_policy"] === "DROP" ? "DROP" : "ACCEPT",
    outbound: list(r["outbound"]),
    outbound_policy: r["outbound_policy"] === "DROP" ? "DROP" : "ACCEPT",
  };
}

/**
 * A rule's ports as the spec describes them: a port (1-65535, no leading zero), a range (its end
 * above its start) or a comma-separated list of those (a space allowed after each comma), at
 * most 15 pieces (a port is one, a range two); only for TCP and UDP.
 */
function checkRulePorts(rule: FirewallRules["inbound"][number], field: string): void {
  const ports = (rule as { ports?: unknown }).ports;
  if (ports === undefined || ports === null || ports === "") return;
  if (rule.protocol !== "TCP" && rule.protocol !== "UDP")
    throw bad("Ports are only allowed for the TCP and UDP protocols", field);
  const port = (p: string) => (/^[1-9]\d{0,4}$/.test(p) && Number(p) <= 65535 ? Number(p) : undefined);
  let pieces = 0;
  for (const item of String(ports).split(/, ?/)) {
    const [from, to, ...rest] = item.split("-");
    const a = port(from ?? "");
    const b = to === undefined ? undefined : port(to);
    if (a === undefined || rest.length > 0 || (to !== undefined && (b === undefined || b <= a)))
      throw bad(`Invalid port or port range: ${item}`, field);
    pieces += to === undefined ? 1 : 2;
  }
  if (pieces > 15) throw bad("A rule's ports may have at most 15 pieces (a range counts two)", field);
}

function applyConfig(cfg: FakeNbConfig, b: Json): void {
  const str = <K extends keyof FakeNbConfig>(key: string, prop: K) => {
    if (b[key] !== undefined) (cfg as unknown as Record<string, unknown>)[prop] = b[key];
  };
  str("port", "port");
  str("protocol", "protocol");
  str("algorithm", "algorithm");
  str("stickiness", "stickiness");
  str("check", "check");
  str("check_interval", "checkInterval");
  str("check_timeout", "checkTimeout");
  str("check_attempts", "checkAttempts");
  str("check_path", "checkPath");
  str("check_body", "checkBody");
  str("check_passive", "checkPassive");
  str("proxy_protocol", "proxyProtocol");
  str("cipher_suite", "cipherSuite");
  str("udp_check_port", "udpCheckPort");
  if (cfg.protocol === "udp" && cfg.proxyProtocol !== "none")
    throw bad("UDP configs take no proxy protocol", "proxy_protocol");
  // "<REDACTED>" sent back is not a certificate: the API keeps what it holds.
  const cert =
    typeof b["ssl_cert"] === "string" && b["ssl_cert"] !== "<REDACTED>" ? b["ssl_cert"] : cfg.sslCert;
  const key = typeof b["ssl_key"] === "string" && b["ssl_key"] !== "<REDACTED>" ? b["ssl_key"] : cfg.sslKey;
  if (cert !== cfg.sslCert || key !== cfg.sslKey) {
    // As Linode: the certificate must parse, and the key must be its key.
    let x509: X509Certificate | undefined;
    if (cert !== null)
      try {
        x509 = new X509Certificate(cert);
      } catch {
        throw bad("Invalid SSL certificate", "ssl_cert");
      }
    if (key !== null) {
      let k: KeyObject;
      try {
        k = createPrivateKey(key);
      } catch {
        throw bad("Invalid SSL key", "ssl_key");
      }
      if (x509 !== undefined && !x509.checkPrivateKey(k))
        throw bad("SSL key does not match the certificate", "ssl_key");
    }
    cfg.sslCert = cert;
    cfg.sslKey = key;
    cfg.sslFingerprint = x509?.fingerprint ?? "";
    cfg.sslCommonName = /(?:^|\n)CN=([^\n]*)/.exec(x509?.subject ?? "")?.[1] ?? "";
  }
  if (cfg.protocol === "https" && (cfg.sslCert === null || cfg.sslKey === null))
    throw bad("SSL certificate and key are required for https", "ssl_cert");
  if (cfg.checkTimeout >= cfg.checkInterval && cfg.check !== "none")
    throw bad("check_timeout must be less than check_interval", "check_timeout");
  if (cfg.check === "http_body" && cfg.checkBody === "") throw bad("check_body is required", "check_body");
}

// ---- X-Filter -------------------------------------------------------------------------------

/** A list handler whose listing carries the call's X-Filter, parsed (and refused) before the handler runs. */
function filtered(handle: Handler, fields: readonly string[]): Handler {
  return (c) => {
    const filter = parseFilter(c.headers, fields);
    const out = handle(c);
    return "list" in out ? { ...out, filter } : out;
  };
}

function parseFilter(headers: IncomingHttpHeaders, fields: readonly string[]): unknown {
  const raw = headers["x-filter"];
  if (raw === undefined) return undefined;
  let f: unknown;
  try {
    f = JSON.parse(Array.isArray(raw) ? (raw[0] ?? "") : raw);
  } catch {
    throw bad("Invalid JSON in X-Filter header", "X-Filter");
  }
  checkFilter(f, fields);
  return f;
}

function checkFilter(f: unknown, fields: readonly string[]): void {
  if (typeof f !== "object" || f === null || Array.isArray(f))
    throw bad("Filter must be an object", "X-Filter");
  for (const [k, v] of Object.entries(f)) {
    if (k === "+and" || k === "+or") {
      if (!Array.isArray(v)) throw bad(`${k} must be a list`, "X-Filter");
      for (const x of v) checkFilter(x, fields);
    } else if (k === "+order_by" || k === "+order") {
      // Sorting: ignored (lists are in id order).
    } else if (!fields.includes(k)) {
      throw bad(`Cannot filter on ${k}`, "X-Filter");
    }
  }
}

function matchFilter(item: Json, f: unknown): boolean {
  if (f === undefined) return true;
  for (const [k, v] of Object.entries(f as Json)) {
    if (k === "+and") {
      if (!(v as unknown[]).every((x) => matchFilter(item, x))) return false;
    } else if (k === "+or") {
      if (!(v as unknown[]).some((x) => matchFilter(item, x))) return false;
    } else if (k.startsWith("+")) {
      // +order_by, +order: no effect on membership
    } else if (!matchValue(item[k], v)) return false;
  }
  return true;
}

function matchValue(have: unknown, want: unknown): boolean {
  if (typeof want === "object" && want !== null) {
    const op = want as Json;
    if (op["+contains"] !== undefined)
      return Array.isArray(have)
        ? have.some((h) => String(h).includes(String(op["+contains"])))
        : String(have ?? "").includes(String(op["+contains"]));
    if (op["+neq"] !== undefined) return have !== op["+neq"];
    return false;
  }
  // Lists (tags, ipv4) match when they hold the value.
  if (Array.isArray(have)) return have.includes(want);
  if (typeof have === "string" && typeof want === "string" && have.includes("/") && !want.includes("/"))
    return have.split("/")[0] === want;
  return have === want;
}
