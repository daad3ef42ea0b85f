import type { ConsistencyView } from "../fake-kit/consistency.js";
import { FakeError } from "../fake-kit/errors.js";
import type { RandomSource } from "../fake-kit/random.js";
import { defaultBurst, TokenBucket } from "../fake-kit/rate-limit.js";
import { freshId, ResourceTable } from "../fake-kit/table.js";
import {
  SIM_ADDRESS_TYPES,
  SIM_INSTANCE_STATES,
  type SimAccountDetail,
  type SimAccountInfo,
  type SimAccountOptions,
  type SimAddress,
  type SimInstance,
  type SimInstanceSpec,
  type SimInstanceState,
  type SimInstanceUpdate,
  type SimLbAsyncSettings,
} from "./types.js";

/** A refusal with the HTTP status and error code the API answers it with. */
export class SimCloudError extends FakeError {
  override name = "SimCloudError";
  constructor(
    status: number,
    code: string,
    message: string,
    /** For NotFound: what was looked up (the API sends it as `error.resource`). */
    readonly resource?: { readonly type: string; readonly id: string },
  ) {
    super(status, code, message, resource === undefined ? {} : { resource });
  }
}

export interface AccountRecord {
  readonly name: string;
  readonly apiKey: string;
  readonly defaultNetwork: string;
  suspended: boolean;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  readonly bucket: TokenBucket;
  /** Load-balancer timing (LbStore reads it; SimulatedCloud.setLoadBalancerAsync). */
  lbAsync: SimLbAsyncSettings;
  /** API load-balancer creates still to end in ERROR. */
  failNextLbCreates: number;
}

/** Synchronous load balancers: ACTIVE at create, gone at delete. */
export const SYNC_LB: SimLbAsyncSettings = Object.freeze({ polls: 0, pollMs: 1000, failRate: 0 });

/** How an API read sees the store: staleness from faults, linger from the options. */
export type ReadView = ConsistencyView;

export interface ListQuery {
  readonly account: string;
  readonly region: string;
  readonly name?: string;
  /** Exclusive: items created after this seq. */
  readonly afterSeq?: number;
  readonly pageSize: number;
}

export interface ListResult {
  readonly instances: SimInstance[];
  /** Seq of the last item scanned when more remain. */
  readonly nextAfterSeq?: number;
}

export const DEFAULT_REGIONS: readonly string[] = ["sim-east-1", "sim-west-1", "sim-central-1"];

const REGION_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
const MAX_NAME_LENGTH = 253;
/** Usable host numbers per /24 (x.y.z.1 to x.y.z.254). */
const HOSTS_PER_24 = 254;

/** Accounts, regions and instances, with the indexes the API needs to stay cheap at 30k instances. */
export class CloudStore {
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly accountsByKey = new Map<string, AccountRecord>();
  private readonly regions = new Set<string>();
  /** Scoped by account and region, indexed by name; terminated instances stay (they linger). */
  private readonly instances: ResourceTable<SimInstance>;
  /** `${account}\0${region}` → networks its instances use, in first-use order. */
  private readonly networksByScope = new Map<string, Set<string>>();
  private seq = 0;
  private addressIndex = 0;

  constructor(
    private readonly random: RandomSource,
    private readonly now: () => number,
    private readonly terminatedLingerMs: number,
    regions: readonly string[],
  ) {
    this.instances = new ResourceTable<SimInstance>(
      () => ++this.seq,
      (i) => scopeKey(i.account, i.region),
      { name: (i) => nameKey(i.account, i.region, i.name) },
    );
    for (const r of regions) this.addRegion(r);
  }

  // --- accounts ---------------------------------------------------------

