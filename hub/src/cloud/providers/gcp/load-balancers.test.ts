// The gcp load balancers beyond the conformance suite, against the fake Compute Engine over
// HTTP through the SDK: loadBalancerIP and the network tier on the external load balancer,
// adoption of what cloud-provider-gcp built (only with adoptFrom), and the internal load
// balancer with the cluster's shared instance groups.

import { GcpComputeFake, putUpstreamExternalLb, putUpstreamInternalLb } from "@fleet-ccm/sim";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import type { AccountBinding, LoadBalancerSpec, LoadBalancers, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { gcpProvider } from "./index.js";
import { gceLoadBalancerName } from "./names.js";

const PROJECT = "lb-project";
const REGION = "us-central1";
const A = `${REGION}-a`;
const B = `${REGION}-b`;
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

async function lbs(): Promise<LoadBalancers> {
  const { provider } = await bindRecorded(gcpProvider, account(), { operationPollMs: 20 });
  if (provider.loadBalancers === undefined) throw new Error("no load balancers");
  return provider.loadBalancers;
}

let uid = 0;
const target = (adoptFrom?: string): ServiceTarget => ({
  cluster: "prod",
  network: "default",
  scope: adoptFrom === undefined ? {} : { adoptFrom: { vendorCcmClusterName: adoptFrom } },
  serviceUid: `${String(++uid).padStart(8, "0")}-1a2b-4c3d-8e4f-5a6b7c8d9e0f`,
});
const backends = [`${A}/node-0`, `${A}/node-1`];

const named = (collection: string, name: string) =>
  fake.list(PROJECT, collection).find((r) => r.name === name);
const poolChecks = (name: string) =>
  ((named("targetPools", name)?.healthChecks as string[] | undefined) ?? []).map((l) => l.split("/").pop());
const last = (link: unknown) =>
  String(link ?? "")
    .split("/")
    .pop();
/** Everything of the Service's name left in the fake (its own resources; shared ones apart). */
const leftOf = (lbName: string) =>
  [
    "addresses",
    "forwardingRules",
    "targetPools",
    "firewalls",
    "httpHealthChecks",
    "healthChecks",
    "backendServices",
  ]
    .flatMap((c) => fake.list(PROJECT, c).map((r) => `${c}/${String(r.name)}`))
    .filter((n) => n.includes(lbName));

describe("external: loadBalancerIP", () => {
  test("a user-reserved regional address is used and never deleted; the Service's own address goes once unused", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const [first] = await settle(() => p.ensure(t, sampleLoadBalancerSpec(backends)));
    expect(first?.ip).toBe(named("addresses", lbName)?.address);
    const user = fake.put(PROJECT, `regions/${REGION}`, "addresses", {
      name: "user-ip",
      description: "mine",
    });
    const spec = sampleLoadBalancerSpec(backends, { loadBalancerIP: String(user.address) });
    const [ingress] = await settle(() => p.ensure(t, spec));
    expect(ingress).toEqual({ ip: user.address });
    expect(named("forwardingRules", lbName)?.IPAddress).toBe(user.address);
    expect(named("firewalls", `k8s-fw-${lbName}`)?.destinationRanges).toEqual([user.address]);
    // The Service's own reservation went once the rule moved to the user's.
    expect(named("addresses", lbName)).toBeUndefined();
    expect(named("addresses", "user-ip")?.status).toBe("IN_USE");
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
    expect(named("addresses", "user-ip")).toMatchObject({ description: "mine", status: "RESERVED" });
  });

  test("a requested IP of the other tier, or neither reserved nor the load balancer's, is refused before any change", async () => {
    const p = await lbs();
    const t = target();
    const standard = fake.put(PROJECT, `regions/${REGION}`, "addresses", {
      name: "user-standard",
      networkTier: "STANDARD",
    });
    await expect(
      p.ensure(t, sampleLoadBalancerSpec(backends, { loadBalancerIP: String(standard.address) })),
    ).rejects.toThrow(/STANDARD network tier; the Service needs PREMIUM/);
    await expect(
      p.ensure(t, sampleLoadBalancerSpec(backends, { loadBalancerIP: "34.1.2.3" })),
    ).rejects.toThrow(/neither a static address/);
    expect(leftOf(gceLoadBalancerName(t.serviceUid))).toEqual([]);
    // The tier asked for matches: used.
    const spec = sampleLoadBalancerSpec(backends, {
      loadBalancerIP: String(standard.address),
      annotations: { "cloud.google.com/network-tier": "Standard" },
    });
    expect(await settle(() => p.ensure(t, spec))).toEqual([{ ip: standard.address }]);
    await settle(() => p.ensureDeleted(t));
    expect(named("addresses", "user-standard")).toBeDefined();
  });
});

