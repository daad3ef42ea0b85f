// The provider conformance suite: what every CloudProvider must do, run against the provider's
// vendor fake. Imported by tests only (the hub build excludes *.testkit.ts); it never imports a
// fake: the fixture that starts one lives in the provider's conformance.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { networkKey, parseNetwork } from "../../util/network.js";
import {
  DiskNotFoundError,
  InstanceNotFoundError,
  isRetryable,
  NeedsEnsureError,
  OperationFailedError,
  ThrottledError,
  TransientCloudError,
} from "../errors.js";
import { backendsDigest, loadBalancerSpecDigest } from "../naming.js";
import {
  type AccountBinding,
  type CloudProvider,
  type ClusterTarget,
  type InProgress,
  isInProgress,
  type LbIngress,
  type LbOwner,
  type LoadBalancerSpec,
  lbOwner,
  type ProviderFactory,
  type ServiceTarget,
} from "../provider.js";
import { bindRecorded } from "../recording-context.testkit.js";

/** One resource as the fake holds it, with the owner the fake's truth records (never the provider's answer). */
export interface FakeResource {
  /** The fake's kind, e.g. "load-balancer", "pool", "route". */
  readonly kind: string;
  readonly id: string;
  /** The load balancer owner whose resource this is, if any. */
  readonly lbOwner?: LbOwner;
  /** The cluster whose route this is, if any. */
  readonly routeOwner?: string;
  /** Routes: the destination. */
  readonly destinationCIDR?: string;
}

/** A disk in the fake, as a PersistentVolume names it. */
export interface FakeDisk {
  readonly id: string;
  /** The PV's source ("csi" or an in-tree source), CSI driver, and handle for this disk. */
  readonly source: string;
  readonly csiDriver: string;
  readonly handle: string;
}

export interface FakeInstance {
  readonly instanceID: string;
  readonly providerID: string;
}

/** A started vendor fake with one account bound for the provider under test. */
export interface ConformanceFake {
  readonly factory: ProviderFactory;
  /** The account binding for the fake (endpoint, credentials). */
  account(): AccountBinding;
  /** The account's raw options (accounts[].options), parsed by the provider's schema. */
  readonly options?: unknown;
  /** Whether a CloudCallWrapper `op` changes the cloud (the crash loop counts these). */
  isMutation(op: string): boolean;
  /** An instance in the fake; `inScope: false` puts it where the bound account must not see it (another region). */
  createInstance(spec: { readonly name: string; readonly inScope: boolean }): FakeInstance;
  terminateInstance(instanceID: string): void;
  /** A well-formed providerID of this provider for an instance that does not exist. */
  missingProviderID(): string;
  /** The provider's instance page size (the suite creates more than two pages). */
  readonly instancePageSize: number;
  /** Every call of the bound account throttled, with Retry-After in seconds. */
  throttle(retryAfterSeconds: number): void;
  /** Every call of the bound account answered with a 5xx. */
  failWithServerErrors(): void;
  clearFaults(): void;
  /** Everything load-balancer and route related that exists in the fake's account. */
  resources(): readonly FakeResource[];
  /**
   * Read calls one listOwned page may take (default 1): more where the vendor lists load
   * balancers and their tags apart (AWS: DescribeLoadBalancers, then DescribeTags by 20).
   */
  readonly listOwnedReadsPerPage?: number;
  /** Load-balancer resources nobody of this hub owns (made by another client). */
  createForeignLoadBalancer?(): void;
  /** A route made by another client to `targetInstanceID` (it must be listed, never owned, never touched). */
  createForeignRoute?(destinationCIDR: string, targetInstanceID: string): void;
  /**
   * The node ports the owner's load balancer sends traffic to on its backends, sorted and
   * deduplicated, as the fake holds them (never the provider's answer).
   */
  backendPorts(owner: LbOwner): number[];
  /**
   * Which port of a listener the cloud sends traffic to on each backend: its node port
   * (default), or the Service port itself (GCE target pools, where the node's proxy takes it).
   */
  readonly trafficTo?: "nodePort" | "port";
  /**
   * A second network of the account, for cluster scope: two clusters of one account on
   * different networks. `prepareCluster`: what the vendor needs before routes of a cluster
   * exist there (a route table tagged for it, say).
   */
  readonly otherNetwork?: {
    readonly network: string;
    createInstance(name: string): FakeInstance;
    prepareCluster?(cluster: string): void;
  };
  /** Disks (the `volumes` capability; absent: the provider has none). */
  readonly disks?: {
    /** The vendor's disks are in a zone (else in a region only). */
    readonly zonal: boolean;
    /**
     * A disk of `sizeGiB` in `zones` zones of the account's region (0: the vendor's disks have
     * no zone), attached to `attachedTo` (an instance id) if given, tagged for `ownerCluster` as
     * the vendor's CSI driver tags it; `inScope: false` puts it in another region.
     */
    create(spec: {
      readonly sizeGiB: number;
      readonly zones: number;
      readonly inScope: boolean;
      readonly ownerCluster?: string;
      readonly attachedTo?: string;
    }): FakeDisk;
    /** A well-formed handle of this provider for a disk that does not exist. */
    missing(): FakeDisk;
  };
  /** The next `n` load-balancer creates the fake accepts end in failure, as the cloud reports it (asynchronous clouds). */
  failNextCreates?(n: number): void;
  /** Load balancers built exactly as the vendor's own CCM builds them, one per mode it has. */
  readonly vendorModes?: readonly VendorMode[];
  close(): Promise<void>;
}

