import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { handleAdmin } from "./admin.js";
import { type ApiDeps, handleApi } from "./api.js";
import { effectiveFaults, NO_FAULTS, validateFaults } from "./faults.js";
import { sendJson } from "./http.js";
import { LbStore } from "./lb-store.js";
import { type RandomSource, seededRandom } from "./random.js";
import { RouteStore } from "./route-store.js";
import { CallCounter } from "./stats.js";
import { CloudStore, DEFAULT_REGIONS } from "./store.js";
import type {
  CloudFaultConfig,
  CloudStats,
  SimAccountDetail,
  SimAccountInfo,
  SimAccountOptions,
  SimFirewallRule,
  SimFirewallRuleSpec,
  SimHealthCheck,
  SimHealthCheckSpec,
  SimInstance,
  SimInstanceSpec,
  SimInstanceState,
  SimInstanceUpdate,
  SimLbAudit,
  SimLbAuditFilter,
  SimLbInventory,
  SimListener,
  SimListenerSpec,
  SimLoadBalancer,
  SimLoadBalancerSpec,
  SimNetwork,
  SimPool,
  SimPoolSpec,
  SimRoute,
  SimRouteSpec,
  SimulatedCloud,
  SimulatedCloudOptions,
} from "./types.js";

/** Starts the simulated cloud on loopback; resolves once it listens. */
export async function startSimulatedCloud(opts: SimulatedCloudOptions = {}): Promise<SimulatedCloud> {
  const cloud = new SimulatedCloudServer(opts);
  await cloud.listen(opts.port ?? 0, opts.host ?? "127.0.0.1");
  return cloud;
}

export interface FaultsView {
  readonly global: CloudFaultConfig;
  readonly accounts: Record<string, Partial<CloudFaultConfig>>;
}

/** The one implementation of SimulatedCloud; the admin API drives it through these methods. */
export class SimulatedCloudServer implements SimulatedCloud {
  private readonly random: RandomSource;
  private readonly now: () => number;
  private readonly store: CloudStore;
  private readonly lbs: LbStore;
  private readonly routeStore: RouteStore;
  /** Creation order shared by the load balancer and route tables (page tokens). */
  private resourceSeq = 0;
  private readonly counter = new CallCounter();
  private globalFaults: CloudFaultConfig = NO_FAULTS;
  private readonly accountFaults = new Map<string, Partial<CloudFaultConfig>>();
  private readonly inFlight = new Set<AbortController>();
  private readonly server: Server;
  private requestSeq = 0;
  private baseUrl = "";

  constructor(opts: SimulatedCloudOptions) {
    this.random = seededRandom(opts.seed ?? 1);
    this.now = opts.now ?? Date.now;
    this.store = new CloudStore(
      this.random,
      this.now,
      opts.terminatedLingerMs ?? 0,
      opts.regions ?? DEFAULT_REGIONS,
    );
    const nextSeq = (): number => ++this.resourceSeq;
    this.lbs = new LbStore(this.store, this.random, this.now, nextSeq);
    this.routeStore = new RouteStore(this.store, this.random, this.now, nextSeq);
    const deps: ApiDeps = {
      store: this.store,
      lbs: this.lbs,
      routes: this.routeStore,
      counter: this.counter,
      random: this.random,
      now: this.now,
      faultsFor: (account) => this.faults(account),
      inFlight: this.inFlight,
      nextRequestId: () => this.nextRequestId(),
    };
    this.server = createServer({ keepAlive: true }, (req, res) => this.dispatch(req, res, deps));
    // Hanging calls are part of the job; the defaults would cut them at 5 min anyway.
    this.server.requestTimeout = 0;
  }

