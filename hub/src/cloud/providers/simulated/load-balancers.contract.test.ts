// The simulated provider's load balancers against the real simulated cloud on a loopback port.
// Tests may import sim/; hub/src code never does.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import {
  type SimInstance,
  type SimLbInventory,
  type SimulatedCloud,
  startSimulatedCloud,
} from "../../../../../sim/src/cloud/index.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import {
  CloudError,
  isRetryable,
  NeedsEnsureError,
  OperationFailedError,
  SuspectAnswerError,
  TransientCloudError,
} from "../../errors.js";
import {
  backendsDigest,
  DIGEST_TAG_BACKENDS,
  DIGEST_TAG_SPEC,
  loadBalancerName,
  loadBalancerOwnerTags,
  loadBalancerSpecDigest,
  OWNER_TAG_CLUSTER,
  OWNER_TAG_SERVICE_UID,
} from "../../naming.js";
import {
  type AccountBinding,
  type InProgress,
  isInProgress,
  type LbIngress,
  type LbOwner,
  type LoadBalancerSpec,
  type LoadBalancers,
  type ServiceTarget,
} from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { simulatedProvider } from "./index.js";
import { subResourceNames } from "./load-balancers.js";

const REGION = "sim-east-1";
const CLUSTER = "c1";

let cloud: SimulatedCloud;
let apiKey: string;
let nodes: SimInstance[];

beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 7 });
  apiKey = cloud.createAccount("acme").apiKey;
  nodes = [0, 1, 2, 3].map((n) => cloud.createInstance("acme", { name: `node-${n}`, region: REGION }));
});

afterAll(async () => {
  await cloud.close();
});

beforeEach(() => {
  cloud.resetFaults();
  cloud.setAccountRateLimit("acme", 0);
  cloud.resetStats();
});

/** What the test's ctx.call does with one call: pass it on, fail it before it is sent, or lose its answer. */
type Interceptor = (op: string, n: number) => "pass" | "before" | "after";

/** A spec with the name and owner tags this provider derives from its owner, for asserting on the cloud. */
interface TestSpec extends LoadBalancerSpec {
  readonly name: string;
  readonly tags: Readonly<Record<string, string>>;
}

/** The owner whose tags these are (the hub addresses load balancers by owner only). */
function ownerOf(tags: Readonly<Record<string, string>>): LbOwner {
  return { cluster: tags[OWNER_TAG_CLUSTER] ?? "", serviceUid: tags[OWNER_TAG_SERVICE_UID] ?? "" };
}

/** That owner's Service as the hub names it in a call: its cluster in `network`. */
function targetOf(tags: Readonly<Record<string, string>>, network?: string): ServiceTarget {
  return { ...ownerOf(tags), ...(network !== undefined && { network }), scope: {} };
}

/** The provider's load balancers, called the way these tests name them: by (name, owner tags). */
interface NamedLoadBalancers {
  readonly capabilities: LoadBalancers["capabilities"];
  get(name: string, tags: Readonly<Record<string, string>>): ReturnType<LoadBalancers["get"]>;
  ensure(s: TestSpec, signal?: AbortSignal): ReturnType<LoadBalancers["ensure"]>;
  updateBackends(
    name: string,
    tags: Readonly<Record<string, string>>,
    backends: readonly string[],
  ): ReturnType<LoadBalancers["updateBackends"]>;
  ensureDeleted(
    name: string,
    tags: Readonly<Record<string, string>>,
  ): ReturnType<LoadBalancers["ensureDeleted"]>;
}

/** Calls as the hub makes them for a cluster in `network` (the cluster's, else the account's). */
function named(lbs: LoadBalancers, network?: string): NamedLoadBalancers {
  return {
    capabilities: lbs.capabilities,
    get: (_name, tags) => lbs.get(targetOf(tags, network)),
    ensure: (s, signal) => lbs.ensure(targetOf(s.tags, network), s, signal),
    updateBackends: (_name, tags, backends) => lbs.updateBackends(targetOf(tags, network), backends),
    ensureDeleted: (_name, tags) => lbs.ensureDeleted(targetOf(tags, network)),
  };
}

interface Harness {
  readonly lbs: NamedLoadBalancers;
  readonly raw: LoadBalancers;
  readonly ops: string[];
}

async function provider(
  opts: {
    intercept?: Interceptor;
    account?: Partial<AccountBinding>;
    options?: unknown;
    mangle?: (op: string, body: unknown) => unknown;
  } = {},
): Promise<Harness> {
  const account: AccountBinding = {
    name: "acme",
    provider: "simulated",
    region: REGION,
    endpoint: cloud.url,
    credential: apiKey,
    requestTimeoutMs: 2_000,
    ...opts.account,
  };
  // The interceptor decides once per call, before it is sent.
  const decided = new Map<number, ReturnType<Interceptor>>();
  const { provider, ops } = await bindRecorded(simulatedProvider, account, opts.options, {
    before: (op, n) => {
      const what = opts.intercept?.(op, n) ?? "pass";
      decided.set(n, what);
      if (what === "before") throw new Error(`simulated crash before ${op}`);
    },
    after: (op, answer, n) => {
      if (decided.get(n) === "after") throw new Error(`simulated crash after ${op}`);
      return opts.mangle === undefined ? answer : opts.mangle(op, answer);
    },
  });
  const lbs = provider.loadBalancers;
  if (lbs === undefined) throw new Error("the simulated provider has load balancers");
  return { lbs: named(lbs, account.network), raw: lbs, ops };
}