/** One way the vendor's CCM builds a Service's load balancer (adoption while migrating). */
export interface VendorMode {
  readonly mode: string;
  /**
   * Builds, as the vendor CCM does for cluster `vendorCcmClusterName`, the load balancer of
   * `owner`'s Service with `spec` (its listeners, backends and source ranges).
   */
  build(owner: LbOwner, spec: LoadBalancerSpec, vendorCcmClusterName: string): Promise<VendorBuilt>;
}

export interface VendorBuilt {
  /** The Service's ingress as the vendor CCM wrote it. */
  readonly ingress: readonly LbIngress[];
  /** The annotations the vendor CCM's Service carries (the load balancer's id, say); often none. */
  readonly annotations?: Readonly<Record<string, string>>;
  /**
   * What the cloud lets reach this load balancer now, as "<port> <CIDR>" entries (listener or
   * node ports and the source ranges admitted on them), from the fake's truth.
   */
  exposure(): readonly string[];
  /**
   * The ranges the load balancer's health checks come from (its subnets, say), which stay
   * admitted on the health-check ports whatever the Service's source ranges say.
   */
  readonly healthRanges?: readonly string[];
}

/** Whether `inner` (a CIDR) lies within `outer`. */
function within(inner: string, outer: string): boolean {
  const a = parseNetwork(inner);
  const b = parseNetwork(outer);
  return (
    a !== undefined &&
    b !== undefined &&
    a.family === b.family &&
    a.prefix >= b.prefix &&
    networkKey(a, b.prefix) === b.key
  );
}

export interface ConformanceFixture {
  start(): Promise<ConformanceFake>;
  /** The vendor CCM's modes the fake can build (the names of ConformanceFake.vendorModes). */
  readonly vendorModes?: readonly string[];
}

export interface ConformanceOptions {
  /** The account answers load-balancer mutations InProgress at first (asserted, not just tolerated). */
  readonly inProgress?: boolean;
  /** listOwned returns the digests (asserted, not just checked where present). */
  readonly digests?: boolean;
}

interface Harness {
  readonly provider: CloudProvider;
  readonly ops: string[];
  readonly mutations: () => number;
}

const POLL_LIMIT = 200;
/** How long settle waits for an InProgress answer to end: a time, not a count of polls (a pass can be quick). */
const SETTLE_MS = 60_000;

/** Waits as an InProgress answer asks, as the hub does (capped: fakes poll fast). */
const pause = (answer: InProgress) =>
  new Promise((resolve) => setTimeout(resolve, Math.min(answer.retryAfterMs, 50)));

/** Repeats an idempotent call while it answers InProgress, honouring its delay. */
export async function settle<T>(call: () => Promise<T | InProgress>): Promise<T> {
  for (const until = Date.now() + SETTLE_MS; Date.now() < until; ) {
    const answer = await call();
    if (!isInProgress(answer)) return answer;
    expect(answer.retryAfterMs).toBeGreaterThanOrEqual(0);
    expect(typeof answer.message).toBe("string");
    await pause(answer);
  }
  throw new Error(`still in progress after ${SETTLE_MS / 1000} s`);
}

function sameOwner(a: LbOwner | undefined, b: LbOwner): boolean {
  return a !== undefined && a.cluster === b.cluster && a.serviceUid === b.serviceUid;
}

/**
 * Runs the conformance suite for one provider through its fake. Call it once per account
 * configuration worth proving (e.g. synchronous and asynchronous operations).
 */
/** A two-port TCP load balancer on `backends`: the spec the suite (and provider tests) start from. */
export function sampleLoadBalancerSpec(
  backends: readonly string[],
  overrides: Partial<LoadBalancerSpec> = {},
): LoadBalancerSpec {
  return {
    listeners: [
      { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false },
      { protocol: "TCP", port: 443, nodePort: 30443, proxyProtocol: false },
    ],
    backends,
    healthCheck: {
      protocol: "TCP",
      port: 30080,
      path: "",
      intervalSeconds: 10,
      timeoutSeconds: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 3,
    },
    sourceRanges: [],
    sessionAffinity: "None",
    idleTimeoutSeconds: 60,
    internal: false,
    ...overrides,
  };
}

