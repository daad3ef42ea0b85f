// The backend-service based external network load balancer (cloud.google.com/l4-rbs: enabled)
// against the fake Compute Engine over HTTP through the SDK: its shape, updates, backends, the
// Local health check, a switch to and from the target-pool one keeping the IP, the cluster's
// instance groups shared with internal Services, operations that take time and crashes between
// any two mutations; nothing left after a delete.

import { GcpComputeFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import type { AccountBinding, LoadBalancerSpec, LoadBalancers, ServiceTarget } from "../../provider.js";
import { isInProgress } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { gcpProvider } from "./index.js";
import { gceLoadBalancerName } from "./names.js";

const PROJECT = "rbs-project";
const REGION = "us-central1";
const A = `${REGION}-a`;
const B = `${REGION}-b`;
const RBS = { "cloud.google.com/l4-rbs": "enabled" };
const COLLECTIONS = [
  "addresses",
  "forwardingRules",
  "targetPools",
  "firewalls",
  "httpHealthChecks",
  "healthChecks",
  "backendServices",
  "instanceGroups",
];
let fake: GcpComputeFake;
let key: string;

beforeAll(async () => {
  fake = await GcpComputeFake.start({ spec: true });
  key = fake.createProject(PROJECT, { [REGION]: [A, B] }).key;
  for (const n of [0, 1]) fake.createInstance(PROJECT, { name: `node-${n}`, zone: A, tags: ["gke-node"] });
  fake.createInstance(PROJECT, { name: "node-2", zone: B, tags: ["gke-node"] });
});

afterAll(async () => {
  fake.spec?.assertClean();
  await fake.close();
});

beforeEach(() => {
  fake.resetFaults();
  fake.operationMs = 0;
});

const account = (): AccountBinding => ({
  name: "gcp",
  provider: "gcp",
  region: REGION,
  network: "default",
  endpoint: fake.url,
  credential: key,
  requestTimeoutMs: 5_000,
});

const MUTATION =
  /\.(insert|delete|patch|update|addInstances?|removeInstances?|setLabels|addHealthCheck|removeHealthCheck)$/;

/** The provider's load balancers; `crashAfter`: the Nth mutation's answer is lost and every later call refused. */
async function lbs(crashAfter?: number): Promise<{ p: LoadBalancers; ops: string[] }> {
  let mutations = 0;
  let crashed = false;
  const { provider, ops } = await bindRecorded(
    gcpProvider,
    account(),
    { operationPollMs: 20 },
    {
      before: (op) => {
        if (crashed) throw new Error(`crashed before ${op}`);
      },
      after: (op, answer) => {
        if (!MUTATION.test(op)) return answer;
        if (++mutations === crashAfter) {
          crashed = true;
          throw new Error(`crashed after ${op}`);
        }
        return answer;
      },
    },
  );
  if (provider.loadBalancers === undefined) throw new Error("no load balancers");
  return { p: provider.loadBalancers, ops };
}

let uid = 0;
const target = (): ServiceTarget => ({
  cluster: "prod",
  network: "default",
  scope: {},
  serviceUid: `${String(++uid).padStart(8, "0")}-2b3c-4d5e-8f60-718293a4b5c6`,
});
const backends = [`${A}/node-0`, `${A}/node-1`];
const rbs = (overrides: Partial<LoadBalancerSpec> = {}) =>
  sampleLoadBalancerSpec(backends, { serviceName: "default/web", annotations: RBS, ...overrides });
const LOCAL = {
  protocol: "HTTP" as const,
  port: 31888,
  path: "/healthz",
  intervalSeconds: 10,
  timeoutSeconds: 5,
  healthyThreshold: 2,
  unhealthyThreshold: 3,
};

const named = (collection: string, name: string) =>
  fake.list(PROJECT, collection).find((r) => r.name === name);
const last = (link: unknown) =>
  String(link ?? "")
    .split("/")
    .pop();
const tailOf = (link: unknown) => String(link ?? "").replace(/^.*\/projects\/[^/]+\//, "");
/** Every load-balancer resource in the fake, as "<collection>/<scope>/<name>". */
const inventory = () =>
  COLLECTIONS.flatMap((c) => fake.list(PROJECT, c).map((r) => `${c} ${tailOf(r.selfLink)}`)).sort();
const groupsIn = (name: string) =>
  (named("backendServices", name)?.backends as { group?: string }[] | undefined)?.map((b) =>
    tailOf(b.group),
  ) ?? [];

describe("l4-rbs: the backend-service based external network load balancer", () => {
  test("its shape: regional check, EXTERNAL backend service on the cluster's groups, EXTERNAL rule on the reserved address, firewalls; a repeat changes nothing", async () => {
    const { p, ops } = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const [ingress] = await settle(() => p.ensure(t, rbs()));
    const address = named("addresses", lbName);
    expect(ingress).toEqual({ ip: address?.address });
    expect(address).toMatchObject({ addressType: "EXTERNAL", networkTier: "PREMIUM", status: "IN_USE" });
    const rule = named("forwardingRules", lbName);
    expect(rule).toMatchObject({
      IPAddress: address?.address,
      IPProtocol: "TCP",
      portRange: "80-443",
      loadBalancingScheme: "EXTERNAL",
      networkTier: "PREMIUM",
    });
    expect(rule?.target).toBeUndefined();
    expect(tailOf(rule?.backendService)).toBe(`regions/${REGION}/backendServices/${lbName}`);
    const bs = named("backendServices", lbName);
    expect(bs).toMatchObject({ loadBalancingScheme: "EXTERNAL", protocol: "TCP", sessionAffinity: "NONE" });
    expect(((bs?.healthChecks as string[] | undefined) ?? []).map(tailOf)).toEqual([
      `regions/${REGION}/healthChecks/k8s-prod-node`,
    ]);
    expect(groupsIn(lbName)).toEqual([`zones/${A}/instanceGroups/k8s-ig--prod`]);
    const hc = fake.list(PROJECT, "healthChecks").find((h) => last(h.selfLink) === "k8s-prod-node");
    expect(tailOf(hc?.selfLink)).toBe(`regions/${REGION}/healthChecks/k8s-prod-node`);
    expect(hc).toMatchObject({ type: "HTTP", httpHealthCheck: { port: 10256, requestPath: "/healthz" } });
    expect(named("firewalls", `k8s-fw-${lbName}`)).toMatchObject({
      sourceRanges: ["0.0.0.0/0"],
      destinationRanges: [address?.address],
      targetTags: ["gke-node"],
      allowed: [{ IPProtocol: "tcp", ports: ["443", "80"] }],
    });
    expect(named("firewalls", "k8s-prod-node-rbs-hc")).toMatchObject({
      sourceRanges: ["130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"],
      allowed: [{ IPProtocol: "tcp", ports: ["10256"] }],
    });
    // Nothing of the target-pool kind, no global check.
    expect(named("targetPools", lbName)).toBeUndefined();
    expect(fake.list(PROJECT, "httpHealthChecks")).toEqual([]);
    expect((await p.get(t))?.backends).toEqual(backends);
    // listOwned: the spec digest, no backends digest (the groups are the cluster's).
    const page = await p.listOwned?.(undefined);
    const item = page?.items.find((i) => i.name === lbName);
    expect(item?.specDigest).toBeDefined();
    expect(item?.backendsDigest).toBeUndefined();
    expect(item?.ingress).toEqual([{ ip: address?.address }]);
    const before = ops.length;
    expect(await settle(() => p.ensure(t, rbs()))).toEqual([ingress]);
    expect(ops.slice(before).filter((o) => MUTATION.test(o))).toEqual([]);
    await settle(() => p.ensureDeleted(t));
    expect(inventory()).toEqual([]);
  });

  test("ports, source ranges, session affinity and tier change in place or by replacing the rule; the IP stays", async () => {
    const { p } = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const [first] = await settle(() => p.ensure(t, rbs()));
    const bsId = named("backendServices", lbName)?.id;
    const changed = rbs({
      listeners: [
        { protocol: "TCP", port: 8080, nodePort: 30080, proxyProtocol: false },
        { protocol: "TCP", port: 8443, nodePort: 30443, proxyProtocol: false },
      ],
      sourceRanges: ["10.0.0.0/8"],
      sessionAffinity: "ClientIP",
    });
    expect(await settle(() => p.ensure(t, changed))).toEqual([first]);
    expect(named("forwardingRules", lbName)).toMatchObject({ portRange: "8080-8443", IPAddress: first?.ip });
    expect(named("backendServices", lbName)).toMatchObject({ id: bsId, sessionAffinity: "CLIENT_IP" });
    expect(named("firewalls", `k8s-fw-${lbName}`)).toMatchObject({
      sourceRanges: ["10.0.0.0/8"],
      allowed: [{ IPProtocol: "tcp", ports: ["8080", "8443"] }],
    });
    // Standard tier: the address and rule of the other tier go and come back in it.
    const standard = { ...changed, annotations: { ...RBS, "cloud.google.com/network-tier": "Standard" } };
    const [ingress] = await settle(() => p.ensure(t, standard));
    expect(named("addresses", lbName)).toMatchObject({ networkTier: "STANDARD", address: ingress?.ip });
    expect(named("forwardingRules", lbName)).toMatchObject({ networkTier: "STANDARD" });
    // One protocol per backend service.
    await expect(
      p.ensure(
        t,
        rbs({
          listeners: [
            { protocol: "TCP", port: 53, nodePort: 30053, proxyProtocol: false },
            { protocol: "UDP", port: 53, nodePort: 30054, proxyProtocol: false },
          ],
        }),
      ),
    ).rejects.toThrow(/one protocol/);
    await settle(() => p.ensureDeleted(t));
    expect(inventory()).toEqual([]);
  });

  test("backends follow node changes through the cluster's groups; a UDP Service is UDP end to end", async () => {
    const { p } = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const udp = rbs({ listeners: [{ protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false }] });
    await settle(() => p.ensure(t, udp));
    expect(named("backendServices", lbName)).toMatchObject({ protocol: "UDP" });
    expect(named("forwardingRules", lbName)).toMatchObject({ IPProtocol: "UDP", portRange: "53-53" });
    const all = [...backends, `${B}/node-2`];
    expect(await settle(() => p.updateBackends(t, all))).toBeUndefined();
    expect(groupsIn(lbName).sort()).toEqual([
      `zones/${A}/instanceGroups/k8s-ig--prod`,
      `zones/${B}/instanceGroups/k8s-ig--prod`,
    ]);
    expect((await p.get(t))?.backends).toEqual(all);
    expect(await settle(() => p.updateBackends(t, [`${B}/node-2`]))).toBeUndefined();
    expect(groupsIn(lbName)).toEqual([`zones/${B}/instanceGroups/k8s-ig--prod`]);
    expect((await p.get(t))?.backends).toEqual([`${B}/node-2`]);
    await settle(() => p.ensureDeleted(t));
    expect(inventory()).toEqual([]);
  });

  test("externalTrafficPolicy Local: the Service's own regional check on healthCheckNodePort; back to Cluster deletes it", async () => {
    const { p } = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    await settle(() => p.ensure(t, rbs({ healthCheck: LOCAL })));
    const own = fake.list(PROJECT, "healthChecks").find((h) => h.name === lbName);
    expect(tailOf(own?.selfLink)).toBe(`regions/${REGION}/healthChecks/${lbName}`);
    expect(own).toMatchObject({ httpHealthCheck: { port: 31888, requestPath: "/healthz" } });
    expect(
      ((named("backendServices", lbName)?.healthChecks as string[] | undefined) ?? []).map(last),
    ).toEqual([lbName]);
    expect(named("firewalls", `k8s-${lbName}-rbs-hc`)).toMatchObject({
      allowed: [{ IPProtocol: "tcp", ports: ["31888"] }],
    });
    expect(named("healthChecks", "k8s-prod-node")).toBeUndefined();
    await settle(() => p.ensure(t, rbs()));
    expect(
      ((named("backendServices", lbName)?.healthChecks as string[] | undefined) ?? []).map(last),
    ).toEqual(["k8s-prod-node"]);
    expect(named("healthChecks", lbName)).toBeUndefined();
    expect(named("firewalls", `k8s-${lbName}-rbs-hc`)).toBeUndefined();
    await settle(() => p.ensureDeleted(t));
    expect(inventory()).toEqual([]);
  });

  test("target pool → RBS → target pool keeps the IP, each time with nothing of the other kind left", async () => {
    const { p } = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const pool = sampleLoadBalancerSpec(backends, { serviceName: "default/web", healthCheck: LOCAL });
    const [ip] = await settle(() => p.ensure(t, pool));
    expect(named("targetPools", lbName)).toBeDefined();
    const rbsKind = () =>
      inventory().filter(
        (r) => /^(backendServices|healthChecks|instanceGroups) /.test(r) || /-rbs-hc$/.test(r),
      );
    const poolKind = () =>
      inventory().filter((r) => /^(targetPools|httpHealthChecks) /.test(r) || /-http-hc$/.test(r));
    expect(rbsKind()).toEqual([]);

    expect(await settle(() => p.ensure(t, rbs({ healthCheck: LOCAL })))).toEqual([ip]);
    expect(poolKind()).toEqual([]);
    expect(named("forwardingRules", lbName)?.backendService).toBeDefined();
    expect(fake.list(PROJECT, "forwardingRules").map((r) => r.name)).toEqual([lbName]);
    expect((await p.get(t))?.backends).toEqual(backends);

    expect(await settle(() => p.ensure(t, pool))).toEqual([ip]);
    expect(rbsKind()).toEqual([]);
    expect(named("forwardingRules", lbName)?.target).toBeDefined();
    expect((await p.get(t))?.backends).toEqual(backends);
    // And to RBS again, then internal (an internal Service gets an internal address).
    expect(await settle(() => p.ensure(t, rbs()))).toEqual([ip]);
    expect(poolKind()).toEqual([]);
    await settle(() =>
      p.ensure(t, {
        ...rbs(),
        internal: true,
        annotations: { "networking.gke.io/load-balancer-type": "Internal" },
      }),
    );
    expect(named("addresses", lbName)).toMatchObject({ addressType: "INTERNAL" });
    expect(named("backendServices", lbName)).toMatchObject({ loadBalancingScheme: "INTERNAL" });
    expect(inventory().filter((r) => /-rbs-hc$|regions\/[^/]+\/healthChecks/.test(r))).toEqual([]);
    expect(await settle(() => p.ensure(t, rbs()))).not.toEqual([ip]);
    expect(named("backendServices", lbName)).toMatchObject({ loadBalancingScheme: "EXTERNAL" });
    await settle(() => p.ensureDeleted(t));
    expect(inventory()).toEqual([]);
  });

  test("an internal Service and an RBS one share the cluster's groups: deleting one keeps them for the other", async () => {
    const { p } = await lbs();
    const [ext, int] = [target(), target()];
    await settle(() => p.ensure(ext, rbs()));
    await settle(() =>
      p.ensure(int, {
        ...rbs(),
        internal: true,
        annotations: { "networking.gke.io/load-balancer-type": "Internal" },
      }),
    );
    const groups = fake.list(PROJECT, "instanceGroups").map((g) => tailOf(g.selfLink));
    expect(groups).toEqual([`zones/${A}/instanceGroups/k8s-ig--prod`]);
    await settle(() => p.ensureDeleted(ext));
    expect(fake.list(PROJECT, "instanceGroups").map((g) => tailOf(g.selfLink))).toEqual(groups);
    expect((await p.get(int))?.backends).toEqual(backends);
    await settle(() => p.ensure(ext, rbs()));
    await settle(() => p.ensureDeleted(int));
    expect(fake.list(PROJECT, "instanceGroups").map((g) => tailOf(g.selfLink))).toEqual(groups);
    expect((await p.get(ext))?.backends).toEqual(backends);
    await settle(() => p.ensureDeleted(ext));
    expect(inventory()).toEqual([]);
  });

  test("operations that take time: every step answers in progress, a new provider resumes, the same result", async () => {
    fake.operationMs = 120;
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    let sawProgress = false;
    let answer: unknown;
    for (let n = 0; n < 300; n++) {
      // A new provider each pass: nothing is remembered between passes but the cloud.
      answer = await (await lbs()).p.ensure(t, rbs());
      if (!isInProgress(answer)) break;
      sawProgress = true;
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(sawProgress).toBe(true);
    expect(answer).toEqual([{ ip: named("addresses", lbName)?.address }]);
    expect(named("forwardingRules", lbName)?.loadBalancingScheme).toBe("EXTERNAL");
    const pool = sampleLoadBalancerSpec(backends, { serviceName: "default/web" });
    expect(await settle(async () => (await lbs()).p.ensure(t, pool))).toEqual(answer);
    expect(named("backendServices", lbName)).toBeUndefined();
    expect(await settle(async () => (await lbs()).p.ensure(t, rbs()))).toEqual(answer);
    expect(named("targetPools", lbName)).toBeUndefined();
    await settle(async () => (await lbs()).p.ensureDeleted(t));
    expect(inventory()).toEqual([]);
  }, 300_000);

  test("a crash after every single mutation of ensure, of a switch and of ensureDeleted: no orphans, no duplicates", async () => {
    const probe = target();
    const counting = await lbs();
    const shape = async (t: ServiceTarget) => {
      const lbName = gceLoadBalancerName(t.serviceUid);
      return inventory().map((r) => r.replace(lbName, "<lb>"));
    };
    await settle(() => counting.p.ensure(probe, rbs()));
    const want = await shape(probe);
    const creates = counting.ops.filter((o) => MUTATION.test(o)).length;
    const n0 = counting.ops.length;
    await settle(() => counting.p.ensureDeleted(probe));
    const deletes = counting.ops.slice(n0).filter((o) => MUTATION.test(o)).length;
    expect(inventory()).toEqual([]);
    expect(creates).toBeGreaterThan(5);
    for (let n = 1; n <= creates; n++) {
      const t = target();
      const crashing = await lbs(n);
      await expect(settle(() => crashing.p.ensure(t, rbs()))).rejects.toThrow(/crashed/);
      await settle(async () => (await lbs()).p.ensure(t, rbs()));
      expect({ n, shape: await shape(t) }).toEqual({ n, shape: want });
      await settle(async () => (await lbs()).p.ensureDeleted(t));
      expect({ n, left: inventory() }).toEqual({ n, left: [] });
    }
    for (let n = 1; n <= deletes; n++) {
      const t = target();
      await settle(async () => (await lbs()).p.ensure(t, rbs()));
      const crashing = await lbs(n);
      await expect(settle(() => crashing.p.ensureDeleted(t))).rejects.toThrow(/crashed/);
      await settle(async () => (await lbs()).p.ensureDeleted(t));
      expect({ n, left: inventory() }).toEqual({ n, left: [] });
    }
    // A switch from the target pool, crashed after each of its mutations, then finished: the IP kept.
    const pool = sampleLoadBalancerSpec(backends, { serviceName: "default/web" });
    for (let n = 1; n <= 12; n++) {
      const t = target();
      const [ip] = await settle(async () => (await lbs()).p.ensure(t, pool));
      const crashing = await lbs(n);
      await settle(() => crashing.p.ensure(t, rbs())).catch((err: unknown) => {
        expect(String(err)).toMatch(/crashed/);
      });
      expect({ n, ingress: await settle(async () => (await lbs()).p.ensure(t, rbs())) }).toEqual({
        n,
        ingress: [ip],
      });
      expect({ n, shape: await shape(t) }).toEqual({ n, shape: want });
      await settle(async () => (await lbs()).p.ensureDeleted(t));
      expect({ n, left: inventory() }).toEqual({ n, left: [] });
    }
  }, 300_000);
});

describe("a Service that turns internal while its external load balancer is being built", () => {
  test("after any number of the external create's passes, the internal one is built and nothing external is left", async () => {
    for (let passes = 1; passes <= 6; passes++) {
      fake.operationMs = 100;
      const { p } = await lbs();
      const t = target();
      const external = sampleLoadBalancerSpec(backends, { serviceName: "default/web" });
      for (let i = 0; i < passes; i++) {
        await p.ensure(t, external);
        await new Promise((r) => setTimeout(r, 30));
      }
      const [ingress] = await settle(() =>
        p.ensure(t, sampleLoadBalancerSpec(backends, { serviceName: "default/web", internal: true })),
      );
      const lbName = gceLoadBalancerName(t.serviceUid);
      expect(named("addresses", lbName)).toMatchObject({ addressType: "INTERNAL", address: ingress?.ip });
      expect(named("forwardingRules", lbName)).toMatchObject({ loadBalancingScheme: "INTERNAL" });
      expect(named("targetPools", lbName)).toBeUndefined();
      expect(fake.list(PROJECT, "httpHealthChecks")).toEqual([]);
      await settle(() => p.ensureDeleted(t));
      expect(inventory()).toEqual([]);
    }
  }, 180_000);
});

describe("a Service deleted while its create's operations run", () => {
  test("after any number of the create's mutations, of each kind, the delete waits for them and leaves nothing", async () => {
    const internal = sampleLoadBalancerSpec(backends, { serviceName: "default/web", internal: true });
    const kinds = {
      pool: sampleLoadBalancerSpec(backends, { serviceName: "default/web" }),
      rbs: rbs(),
      internal,
    };
    const mutations = (ops: readonly string[]) => ops.filter((o) => MUTATION.test(o)).length;
    for (const [kind, spec] of Object.entries(kinds)) {
      // How many mutations a whole create makes, operations answering at once.
      const whole = await lbs();
      const probe = target();
      await settle(() => whole.p.ensure(probe, spec));
      const creates = mutations(whole.ops);
      await settle(() => whole.p.ensureDeleted(probe));
      expect({ kind, left: inventory() }).toEqual({ kind, left: [] });
      let racing = 0;
      for (let n = 1; n < creates; n++) {
        fake.operationMs = 60;
        const { p, ops } = await lbs();
        const t = target();
        // Passes until the create's nth mutation is issued; the delete starts while it runs.
        while (mutations(ops) < n) {
          await p.ensure(t, spec);
          if (mutations(ops) < n) await new Promise((r) => setTimeout(r, 20));
        }
        // Mostly one is running (a pass can also repeat an insert that ended meanwhile).
        if (fake.pendingOperations().length > 0) racing++;
        await settle(() => p.ensureDeleted(t));
        // Whatever an operation still running would make shows once it ends.
        await new Promise((r) => setTimeout(r, 150));
        expect({ kind, n, running: fake.pendingOperations(), left: inventory() }).toEqual({
          kind,
          n,
          running: [],
          left: [],
        });
        fake.operationMs = 0;
      }
      expect({ kind, racedInHalfOrMore: racing >= creates / 2 }).toEqual({ kind, racedInHalfOrMore: true });
    }
  }, 300_000);
});