describe("external: cloud.google.com/network-tier", () => {
  test("Standard builds the address and rule in it; Premium asked later replaces both (upstream's mismatch handling)", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const tier = (v: string) =>
      sampleLoadBalancerSpec(backends, { annotations: { "cloud.google.com/network-tier": v } });
    const [standard] = await settle(() => p.ensure(t, tier("Standard")));
    expect(named("addresses", lbName)?.networkTier).toBe("STANDARD");
    expect(named("forwardingRules", lbName)).toMatchObject({
      networkTier: "STANDARD",
      IPAddress: standard?.ip,
    });
    const [premium] = await settle(() => p.ensure(t, tier("Premium")));
    expect(premium?.ip).not.toBe(standard?.ip);
    expect(named("addresses", lbName)).toMatchObject({ networkTier: "PREMIUM", address: premium?.ip });
    expect(named("forwardingRules", lbName)).toMatchObject({
      networkTier: "PREMIUM",
      IPAddress: premium?.ip,
    });
    // Without the annotation nothing is torn down (upstream leaves the tier as it is then).
    expect(await settle(() => p.ensure(t, sampleLoadBalancerSpec(backends)))).toEqual([premium]);
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
  });

  test("a tier upstream does not know is refused as an annotation error; l4-rbs enabled is accepted", async () => {
    const p = await lbs();
    expect(() => p.checkAnnotations?.({ "cloud.google.com/network-tier": "Gold" })).toThrow(AnnotationError);
    expect(() => p.checkAnnotations?.({ "cloud.google.com/l4-rbs": "enabled" })).not.toThrow();
    expect(() => p.checkAnnotations?.({ "cloud.google.com/network-tier": "Standard" })).not.toThrow();
    const spec = sampleLoadBalancerSpec(backends, {
      annotations: { "cloud.google.com/network-tier": "Gold" },
    });
    await expect(p.ensure(target(), spec)).rejects.toBeInstanceOf(AnnotationError);
  });
});

describe("external: health check changed in place", () => {
  test("externalTrafficPolicy Local → Cluster swaps the pool's check and deletes the Service's own", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const local: LoadBalancerSpec = sampleLoadBalancerSpec(backends, {
      healthCheck: {
        protocol: "HTTP",
        port: 31888,
        path: "/healthz",
        intervalSeconds: 10,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 3,
      },
    });
    await settle(() => p.ensure(t, local));
    expect(poolChecks(lbName)).toEqual([lbName]);
    const poolId = named("targetPools", lbName)?.id;
    await settle(() => p.ensure(t, sampleLoadBalancerSpec(backends)));
    const pool = named("targetPools", lbName);
    expect(pool?.id).toBe(poolId);
    expect(((pool?.healthChecks as string[] | undefined) ?? []).map(last)).toEqual(["k8s-prod-node"]);
    expect(named("httpHealthChecks", lbName)).toBeUndefined();
    expect(named("firewalls", `k8s-${lbName}-http-hc`)).toBeUndefined();
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
  });
});

describe("external: a Service without node ports (allocateLoadBalancerNodePorts false)", () => {
  test("nothing goes to a node port: the provider says so, and builds the rule and firewall on the Service ports", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const base = sampleLoadBalancerSpec(backends);
    const spec = sampleLoadBalancerSpec(backends, {
      listeners: base.listeners.map((l) => ({ ...l, nodePort: 0 })),
      healthCheck: { ...base.healthCheck, port: 0 },
    });
    expect(p.capabilities.usesNodePorts?.(spec)).toBe(false);
    const ingress = await settle(() => p.ensure(t, spec));
    expect(ingress).toHaveLength(1);
    expect(named("forwardingRules", lbName)?.portRange).toBe("80-443");
    const firewall = named("firewalls", `k8s-fw-${lbName}`);
    expect(firewall?.allowed).toEqual([{ IPProtocol: "tcp", ports: ["443", "80"] }]);
    expect(poolChecks(lbName)).toEqual(["k8s-prod-node"]);
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
  });
});