export function describeProviderConformance(
  name: string,
  fixture: ConformanceFixture,
  options: ConformanceOptions = {},
): void {
  describe(`${name} - conformance`, () => {
    let fake: ConformanceFake;
    let nodes: FakeInstance[];
    let seq = 0;
    const cluster = "conf";
    const unique = (prefix: string) => `${prefix}-${++seq}`;
    /** The cluster of the suite's calls, in the fake account's network. */
    const at = (): ClusterTarget => ({ cluster, network: fake.account().network, scope: {} });
    const owner = (): ServiceTarget => ({ ...at(), serviceUid: unique("uid") });

    /** The provider, its calls through the wrapper; `crashAfter`: the Nth mutation's answer is lost and every later call refused. */
    async function harness(opts: { crashAfter?: number; abort?: AbortController } = {}): Promise<Harness> {
      let mutations = 0;
      const { provider, ops } = await bindRecorded(fake.factory, fake.account(), fake.options, {
        ...(opts.abort !== undefined && { signal: opts.abort.signal }),
        before: (op) => {
          if (opts.abort?.signal.aborted) throw new Error(`crashed before ${op}`);
        },
        after: (op, answer) => {
          if (!fake.isMutation(op)) return answer;
          mutations++;
          if (mutations === opts.crashAfter) {
            opts.abort?.abort();
            throw new Error(`crashed after ${op}`);
          }
          return answer;
        },
      });
      return { provider, ops, mutations: () => mutations };
    }

    /** Settles a call on one new provider (asynchronous operations are tracked by the provider instance, as in the hub). */
    async function fresh<T>(call: (h: Harness) => Promise<T | InProgress>): Promise<T> {
      const h = await await harness();
      return settle(() => call(h));
    }

    function lbsOf(h: Harness) {
      const lbs = h.provider.loadBalancers;
      if (lbs === undefined) throw new Error(`${name} has no load balancers`);
      return lbs;
    }

    function spec(overrides: Partial<LoadBalancerSpec> = {}): LoadBalancerSpec {
      return sampleLoadBalancerSpec(
        nodes
          .slice(0, 3)
          .map((n) => n.instanceID)
          .sort(),
        overrides,
      );
    }

    /** The kinds of the owner's resources in the fake, sorted: equal kinds twice is a duplicate. */
    function ownedKinds(o: LbOwner): string[] {
      return fake
        .resources()
        .filter((r) => sameOwner(r.lbOwner, o))
        .map((r) => r.kind)
        .sort();
    }

    /** Ids of every resource not the owner's: they must outlive anything done for the owner. */
    function othersIds(o: LbOwner): string[] {
      return fake
        .resources()
        .filter((r) => !sameOwner(r.lbOwner, o))
        .map((r) => r.id)
        .sort();
    }

    /** What one clean ensure of `s` leaves in the fake, and how many mutations it makes. */
    async function baseline(s: LoadBalancerSpec): Promise<{ kinds: string[]; mutations: number }> {
      const o = owner();
      const h = await harness();
      await settle(() => lbsOf(h).ensure(o, s));
      const kinds = ownedKinds(o);
      await fresh((h) => lbsOf(h).ensureDeleted(o));
      return { kinds, mutations: h.mutations() };
    }

    beforeAll(async () => {
      fake = await fixture.start();
      nodes = [0, 1, 2, 3].map((n) => fake.createInstance({ name: unique(`node-${n}`), inScope: true }));
    });

    afterAll(async () => {
      await fake?.close();
    });

    beforeEach(() => {
      fake.clearFaults();
    });

    describe("instances", () => {
      test("lookup by providerID and by name", async () => {
        const { provider: p } = await harness();
        const i = fake.createInstance({ name: unique("web"), inScope: true });
        const meta = await p.instances.getByProviderID(i.providerID);
        expect(meta).toMatchObject({ providerID: i.providerID, instanceID: i.instanceID });
        expect(p.instances.parseProviderID(i.providerID)).toBe(i.instanceID);
        expect(p.name).toBe(fake.factory.name);
        fake.createInstance({ name: `${meta.name}-0`, inScope: true });
        // Exact: a longer name sharing the prefix is not a match.
        const byName = await p.instances.findByName(meta.name);
        expect(byName.map((m) => m.instanceID)).toEqual([i.instanceID]);
      });

      test("findByName answers every instance of the name in scope, none outside it", async () => {
        const { provider: p } = await harness();
        const twin = unique("twin");
        const a = fake.createInstance({ name: twin, inScope: true });
        const b = fake.createInstance({ name: twin, inScope: true });
        fake.createInstance({ name: twin, inScope: false });
        const found = await p.instances.findByName(twin);
        expect(found.map((m) => m.instanceID).sort()).toEqual([a.instanceID, b.instanceID].sort());
        expect(await p.instances.findByName(unique("nobody"))).toEqual([]);
      });

      test("not found only from a direct authoritative lookup", async () => {
        const { provider: p } = await harness();
        await expect(p.instances.getByProviderID(fake.missingProviderID())).rejects.toBeInstanceOf(
          InstanceNotFoundError,
        );
        const gone = fake.createInstance({ name: unique("gone"), inScope: true });
        fake.terminateInstance(gone.instanceID);
        const answer = await p.instances.getByProviderID(gone.providerID).catch((e: unknown) => e);
        if (!(answer instanceof InstanceNotFoundError)) expect(answer).toMatchObject({ state: "terminated" });
        // A failing cloud never says "not found", nor an empty "no such name".
        fake.failWithServerErrors();
        const errors = [
          await p.instances.getByProviderID(fake.missingProviderID()).catch((e: unknown) => e),
          await p.instances.findByName(unique("nobody")).catch((e: unknown) => e),
          await p.instances.listPage(undefined).catch((e: unknown) => e),
        ];
        for (const err of errors) {
          expect(err).toBeInstanceOf(Error);
          expect(err).not.toBeInstanceOf(InstanceNotFoundError);
          expect(isRetryable(err)).toBe(true);
        }
      });

      test("listPage walks every in-scope instance across pages, nothing out of scope, no repeats", async () => {
        const made = new Set<string>();
        for (let n = 0; n < fake.instancePageSize * 2 + 3; n++)
          made.add(fake.createInstance({ name: unique("many"), inScope: true }).instanceID);
        const outside = fake.createInstance({ name: unique("outside"), inScope: false });
        const { provider: p, ops } = await harness();
        const seen: string[] = [];
        let token: string | undefined;
        do {
          const page = await p.instances.listPage(token);
          seen.push(...page.instances.map((i) => i.instanceID));
          for (const i of page.instances)
            expect(p.instances.parseProviderID(i.providerID)).toBe(i.instanceID);
          token = page.nextPageToken;
        } while (token !== undefined);
        expect(ops.length).toBeGreaterThanOrEqual(3);
        expect(new Set(seen).size).toBe(seen.length);
        for (const id of made) expect(seen).toContain(id);
        expect(seen).not.toContain(outside.instanceID);
      });
    });

    describe("errors", () => {
      test("throttling is ThrottledError with the vendor's Retry-After", async () => {
        fake.throttle(7);
        const h = await harness();
        // Each answer is caught as it comes: a rejection waiting for its turn would be unhandled.
        const settled = (p: Promise<unknown>) => p.catch((e: unknown) => e);
        const calls: Promise<unknown>[] = [settled(h.provider.instances.listPage(undefined))];
        if (h.provider.loadBalancers) calls.push(settled(h.provider.loadBalancers.get(owner())));
        if (h.provider.routes) calls.push(settled(h.provider.routes.list(at())));
        for (const call of calls) {
          const err = await call;
          expect(err).toBeInstanceOf(ThrottledError);
          expect((err as ThrottledError).retryAfterMs).toBe(7_000);
        }
      });

      test("5xx is a transient (retryable) error on every capability", async () => {
        fake.failWithServerErrors();
        const h = await harness();
        const settled = (p: Promise<unknown>) => p.catch((e: unknown) => e);
        const calls: Promise<unknown>[] = [
          settled(h.provider.instances.getByProviderID(nodes[0]!.providerID)),
        ];
        if (h.provider.loadBalancers) calls.push(settled(h.provider.loadBalancers.ensure(owner(), spec())));
        if (h.provider.routes) calls.push(settled(h.provider.routes.list(at())));
        for (const call of calls) {
          const err = await call;
          expect(err).toBeInstanceOf(TransientCloudError);
          expect(isRetryable(err)).toBe(true);
        }
      });
    });

    describe("load balancers", () => {
      test("ensure is idempotent: one load balancer, a repeat changes nothing", async () => {
        const o = owner();
        const others = othersIds(o);
        const [ingress] = await fresh((h) => lbsOf(h).ensure(o, spec()));
        expect(ingress?.ip ?? ingress?.hostname).toBeDefined();
        const kinds = ownedKinds(o);
        expect(kinds.length).toBeGreaterThan(0);
        const again = await harness();
        expect(await settle(() => lbsOf(again).ensure(o, spec()))).toEqual([ingress]);
        expect(again.mutations()).toBe(0);
        expect(ownedKinds(o)).toEqual(kinds);
        const state = await lbsOf(again).get(o);
        expect(state?.owner).toEqual(lbOwner(o));
        expect(state?.backends).toEqual(spec().backends);
        expect(othersIds(o)).toEqual(expect.arrayContaining(others));
      });

      test("an update happens in place and leaves exactly what a fresh ensure of the new spec would", async () => {
        const changed = spec({
          listeners: [
            { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false },
            { protocol: "TCP", port: 8443, nodePort: 30843, proxyProtocol: false },
            { protocol: "TCP", port: 9000, nodePort: 30900, proxyProtocol: false },
          ],
          sourceRanges: ["10.0.0.0/8"],
          idleTimeoutSeconds: 120,
        });
        const want = await baseline(changed);
        const o = owner();
        await fresh((h) => lbsOf(h).ensure(o, spec()));
        const before = await lbsOf(await harness()).get(o);
        await fresh((h) => lbsOf(h).ensure(o, changed));
        expect((await lbsOf(await harness()).get(o))?.id).toBe(before?.id);
        expect(ownedKinds(o)).toEqual(want.kinds);
        await fresh((h) => lbsOf(h).ensureDeleted(o));
      });

      test("in-progress answers: polls repeat the same call and never duplicate a resource", async () => {
        const want = await baseline(spec());
        const countKinds = (kinds: readonly string[]) => {
          const m = new Map<string, number>();
          for (const k of kinds) m.set(k, (m.get(k) ?? 0) + 1);
          return m;
        };
        const limit = countKinds(want.kinds);
        const o = owner();
        const h = await harness();
        let inProgressAnswers = 0;
        for (let polls = 0; ; polls++) {
          expect(polls).toBeLessThan(POLL_LIMIT);
          const answer = await lbsOf(h).ensure(o, spec());
          for (const [kind, n] of countKinds(ownedKinds(o)))
            expect(n).toBeLessThanOrEqual(limit.get(kind) ?? 0);
          if (!isInProgress(answer)) break;
          inProgressAnswers++;
          expect(answer.retryAfterMs).toBeGreaterThanOrEqual(0);
          await pause(answer);
        }
        if (options.inProgress) expect(inProgressAnswers).toBeGreaterThan(0);
        expect(ownedKinds(o)).toEqual(want.kinds);
        let deletePolls = 0;
        for (;;) {
          const answer = await lbsOf(h).ensureDeleted(o);
          if (!isInProgress(answer)) break;
          deletePolls++;
          expect(deletePolls).toBeLessThan(POLL_LIMIT);
          await pause(answer);
        }
        if (options.inProgress) expect(deletePolls).toBeGreaterThan(0);
        expect(ownedKinds(o)).toEqual([]);
      });

      test("updateBackends replaces the backends, idempotently", async () => {
        const o = owner();
        await fresh((h) => lbsOf(h).ensure(o, spec()));
        const kinds = ownedKinds(o);
        const next = [nodes[1]!.instanceID, nodes[3]!.instanceID].sort();
        for (let n = 0; n < 2; n++) await fresh((h) => lbsOf(h).updateBackends(o, next));
        expect((await lbsOf(await harness()).get(o))?.backends).toEqual(next);
        expect(ownedKinds(o)).toEqual(kinds);
        await fresh((h) => lbsOf(h).ensureDeleted(o));
      });

      test("ensureDeleted removes everything of the owner, is idempotent, touches nothing else", async () => {
        fake.createForeignLoadBalancer?.();
        const neighbour = owner();
        await fresh((h) => lbsOf(h).ensure(neighbour, spec()));
        const o = owner();
        await fresh((h) => lbsOf(h).ensure(o, spec()));
        const others = othersIds(o);
        await fresh((h) => lbsOf(h).ensureDeleted(o));
        expect(ownedKinds(o)).toEqual([]);
        expect(await lbsOf(await harness()).get(o)).toBeUndefined();
        expect(await fresh((h) => lbsOf(h).ensureDeleted(o))).toBeUndefined();
        expect(othersIds(o)).toEqual(others);
        await fresh((h) => lbsOf(h).ensureDeleted(neighbour));
      });

      test("a crash after every single mutation of ensure, then ensure again: no orphans, no duplicates", async () => {
        const want = await baseline(spec());
        expect(want.mutations).toBeGreaterThan(0);
        for (let n = 1; n <= want.mutations; n++) {
          const o = owner();
          const others = othersIds(o);
          const abort = new AbortController();
          const crashing = await harness({ crashAfter: n, abort });
          await expect(settle(() => lbsOf(crashing).ensure(o, spec(), abort.signal))).rejects.toThrow(
            /crashed/,
          );
          await fresh((h) => lbsOf(h).ensure(o, spec()));
          expect({ n, kinds: ownedKinds(o) }).toEqual({ n, kinds: want.kinds });
          expect(othersIds(o)).toEqual(expect.arrayContaining(others));
          await fresh((h) => lbsOf(h).ensureDeleted(o));
          expect({ n, kinds: ownedKinds(o) }).toEqual({ n, kinds: [] });
        }
      });

      test("a crash after every single mutation of ensureDeleted, then delete again: nothing left", async () => {
        const probe = owner();
        await fresh((h) => lbsOf(h).ensure(probe, spec()));
        const counting = await harness();
        await settle(() => lbsOf(counting).ensureDeleted(probe));
        const total = counting.mutations();
        expect(total).toBeGreaterThan(0);
        for (let n = 1; n <= total; n++) {
          const o = owner();
          await fresh((h) => lbsOf(h).ensure(o, spec()));
          const abort = new AbortController();
          const crashing = await harness({ crashAfter: n, abort });
          await expect(settle(() => lbsOf(crashing).ensureDeleted(o, abort.signal))).rejects.toThrow(
            /crashed/,
          );
          await fresh((h) => lbsOf(h).ensureDeleted(o));
          expect({ n, kinds: ownedKinds(o) }).toEqual({ n, kinds: [] });
        }
      });

      test("listOwned pages through the owned load balancers with their owners, nothing foreign", async () => {
        const h = await harness();
        const list = lbsOf(h).listOwned?.bind(lbsOf(h));
        if (list === undefined) return; // optional capability
        fake.createForeignLoadBalancer?.();
        const mine = [owner(), owner()];
        for (const o of mine) await fresh((h) => lbsOf(h).ensure(o, spec()));
        const seen: LbOwner[] = [];
        let token: string | undefined;
        let pages = 0;
        do {
          const page = await list(token);
          seen.push(...page.items.map((i) => i.owner));
          token = page.nextPageToken;
          pages++;
        } while (token !== undefined);
        // One read call per page (or the provider's few), nothing changed.
        expect(h.ops.length).toBeGreaterThanOrEqual(pages);
        expect(h.ops.length).toBeLessThanOrEqual(pages * (fake.listOwnedReadsPerPage ?? 1));
        expect(h.mutations()).toBe(0);
        for (const o of mine) expect(seen).toContainEqual(lbOwner(o));
        for (const s of seen) expect(s.cluster).not.toBe("");
        const ownedIds = new Set(
          fake
            .resources()
            .filter((r) => r.lbOwner !== undefined)
            .map((r) => r.id),
        );
        const page = await list(undefined);
        for (const item of page.items) expect(ownedIds.has(item.id)).toBe(true);
        for (const o of mine) await fresh((h) => lbsOf(h).ensureDeleted(o));
      });

      test("listOwned digests, where recorded, describe what the cloud was made to match", async () => {
        const lbs = lbsOf(await harness());
        if (lbs.listOwned === undefined) return; // optional capability
        const o = owner();
        const listed = async () => {
          for (let token: string | undefined, n = 0; n < 100; n++) {
            const page = await lbsOf(await harness()).listOwned?.(token);
            const item = page?.items.find(
              (i) => i.owner.cluster === o.cluster && i.owner.serviceUid === o.serviceUid,
            );
            if (item !== undefined || page?.nextPageToken === undefined) return item;
            token = page.nextPageToken;
          }
          throw new Error("listOwned did not end");
        };
        const first = spec();
        await fresh((h) => lbsOf(h).ensure(o, first));
        const item = await listed();
        expect(item).toBeDefined();
        if (options.digests) expect(item?.specDigest).toBeDefined();
        if (item?.specDigest === undefined) {
          await fresh((h) => lbsOf(h).ensureDeleted(o));
          return; // the provider keeps no digests: a restarted hub ensures every Service once
        }
        expect(item.specDigest).toBe(loadBalancerSpecDigest(first));
        expect(item.backendsDigest).toBe(backendsDigest(first.backends));
        const next = [nodes[1]!.instanceID, nodes[3]!.instanceID].sort();
        await fresh((h) => lbsOf(h).updateBackends(o, next));
        expect((await listed())?.backendsDigest).toBe(backendsDigest(next));
        // A backend node's vendor annotations are part of the backends it was given (where the
        // provider reads them; the hub passes none to one that does not).
        if (lbs.capabilities.readsNodeAnnotations !== false) {
          const annotated = { [next[0]!]: { "example.com/setting": "on" } };
          await fresh((h) => lbsOf(h).updateBackends(o, next, undefined, annotated));
          expect((await listed())?.backendsDigest).toBe(backendsDigest(next, annotated));
        }
        const changed = spec({ idleTimeoutSeconds: first.idleTimeoutSeconds + 30 });
        await fresh((h) => lbsOf(h).ensure(o, changed));
        const after = await listed();
        expect(after?.specDigest).toBe(loadBalancerSpecDigest(changed));
        expect(after?.backendsDigest).toBe(backendsDigest(changed.backends));
        await fresh((h) => lbsOf(h).ensureDeleted(o));
      });
    });

    describe("one provider, many owners and clusters", () => {
      const ports = (sp: LoadBalancerSpec) =>
        [...new Set(sp.listeners.map((l) => (fake.trafficTo === "port" ? l.port : l.nodePort)))].sort(
          (a, b) => a - b,
        );
      /** Ensures, and where updateBackends asks for it (NeedsEnsureError), ensures again. */
      async function setBackends(
        h: Harness,
        o: ServiceTarget,
        sp: LoadBalancerSpec,
        backends: readonly string[],
      ) {
        try {
          await settle(() => lbsOf(h).updateBackends(o, backends));
        } catch (err) {
          if (!(err instanceof NeedsEnsureError)) throw err;
          await settle(() => lbsOf(h).ensure(o, { ...sp, backends }));
        }
      }

      test("a long-lived provider keeps each owner's node ports: backends emptied, then refilled, across clusters", async () => {
        const h = await harness();
        const a = owner();
        const b: ServiceTarget = { ...owner(), cluster: `${cluster}-b` };
        // The same Service port on both, other node ports: nothing of one may leak into the other.
        const specA = spec();
        const specB = spec({
          listeners: specA.listeners.map((l) => ({ ...l, nodePort: l.nodePort + 1000 })),
          healthCheck: { ...specA.healthCheck, port: specA.healthCheck.port + 1000 },
        });
        await settle(() => lbsOf(h).ensure(a, specA));
        await settle(() => lbsOf(h).ensure(b, specB));
        expect(fake.backendPorts(a)).toEqual(ports(specA));
        expect(fake.backendPorts(b)).toEqual(ports(specB));
        // A emptied (its nodes all left) while B is ensured again, then A refilled.
        await setBackends(h, a, specA, []);
        await settle(() => lbsOf(h).ensure(b, specB));
        await setBackends(h, a, specA, specA.backends);
        expect((await lbsOf(h).get(a))?.backends).toEqual(specA.backends);
        expect(fake.backendPorts(a)).toEqual(ports(specA));
        expect(fake.backendPorts(b)).toEqual(ports(specB));
        for (const o of [a, b]) await settle(() => lbsOf(h).ensureDeleted(o));
        expect([...ownedKinds(a), ...ownedKinds(b)]).toEqual([]);
      });

      test("concurrent ensures of two owners of one cluster: each gets exactly its own load balancer", async () => {
        const want = await baseline(spec());
        const h = await harness();
        const [a, b] = [owner(), owner()];
        const [ia, ib] = await Promise.all([a, b].map((o) => settle(() => lbsOf(h).ensure(o, spec()))));
        expect(ownedKinds(a)).toEqual(want.kinds);
        expect(ownedKinds(b)).toEqual(want.kinds);
        expect(ia).not.toEqual(ib);
        await Promise.all([a, b].map((o) => settle(() => lbsOf(h).ensureDeleted(o))));
        expect([...ownedKinds(a), ...ownedKinds(b)]).toEqual([]);
      });

      test("cluster scope: two clusters of one account on different networks, each in its own", async () => {
        const other = fake.otherNetwork;
        if (other === undefined) return; // the fake has one network per account
        const h = await harness();
        const b: ClusterTarget = {
          cluster: `${cluster}-net`,
          network: other.network,
          scope: { network: other.network },
        };
        other.prepareCluster?.(b.cluster);
        const there = [other.createInstance(unique("net-b-0")), other.createInstance(unique("net-b-1"))];
        const ob: ServiceTarget = { ...b, serviceUid: unique("uid") };
        const sb = spec({ backends: there.map((i) => i.instanceID).sort() });
        if (h.provider.loadBalancers !== undefined) {
          await settle(() => lbsOf(h).ensure(ob, sb));
          expect((await lbsOf(h).get(ob))?.backends).toEqual(sb.backends);
          await settle(() => lbsOf(h).ensureDeleted(ob));
          expect(ownedKinds(ob)).toEqual([]);
        }
        const routes = h.provider.routes;
        if (routes === undefined) return;
        const cidrA = `10.${190}.${++seq % 250}.0/24`;
        const cidrB = `10.${191}.${seq % 250}.0/24`;
        const ra = await settle(() =>
          routes.create(at(), { destinationCIDR: cidrA, targetInstanceID: nodes[0]!.instanceID }),
        );
        const rb = await settle(() =>
          routes.create(b, { destinationCIDR: cidrB, targetInstanceID: there[0]!.instanceID }),
        );
        const inA = (await routes.list(at())).map((r) => r.destinationCIDR);
        const inB = (await routes.list(b)).map((r) => r.destinationCIDR);
        expect(inA).toContain(cidrA);
        expect(inA).not.toContain(cidrB);
        expect(inB).toContain(cidrB);
        expect(inB).not.toContain(cidrA);
        await settle(() => routes.delete(b, rb));
        await settle(() => routes.delete(at(), ra));
      });
    });

    describe("asynchronous failure", () => {
      test("an operation that fails after answering in progress is OperationFailedError for any replica; a later ensure recovers", async () => {
        if (fake.failNextCreates === undefined) return; // the cloud answers synchronously
        const o = owner();
        fake.failNextCreates(1);
        const first = await harness();
        const outcome = await settle(() => lbsOf(first).ensure(o, spec())).catch((e: unknown) => e);
        expect(outcome).toBeInstanceOf(OperationFailedError);
        expect(isRetryable(outcome)).toBe(true);
        // Another replica (a new provider) reads the failure from the cloud.
        const second = await harness();
        const seen = await settle(() => lbsOf(second).ensure(o, spec())).catch((e: unknown) => e);
        const [ingress] =
          seen instanceof OperationFailedError
            ? await fresh((h) => lbsOf(h).ensure(o, spec()))
            : (seen as readonly LbIngress[]);
        expect(ingress?.ip ?? ingress?.hostname).toBeDefined();
        expect(ownedKinds(o)).toEqual((await baseline(spec())).kinds);
        await fresh((h) => lbsOf(h).ensureDeleted(o));
        expect(ownedKinds(o)).toEqual([]);
      });
    });

    describe("adoption from the vendor CCM", () => {
      const modes = fixtureModes();
      function fixtureModes(): readonly string[] {
        // The fake starts in beforeAll; the modes a fixture declares are static.
        return fixture.vendorModes ?? [];
      }
      test.each(modes.length > 0 ? modes : ["(none)"])(
        "mode %s: adopted with the operator's opt-in, narrowed to the Service, nothing open after delete",
        async (mode) => {
          const vendor = fake.vendorModes?.find((m) => m.mode === mode);
          if (vendor === undefined) return; // the vendor has no CCM to migrate from
          const o = owner();
          const narrowed = "10.0.0.0/8";
          const ranged = spec({ sourceRanges: [narrowed] });
          // The vendor CCM built it open to all; the Service now says 10.0.0.0/8.
          const built = await vendor.build(o, spec(), "vendor-cluster");
          const before = built.exposure();
          expect(before.some((e) => e.endsWith(" 0.0.0.0/0"))).toBe(true);
          const hints = { annotations: { ...(built.annotations ?? {}) }, ingress: built.ingress };
          const refused = await fresh((h) =>
            lbsOf(h).ensure(o, { ...ranged, annotations: hints.annotations }, undefined, hints),
          ).catch((e: unknown) => e);
          // Without adoptFrom the hub never takes it over (it may build its own instead), and
          // changes nothing of it.
          expect(built.exposure()).toEqual(before);
          if (!(refused instanceof Error)) await fresh((h) => lbsOf(h).ensureDeleted(o, undefined, hints));
          expect(built.exposure()).toEqual(before);
          const adopting: ServiceTarget = {
            ...o,
            scope: { adoptFrom: { vendorCcmClusterName: "vendor-cluster" } },
          };
          const ingress = await fresh((h) =>
            lbsOf(h).ensure(adopting, { ...ranged, annotations: hints.annotations }, undefined, hints),
          );
          expect(ingress).toEqual(built.ingress);
          // Narrowed: every range admitted is within the Service's, or one its health checks come from.
          const open = built.exposure();
          expect(open.length).toBeGreaterThan(0);
          const allowed = [narrowed, ...(built.healthRanges ?? [])];
          for (const e of open)
            expect({ e, within: allowed.some((r) => within(e.split(" ")[1] ?? "", r)) }).toEqual({
              e,
              within: true,
            });
          await fresh((h) => lbsOf(h).ensureDeleted(adopting, undefined, hints));
          expect(built.exposure()).toEqual([]);
          expect(ownedKinds(o)).toEqual([]);
        },
      );
    });

    describe("quotas", () => {
      test("the quotas the provider declares are the fake's: at the tightest it builds, one listener past it the cloud refuses", async () => {
        const h = await harness();
        const quotas = lbsOf(h).capabilities.quotas?.({}) ?? [];
        // The most listeners every declared quota admits (one open source range, as the spec has).
        let most = Number.POSITIVE_INFINITY;
        for (const q of quotas) {
          if (q.counts === "listeners") most = Math.min(most, q.limit);
          // One source range: one rule per listener, plus the provider's extra ones per range.
          if (q.counts === "sourceRules") most = Math.min(most, q.limit - (q.extraRulesPerSource ?? 0));
        }
        if (!Number.isFinite(most)) return; // no quota on listeners or their rules declared
        const many = (n: number) =>
          spec({
            listeners: Array.from({ length: n }, (_, i) => ({
              protocol: "TCP" as const,
              port: 10_000 + i,
              nodePort: 30_000 + i,
              proxyProtocol: false,
            })),
          });
        const atLimit = owner();
        await settle(() => lbsOf(h).ensure(atLimit, many(most)));
        await settle(() => lbsOf(h).ensureDeleted(atLimit));
        const over = owner();
        await expect(settle(() => lbsOf(h).ensure(over, many(most + 1)))).rejects.toThrow();
        await settle(() => lbsOf(h).ensureDeleted(over));
        expect(ownedKinds(over)).toEqual([]);
      });
    });

    describe("volumes", () => {
      function volumesOf(p: CloudProvider) {
        const v = p.volumes;
        if (v === undefined) throw new Error(`${name} has no volumes`);
        return v;
      }
      const zonal = () => (fake.disks?.zonal === true ? 1 : 0);

      test("a disk by its PV handle: region, zones, size, state, the instance it is attached to", async () => {
        const { provider: p } = await harness();
        if (p.volumes === undefined || fake.disks === undefined) return; // optional capability
        const zones = zonal();
        const d = fake.disks.create({ sizeGiB: 20, zones, inScope: true, attachedTo: nodes[0]!.instanceID });
        const ref = volumesOf(p).parseVolumeHandle(d.source, d.csiDriver, d.handle);
        expect(ref?.id).toBe(d.id);
        expect(volumesOf(p).parseVolumeHandle(d.source, "other.csi.example.com", d.handle)).toBeUndefined();
        const disk = await volumesOf(p).get(d.id);
        expect(disk).toMatchObject({
          id: d.id,
          region: fake.account().region,
          sizeGiB: 20,
          state: "in-use",
          attachedTo: nodes[0]!.instanceID,
        });
        expect(disk.zones).toHaveLength(zones);
      });

      test("a batch answers the disks it has; a missing one is left out, and only a direct get says not found", async () => {
        const { provider: p } = await harness();
        if (p.volumes === undefined || fake.disks === undefined) return;
        const made = [0, 1, 2].map(() => fake.disks!.create({ sizeGiB: 5, zones: zonal(), inScope: true }));
        const missing = fake.disks.missing();
        const found = await volumesOf(p).getMany([...made.map((d) => d.id), missing.id]);
        expect(found.map((d) => d.id).sort()).toEqual(made.map((d) => d.id).sort());
        expect(volumesOf(p).maxBatch).toBeGreaterThanOrEqual(10);
        await expect(volumesOf(p).get(missing.id)).rejects.toBeInstanceOf(DiskNotFoundError);
      });

      test("a disk in another region is never answered as the account region's", async () => {
        const { provider: p } = await harness();
        if (p.volumes === undefined || fake.disks === undefined) return;
        const d = fake.disks.create({ sizeGiB: 5, zones: zonal(), inScope: false });
        const region = fake.account().region;
        try {
          const disk = await volumesOf(p).get(d.id);
          expect(disk.region).not.toBe(region);
        } catch (err) {
          expect(err).toBeInstanceOf(DiskNotFoundError);
        }
        const batch = await volumesOf(p).getMany([d.id]);
        for (const disk of batch) expect(disk.region).not.toBe(region);
      });

      test("listOwned: the disks tagged for a cluster, with their owner, none of another's", async () => {
        const { provider: p } = await harness();
        if (p.volumes === undefined || fake.disks === undefined) return;
        const mine = fake.disks.create({
          sizeGiB: 8,
          zones: zonal(),
          inScope: true,
          ownerCluster: "owner-a",
        });
        const theirs = fake.disks.create({
          sizeGiB: 8,
          zones: zonal(),
          inScope: true,
          ownerCluster: "owner-b",
        });
        const listed = await volumesOf(p).listOwned(["owner-a"]);
        expect(listed.map((d) => d.id)).toContain(mine.id);
        expect(listed.map((d) => d.id)).not.toContain(theirs.id);
        expect(listed.find((d) => d.id === mine.id)?.ownerClusters).toEqual(["owner-a"]);
      });
    });

    describe("routes", () => {
      let cidr = 0;
      const nextCidr = () => `10.${200 + Math.floor(cidr / 256)}.${cidr++ % 256}.0/24`;

      function routesOf(h: Harness) {
        const routes = h.provider.routes;
        if (routes === undefined) throw new Error(`${name} has no routes`);
        return routes;
      }

      test("create, list, delete with ownership; a foreign route is listed, never owned, never touched", async () => {
        const h = await harness();
        if (h.provider.routes === undefined) return; // optional capability
        const foreignCidr = nextCidr();
        fake.createForeignRoute?.(foreignCidr, nodes[1]!.instanceID);
        const target = { destinationCIDR: nextCidr(), targetInstanceID: nodes[0]!.instanceID };
        await settle(() => routesOf(h).create(at(), target));
        const listed = await routesOf(await harness()).list(at());
        const mine = listed.filter((r) => r.destinationCIDR === target.destinationCIDR);
        expect(mine).toHaveLength(1);
        expect(mine[0]).toMatchObject({ ...target, ownerCluster: cluster });
        if (fake.createForeignRoute) {
          const theirs = listed.find((r) => r.destinationCIDR === foreignCidr);
          expect(theirs).toBeDefined();
          expect(theirs?.ownerCluster).toBeUndefined();
        }
        await fresh((h) => routesOf(h).delete(at(), mine[0]!));
        await fresh((h) => routesOf(h).delete(at(), mine[0]!));
        const after = await routesOf(await harness()).list(at());
        expect(after.filter((r) => r.destinationCIDR === target.destinationCIDR)).toEqual([]);
        if (fake.createForeignRoute)
          expect(fake.resources().filter((r) => r.destinationCIDR === foreignCidr)).toHaveLength(1);
      });

      test("a crash after create's mutation, then create again: one route", async () => {
        if ((await harness()).provider.routes === undefined) return;
        const counting = await harness();
        const probe = { destinationCIDR: nextCidr(), targetInstanceID: nodes[0]!.instanceID };
        const made = await settle(() => routesOf(counting).create(at(), probe));
        await fresh((h) => routesOf(h).delete(at(), made));
        for (let n = 1; n <= counting.mutations(); n++) {
          const target = { destinationCIDR: nextCidr(), targetInstanceID: nodes[0]!.instanceID };
          const abort = new AbortController();
          const crashing = await harness({ crashAfter: n, abort });
          await expect(settle(() => routesOf(crashing).create(at(), target, abort.signal))).rejects.toThrow(
            /crashed/,
          );
          const route = await fresh((h) => routesOf(h).create(at(), target));
          const inFake = fake.resources().filter((r) => r.destinationCIDR === target.destinationCIDR);
          expect(inFake).toHaveLength(1);
          expect(inFake[0]?.routeOwner).toBe(cluster);
          await fresh((h) => routesOf(h).delete(at(), route));
        }
      });
    });
  });
}