  createAccount(name: string, opts: SimAccountOptions = {}): SimAccountInfo {
    if (typeof name !== "string" || name === "" || name.length > 128) {
      throw new SimCloudError(400, "InvalidParameter", "account name must be 1 to 128 characters");
    }
    if (this.accounts.has(name)) throw new SimCloudError(409, "Conflict", `account "${name}" exists`);
    const apiKey = opts.apiKey ?? `sk-sim-${this.random.hex(32)}`;
    if (typeof apiKey !== "string" || apiKey === "") {
      throw new SimCloudError(400, "InvalidParameter", "apiKey must be a non-empty string");
    }
    if (this.accountsByKey.has(apiKey)) {
      throw new SimCloudError(409, "Conflict", "apiKey is already used by another account");
    }
    const rate = checkRate(opts.rateLimitPerSecond ?? 0);
    const burst = checkBurst(opts.rateLimitBurst ?? defaultBurst(rate));
    const record: AccountRecord = {
      name,
      apiKey,
      defaultNetwork: `vpc-${this.random.hex(8)}`,
      suspended: false,
      rateLimitPerSecond: rate,
      rateLimitBurst: burst,
      bucket: new TokenBucket(rate, burst, this.now()),
      lbAsync: SYNC_LB,
      failNextLbCreates: 0,
    };
    this.accounts.set(name, record);
    this.accountsByKey.set(apiKey, record);
    return accountInfo(record);
  }

  account(name: string): AccountRecord {
    const record = this.accounts.get(name);
    if (record === undefined) throw new SimCloudError(404, "NotFound", `account "${name}" not found`);
    return record;
  }

  accountByKey(apiKey: string): AccountRecord | undefined {
    return this.accountsByKey.get(apiKey);
  }

  accountList(): SimAccountDetail[] {
    return [...this.accounts.values()].map(accountDetail);
  }

  accountDetail(name: string): SimAccountDetail {
    return accountDetail(this.account(name));
  }

  setRateLimit(name: string, ratePerSecond: number, burst?: number): void {
    const record = this.account(name);
    const rate = checkRate(ratePerSecond);
    const b = checkBurst(burst ?? defaultBurst(rate));
    record.rateLimitPerSecond = rate;
    record.rateLimitBurst = b;
    record.bucket.configure(rate, b, this.now());
  }

  setSuspended(name: string, suspended: boolean): void {
    this.account(name).suspended = suspended;
  }

  // --- regions ----------------------------------------------------------

  addRegion(region: string): void {
    if (typeof region !== "string" || !REGION_PATTERN.test(region)) {
      throw new SimCloudError(400, "InvalidParameter", `invalid region name "${String(region)}"`);
    }
    this.regions.add(region);
  }

  hasRegion(region: string): boolean {
    return this.regions.has(region);
  }

  regionList(): string[] {
    return [...this.regions].sort();
  }

  // --- instances: admin side (the truth) --------------------------------

  createInstance(accountName: string, spec: SimInstanceSpec): SimInstance {
    const account = this.account(accountName);
    checkSpec(spec);
    if (!this.regions.has(spec.region)) this.addRegion(spec.region);
    const id = freshId(this.instances, () => `i-${this.random.hex(12)}`);
    const nowMs = this.now();
    const instance: SimInstance = freezeInstance({
      id,
      account: account.name,
      name: spec.name,
      region: spec.region,
      zone: spec.zone ?? `${spec.region}a`,
      instanceType: spec.instanceType ?? "sim.small",
      state: spec.state ?? "running",
      addresses: spec.addresses ?? this.allocateAddresses(spec, id),
      network: spec.network ?? account.defaultNetwork,
      tags: { ...spec.tags },
      createdAt: new Date(nowMs).toISOString(),
    });
    this.instances.insert(instance, nowMs);
    const scope = scopeKey(account.name, spec.region);
    const networks = this.networksByScope.get(scope);
    if (networks === undefined) this.networksByScope.set(scope, new Set([instance.network]));
    else networks.add(instance.network);
    return instance;
  }

  updateInstance(id: string, update: SimInstanceUpdate): SimInstance {
    const current = this.instances.get(id);
    if (current === undefined) throw new SimCloudError(404, "NotFound", `instance ${id} not found`);
    checkUpdate(update);
    if (current.state === "terminated") {
      throw new SimCloudError(409, "Conflict", `instance ${id} is terminated`);
    }
    const nowMs = this.now();
    const next = freezeInstance({
      ...current,
      ...(update.state !== undefined && { state: update.state }),
      ...(update.tags !== undefined && { tags: { ...update.tags } }),
      ...(update.instanceType !== undefined && { instanceType: update.instanceType }),
      ...(update.addresses !== undefined && { addresses: update.addresses }),
    });
    return this.instances.replace(next, nowMs);
  }