describe("external: adoption of cloud-provider-gcp's load balancer", () => {
  test("refused without adoptFrom; adopted with it: the IP promoted and kept, the vendor cluster's shared check left once unused", async () => {
    const p = await lbs();
    const [t1, t2] = [target(), target()];
    const build = (t: ServiceTarget, name: string) =>
      putUpstreamExternalLb(fake, PROJECT, REGION, {
        clusterId: "legacy",
        lbName: gceLoadBalancerName(t.serviceUid),
        serviceName: `default/${name}`,
        ports: [80, 443],
        backends,
        nodeTags: ["gke-node"],
      });
    const ip1 = build(t1, "one");
    const ip2 = build(t2, "two");
    const lb1 = gceLoadBalancerName(t1.serviceUid);
    const spec = (name: string) => sampleLoadBalancerSpec(backends, { serviceName: `default/${name}` });
    await expect(p.ensure(t1, spec("one"))).rejects.toThrow(/no adoptFrom/);
    // adoptFrom, but another Service's name in the description: not this Service's.
    const adopting1 = { ...t1, scope: { adoptFrom: { vendorCcmClusterName: "legacy" } } };
    await expect(p.ensure(adopting1, spec("other"))).rejects.toThrow(/not default\/other/);
    expect(await settle(() => p.ensure(adopting1, spec("one")))).toEqual([{ ip: ip1 }]);
    // The ephemeral IP is now the Service's reservation; the pool is on this cluster's check.
    expect(named("addresses", lb1)).toMatchObject({ address: ip1, status: "IN_USE" });
    expect(poolChecks(lb1)).toEqual(["k8s-prod-node"]);
    // The vendor cluster's check stays while its other pool uses it.
    expect(named("httpHealthChecks", "k8s-legacy-node")).toBeDefined();
    const adopting2 = { ...t2, scope: { adoptFrom: { vendorCcmClusterName: "legacy" } } };
    expect(await settle(() => p.ensure(adopting2, spec("two")))).toEqual([{ ip: ip2 }]);
    expect(named("httpHealthChecks", "k8s-legacy-node")).toBeUndefined();
    expect(named("firewalls", "k8s-legacy-node-http-hc")).toBeUndefined();
    expect((await p.get(adopting1))?.backends).toEqual(backends);
    for (const t of [adopting1, adopting2]) await settle(() => p.ensureDeleted(t));
    expect([...leftOf(lb1), ...leftOf(gceLoadBalancerName(t2.serviceUid))]).toEqual([]);
  });
});