/** A synchronous account's answer: the ingress, never InProgress. */
function ready(answer: readonly LbIngress[] | InProgress): readonly LbIngress[] {
  if (isInProgress(answer)) throw new Error(`unexpected in-progress answer: ${answer.message}`);
  return answer;
}

let uidSeq = 0;
function spec(overrides: Partial<TestSpec> = {}): TestSpec {
  const uid = `uid-${++uidSeq}`;
  return {
    name: loadBalancerName(CLUSTER, uid),
    tags: loadBalancerOwnerTags(CLUSTER, uid),
    ...sampleLoadBalancerSpec(
      nodes
        .slice(0, 3)
        .map((n) => n.id)
        .sort(),
      overrides,
    ),
  };
}

/** Every load-balancer resource carrying `tags`. */
function owned(tags: Readonly<Record<string, string>>): SimLbInventory {
  const has = (t: Readonly<Record<string, string>>) => Object.entries(tags).every(([k, v]) => t[k] === v);
  const inv = cloud.inventory("acme");
  return {
    loadBalancers: inv.loadBalancers.filter((r) => has(r.tags)),
    listeners: inv.listeners.filter((r) => has(r.tags)),
    pools: inv.pools.filter((r) => has(r.tags)),
    healthChecks: inv.healthChecks.filter((r) => has(r.tags)),
    firewallRules: inv.firewallRules.filter((r) => has(r.tags)),
  };
}

function ownedCount(tags: Readonly<Record<string, string>>): number {
  const o = owned(tags);
  return (
    o.loadBalancers.length +
    o.listeners.length +
    o.pools.length +
    o.healthChecks.length +
    o.firewallRules.length
  );
}

/** Exactly one load balancer with every sub-resource of a two-port spec; no orphans, no duplicates. */
function expectConverged(s: TestSpec): void {
  const o = owned(s.tags);
  expect(o.loadBalancers.map((l) => l.name)).toEqual([s.name]);
  expect(o.listeners).toHaveLength(s.listeners.length);
  expect(o.pools).toHaveLength(s.listeners.length);
  expect(o.healthChecks).toHaveLength(s.listeners.length > 0 ? 1 : 0);
  expect(cloud.auditLoadBalancers({ account: "acme", tags: s.tags })).toEqual({
    orphans: [],
    duplicates: [],
  });
  const lb = o.loadBalancers[0]!;
  for (const p of o.pools) {
    expect(p.lbId).toBe(lb.id);
    expect([...p.members].sort()).toEqual([...s.backends].sort());
  }
}

const mutating = (op: string) => /\.(create|update|delete)$/.test(op);

