import type { IncomingMessage, ServerResponse } from "node:http";
import { FaultInjector, type FaultsView, validateFaults } from "../fake-kit/faults.js";
import { FakeHttpServer, sendJson } from "../fake-kit/http.js";
import { type RandomSource, seededRandom } from "../fake-kit/random.js";
import { type LoggedRequest, type RequestFilter, RequestLog } from "../fake-kit/request-log.js";
import { handleAdmin } from "./admin.js";
import { type ApiDeps, handleApi } from "./api.js";
import { DiskStore, type SimDisk, type SimDiskSpec } from "./disks.js";
import { LbStore } from "./lb-store.js";
import { RouteStore } from "./route-store.js";
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
  SimLbAsyncSettings,
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

export type { FaultsView };

/** The one implementation of SimulatedCloud; the admin API drives it through these methods. */
export class SimulatedCloudServer implements SimulatedCloud {
  private readonly random: RandomSource;
  private readonly now: () => number;
  private readonly store: CloudStore;
  private readonly lbs: LbStore;
  private readonly routeStore: RouteStore;
  private readonly diskStore: DiskStore;
  /** Creation order shared by the load balancer and route tables (page tokens). */
  private resourceSeq = 0;
  private readonly log: RequestLog;
  private readonly injector: FaultInjector;
  private readonly server: FakeHttpServer;
  private requestSeq = 0;

  constructor(opts: SimulatedCloudOptions) {
    this.random = seededRandom(opts.seed ?? 1);
    this.now = opts.now ?? Date.now;
    this.log = new RequestLog(this.now);
    this.injector = new FaultInjector(this.random);
    this.store = new CloudStore(
      this.random,
      this.now,
      opts.terminatedLingerMs ?? 0,
      opts.regions ?? DEFAULT_REGIONS,
    );
    const nextSeq = (): number => ++this.resourceSeq;
    this.lbs = new LbStore(this.store, this.random, this.now, nextSeq);
    this.routeStore = new RouteStore(this.store, this.random, this.now, nextSeq);
    this.diskStore = new DiskStore(this.store, this.random, this.now);
    let deps: ApiDeps | undefined;
    this.server = new FakeHttpServer(
      (req, res) => this.dispatch(req, res, deps!),
      (err, res) => {
        const message = err instanceof Error ? err.message : String(err);
        sendJson(res, 500, { error: { code: "InternalError", message, request_id: "-" } });
      },
    );
    deps = {
      store: this.store,
      lbs: this.lbs,
      routes: this.routeStore,
      disks: this.diskStore,
      log: this.log,
      faults: this.injector,
      now: this.now,
      inFlight: this.server.inFlight,
      nextRequestId: () => this.nextRequestId(),
    };
  }

  get url(): string {
    return this.server.url;
  }

  listen(port: number, host: string): Promise<void> {
    return this.server.listen(port, host);
  }

  nextRequestId(): string {
    return `req-${(++this.requestSeq).toString(36)}`;
  }

  private dispatch(req: IncomingMessage, res: ServerResponse, deps: ApiDeps): Promise<void> | undefined {
    const url = new URL(req.url ?? "/", "http://sim.invalid");
    if (url.pathname === "/healthz") {
      sendJson(res, 200, { status: "ok" });
      return undefined;
    }
    return url.pathname.startsWith("/admin/")
      ? handleAdmin(req, res, url, this)
      : handleApi(req, res, url, deps);
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

  createDisk(account: string, spec: SimDiskSpec): SimDisk {
    return this.diskStore.create(account, spec);
  }

  deleteDisk(id: string): void {
    this.diskStore.delete(id);
  }

  disks(account?: string): SimDisk[] {
    return this.diskStore.list(account);
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

  setLoadBalancerAsync(account: string, settings: Partial<SimLbAsyncSettings>): void {
    this.lbs.setAsync(account, settings);
  }

  loadBalancerAsync(account: string): SimLbAsyncSettings {
    return this.lbs.asyncSettings(account);
  }

  failNextLoadBalancerCreates(account: string, count: number): void {
    this.lbs.failNextCreates(account, count);
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
    if (account !== undefined) this.store.account(account); // 404 for an unknown account
    this.injector.set(checked, account);
  }

  resetFaults(account?: string): void {
    this.injector.reset(account);
  }

  faults(account?: string): CloudFaultConfig {
    return this.injector.config(account);
  }

  faultsView(): FaultsView {
    return this.injector.view();
  }

  stats(): CloudStats {
    return this.log.stats();
  }

  requests(filter?: RequestFilter): LoggedRequest[] {
    return this.log.requests(filter);
  }

  resetStats(): void {
    this.log.reset();
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