describe("external: health-check firewalls carry the load balancer's IP (upstream's firewallObject)", () => {
  const localSpec = (serviceName: string) =>
    sampleLoadBalancerSpec(backends, {
      serviceName,
      healthCheck: {
        protocol: "HTTP",
        port: 31888,
        path: "/healthz",
        intervalSeconds: 10,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 3,
      },
    });
  /** Passes of ensure, as the hub makes them, until one answers; at most `max`. */
  async function passes(call: () => Promise<unknown>, max: number): Promise<number> {
    for (let n = 1; n <= max; n++) {
      const answer = await call();
      if (Array.isArray(answer)) return n;
      await new Promise((r) => setTimeout(r, Math.max(fake.operationMs, 20)));
    }
    throw new Error(`not done after ${max} passes`);
  }
  const firewallPatches = (mark: number) =>
    fake.log
      .requests({ afterSeq: mark })
      .filter((r) => r.operation === "firewalls.patch")
      .map((r) => r.path.split("/").pop());

  test.each([
    ["externalTrafficPolicy Local: the Service's own k8s-<lbName>-http-hc", "legacy", true],
    ["the shared k8s-<clusterid>-node-http-hc, the hub's cluster named as the vendor's", "prod", false],
  ])(
    "adopting upstream's load balancer with operations taking time settles, no firewall patched (%s)",
    async (_, clusterId, local) => {
      const p = await lbs();
      const t = { ...target(), scope: { adoptFrom: { vendorCcmClusterName: clusterId } } };
      const lbName = gceLoadBalancerName(t.serviceUid);
      const ip = putUpstreamExternalLb(fake, PROJECT, REGION, {
        clusterId,
        lbName,
        serviceName: "default/hcfw",
        ports: [80, 443],
        backends,
        nodeTags: ["gke-node"],
        ...(local && { healthCheckNodePort: 31888 }),
      });
      const hcFw = local ? `k8s-${lbName}-http-hc` : `k8s-${clusterId}-node-http-hc`;
      expect(named("firewalls", hcFw)?.destinationRanges).toEqual([ip]);
      fake.operationMs = 150;
      const spec = local
        ? localSpec("default/hcfw")
        : sampleLoadBalancerSpec(backends, { serviceName: "default/hcfw" });
      const mark = fake.log.mark();
      expect(await passes(() => p.ensure(t, spec), 6)).toBeLessThanOrEqual(6);
      expect(firewallPatches(mark)).toEqual([]);
      expect(named("firewalls", hcFw)?.destinationRanges).toEqual([ip]);
      expect(poolChecks(lbName)).toEqual([local ? lbName : "k8s-prod-node"]);
      // Settled: a repeat is one pass and changes nothing.
      const again = fake.log.mark();
      expect(await p.ensure(t, spec)).toEqual([{ ip }]);
      expect(fake.log.requests({ afterSeq: again }).filter((r) => r.method !== "GET")).toEqual([]);
      fake.operationMs = 0;
      await settle(() => p.ensureDeleted(t));
      expect(leftOf(lbName)).toEqual([]);
    },
  );

  test("the hub's own: the Service's firewall to its IP; the shared one to every Service's IP", async () => {
    const p = await lbs();
    const [tl, t1, t2] = [target(), target(), target()];
    const [ipl] = (await settle(() => p.ensure(tl, localSpec("default/l")))).map((i) => i.ip);
    const own = named("firewalls", `k8s-${gceLoadBalancerName(tl.serviceUid)}-http-hc`);
    expect(own).toMatchObject({
      destinationRanges: [ipl],
      sourceRanges: ["130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"],
      allowed: [{ IPProtocol: "tcp", ports: ["31888"] }],
      targetTags: ["gke-node"],
    });
    expect(JSON.parse(String(own?.description))).toMatchObject({ "kubernetes.io/service-ip": ipl });
    const [ip1] = (await settle(() => p.ensure(t1, sampleLoadBalancerSpec(backends)))).map((i) => i.ip);
    expect(named("firewalls", "k8s-prod-node-http-hc")?.destinationRanges).toEqual([ip1]);
    const [ip2] = (await settle(() => p.ensure(t2, sampleLoadBalancerSpec(backends)))).map((i) => i.ip);
    expect(named("firewalls", "k8s-prod-node-http-hc")?.destinationRanges).toEqual([ip1, ip2].sort());
    // Both settled: repeats patch nothing.
    const mark = fake.log.mark();
    for (const t of [t1, t2]) await settle(() => p.ensure(t, sampleLoadBalancerSpec(backends)));
    expect(firewallPatches(mark)).toEqual([]);
    for (const t of [tl, t1, t2]) await settle(() => p.ensureDeleted(t));
    expect(named("firewalls", "k8s-prod-node-http-hc")).toBeUndefined();
  });
});