describe("simulated provider - load balancers", () => {
  test("lb - capabilities: affinity, proxy protocol, internal; TCP, UDP, HTTP, HTTPS; 1,000 backends", async () => {
    expect((await provider()).lbs.capabilities).toEqual({
      sessionAffinity: true,
      proxyProtocol: true,
      internal: true,
      protocols: ["TCP", "UDP", "HTTP", "HTTPS"],
      maxBackends: 1000,
    });
  });

  test("lb - ensure creates everything once, in dependency order, with deterministic names and owner tags", async () => {
    const s = spec({ sourceRanges: ["203.0.113.0/24"] });
    const { lbs, ops } = await provider();
    const ingress = await lbs.ensure(s);
    const o = owned(s.tags);
    const lb = o.loadBalancers[0]!;
    expect(ingress).toEqual([{ ip: lb.ingress.ip, hostname: `${s.name}.${REGION}.lb.sim.example` }]);
    expect(ops.filter(mutating)).toEqual([
      "lb.create",
      "healthcheck.create",
      "pool.create",
      "pool.create",
      "listener.create",
      "listener.create",
      "firewall.create",
      "firewall.create",
      // Last, once the cloud matches: the digests listOwned reports to a restarted hub.
      "lb.update",
    ]);
    // With no load balancer listed, nothing but a health check can be there to adopt.
    expect(ops.filter((op) => !mutating(op)).sort()).toEqual(["healthcheck.list", "lb.list"]);
    expect(o.loadBalancers[0]?.tags).toMatchObject({
      [DIGEST_TAG_SPEC]: loadBalancerSpecDigest(s),
      [DIGEST_TAG_BACKENDS]: backendsDigest(s.backends),
    });
    const names = subResourceNames(s.name);
    expect(o.healthChecks.map((h) => h.name)).toEqual([names.healthCheck]);
    expect(o.pools.map((p) => p.name)).toEqual([names.pool("TCP", 80), names.pool("TCP", 443)]);
    expect(o.listeners.map((l) => [l.name, l.port, l.poolId])).toEqual([
      [`${s.name}-tcp-80`, 80, o.pools[0]!.id],
      [`${s.name}-tcp-443`, 443, o.pools[1]!.id],
    ]);
    expect(o.firewallRules.map((f) => [f.name, f.sourceCidrs])).toEqual([
      [`${s.name}-fw-tcp-80`, ["203.0.113.0/24"]],
      [`${s.name}-fw-tcp-443`, ["203.0.113.0/24"]],
    ]);
    expect(o.pools.map((p) => [p.targetPort, p.healthCheckId, p.sessionAffinity])).toEqual([
      [30080, o.healthChecks[0]!.id, "None"],
      [30443, o.healthChecks[0]!.id, "None"],
    ]);
    for (const r of [...o.listeners, ...o.pools, ...o.healthChecks, ...o.firewallRules])
      expect(r.tags).toEqual(s.tags);
    // The load balancer carries the digests besides the owner tags (checked above).
    expect(lb.tags).toMatchObject(s.tags);
    expect(lb.internal).toBe(false);
    expectConverged(s);
    expect(await lbs.get(s.name, s.tags)).toEqual({
      id: lb.id,
      name: s.name,
      owner: ownerOf(s.tags),
      ingress,
      backends: [...s.backends].sort(),
    });
  });

  test("lb - ensure twice is idempotent: nothing new, only the lists of one snapshot", async () => {
    const s = spec();
    const { lbs } = await provider();
    const first = await lbs.ensure(s);
    const before = owned(s.tags);
    const { lbs: again, ops } = await provider();
    expect(await again.ensure(s)).toEqual(first);
    expect(owned(s.tags)).toEqual(before);
    expect(ops.filter(mutating)).toEqual([]);
    expect(ops.length).toBeLessThanOrEqual(5);
  });

  test("lb - spec changes are made in place: same load balancer, kept ports keep their ids", async () => {
    const s = spec();
    const { lbs } = await provider();
    await lbs.ensure(s);
    const before = owned(s.tags);
    const lbId = before.loadBalancers[0]!.id;
    const changed: TestSpec = {
      ...s,
      listeners: [
        { protocol: "TCP", port: 80, nodePort: 31080, proxyProtocol: true },
        { protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false },
      ],
      backends: [nodes[1]!.id, nodes[3]!.id].sort(),
      healthCheck: { ...s.healthCheck, protocol: "HTTP", port: 32000, path: "/healthz", intervalSeconds: 5 },
      sourceRanges: ["198.51.100.0/24", "203.0.113.0/24"],
      sessionAffinity: "ClientIP",
      idleTimeoutSeconds: 300,
    };
    const { lbs: p2, ops } = await provider();
    await p2.ensure(changed);
    const after = owned(s.tags);
    expect(after.loadBalancers.map((l) => l.id)).toEqual([lbId]);
    const l80 = after.listeners.find((l) => l.port === 80)!;
    expect(l80.id).toBe(before.listeners.find((l) => l.port === 80)!.id);
    expect(l80).toMatchObject({ proxyProtocol: true, idleTimeoutSeconds: 300 });
    expect(after.listeners.map((l) => `${l.protocol}/${l.port}`).sort()).toEqual(["TCP/80", "UDP/53"]);
    const p80 = after.pools.find((p) => p.id === l80.poolId)!;
    expect(p80).toMatchObject({ targetPort: 31080, sessionAffinity: "ClientIP" });
    expect(after.healthChecks).toHaveLength(1);
    expect(after.healthChecks[0]).toMatchObject({
      id: before.healthChecks[0]!.id,
      protocol: "HTTP",
      port: 32000,
      path: "/healthz",
      intervalSeconds: 5,
    });
    expect(after.firewallRules.map((f) => [f.name, f.protocol, f.sourceCidrs]).sort()).toEqual([
      [`${s.name}-fw-tcp-80`, "TCP", ["198.51.100.0/24", "203.0.113.0/24"]],
      [`${s.name}-fw-udp-53`, "UDP", ["198.51.100.0/24", "203.0.113.0/24"]],
    ]);
    expect(ops).not.toContain("lb.create");
    expect(ops).not.toContain("lb.delete");
    expect(ops).toContain("pool.update");
    expect(ops).toContain("healthcheck.update");
    expectConverged(changed);
  });

  test("lb - internal cannot change in place: a plain CloudError, nothing changed", async () => {
    const s = spec();
    await (await provider()).lbs.ensure(s);
    const before = owned(s.tags);
    const err = await (await provider()).lbs.ensure({ ...s, internal: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect(isRetryable(err)).toBe(false);
    expect((err as Error).message).toMatch(/recreated/);
    expect(owned(s.tags)).toEqual(before);
    const internal = spec({ internal: true });
    const [ingress] = ready(await (await provider()).lbs.ensure(internal));
    expect(ingress?.ip).toMatch(/^10\./);
  });

  test("lb - SCTP, duplicate listeners and missing owner tags are refused before any call", async () => {
    const { lbs, ops } = await provider();
    const sctp = spec({ listeners: [{ protocol: "SCTP", port: 9, nodePort: 30009, proxyProtocol: false }] });
    const err = await lbs.ensure(sctp).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect(isRetryable(err)).toBe(false);
    expect((err as Error).message).toMatch(/SCTP/);
    const l = { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false } as const;
    await expect(lbs.ensure(spec({ listeners: [l, l] }))).rejects.toBeInstanceOf(CloudError);
    await expect(lbs.ensure(spec({ tags: {} }))).rejects.toThrow(/ownership tags/);
    await expect(lbs.ensureDeleted("x", {})).rejects.toThrow(/ownership tags/);
    expect(ops).toEqual([]);
  });

  test("lb - HTTP and HTTPS listeners share TCP firewall rules per port", async () => {
    const s = spec({
      listeners: [
        { protocol: "HTTP", port: 80, nodePort: 30080, proxyProtocol: false },
        { protocol: "HTTPS", port: 443, nodePort: 30443, proxyProtocol: false },
        { protocol: "UDP", port: 443, nodePort: 30444, proxyProtocol: false },
      ],
    });
    await (await provider()).lbs.ensure(s);
    const o = owned(s.tags);
    expect(o.listeners.map((l) => l.protocol)).toEqual(["HTTP", "HTTPS", "UDP"]);
    expect(o.firewallRules.map((f) => f.name)).toEqual([
      `${s.name}-fw-tcp-80`,
      `${s.name}-fw-tcp-443`,
      `${s.name}-fw-udp-443`,
    ]);
    expect(o.firewallRules[0]!.sourceCidrs).toEqual(["0.0.0.0/0", "::/0"]);
    expectConverged(s);
  });

  test.each(["before", "after"] as const)(
    "lb - crash at every create (%s the call), then ensure again: one load balancer, no orphans, no duplicates",
    async (mode) => {
      const creates = 8; // lb, health check, 2 pools, 2 listeners, 2 firewall rules
      for (let k = 1; k <= creates; k++) {
        const s = spec();
        let seen = 0;
        const crashing = await provider({
          intercept: (op) => (op.endsWith(".create") && ++seen === k ? mode : "pass"),
        });
        await expect(crashing.lbs.ensure(s)).rejects.toThrow(/simulated crash/);
        expect(ownedCount(s.tags)).toBe(mode === "after" ? k : k - 1);
        const { lbs, ops } = await provider();
        await lbs.ensure(s);
        expectConverged(s);
        // Adoption, not re-creation: exactly the missing resources were created.
        expect(ops.filter((op) => op.endsWith(".create"))).toHaveLength(
          creates - (mode === "after" ? k : k - 1),
        );
        await lbs.ensureDeleted(s.name, s.tags);
        expect(ownedCount(s.tags)).toBe(0);
      }
    },
  );

  test("lb - crash at every change of a spec update (creates, updates and deletes), then converge", async () => {
    const base = spec();
    const { lbs } = await provider();
    await lbs.ensure(base);
    const target = (s: TestSpec): TestSpec => ({
      ...s,
      listeners: [
        { protocol: "TCP", port: 443, nodePort: 30443, proxyProtocol: true },
        { protocol: "TCP", port: 8443, nodePort: 30843, proxyProtocol: false },
      ],
      backends: [nodes[0]!.id],
      sourceRanges: ["10.0.0.0/8"],
      sessionAffinity: "ClientIP",
    });
    // Count the changes once, then crash at each of them in a fresh copy.
    const probe = await provider();
    await probe.lbs.ensure(target(base));
    const changes = probe.ops.filter(mutating).length;
    expect(changes).toBeGreaterThanOrEqual(8);
    for (let k = 1; k <= changes; k++) {
      const s = spec();
      await (await provider()).lbs.ensure(s);
      const lbId = owned(s.tags).loadBalancers[0]!.id;
      let seen = 0;
      const crashing = await provider({
        intercept: (op) => (mutating(op) && ++seen === k ? "after" : "pass"),
      });
      await expect(crashing.lbs.ensure(target(s))).rejects.toThrow(/simulated crash/);
      await (await provider()).lbs.ensure(target(s));
      expectConverged(target(s));
      expect(owned(s.tags).loadBalancers[0]!.id).toBe(lbId);
      await (await provider()).lbs.ensureDeleted(s.name, s.tags);
      expect(ownedCount(s.tags)).toBe(0);
    }
  });

  test("lb - an aborted ensure is TransientCloudError and the next ensure finishes the job", async () => {
    const s = spec();
    cloud.setFaults({ latencyMs: 30 }, "acme");
    const abort = new AbortController();
    const { lbs } = await provider({
      intercept: (op) => {
        if (op === "listener.create") abort.abort();
        return "pass";
      },
    });
    await expect(lbs.ensure(s, abort.signal)).rejects.toBeInstanceOf(TransientCloudError);
    cloud.resetFaults();
    await (await provider()).lbs.ensure(s);
    expectConverged(s);
  });

  test("lb - duplicates of an earlier attempt are repaired: the oldest is adopted, the rest deleted", async () => {
    const s = spec();
    const first = cloud.createLoadBalancer("acme", { name: s.name, region: REGION, tags: s.tags });
    const second = cloud.createLoadBalancer("acme", { name: s.name, region: REGION, tags: s.tags });
    // The second attempt got as far as a pool and a listener.
    const names = subResourceNames(s.name);
    const pool = cloud.createPool("acme", {
      name: names.pool("TCP", 80),
      lbId: second.id,
      protocol: "TCP",
      targetPort: 30080,
      tags: s.tags,
    });
    cloud.createListener("acme", {
      name: `${s.name}-tcp-80`,
      lbId: second.id,
      protocol: "TCP",
      port: 80,
      poolId: pool.id,
      tags: s.tags,
    });
    cloud.createHealthCheck("acme", {
      name: names.healthCheck,
      region: REGION,
      protocol: "TCP",
      port: 1,
      tags: s.tags,
    });
    cloud.createHealthCheck("acme", {
      name: names.healthCheck,
      region: REGION,
      protocol: "TCP",
      port: 1,
      tags: s.tags,
    });
    expect(cloud.auditLoadBalancers({ tags: s.tags }).duplicates.map((d) => d.kind)).toEqual([
      "load-balancer",
      "health-check",
    ]);
    const [ingress] = ready(await (await provider()).lbs.ensure(s));
    expect(ingress?.ip).toBe(first.ingress.ip);
    expect(owned(s.tags).loadBalancers.map((l) => l.id)).toEqual([first.id]);
    expectConverged(s);
  });

  test("lb - a health check left by an earlier attempt without its load balancer is adopted, not doubled", async () => {
    const s = spec();
    const hc = cloud.createHealthCheck("acme", {
      name: subResourceNames(s.name).healthCheck,
      region: REGION,
      protocol: "TCP",
      port: 1,
      tags: s.tags,
    });
    await (await provider()).lbs.ensure(s);
    expectConverged(s);
    expect(owned(s.tags).healthChecks.map((h) => h.id)).toEqual([hc.id]);
  });

  test("lb - updateBackends sets the members of every owned pool and nothing else", async () => {
    const s = spec();
    await (await provider()).lbs.ensure(s);
    const before = owned(s.tags);
    const { lbs, ops } = await provider();
    await lbs.updateBackends(s.name, s.tags, [nodes[3]!.id, nodes[0]!.id]);
    const after = owned(s.tags);
    for (const p of after.pools) expect([...p.members].sort()).toEqual([nodes[0]!.id, nodes[3]!.id].sort());
    expect(after.listeners).toEqual(before.listeners);
    expect(ops.filter(mutating)).toEqual(["pool.update", "pool.update", "lb.update"]);
    expect(after.loadBalancers[0]?.tags[DIGEST_TAG_BACKENDS]).toBe(
      backendsDigest([nodes[0]!.id, nodes[3]!.id]),
    );
    const { lbs: again, ops: againOps } = await provider();
    await again.updateBackends(s.name, s.tags, [nodes[0]!.id, nodes[3]!.id]);
    expect(againOps.filter(mutating)).toEqual([]);
    expect((await again.get(s.name, s.tags))?.backends).toEqual([nodes[0]!.id, nodes[3]!.id].sort());
    await expect(again.updateBackends(spec().name, spec().tags, [])).rejects.toBeInstanceOf(
      SuspectAnswerError,
    );
  });

  test("lb - get: absent is undefined; a same-named load balancer without the owner tags is not ours", async () => {
    const s = spec();
    const { lbs } = await provider();
    expect(await lbs.get(s.name, s.tags)).toBeUndefined();
    cloud.createLoadBalancer("acme", { name: s.name, region: REGION, tags: { other: "owner" } });
    cloud.createLoadBalancer("acme", {
      name: s.name,
      region: REGION,
      tags: { [Object.keys(s.tags)[0]!]: "c1" },
    });
    expect(await lbs.get(s.name, s.tags)).toBeUndefined();
  });

  test("lb - ensureDeleted leaves nothing owned, is idempotent, and spares what is not ours", async () => {
    const s = spec();
    const other = spec();
    await (await provider()).lbs.ensure(s);
    await (await provider()).lbs.ensure(other);
    // Same name, not our tags: a foreign load balancer with a foreign firewall rule.
    const foreign = cloud.createLoadBalancer("acme", { name: s.name, region: REGION, tags: { team: "x" } });
    cloud.createFirewallRule("acme", {
      name: `${s.name}-fw-tcp-80`,
      lbId: foreign.id,
      protocol: "TCP",
      port: 80,
      sourceCidrs: ["0.0.0.0/0"],
      tags: { team: "x" },
    });
    const partial = cloud.createLoadBalancer("acme", {
      name: s.name,
      region: REGION,
      tags: { [Object.keys(s.tags)[0]!]: CLUSTER },
    });
    const { lbs, ops } = await provider();
    await lbs.ensureDeleted(s.name, s.tags);
    expect(ownedCount(s.tags)).toBe(0);
    expect(ops.filter((op) => op === "lb.delete")).toHaveLength(1);
    const names = cloud.loadBalancers("acme").map((l) => l.id);
    expect(names).toContain(foreign.id);
    expect(names).toContain(partial.id);
    expect(cloud.firewallRules("acme").filter((f) => f.lbId === foreign.id)).toHaveLength(1);
    expectConverged(other);
    const { lbs: again, ops: againOps } = await provider();
    await again.ensureDeleted(s.name, s.tags);
    expect(againOps.filter(mutating)).toEqual([]);
    expect(againOps).toHaveLength(5);
  });

  test("lb - ensureDeleted cleans up orphans whose load balancer is already gone", async () => {
    const s = spec();
    await (await provider()).lbs.ensure(s);
    const o = owned(s.tags);
    for (const l of o.listeners) cloud.deleteLbResource(l.id);
    cloud.deleteLbResource(o.loadBalancers[0]!.id);
    const audit = cloud.auditLoadBalancers({ tags: s.tags });
    expect(audit.orphans.length).toBeGreaterThanOrEqual(4); // 2 pools, 2 firewall rules
    await (await provider()).lbs.ensureDeleted(s.name, s.tags);
    expect(ownedCount(s.tags)).toBe(0);
  });

  test("lb - ensureDeleted lists again after deleting: an item a list dropped is found and deleted", async () => {
    const s = spec();
    await (await provider()).lbs.ensure(s);
    let firstPoolList = true;
    const { lbs, ops } = await provider({
      mangle: (op, body) => {
        if (op !== "pool.list" || !firstPoolList) return body;
        firstPoolList = false;
        return { pools: [] }; // the first pool list hides both pools
      },
    });
    await lbs.ensureDeleted(s.name, s.tags);
    expect(ownedCount(s.tags)).toBe(0);
    expect(ops.filter((op) => op === "pool.list").length).toBeGreaterThanOrEqual(3);
  });

  test("lb - ensureDeleted gives up with TransientCloudError while something it may not delete holds on", async () => {
    const s = spec();
    await (await provider()).lbs.ensure(s);
    const o = owned(s.tags);
    // A listener someone else added to our load balancer, on our pool: never ours to delete.
    cloud.createListener("acme", {
      name: "theirs",
      lbId: o.loadBalancers[0]!.id,
      protocol: "TCP",
      port: 9999,
      poolId: o.pools[0]!.id,
      tags: { team: "x" },
    });
    const err = await (await provider()).lbs.ensureDeleted(s.name, s.tags).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientCloudError);
    expect((err as Error).message).toMatch(/still listed/);
    expect(cloud.listeners("acme").filter((l) => l.name === "theirs")).toHaveLength(1);
  });

  test("lb - under 30% errors and throttling, repeated ensure converges: no duplicates, no orphans", async () => {
    // 12.5% throttled, then 20% of the rest 500/503: 30% of calls fail.
    const faults = { errorRate: 0.2, throttleRate: 0.125, throttleRetryAfterSeconds: 0 };
    cloud.setFaults(faults, "acme");
    const specs = [spec(), spec(), spec()];
    let failures = 0;
    for (const s of specs) {
      let ok = false;
      for (let attempt = 0; attempt < 300 && !ok; attempt++) {
        ok = await (await provider()).lbs
          .ensure(s)
          .then(() => true)
          .catch((err: unknown) => {
            expect(isRetryable(err)).toBe(true);
            failures++;
            return false;
          });
      }
      expect(ok).toBe(true);
      cloud.resetFaults("acme");
      expectConverged(s);
      cloud.setFaults(faults, "acme");
    }
    for (const s of specs) {
      let ok = false;
      for (let attempt = 0; attempt < 300 && !ok; attempt++) {
        ok = await (await provider()).lbs
          .ensureDeleted(s.name, s.tags)
          .then(() => true)
          .catch(() => false);
      }
      expect(ok).toBe(true);
      expect(ownedCount(s.tags)).toBe(0);
    }
    expect(failures).toBeGreaterThan(0);
  });

  test("lb - lost answers, dropped and empty lists: faulty runs may leave debris, a clean run repairs it", async () => {
    const s = spec();
    cloud.setFaults({ lostResponseRate: 0.3, dropFromListRate: 0.2, emptyListRate: 0.1 }, "acme");
    for (let n = 0; n < 15; n++) await (await provider()).lbs.ensure(s).catch(() => undefined);
    cloud.resetFaults("acme");
    const { lbs } = await provider();
    await lbs.ensure(s);
    expectConverged(s);
    await lbs.ensureDeleted(s.name, s.tags);
    expect(ownedCount(s.tags)).toBe(0);
  });

  test("lb - a bound network is where the load balancer goes", async () => {
    const net = "vpc-lbnet001";
    cloud.createInstance("acme", { name: "in-net", region: REGION, network: net });
    const s = spec({ backends: [] });
    await (await provider({ account: { network: net } })).lbs.ensure(s);
    expect(owned(s.tags).loadBalancers[0]?.network).toBe(net);
  });

  test("lb - the provider takes no account options (asynchrony is the cloud's): any is refused, named", async () => {
    await expect(provider({ options: { asyncPolls: 2 } })).rejects.toThrow(/^options: .*"asyncPolls"/);
  });
});

/**
 * An asynchronous cloud account: its load balancers go through PENDING_CREATE and
 * PENDING_DELETE for a few reads, and a create may end in ERROR. Two providers bound to it are
 * two hub replicas: what one started, the other finds in the cloud.
 */
describe("simulated provider - load balancers on an asynchronous cloud", () => {
  const ACCOUNT = "slow";
  let slowKey: string;
  let slowNodes: string[];

  beforeAll(() => {
    slowKey = cloud.createAccount(ACCOUNT).apiKey;
    cloud.setAccountRateLimit(ACCOUNT, 0);
    slowNodes = [0, 1]
      .map((n) => cloud.createInstance(ACCOUNT, { name: `slow-${n}`, region: REGION }).id)
      .sort();
  });

  beforeEach(() => {
    cloud.setLoadBalancerAsync(ACCOUNT, { polls: 2, pollMs: 40, failRate: 0 });
    cloud.failNextLoadBalancerCreates(ACCOUNT, 0);
  });

  /** One hub replica: a provider of its own, remembering nothing of the other's calls. */
  const replica = () => provider({ account: { name: ACCOUNT, credential: slowKey } });
  const slowSpec = () => spec({ backends: slowNodes });
  /** Every load-balancer resource of the account carrying `tags`. */
  const countIn = (tags: Readonly<Record<string, string>>): number => {
    const has = (t: Readonly<Record<string, string>>) => Object.entries(tags).every(([k, v]) => t[k] === v);
    return Object.values(cloud.inventory(ACCOUNT)).reduce(
      (n, items: readonly { tags: Readonly<Record<string, string>> }[]) =>
        n + items.filter((r) => has(r.tags)).length,
      0,
    );
  };
  const lbsOf = (s: TestSpec) => cloud.loadBalancers(ACCOUNT).filter((l) => l.name === s.name);

  /** Calls `step` until it answers something other than InProgress; the answers, in order. */
  async function untilDone<T>(step: () => Promise<T | InProgress>, max = 20): Promise<Array<T | InProgress>> {
    const answers: Array<T | InProgress> = [];
    for (let i = 0; i < max; i++) {
      const answer = await step();
      answers.push(answer);
      if (!isInProgress(answer)) return answers;
    }
    throw new Error(`still in progress after ${max} calls`);
  }

  function expectConvergedIn(s: TestSpec): void {
    const inv = cloud.inventory(ACCOUNT);
    const has = (t: Readonly<Record<string, string>>) => Object.entries(s.tags).every(([k, v]) => t[k] === v);
    expect(inv.loadBalancers.filter((l) => has(l.tags)).map((l) => [l.name, l.status])).toEqual([
      [s.name, "ACTIVE"],
    ]);
    expect(inv.listeners.filter((l) => has(l.tags))).toHaveLength(s.listeners.length);
    const pools = inv.pools.filter((l) => has(l.tags));
    expect(pools).toHaveLength(s.listeners.length);
    for (const p of pools) expect([...p.members].sort()).toEqual([...s.backends].sort());
    expect(cloud.auditLoadBalancers({ account: ACCOUNT, tags: s.tags })).toEqual({
      orphans: [],
      duplicates: [],
    });
  }

  test("lb async - one replica starts a create; the other sees it in progress in the cloud, then finishes it", async () => {
    const [a, b] = [await replica(), await replica()];
    const s = slowSpec();
    const started = await a.lbs.ensure(s);
    expect(started).toMatchObject({ kind: "in-progress", retryAfterMs: 40 });
    expect(lbsOf(s).map((l) => l.status)).toEqual(["PENDING_CREATE"]);

    const answers = await untilDone(() => b.lbs.ensure(s));
    // Two reads of PENDING_CREATE (the cloud's polls), then ACTIVE: b built it.
    expect(answers.slice(0, -1)).toEqual([
      expect.objectContaining({ kind: "in-progress", retryAfterMs: 40 }),
      expect.objectContaining({ kind: "in-progress", retryAfterMs: 40 }),
    ]);
    expect(ready(answers.at(-1) as readonly LbIngress[] | InProgress)[0]?.ip).toBeDefined();
    expectConvergedIn(s);
    // Ready: a repeat by either replica is at once, and changes nothing.
    const before = a.ops.length;
    expect(isInProgress(await a.lbs.ensure(s))).toBe(false);
    expect(a.ops.slice(before).filter(mutating)).toEqual([]);
  });

  test("lb async - a delete one replica starts is PENDING_DELETE for the other, which waits it out", async () => {
    const [a, b] = [await replica(), await replica()];
    const s = slowSpec();
    await untilDone(() => a.lbs.ensure(s));
    expect(isInProgress(await a.lbs.ensureDeleted(s.name, s.tags))).toBe(true);
    expect(lbsOf(s).map((l) => l.status)).toEqual(["PENDING_DELETE"]);
    // Its sub-resources went before it; the load balancer itself is the cloud's to finish.
    expect(countIn(s.tags)).toBe(1);
    const answers = await untilDone(() => b.lbs.ensureDeleted(s.name, s.tags));
    expect(answers.slice(0, -1).every(isInProgress)).toBe(true);
    expect(answers.at(-1)).toBeUndefined();
    expect(countIn(s.tags)).toBe(0);
    expect(await a.lbs.ensureDeleted(s.name, s.tags)).toBeUndefined();
  });

  test("lb async - a create that fails in the cloud is OperationFailedError on the next call, whichever replica makes it; the call after replaces it: one load balancer", async () => {
    const [a, b] = [await replica(), await replica()];
    const s = slowSpec();
    cloud.failNextLoadBalancerCreates(ACCOUNT, 1);
    expect(isInProgress(await a.lbs.ensure(s))).toBe(true);
    // b has never heard of this create: the failure is the cloud's to tell.
    let failure: unknown;
    for (let i = 0; i < 5 && failure === undefined; i++) {
      failure = await b.lbs.ensure(s).then(
        (answer) => {
          expect(isInProgress(answer)).toBe(true);
          return undefined;
        },
        (err: unknown) => err,
      );
    }
    expect(failure).toBeInstanceOf(OperationFailedError);
    expect(isRetryable(failure)).toBe(true);
    expect((failure as Error).message).toContain(s.name);
    expect((failure as Error).message).toMatch(
      /failed in the cloud: provisioning of load balancer .* failed/,
    );
    expect(lbsOf(s).map((l) => l.status)).toEqual(["ERROR"]);

    // Reported once: the next call (a, this time) replaces it rather than failing again.
    const answers = await untilDone(() => a.lbs.ensure(s));
    expect(answers.slice(0, -1).every(isInProgress)).toBe(true);
    expect(ready(answers.at(-1) as readonly LbIngress[] | InProgress)[0]?.ip).toBeDefined();
    expectConvergedIn(s);
    await untilDone(() => b.lbs.ensureDeleted(s.name, s.tags));
    expect(countIn(s.tags)).toBe(0);
  });

  test("lb async - on a synchronous account a failed create is reported by the same ensure, then replaced by the next", async () => {
    cloud.setLoadBalancerAsync(ACCOUNT, { polls: 0 });
    cloud.failNextLoadBalancerCreates(ACCOUNT, 1);
    const a = await replica();
    const s = slowSpec();
    await expect(a.lbs.ensure(s)).rejects.toBeInstanceOf(OperationFailedError);
    expect(lbsOf(s).map((l) => l.status)).toEqual(["ERROR"]);
    // Another replica's next ensure: the reported one goes, a new one works.
    expect(ready(await (await replica()).lbs.ensure(s))[0]?.ip).toBeDefined();
    expectConvergedIn(s);
  });

  test("lb async - updateBackends waits out PENDING_*, leaves an ERROR one to ensure; ensureDeleted of a provisioning one waits, then deletes", async () => {
    const a = await replica();
    const s = slowSpec();
    expect(isInProgress(await a.lbs.ensure(s))).toBe(true);
    expect(isInProgress(await a.lbs.updateBackends(s.name, s.tags, slowNodes.slice(0, 1)))).toBe(true);
    const answers = await untilDone(() => a.lbs.ensureDeleted(s.name, s.tags));
    expect(answers.length).toBeGreaterThan(2);
    expect(answers.at(-1)).toBeUndefined();
    expect(countIn(s.tags)).toBe(0);

    cloud.setLoadBalancerAsync(ACCOUNT, { polls: 0 });
    cloud.failNextLoadBalancerCreates(ACCOUNT, 1);
    const f = slowSpec();
    await expect(a.lbs.ensure(f)).rejects.toBeInstanceOf(OperationFailedError);
    await expect(a.lbs.updateBackends(f.name, f.tags, slowNodes)).rejects.toBeInstanceOf(NeedsEnsureError);
    // Deleting a failed one works like any other.
    expect(await a.lbs.ensureDeleted(f.name, f.tags)).toBeUndefined();
    expect(countIn(f.tags)).toBe(0);
  });

  test("lb async - a load balancer deleted by hand while provisioning is created again", async () => {
    const a = await replica();
    const s = slowSpec();
    expect(isInProgress(await a.lbs.ensure(s))).toBe(true);
    const [first] = lbsOf(s);
    cloud.deleteLbResource(first?.id ?? "");
    expect(isInProgress(await a.lbs.ensure(s))).toBe(true);
    expect(lbsOf(s).map((l) => [l.status, l.id === first?.id])).toEqual([["PENDING_CREATE", false]]);
    await untilDone(() => a.lbs.ensure(s));
    expectConvergedIn(s);
  });
});