  get url(): string {
    return this.baseUrl;
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        const address = this.server.address() as AddressInfo;
        const printable = address.family === "IPv6" ? `[${address.address}]` : address.address;
        this.baseUrl = `http://${printable}:${address.port}`;
        resolve();
      });
    });
  }

  nextRequestId(): string {
    return `req-${(++this.requestSeq).toString(36)}`;
  }

  private dispatch(req: IncomingMessage, res: ServerResponse, deps: ApiDeps): void {
    const url = new URL(req.url ?? "/", "http://sim.invalid");
    if (url.pathname === "/healthz") {
      sendJson(res, 200, { status: "ok" });
      return;
    }
    const work = url.pathname.startsWith("/admin/")
      ? handleAdmin(req, res, url, this)
      : handleApi(req, res, url, deps);
    work.catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      sendJson(res, 500, { error: { code: "InternalError", message, request_id: "-" } });
    });
  }

  // --- accounts and regions ---------------------------------------------

  createAccount(name: string, opts?: SimAccountOptions): SimAccountInfo {
    return this.store.createAccount(name, opts);
  }

  accountList(): SimAccountDetail[] {
    return this.store.accountList();
  }

  accountDetail(name: string): SimAccountDetail {
    return this.store.accountDetail(name);
  }

  setAccountRateLimit(account: string, rateLimitPerSecond: number, burst?: number): void {
    this.store.setRateLimit(account, rateLimitPerSecond, burst);
  }

  setAccountSuspended(account: string, suspended: boolean): void {
    this.store.setSuspended(account, suspended);
  }

  addRegion(region: string): void {
    this.store.addRegion(region);
  }

  regionList(): string[] {
    return this.store.regionList();
  }

  // --- instances ----------------------------------------------------------

  createInstance(account: string, spec: SimInstanceSpec): SimInstance {
    return this.store.createInstance(account, spec);
  }

  updateInstance(id: string, update: SimInstanceUpdate): SimInstance {
    return this.store.updateInstance(id, update);
  }

  setInstanceState(id: string, state: SimInstanceState): void {
    this.store.updateInstance(id, { state });
  }

  terminateInstance(id: string): void {
    if (this.store.get(id)?.state === "terminated") return;
    this.store.updateInstance(id, { state: "terminated" });
  }

  getInstance(id: string): SimInstance | undefined {
    return this.store.get(id);
  }

  listInstances(account?: string): SimInstance[] {
    return this.store.list(account);
  }

  // --- load balancers ------------------------------------------------------

  createLoadBalancer(account: string, spec: SimLoadBalancerSpec): SimLoadBalancer {
    return this.lbs.createLoadBalancer(account, spec);
  }

  createListener(account: string, spec: SimListenerSpec): SimListener {
    return this.lbs.createListener(account, spec);
  }

  createPool(account: string, spec: SimPoolSpec): SimPool {
    return this.lbs.createPool(account, spec);
  }

  createHealthCheck(account: string, spec: SimHealthCheckSpec): SimHealthCheck {
    return this.lbs.createHealthCheck(account, spec);
  }

  createFirewallRule(account: string, spec: SimFirewallRuleSpec): SimFirewallRule {
    return this.lbs.createFirewallRule(account, spec);
  }

  deleteLbResource(id: string): void {
    this.lbs.delete(id);
  }

  loadBalancers(account?: string): SimLoadBalancer[] {
    return this.lbs.loadBalancers(account);
  }

  listeners(account?: string): SimListener[] {
    return this.lbs.listeners(account);
  }

  pools(account?: string): SimPool[] {
    return this.lbs.pools(account);
  }

  healthChecks(account?: string): SimHealthCheck[] {
    return this.lbs.healthChecks(account);
  }

  firewallRules(account?: string): SimFirewallRule[] {
    return this.lbs.firewallRules(account);
  }

  inventory(account?: string): SimLbInventory {
    return this.lbs.inventory(account);
  }

  auditLoadBalancers(filter?: SimLbAuditFilter): SimLbAudit {
    return this.lbs.audit(filter);
  }

  // --- networks and routes -------------------------------------------------

  networks(account: string, region: string): SimNetwork[] {
    return this.routeStore.networks(account, region);
  }

  createRoute(account: string, spec: SimRouteSpec): SimRoute {
    return this.routeStore.create(account, spec);
  }

  deleteRoute(id: string): void {
    this.routeStore.delete(id);
  }

  routes(network?: string): SimRoute[] {
    return this.routeStore.all(network);
  }

  // --- faults and stats ---------------------------------------------------

  setFaults(faults: Partial<CloudFaultConfig>, account?: string): void {
    const checked = validateFaults(faults);
    if (account === undefined) {
      this.globalFaults = Object.freeze({ ...this.globalFaults, ...checked });
      return;
    }
    this.store.account(account); // 404 for an unknown account
    this.accountFaults.set(account, Object.freeze({ ...this.accountFaults.get(account), ...checked }));
  }

  resetFaults(account?: string): void {
    if (account === undefined) {
      this.globalFaults = NO_FAULTS;
      this.accountFaults.clear();
    } else {
      this.accountFaults.delete(account);
    }
  }

  faults(account?: string): CloudFaultConfig {
    return effectiveFaults(
      this.globalFaults,
      account === undefined ? undefined : this.accountFaults.get(account),
    );
  }

  faultsView(): FaultsView {
    return { global: this.globalFaults, accounts: Object.fromEntries(this.accountFaults) };
  }

  stats(): CloudStats {
    return this.counter.snapshot();
  }

  resetStats(): void {
    this.counter.reset();
  }

  close(): Promise<void> {
    for (const call of this.inFlight) call.abort();
    this.inFlight.clear();
    return new Promise((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