  get(id: string): SimInstance | undefined {
    return this.instances.get(id);
  }

  list(account?: string): SimInstance[] {
    return this.instances.all(account);
  }

  /** The account's networks in `region`: its default network first, then those its instances use. */
  networksIn(accountName: string, region: string): string[] {
    const account = this.account(accountName);
    const used = this.networksByScope.get(scopeKey(account.name, region)) ?? new Set<string>();
    return [account.defaultNetwork, ...[...used].filter((n) => n !== account.defaultNetwork)];
  }

  // --- instances: API side (what a client sees) -------------------------

  /** The instance as the API sees it, or undefined (404). */
  read(account: string, region: string, id: string, view: ReadView): SimInstance | undefined {
    const truth = this.instances.get(id);
    if (truth === undefined || truth.account !== account || truth.region !== region) return undefined;
    const seen = this.instances.read(id, view);
    return seen !== undefined && this.lingering(seen, this.instances.changedAtMs(id) ?? 0, view)
      ? seen
      : undefined;
  }

  /** Lists lag like reads: a new instance is absent for `staleReadMs`. */
  page(query: ListQuery, readView: ReadView): ListResult {
    const view: ReadView = { ...readView, listStaleMs: readView.staleReadMs };
    const keep = (i: SimInstance, changedAtMs: number): boolean => this.lingering(i, changedAtMs, view);
    const page =
      query.name === undefined
        ? this.instances.page(
            scopeKey(query.account, query.region),
            keep,
            query.pageSize,
            query.afterSeq,
            view,
          )
        : this.instances.pageIndex(
            "name",
            nameKey(query.account, query.region, query.name),
            keep,
            query.pageSize,
            query.afterSeq,
            view,
          );
    return page.nextAfterSeq === undefined
      ? { instances: page.items }
      : { instances: page.items, nextAfterSeq: page.nextAfterSeq };
  }

  /**
   * False for a terminated instance past the linger time. A terminated instance never
   * changes again, so its last change is its termination.
   */
  private lingering(version: SimInstance, changedAtMs: number, view: ReadView): boolean {
    return version.state !== "terminated" || view.nowMs - changedAtMs < this.terminatedLingerMs;
  }

  /** InternalIP in 10.0.0.0/8, ExternalIP in 100.64.0.0/10, both unique per instance. */
  private allocateAddresses(spec: SimInstanceSpec, id: string): SimAddress[] {
    const k = this.addressIndex++;
    const host = (k % HOSTS_PER_24) + 1;
    const net24 = Math.floor(k / HOSTS_PER_24);
    if (net24 >= 64 * 256) throw new SimCloudError(507, "AddressSpaceExhausted", "no addresses left");
    const internal = `10.${Math.floor(net24 / 256)}.${net24 % 256}.${host}`;
    const addresses: SimAddress[] = [{ type: "InternalIP", address: internal }];
    if (spec.externalIP !== false) {
      addresses.push({
        type: "ExternalIP",
        address: `100.${64 + Math.floor(net24 / 256)}.${net24 % 256}.${host}`,
      });
    }
    addresses.push({ type: "Hostname", address: spec.name });
    addresses.push({ type: "InternalDNS", address: `${id}.${spec.region}.compute.sim.internal` });
    return addresses;
  }
}

function accountInfo(r: AccountRecord): SimAccountInfo {
  return { name: r.name, apiKey: r.apiKey, defaultNetwork: r.defaultNetwork };
}

function accountDetail(r: AccountRecord): SimAccountDetail {
  return {
    ...accountInfo(r),
    rateLimitPerSecond: r.rateLimitPerSecond,
    rateLimitBurst: r.rateLimitBurst,
    suspended: r.suspended,
    loadBalancerAsync: r.lbAsync,
    failNextLoadBalancerCreates: r.failNextLbCreates,
  };
}