describe("internal load balancers", () => {
  const internal = (overrides: Partial<LoadBalancerSpec> = {}, annotations: Record<string, string> = {}) =>
    sampleLoadBalancerSpec([`${A}/node-0`, `${A}/node-1`, `${B}/node-2`], {
      internal: true,
      serviceName: "default/ilb",
      annotations: { "networking.gke.io/load-balancer-type": "Internal", ...annotations },
      ...overrides,
    });

  test("upstream's shape: shared groups per zone, health check, backend service, INTERNAL rule on the subnetwork, firewalls", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const [ingress] = await settle(() =>
      p.ensure(t, internal({}, { "networking.gke.io/internal-load-balancer-allow-global-access": "true" })),
    );
    const subnet = named("subnetworks", "default");
    const prefix = String(subnet?.ipCidrRange).split(".").slice(0, 2).join(".");
    expect(ingress?.ip?.startsWith(`${prefix}.`)).toBe(true);
    expect(fake.groupMembers(PROJECT, A, "k8s-ig--prod").map(last)).toEqual(["node-0", "node-1"]);
    expect(fake.groupMembers(PROJECT, B, "k8s-ig--prod").map(last)).toEqual(["node-2"]);
    expect(named("healthChecks", "k8s-prod-node")).toMatchObject({
      type: "HTTP",
      httpHealthCheck: { port: 10256, requestPath: "/healthz" },
    });
    const bs = named("backendServices", lbName);
    expect(bs).toMatchObject({ loadBalancingScheme: "INTERNAL", protocol: "TCP", sessionAffinity: "NONE" });
    expect(
      ((bs?.backends as { group: string }[] | undefined) ?? []).map((b) =>
        b.group.replace(/^.*\/zones\//, ""),
      ),
    ).toEqual([`${A}/instanceGroups/k8s-ig--prod`, `${B}/instanceGroups/k8s-ig--prod`]);
    expect(named("forwardingRules", lbName)).toMatchObject({
      loadBalancingScheme: "INTERNAL",
      IPAddress: ingress?.ip,
      IPProtocol: "TCP",
      ports: ["80", "443"],
      allowGlobalAccess: true,
      subnetwork: subnet?.selfLink,
    });
    expect(named("addresses", lbName)).toMatchObject({ addressType: "INTERNAL", address: ingress?.ip });
    expect(named("firewalls", `k8s-fw-${lbName}`)).toMatchObject({
      destinationRanges: [ingress?.ip],
      allowed: [{ IPProtocol: "tcp", ports: ["443", "80"] }],
      targetTags: ["gke-node"],
    });
    expect(named("firewalls", "k8s-prod-node-hc")).toMatchObject({
      allowed: [{ IPProtocol: "tcp", ports: ["10256"] }],
    });
    // As upstream's ensureInternalFirewalls: the health-check firewall names no destination.
    expect(named("firewalls", "k8s-prod-node-hc")?.destinationRanges).toBeUndefined();
    // A repeat changes nothing.
    const mark = fake.log.mark();
    expect(
      await settle(() =>
        p.ensure(t, internal({}, { "networking.gke.io/internal-load-balancer-allow-global-access": "true" })),
      ),
    ).toEqual([ingress]);
    expect(
      fake.log
        .requests({ afterSeq: mark })
        .filter((r) => r.method !== "GET" && !/listInstances/.test(r.operation)),
    ).toEqual([]);
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
    expect(fake.list(PROJECT, "instanceGroups")).toEqual([]);
    expect(named("healthChecks", "k8s-prod-node")).toBeUndefined();
    expect(named("firewalls", "k8s-prod-node-hc")).toBeUndefined();
  });

  test("two Services share the groups; node changes update them; the groups go with the last Service", async () => {
    const p = await lbs();
    const [t1, t2] = [target(), target()];
    await settle(() => p.ensure(t1, internal()));
    await settle(() =>
      p.ensure(
        t2,
        internal({ listeners: [{ protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false }] }),
      ),
    );
    expect(fake.list(PROJECT, "instanceGroups").map((g) => last(g.zone))).toEqual([A, B]);
    // node-2 leaves: zone b's group is emptied and no backend service sends there.
    await settle(() => p.updateBackends(t1, [`${A}/node-0`, `${A}/node-1`]));
    expect(fake.groupMembers(PROJECT, B, "k8s-ig--prod")).toEqual([]);
    const bs1 = named("backendServices", gceLoadBalancerName(t1.serviceUid));
    expect(
      ((bs1?.backends as { group: string }[] | undefined) ?? []).map((b) =>
        last(b.group.replace(/\/instanceGroups\/.*$/, "")),
      ),
    ).toEqual([A]);
    expect((await p.get(t1))?.backends).toEqual([`${A}/node-0`, `${A}/node-1`]);
    await settle(() => p.ensureDeleted(t1));
    // Still used by the second Service's backend service (zone a).
    expect(fake.list(PROJECT, "instanceGroups").some((g) => last(g.zone) === A)).toBe(true);
    await settle(() => p.ensureDeleted(t2));
    expect(fake.list(PROJECT, "instanceGroups")).toEqual([]);
    expect([
      ...leftOf(gceLoadBalancerName(t1.serviceUid)),
      ...leftOf(gceLoadBalancerName(t2.serviceUid)),
    ]).toEqual([]);
  });

  test("internal-load-balancer-subnet takes the address from that subnetwork; a missing one is refused", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const sub = fake.createSubnetwork(PROJECT, REGION, "ilb-subnet", "default");
    const [ingress] = await settle(() =>
      p.ensure(t, internal({}, { "networking.gke.io/internal-load-balancer-subnet": "ilb-subnet" })),
    );
    expect(named("forwardingRules", lbName)?.subnetwork).toBe(sub.selfLink);
    const prefix = String(sub.ipCidrRange).split(".").slice(0, 2).join(".");
    expect(ingress?.ip?.startsWith(`${prefix}.`)).toBe(true);
    await expect(
      p.ensure(target(), internal({}, { "networking.gke.io/internal-load-balancer-subnet": "nope" })),
    ).rejects.toThrow(/subnetwork nope does not exist/);
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
  });

  test("a Service switched from external to internal (legacy annotation key) loses its target pool first", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    await settle(() => p.ensure(t, sampleLoadBalancerSpec(backends)));
    expect(named("targetPools", lbName)).toBeDefined();
    const spec = internal({ annotations: { "cloud.google.com/load-balancer-type": "internal" } });
    const [ingress] = await settle(() => p.ensure(t, spec));
    expect(named("targetPools", lbName)).toBeUndefined();
    expect(named("forwardingRules", lbName)).toMatchObject({
      loadBalancingScheme: "INTERNAL",
      IPAddress: ingress?.ip,
    });
    await settle(() => p.ensureDeleted(t));
    expect(leftOf(lbName)).toEqual([]);
    expect(fake.list(PROJECT, "instanceGroups")).toEqual([]);
  });

  test("adopted from cloud-provider-gcp with adoptFrom: its groups kept, the IP reserved, its shared check left once unused", async () => {
    const p = await lbs();
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const all = [`${A}/node-0`, `${A}/node-1`, `${B}/node-2`];
    const ip = putUpstreamInternalLb(fake, PROJECT, REGION, {
      clusterId: "old",
      lbName,
      serviceName: "default/ilb",
      ports: [80, 443],
      backends: all,
      nodeTags: ["gke-node"],
    });
    await expect(p.ensure(t, internal())).rejects.toThrow(/no adoptFrom/);
    const adopting = { ...t, scope: { adoptFrom: { vendorCcmClusterName: "old" } } };
    const narrowed = internal({ sourceRanges: ["10.0.0.0/8"] });
    expect(await settle(() => p.ensure(adopting, narrowed))).toEqual([{ ip }]);
    expect(named("addresses", lbName)).toMatchObject({ addressType: "INTERNAL", address: ip });
    // The nodes stay in upstream's groups (an instance is in one load-balanced group at most).
    expect(fake.list(PROJECT, "instanceGroups").map((g) => String(g.name))).toEqual([
      "k8s-ig--old",
      "k8s-ig--old",
    ]);
    expect(fake.groupMembers(PROJECT, A, "k8s-ig--old").map(last)).toEqual(["node-0", "node-1"]);
    expect(
      ((named("backendServices", lbName)?.healthChecks as string[] | undefined) ?? []).map(last),
    ).toEqual(["k8s-prod-node"]);
    expect(named("healthChecks", "k8s-old-node")).toBeUndefined();
    expect(named("firewalls", "k8s-old-node-hc")).toBeUndefined();
    expect(named("firewalls", `k8s-fw-${lbName}`)?.sourceRanges).toEqual(["10.0.0.0/8"]);
    await settle(() => p.ensureDeleted(adopting));
    expect(leftOf(lbName)).toEqual([]);
    expect(fake.list(PROJECT, "instanceGroups")).toEqual([]);
    expect(named("healthChecks", "k8s-prod-node")).toBeUndefined();
  });

  test("the factory reads the load-balancer type as the unified internal setting", () => {
    expect(gcpProvider.lbSettings?.({ "networking.gke.io/load-balancer-type": "Internal" })).toEqual({
      internal: true,
    });
    expect(gcpProvider.lbSettings?.({ "cloud.google.com/load-balancer-type": "internal" })).toEqual({
      internal: true,
    });
    expect(gcpProvider.lbSettings?.({ "networking.gke.io/load-balancer-type": "External" })).toEqual({});
  });
});