function scopeKey(account: string, region: string): string {
  return `${account}\u0000${region}`;
}

function nameKey(account: string, region: string, name: string): string {
  return `${account}\u0000${region}\u0000${name}`;
}

function freezeInstance(i: SimInstance): SimInstance {
  return Object.freeze({
    ...i,
    addresses: Object.freeze(i.addresses.map((a) => Object.freeze({ ...a }))),
    tags: Object.freeze({ ...i.tags }),
  });
}

function checkRate(rate: unknown): number {
  if (typeof rate !== "number" || !Number.isFinite(rate) || rate < 0) {
    throw new SimCloudError(400, "InvalidParameter", "rateLimitPerSecond must be a finite number >= 0");
  }
  return rate;
}

function checkBurst(burst: unknown): number {
  if (typeof burst !== "number" || !Number.isFinite(burst) || burst < 1) {
    throw new SimCloudError(400, "InvalidParameter", "rateLimitBurst must be a finite number >= 1");
  }
  return burst;
}

function checkSpec(spec: SimInstanceSpec): void {
  if (typeof spec !== "object" || spec === null) {
    throw new SimCloudError(400, "InvalidParameter", "instance spec must be an object");
  }
  if (typeof spec.name !== "string" || spec.name === "" || spec.name.length > MAX_NAME_LENGTH) {
    throw new SimCloudError(400, "InvalidParameter", `name must be 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (typeof spec.region !== "string") throw new SimCloudError(400, "InvalidParameter", "region is required");
  checkOptionalString(spec.zone, "zone");
  checkOptionalString(spec.instanceType, "instanceType");
  checkOptionalString(spec.network, "network");
  if (spec.state !== undefined) checkState(spec.state);
  if (spec.tags !== undefined) checkTags(spec.tags);
  if (spec.addresses !== undefined) checkAddresses(spec.addresses);
  if (spec.externalIP !== undefined && typeof spec.externalIP !== "boolean") {
    throw new SimCloudError(400, "InvalidParameter", "externalIP must be a boolean");
  }
}

function checkUpdate(update: SimInstanceUpdate): void {
  if (typeof update !== "object" || update === null) {
    throw new SimCloudError(400, "InvalidParameter", "instance update must be an object");
  }
  if (update.state !== undefined) checkState(update.state);
  if (update.tags !== undefined) checkTags(update.tags);
  checkOptionalString(update.instanceType, "instanceType");
  if (update.addresses !== undefined) checkAddresses(update.addresses);
}

function checkOptionalString(value: unknown, field: string): void {
  if (value !== undefined && (typeof value !== "string" || value === "")) {
    throw new SimCloudError(400, "InvalidParameter", `${field} must be a non-empty string`);
  }
}

function checkState(state: unknown): asserts state is SimInstanceState {
  if (!(SIM_INSTANCE_STATES as readonly unknown[]).includes(state)) {
    throw new SimCloudError(
      400,
      "InvalidParameter",
      `state must be one of ${SIM_INSTANCE_STATES.join(", ")}`,
    );
  }
}

function checkTags(tags: unknown): void {
  if (typeof tags !== "object" || tags === null || Array.isArray(tags)) {
    throw new SimCloudError(400, "InvalidParameter", "tags must be an object of strings");
  }
  for (const v of Object.values(tags)) {
    if (typeof v !== "string") throw new SimCloudError(400, "InvalidParameter", "tag values must be strings");
  }
}

function checkAddresses(addresses: unknown): void {
  const ok =
    Array.isArray(addresses) &&
    addresses.every(
      (a: unknown) =>
        typeof a === "object" &&
        a !== null &&
        (SIM_ADDRESS_TYPES as readonly unknown[]).includes((a as { type?: unknown }).type) &&
        typeof (a as { address?: unknown }).address === "string",
    );
  if (!ok) throw new SimCloudError(400, "InvalidParameter", "addresses must be [{type, address}]");
}
