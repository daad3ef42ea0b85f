// The azure provider's load balancers against the fake ARM, through the SDK: a wave of Services
// on one cluster is one or a few PUTs of its load balancer with no lost update under concurrent
// 412s, upstream's annotations with their meaning, and adoption of what cloud-provider-azure built.
import { createHash } from "node:crypto";
import { type AzureFake, AzureFake as Fake } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import { backendsDigest, loadBalancerSpecDigest } from "../../naming.js";
import type { AccountBinding, LoadBalancerSpec, LoadBalancers, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AZURE_ANNOTATIONS, azureLbSettings } from "./annotations.js";
import { azureProvider } from "./index.js";

const SUB = "00000000-0000-0000-0000-0000000000lb".replace(/l|b/g, "a");
const REGION = "eastus";
const RG = "rg-lb";
let fake: AzureFake;
let lbs: LoadBalancers;
let backends: string[];

type Json = Record<string, unknown>;
const props = (r: { body: Json } | undefined) => (r?.body["properties"] ?? {}) as Json;
const names = (list: unknown) => ((list as { name: string }[] | undefined) ?? []).map((i) => i.name);

beforeAll(async () => {
  fake = await Fake.start();
  fake.createSubscription(SUB, "t", "app", "secret");
  fake.createResourceGroup(SUB, RG);
  const subnet = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`;
  backends = [1, 2, 3].map((n) => {
    const vm = fake.createVm(SUB, {
      resourceGroup: RG,
      name: `node-${n}`,
      location: REGION,
      subnetId: subnet,
      privateIp: `10.240.0.${n + 3}`,
    });
    return vm.id.replace(`/resourceGroups/${RG}/`, `/resourceGroups/${RG.toLowerCase()}/`);
  });
  fake.put(SUB, RG, "networkSecurityGroups", "wave-nsg", {
    location: REGION,
    properties: { securityRules: [] },
  });
  fake.put(SUB, RG, "networkSecurityGroups", "kubernetes-nsg", {
    location: REGION,
    properties: { securityRules: [] },
  });
  const { provider } = await bindRecorded(azureProvider, account(), options());
  lbs = provider.loadBalancers as LoadBalancers;
});
const account = (): AccountBinding => ({
  name: "lb",
  provider: "azure",
  region: REGION,
  network: "vnet",
  endpoint: fake.url,
  credential: "secret",
  requestTimeoutMs: 5_000,
});
const options = () => ({
  tenantId: "t",
  clientId: "app",
  subscriptionId: SUB,
  resourceGroup: RG,
  securityGroupName: "{cluster}-nsg",
  authorityHost: fake.entra.url,
  caCertificates: fake.certificate.cert,
  operationPollMs: 0,
});
afterAll(() => fake.close());
afterEach(() => fake.assertSpecClean());

const target = (cluster: string, uid: string, extra: Partial<ServiceTarget> = {}): ServiceTarget => ({
  cluster,
  network: "vnet",
  scope: {},
  serviceUid: uid,
  ...extra,
});
const spec = (o: Partial<LoadBalancerSpec> = {}) => sampleLoadBalancerSpec([...backends].sort(), o);
const lbPuts = (since: number) =>
  fake.mutations.slice(since).filter((m) => m.operation === "loadBalancers.createOrUpdate").length;

describe("a wave of Services on one cluster", () => {
  test("20 Services at once: a few PUTs of the cluster's load balancer, none lost under concurrent 412s", async () => {
    const lbId = fake.resourceId(SUB, RG, "loadBalancers", "wave");
    // The load balancer exists (another Service), and another writer changes it under the next two PUTs.
    await settle(() => lbs.ensure(target("wave", "seed-0"), spec()));
    fake.raceNextPuts(lbId, 2);
    const before = fake.mutations.length;
    const nicListsBefore = fake.log.requests({ operation: "networkInterfaces.list" }).length;
    const uids = Array.from({ length: 20 }, (_, i) => `0000000${i}-aaaa-bbbb-cccc-dddddddddddd`.slice(-36));
    const ingresses = await Promise.all(uids.map((u) => settle(() => lbs.ensure(target("wave", u), spec()))));
    const puts = lbPuts(before);
    // The backends' addresses: one listing of the nodes' NICs serves the whole wave.
    expect(
      fake.log.requests({ operation: "networkInterfaces.list" }).length - nicListsBefore,
    ).toBeLessThanOrEqual(1);
    expect(puts).toBeGreaterThanOrEqual(1);
    expect(puts).toBeLessThanOrEqual(4);
    expect(fake.log.requests({ operation: "loadBalancers.createOrUpdate", outcome: "412" }).length).toBe(2);
    const lb = fake.byId(lbId);
    const frontends = names(props(lb)["frontendIPConfigurations"]);
    for (const u of uids) expect(frontends).toContain(`a${u.replace(/-/g, "")}`);
    expect(names(props(lb)["loadBalancingRules"]).length).toBe(2 * 21);
    expect(new Set(ingresses.map((i) => JSON.stringify(i))).size).toBe(20);
    // Deleting them all at once: again a few PUTs, then the load balancer goes with its last frontend.
    await Promise.all([...uids, "seed-0"].map((u) => settle(() => lbs.ensureDeleted(target("wave", u)))));
    expect(fake.find(lbId)).toBeUndefined();
    expect(fake.list(SUB, "publicIPAddresses").filter((p) => p.name.startsWith("wave-"))).toEqual([]);
    expect(
      names(
        props(fake.list(SUB, "networkSecurityGroups").find((n) => n.name === "wave-nsg"))["securityRules"],
      ),
    ).toEqual([]);
  });
});

/** A cluster's NSG and 20 public Services (uids starting with `prefix`) on its load balancer. */
async function twentyServices(cluster: string, prefix: string): Promise<{ lbId: string; uids: string[] }> {
  fake.put(SUB, RG, "networkSecurityGroups", `${cluster}-nsg`, {
    location: REGION,
    properties: { securityRules: [] },
  });
  const uids = Array.from({ length: 20 }, (_, i) =>
    `${prefix}000000${i}-aaaa-bbbb-cccc-dddddddddddd`.slice(-36),
  );
  await Promise.all(uids.map((u) => settle(() => lbs.ensure(target(cluster, u), spec()))));
  return { lbId: fake.resourceId(SUB, RG, "loadBalancers", cluster), uids };
}

/** The spec with every listener's port moved by `by`. */
const movedBy = (by: number) =>
  spec({ listeners: spec().listeners.map((l) => ({ ...l, port: l.port + by })) });

describe("a wave of Service changes answered at different times", () => {
  test("20 Services change their ports at once: one PUT of the load balancer and one of the NSG, as the edits wait for each other", async () => {
    const cluster = "ports";
    const { lbId, uids } = await twentyServices(cluster, "2");
    const moved = movedBy(1000);
    // Each answer comes up to 200 ms late: the Services' reads before their edits end apart.
    fake.setFaults({ latencyJitterMs: 200 });
    const mark = fake.log.requests().at(-1)?.seq ?? 0;
    try {
      await Promise.all(uids.map((u) => settle(() => lbs.ensure(target(cluster, u), moved))));
    } finally {
      fake.resetFaults();
    }
    const wave = (operation: string) => fake.log.requests({ afterSeq: mark, operation }).length;
    expect(wave("loadBalancers.createOrUpdate")).toBe(1);
    expect(wave("networkSecurityGroups.createOrUpdate")).toBe(1);
    const lb = props(fake.byId(lbId));
    const ports = (lb["loadBalancingRules"] as { properties: Json }[]).map(
      (r) => r.properties["frontendPort"],
    );
    expect(ports.sort()).toEqual([...Array(20).fill(1080), ...Array(20).fill(1443)].sort());
    const nsg = props(fake.list(SUB, "networkSecurityGroups").find((g) => g.name === `${cluster}-nsg`));
    const nsgPorts = (nsg["securityRules"] as { properties: Json }[]).map(
      (r) => r.properties["destinationPortRange"],
    );
    expect(nsgPorts.sort()).toEqual([...Array(20).fill("1080"), ...Array(20).fill("1443")].sort());
    await Promise.all(uids.map((u) => settle(() => lbs.ensureDeleted(target(cluster, u)))));
    expect(fake.find(lbId)).toBeUndefined();
  });
});

describe("the reads of a wave of Service changes", () => {
  test("each shared object is read once per write (412: once more), the other kind's load balancer once for the wave, not once per Service", async () => {
    const cluster = "reads";
    const { lbId, uids } = await twentyServices(cluster, "3");
    const moved = movedBy(2000);
    // Another writer changes the load balancer under the wave's first PUT: 412, re-read, re-applied.
    fake.raceNextPuts(lbId, 1);
    const mark = fake.log.requests().at(-1)?.seq ?? 0;
    let passes = 0;
    await Promise.all(
      uids.map((u) =>
        settle(() => {
          passes++;
          return lbs.ensure(target(cluster, u), moved);
        }),
      ),
    );
    const calls = (operation: string, name?: string, outcome?: string) =>
      fake.log
        .requests({ afterSeq: mark, operation, ...(outcome !== undefined && { outcome }) })
        .filter((r) => name === undefined || r.path.toLowerCase().endsWith(`/${name}`)).length;
    // Passes beyond each Service's first: a write still provisioning (each looks again).
    const again = passes - uids.length;
    const lbWritten = calls("loadBalancers.createOrUpdate", cluster, "200");
    const nsgWritten = calls("networkSecurityGroups.createOrUpdate", undefined, "200");
    expect(calls("loadBalancers.createOrUpdate", cluster, "412")).toBe(1);
    // One PUT of each for the 20 changes, or a few when the machine is slow (a write waits at
    // most 2 s for the Services still reading).
    expect(lbWritten).toBeGreaterThanOrEqual(1);
    expect(lbWritten).toBeLessThanOrEqual(3);
    expect(nsgWritten).toBeGreaterThanOrEqual(1);
    expect(nsgWritten).toBeLessThanOrEqual(3);
    // The internal load balancer (absent: 404) is looked at for the Services' frontends of the
    // other kind: once for the wave, where each Service read it before (20).
    expect(calls("loadBalancers.get", `${cluster}-internal`)).toBeLessThanOrEqual(1 + again);
    // The cluster's load balancer: one read per PUT sent (the 412's included) and the SDK's
    // final GET of each PUT done; the NSG likewise; nothing per Service.
    expect(calls("loadBalancers.get", cluster)).toBeLessThanOrEqual(1 + 2 * lbWritten + again);
    expect(calls("networkSecurityGroups.get")).toBeLessThanOrEqual(2 * nsgWritten + again);
    // Each Service's own public IP: one read each.
    expect(calls("publicIPAddresses.get")).toBe(uids.length + again);
    const lb = props(fake.byId(lbId));
    const ports = (lb["loadBalancingRules"] as { properties: Json }[]).map(
      (r) => r.properties["frontendPort"],
    );
    expect(ports.sort()).toEqual([...Array(20).fill(2080), ...Array(20).fill(2443)].sort());
    await Promise.all(uids.map((u) => settle(() => lbs.ensureDeleted(target(cluster, u)))));
    expect(fake.find(lbId)).toBeUndefined();
  });
});

describe("a node joining a cluster with 20 Services", () => {
  test("one load-balancer read per PUT for every Service's backends, none lost under a concurrent writer and 412s", async () => {
    const cluster = "join";
    const { lbId, uids } = await twentyServices(cluster, "1");
    const vm = fake.createVm(SUB, {
      resourceGroup: RG,
      name: "node-join",
      location: REGION,
      subnetId: `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`,
      privateIp: "10.240.0.99",
    });
    const after = [
      ...backends,
      vm.id.replace(`/resourceGroups/${RG}/`, `/resourceGroups/${RG.toLowerCase()}/`),
    ].sort();
    // Another writer changes the load balancer under the next two PUTs (412, re-read, re-apply),
    // and a 21st Service is created meanwhile: its frontend and every Service's backends land.
    fake.raceNextPuts(lbId, 2);
    const mark = fake.log.requests().at(-1)?.seq ?? 0;
    const late = "10000020-aaaa-bbbb-cccc-dddddddddddd";
    await Promise.all([
      ...uids.map((u) => settle(() => lbs.updateBackends(target(cluster, u), after))),
      settle(() => lbs.ensure(target(cluster, late), spec({ backends: after }))),
    ]);
    const wave = (operation: string, outcome?: string) =>
      fake.log.requests({ afterSeq: mark, operation, ...(outcome !== undefined && { outcome }) }).length;
    const puts = wave("loadBalancers.createOrUpdate");
    console.log(
      fake.log
        .requests({ afterSeq: mark })
        .map((r) => `${r.operation} ${r.outcome} ${r.path ?? ""}`)
        .join("\n"),
    );
    expect(wave("loadBalancers.createOrUpdate", "412")).toBe(2);
    // The load balancer is read by the coalesced writes (once per PUT tried, once more by a batch
    // finding it still Updating or with nothing to change) and by the 21st Service's look at the
    // internal one: none per Service (21 Services read it at least 21 times before).
    expect(puts).toBeLessThanOrEqual(6);
    expect(wave("loadBalancers.get")).toBeLessThanOrEqual(puts + 3);
    // One fresh listing of the nodes' NICs finds the new node for all of them.
    expect(wave("networkInterfaces.list")).toBe(1);
    const lb = props(fake.byId(lbId));
    const frontends = names(lb["frontendIPConfigurations"]);
    for (const u of [...uids, late]) expect(frontends).toContain(`a${u.replace(/-/g, "")}`);
    const pool = (lb["backendAddressPools"] as { properties: Json }[])[0]?.properties ?? {};
    const addresses = (pool["loadBalancerBackendAddresses"] as { properties: Json }[]).map(
      (a) => a.properties["ipAddress"],
    );
    expect(addresses).toContain("10.240.0.99");
    expect(addresses).toHaveLength(after.length);
    expect(names(lb["loadBalancingRules"]).length).toBe(2 * 21);
    await Promise.all([...uids, late].map((u) => settle(() => lbs.ensureDeleted(target(cluster, u)))));
    expect(fake.find(lbId)).toBeUndefined();
    fake.remove(vm.id);
    fake.remove(fake.resourceId(SUB, RG, "networkInterfaces", "node-join-nic"));
  });
});

describe("annotations (upstream's meaning)", () => {
  test("internal on a named subnet with a static address; floating IP off sends the node port", async () => {
    const t = target("kubernetes", "11111111-2222-3333-4444-555555555555");
    const annotations = {
      [AZURE_ANNOTATIONS.internal]: "true",
      [AZURE_ANNOTATIONS.internalSubnet]: "ilb",
      [AZURE_ANNOTATIONS.ipv4]: "10.240.9.9",
      [AZURE_ANNOTATIONS.disableFloatingIp]: "true",
    };
    expect(azureLbSettings(annotations)).toEqual({ internal: true });
    const ingress = await settle(() => lbs.ensure(t, spec({ internal: true, annotations })));
    expect(ingress).toEqual([{ ip: "10.240.9.9" }]);
    const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "kubernetes-internal"));
    const fe = (props(lb)["frontendIPConfigurations"] as { name: string; properties: Json }[])[0];
    expect(fe?.name).toBe("a11111111222233334444555555555555-ilb");
    expect(String((fe?.properties["subnet"] as Json | undefined)?.["id"])).toMatch(
      /\/virtualNetworks\/vnet\/subnets\/ilb$/,
    );
    const rules = props(lb)["loadBalancingRules"] as { name: string; properties: Json }[];
    expect(rules.map((r) => r.name)).toEqual([
      "a11111111222233334444555555555555-ilb-TCP-80",
      "a11111111222233334444555555555555-ilb-TCP-443",
    ]);
    expect(rules.map((r) => r.properties["backendPort"])).toEqual([30080, 30443]);
    expect(rules.every((r) => r.properties["enableFloatingIP"] === false)).toBe(true);
    await settle(() => lbs.ensureDeleted(t, undefined, { annotations, ingress: [] }));
    expect(fake.find(lb.id)).toBeUndefined();
  });

  test("ports without a node port (allocateLoadBalancerNodePorts false): floating IP with an HTTP probe needs none, and builds none", async () => {
    const noNodePorts = spec({
      listeners: [{ protocol: "TCP", port: 80, nodePort: 0, proxyProtocol: false }],
      healthCheck: { ...spec().healthCheck, protocol: "HTTP", path: "/healthz", port: 32100 },
    });
    const uses = lbs.capabilities.usesNodePorts;
    expect(uses?.(noNodePorts)).toBe(false);
    // A TCP probe goes to each rule's node port; without floating IP so does the traffic.
    expect(uses?.(spec())).toBe(true);
    expect(uses?.({ ...noNodePorts, annotations: { [AZURE_ANNOTATIONS.disableFloatingIp]: "true" } })).toBe(
      true,
    );
    const t = target("kubernetes", "no-node-ports-uid");
    await settle(() => lbs.ensure(t, noNodePorts));
    const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "kubernetes"));
    const ours = (list: unknown) =>
      ((list as { name: string; properties: Json }[]) ?? []).filter((r) => r.name.includes("nonodeports"));
    const rules = ours(props(lb)["loadBalancingRules"]);
    const probes = ours(props(lb)["probes"]);
    expect(rules.map((r) => [r.properties["frontendPort"], r.properties["backendPort"]])).toEqual([[80, 80]]);
    expect(probes.map((p) => [p.properties["protocol"], p.properties["port"]])).toEqual([["Http", 32100]]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("probe protocol and path, idle timeout: read as the unified settings", async () => {
    const a = {
      [AZURE_ANNOTATIONS.probeProtocol]: "Http",
      [AZURE_ANNOTATIONS.probePath]: "/ready",
      [AZURE_ANNOTATIONS.tcpIdleTimeout]: "15",
    };
    const s = azureLbSettings(a);
    expect(s).toEqual({ healthCheckProtocol: "HTTP", healthCheckPath: "/ready", idleTimeoutSeconds: 900 });
    expect(() => azureLbSettings({ [AZURE_ANNOTATIONS.tcpIdleTimeout]: "2" })).toThrow(/4 to 100/);
    const t = target("kubernetes", "probe-uid");
    const base = spec();
    await settle(() =>
      lbs.ensure(
        t,
        spec({
          annotations: a,
          idleTimeoutSeconds: 900,
          healthCheck: { ...base.healthCheck, protocol: "HTTP", path: "/ready", port: 31000 },
        }),
      ),
    );
    const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "kubernetes"));
    const probes = props(lb)["probes"] as { properties: Json }[];
    expect(
      probes.map((p) => [p.properties["protocol"], p.properties["port"], p.properties["requestPath"]]),
    ).toEqual([
      ["Http", 31000, "/ready"],
      ["Http", 31000, "/ready"],
    ]);
    const rules = props(lb)["loadBalancingRules"] as { properties: Json }[];
    expect(rules.map((r) => r.properties["idleTimeoutInMinutes"])).toEqual([15, 15]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("pip-name: the user's public IP is used and kept after delete", async () => {
    const pip = fake.put(SUB, RG, "publicIPAddresses", "my-ip", {
      location: REGION,
      sku: { name: "Standard" },
      properties: { publicIPAllocationMethod: "Static", ipAddress: "20.9.9.9" },
    });
    const t = target("kubernetes", "pip-uid");
    const annotations = { [AZURE_ANNOTATIONS.pipName]: "my-ip" };
    expect(await settle(() => lbs.ensure(t, spec({ annotations })))).toEqual([{ ip: "20.9.9.9" }]);
    await settle(() => lbs.ensureDeleted(t, undefined, { annotations, ingress: [{ ip: "20.9.9.9" }] }));
    expect(fake.find(pip.id)).toBeDefined();
  });
});

describe("adoption of what cloud-provider-azure built", () => {
  test("its load balancer, frontend, rules and public IP are taken over under the same names, the address kept", async () => {
    const uid = "99999999-8888-7777-6666-555555555555";
    const fe = `a${uid.replace(/-/g, "")}`;
    const pip = fake.put(SUB, RG, "publicIPAddresses", `kubernetes-${fe}`, {
      location: REGION,
      sku: { name: "Standard" },
      tags: { "k8s-azure-service": "default/web", "k8s-azure-cluster-name": "kubernetes" },
      properties: { publicIPAllocationMethod: "Static", ipAddress: "20.7.7.7" },
    });
    const lbId = fake.resourceId(SUB, RG, "loadBalancers", "kubernetes");
    fake.put(SUB, RG, "loadBalancers", "kubernetes", {
      location: REGION,
      sku: { name: "Standard" },
      properties: {
        frontendIPConfigurations: [{ name: fe, properties: { publicIPAddress: { id: pip.id } } }],
        backendAddressPools: [{ name: "kubernetes" }],
        probes: [{ name: `${fe}-TCP-80`, properties: { protocol: "Tcp", port: 30080 } }],
        loadBalancingRules: [
          {
            name: `${fe}-TCP-80`,
            properties: {
              protocol: "Tcp",
              frontendPort: 80,
              backendPort: 80,
              enableFloatingIP: true,
              frontendIPConfiguration: { id: `${lbId}/frontendIPConfigurations/${fe}` },
              backendAddressPool: { id: `${lbId}/backendAddressPools/kubernetes` },
              probe: { id: `${lbId}/probes/${fe}-TCP-80` },
            },
          },
        ],
      },
    });
    const pipsBefore = fake.list(SUB, "publicIPAddresses").length;
    // Without the operator's opt-in the hub builds the cluster's own, under its own names, and
    // leaves what upstream built as it is.
    fake.put(SUB, RG, "networkSecurityGroups", "prod-nsg", {
      location: REGION,
      properties: { securityRules: [] },
    });
    const etag = fake.byId(lbId).etag;
    await settle(() => lbs.ensure(target("prod", uid), spec()));
    await settle(() => lbs.ensureDeleted(target("prod", uid)));
    expect(fake.byId(lbId).etag).toBe(etag);
    expect(fake.list(SUB, "publicIPAddresses").length).toBe(pipsBefore);
    const t = target("prod", uid, { scope: { adoptFrom: { vendorCcmClusterName: "kubernetes" } } });
    expect(await settle(() => lbs.ensure(t, spec({ serviceName: "default/web" })))).toEqual([
      { ip: "20.7.7.7" },
    ]);
    expect(fake.list(SUB, "publicIPAddresses").length).toBe(pipsBefore);
    const lb = fake.byId(lbId);
    expect(names(props(lb)["frontendIPConfigurations"])).toContain(fe);
    expect(names(props(lb)["loadBalancingRules"])).toEqual(
      expect.arrayContaining([`${fe}-TCP-80`, `${fe}-TCP-443`]),
    );
    expect((fake.byId(pip.id).body["tags"] as Json)["fleet-ccm-service-uid"]).toBe(uid);
    await settle(() => lbs.ensureDeleted(t));
    expect(fake.find(pip.id)).toBeUndefined();
  });
});

describe("listOwned and the digests", () => {
  test("a Service is listed with the digests of what was made; a restarted provider lists it without writing", async () => {
    const t = target("listed", "12345678-1234-1234-1234-123456789abc");
    fake.put(SUB, RG, "networkSecurityGroups", "listed-nsg", {
      location: REGION,
      properties: { securityRules: [] },
    });
    const s = spec();
    const ingress = await settle(() => lbs.ensure(t, s));
    const before = fake.mutations.length;
    const owned = [];
    for (let token: string | undefined, first = true; first || token !== undefined; first = false) {
      const page = await (lbs.listOwned as NonNullable<LoadBalancers["listOwned"]>)(token);
      owned.push(...page.items);
      token = page.nextPageToken;
    }
    const item = owned.find((i) => i.owner.serviceUid === t.serviceUid);
    expect(item).toMatchObject({
      owner: { cluster: "listed", serviceUid: t.serviceUid },
      ingress,
      specDigest: loadBalancerSpecDigest(s),
      backendsDigest: backendsDigest(s.backends),
    });
    // The same spec again (a restarted hub that had no listing): reads only.
    await settle(() => lbs.ensure(t, s));
    expect(fake.mutations.length).toBe(before);
    const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "listed"));
    expect(Object.keys(lb.body["tags"] as Json).every((k) => !/[<>%&\\?/]/.test(k))).toBe(true);
    await settle(() => lbs.ensureDeleted(t));
    const after = await (lbs.listOwned as NonNullable<LoadBalancers["listOwned"]>)(undefined);
    expect(after.items.filter((i) => i.owner.cluster === "listed")).toEqual([]);
  });

  test("a public IP whose load-balancer write never came is listed for its owner", async () => {
    const pip = fake.put(SUB, RG, "publicIPAddresses", "listed-aorphan", {
      location: REGION,
      sku: { name: "Standard" },
      tags: { "fleet-ccm-cluster": "listed", "fleet-ccm-service-uid": "orphan" },
      properties: { publicIPAllocationMethod: "Static" },
    });
    const page = await (lbs.listOwned as NonNullable<LoadBalancers["listOwned"]>)(undefined);
    expect(page.items.find((i) => i.owner.serviceUid === "orphan")).toMatchObject({
      id: pip.id,
      owner: { cluster: "listed", serviceUid: "orphan" },
    });
    fake.remove(pip.id);
  });
});

describe("NIC-based backend pools (upstream's nodeIPConfiguration)", () => {
  const nicRefs = (poolId: string) =>
    fake
      .list(SUB, "networkInterfaces")
      .filter((nic) =>
        (
          (nic.body["properties"] as Json)["ipConfigurations"] as {
            properties?: { loadBalancerBackendAddressPools?: { id: string }[] };
          }[]
        ).some((c) =>
          (c.properties?.loadBalancerBackendAddressPools ?? []).some(
            (r) => r.id.toLowerCase() === poolId.toLowerCase(),
          ),
        ),
      )
      .map((nic) => nic.name)
      .sort();

  test("adopting a pool cloud-provider-azure built by NIC keeps it NIC-based: a node joins by a NIC PUT, all leave before the load balancer goes", async () => {
    const uid = "77777777-8888-7777-6666-555555555555";
    const fe = `a${uid.replace(/-/g, "")}`;
    const lbId = fake.resourceId(SUB, RG, "loadBalancers", "nicmode-internal");
    const poolId = `${lbId}/backendAddressPools/nicmode`;
    fake.put(SUB, RG, "loadBalancers", "nicmode-internal", {
      location: REGION,
      sku: { name: "Standard" },
      properties: {
        frontendIPConfigurations: [
          {
            name: fe,
            properties: {
              privateIPAllocationMethod: "Dynamic",
              subnet: {
                id: `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`,
              },
            },
          },
        ],
        backendAddressPools: [{ name: "nicmode" }],
      },
    });
    // Upstream put node-1 and node-2 in by their NICs.
    for (const n of [1, 2]) {
      const nic = fake.byId(fake.resourceId(SUB, RG, "networkInterfaces", `node-${n}-nic`));
      const props = nic.body["properties"] as { ipConfigurations: { properties: Json }[] };
      const ipc = props.ipConfigurations[0] as { properties: Json };
      ipc.properties["loadBalancerBackendAddressPools"] = [{ id: poolId }];
    }
    expect(nicRefs(poolId)).toEqual(["node-1-nic", "node-2-nic"]);
    const t = target("prod", uid, { scope: { adoptFrom: { vendorCcmClusterName: "nicmode" } } });
    fake.put(SUB, RG, "networkSecurityGroups", "prod-nsg", {
      location: REGION,
      properties: { securityRules: [] },
    });
    const annotations = { [AZURE_ANNOTATIONS.internal]: "true" };
    const before = fake.mutations.length;
    const ingress = await settle(() => lbs.ensure(t, spec({ internal: true, annotations })));
    expect(ingress).toHaveLength(1);
    // One NIC PUT (node-3 joins); the pool holds no addresses.
    const nicPuts = fake.mutations
      .slice(before)
      .filter((m) => m.operation === "networkInterfaces.createOrUpdate");
    expect(nicPuts.map((m) => m.path)).toEqual([expect.stringMatching(/node-3-nic$/)]);
    expect(nicRefs(poolId)).toEqual(["node-1-nic", "node-2-nic", "node-3-nic"]);
    const pool = (props(fake.byId(lbId))["backendAddressPools"] as { properties?: Json }[])[0];
    expect(pool?.properties?.["loadBalancerBackendAddresses"]).toBeUndefined();
    // The listing knows the backends once the NICs are written.
    const listed = (await (lbs.listOwned as NonNullable<LoadBalancers["listOwned"]>)(undefined)).items.find(
      (i) => i.owner.serviceUid === uid,
    );
    expect(listed?.backendsDigest).toBe(backendsDigest(spec().backends));
    expect((await lbs.get(t))?.backends).toEqual([...backends].sort());
    // A node leaves: its NIC alone is written.
    const mark = fake.mutations.length;
    await settle(() => lbs.updateBackends(t, backends.slice(0, 2)));
    expect(
      fake.mutations
        .slice(mark)
        .filter((m) => m.operation === "networkInterfaces.createOrUpdate")
        .map((m) => m.path),
    ).toEqual([expect.stringMatching(/node-3-nic$/)]);
    expect(nicRefs(poolId)).toEqual(["node-1-nic", "node-2-nic"]);
    // The last frontend goes: the NICs leave the pool first, then the load balancer is deleted.
    await settle(() => lbs.ensureDeleted(t, undefined, { annotations, ingress: [] }));
    expect(nicRefs(poolId)).toEqual([]);
    expect(fake.find(lbId)).toBeUndefined();
  });

  test("an account that chooses nodeIPConfiguration builds new pools by NIC", async () => {
    const { provider } = await bindRecorded(azureProvider, account(), {
      ...options(),
      backendPoolType: "nodeIPConfiguration",
    });
    const nicLbs = provider.loadBalancers as LoadBalancers;
    const t = target("wave", "66666666-8888-7777-6666-555555555555");
    await settle(() => nicLbs.ensure(t, spec()));
    const poolId = `${fake.resourceId(SUB, RG, "loadBalancers", "wave")}/backendAddressPools/wave`;
    expect(nicRefs(poolId)).toEqual(["node-1-nic", "node-2-nic", "node-3-nic"]);
    await settle(() => nicLbs.ensureDeleted(t));
    expect(nicRefs(poolId)).toEqual([]);
    expect(fake.find(fake.resourceId(SUB, RG, "loadBalancers", "wave"))).toBeUndefined();
  });
});

// ---- NSG rules as upstream's access control (pkg/provider/loadbalancer/accesscontrol.go) -------

type Rule = { name: string; properties: Json };
const nsgRules = (cluster: string): Rule[] =>
  (props(fake.list(SUB, "networkSecurityGroups").find((n) => n.name === `${cluster}-nsg`))["securityRules"] ??
    []) as Rule[];
const listOf = (p: Json, one: string, many: string) => [
  ...(typeof p[one] === "string" && p[one] !== "" ? [p[one] as string] : []),
  ...((p[many] as string[] | undefined) ?? []),
];
const dstOf = (r: Rule) => listOf(r.properties, "destinationAddressPrefix", "destinationAddressPrefixes");
const srcOf = (r: Rule) => listOf(r.properties, "sourceAddressPrefix", "sourceAddressPrefixes");
const portsOfRule = (r: Rule) => listOf(r.properties, "destinationPortRange", "destinationPortRanges");
/** Allow rules admitting `source` to `ip`. */
const allowing = (cluster: string, source: string, ip: string) =>
  nsgRules(cluster).filter(
    (r) => r.properties["access"] === "Allow" && srcOf(r).includes(source) && dstOf(r).includes(ip),
  );
/** securitygroup.GenerateAllowSecurityRuleName. */
const vendorAllowName = (protocol: string, sources: string[], ports: number[]) =>
  `k8s-azure-lb_allow_IPv4_${createHash("md5")
    .update([protocol, [...sources].sort().join(","), ports.map(String).sort().join(",")].join("_"))
    .digest("hex")}`;

/**
 * A public Service as cloud-provider-azure builds it on its load balancer `vendor` (floating IP as
 * given): its public IP, frontend, a TCP probe and a rule per port of spec().
 */
function vendorService(vendor: string, uid: string, ip: string, floating = true) {
  const fe = `a${uid.replace(/-/g, "")}`;
  const lbId = fake.resourceId(SUB, RG, "loadBalancers", vendor);
  const pip = fake.put(SUB, RG, "publicIPAddresses", `${vendor}-${fe}`, {
    location: REGION,
    sku: { name: "Standard" },
    tags: { "k8s-azure-service": `default/${uid.slice(0, 4)}`, "k8s-azure-cluster-name": vendor },
    properties: { publicIPAllocationMethod: "Static", ipAddress: ip },
  });
  const ports = spec().listeners;
  return {
    frontend: { name: fe, properties: { publicIPAddress: { id: pip.id } } },
    probes: ports.map((l) => ({
      name: `${fe}-TCP-${l.port}`,
      properties: { protocol: "Tcp", port: l.nodePort },
    })),
    rules: ports.map((l) => ({
      name: `${fe}-TCP-${l.port}`,
      properties: {
        protocol: "Tcp",
        frontendPort: l.port,
        backendPort: floating ? l.port : l.nodePort,
        enableFloatingIP: floating,
        frontendIPConfiguration: { id: `${lbId}/frontendIPConfigurations/${fe}` },
        backendAddressPool: { id: `${lbId}/backendAddressPools/${vendor}` },
        probe: { id: `${lbId}/probes/${fe}-TCP-${l.port}` },
      },
    })),
  };
}

/** The vendor's load balancer `vendor` holding these Services, its pool by the nodes' addresses. */
function vendorLb(vendor: string, services: ReturnType<typeof vendorService>[]): void {
  fake.put(SUB, RG, "loadBalancers", vendor, {
    location: REGION,
    sku: { name: "Standard" },
    properties: {
      frontendIPConfigurations: services.map((s) => s.frontend),
      backendAddressPools: [{ name: vendor }],
      probes: services.flatMap((s) => s.probes),
      loadBalancingRules: services.flatMap((s) => s.rules),
    },
  });
}

const NODE_IPS = ["10.240.0.4", "10.240.0.5", "10.240.0.6"];

describe("NSG rules after adoption: upstream's shared rules", () => {
  test("a Service adopted open and narrowed leaves upstream's Internet rule; the other Service's address stays in it", async () => {
    const [uidA, uidB] = ["aaaa1111-0000-0000-0000-000000000001", "bbbb2222-0000-0000-0000-000000000002"];
    const [ipA, ipB] = ["20.50.0.1", "20.50.0.2"];
    vendorLb("vendorsg", [vendorService("vendorsg", uidA, ipA), vendorService("vendorsg", uidB, ipB)]);
    // Upstream's one rule for both (same protocol, sources, ports), and its deny-all for the VNet.
    const shared = vendorAllowName("Tcp", ["Internet"], [80, 443]);
    fake.put(SUB, RG, "networkSecurityGroups", "adoptsg-nsg", {
      location: REGION,
      properties: {
        securityRules: [
          {
            name: shared,
            properties: {
              protocol: "Tcp",
              access: "Allow",
              direction: "Inbound",
              priority: 500,
              sourcePortRange: "*",
              sourceAddressPrefix: "Internet",
              destinationAddressPrefixes: [ipA, ipB],
              destinationPortRanges: ["443", "80"],
            },
          },
          {
            name: "user-ssh",
            properties: {
              protocol: "Tcp",
              access: "Allow",
              direction: "Inbound",
              priority: 300,
              sourcePortRange: "*",
              sourceAddressPrefix: "Internet",
              destinationAddressPrefix: ipA,
              destinationPortRange: "22",
            },
          },
        ],
      },
    });
    const scope = { adoptFrom: { vendorCcmClusterName: "vendorsg" } };
    const a = target("adoptsg", uidA, { scope });
    const narrowed = spec({ sourceRanges: ["203.0.113.0/24"] });
    expect(await settle(() => lbs.ensure(a, narrowed))).toEqual([{ ip: ipA }]);
    // Nothing but the user's own rule (outside upstream's names) admits the Internet to A.
    expect(allowing("adoptsg", "Internet", ipA).map((r) => r.name)).toEqual(["user-ssh"]);
    expect(allowing("adoptsg", "203.0.113.0/24", ipA).flatMap(portsOfRule).sort()).toEqual(["443", "80"]);
    const kept = nsgRules("adoptsg").find((r) => r.name === shared);
    expect(kept === undefined ? [] : dstOf(kept)).toEqual([ipB]);
    expect(kept === undefined ? [] : portsOfRule(kept).sort()).toEqual(["443", "80"]);
    // B adopted and narrowed too: upstream's rule is left without destination, and goes.
    const b = target("adoptsg", uidB, { scope });
    await settle(() => lbs.ensure(b, narrowed));
    expect(nsgRules("adoptsg").find((r) => r.name === shared)).toBeUndefined();
    expect(allowing("adoptsg", "Internet", ipB)).toEqual([]);
    await settle(() => lbs.ensureDeleted(a));
    await settle(() => lbs.ensureDeleted(b));
    expect(nsgRules("adoptsg").map((r) => r.name)).toEqual(["user-ssh"]);
  });

  test("a deleted adopted Service's address leaves upstream's rules it shared", async () => {
    const [uidA, uidB] = ["aaaa3333-0000-0000-0000-000000000003", "bbbb4444-0000-0000-0000-000000000004"];
    const [ipA, ipB] = ["20.51.0.1", "20.51.0.2"];
    vendorLb("vendordel", [vendorService("vendordel", uidA, ipA), vendorService("vendordel", uidB, ipB)]);
    const shared = vendorAllowName("Tcp", ["Internet"], [80, 443]);
    const rule = (name: string, p: Json) => ({
      name,
      properties: { direction: "Inbound", sourcePortRange: "*", ...p },
    });
    fake.put(SUB, RG, "networkSecurityGroups", "adoptdel-nsg", {
      location: REGION,
      properties: {
        securityRules: [
          rule(shared, {
            protocol: "Tcp",
            access: "Allow",
            priority: 500,
            sourceAddressPrefix: "Internet",
            destinationAddressPrefixes: [ipA, ipB],
            destinationPortRanges: ["443", "80"],
          }),
          rule("k8s-azure-lb_deny-all_IPv4", {
            protocol: "*",
            access: "Deny",
            priority: 4095,
            sourceAddressPrefix: "*",
            destinationAddressPrefixes: [ipA, ipB],
            destinationPortRange: "*",
          }),
        ],
      },
    });
    const a = target("adoptdel", uidA, { scope: { adoptFrom: { vendorCcmClusterName: "vendordel" } } });
    await settle(() => lbs.ensureDeleted(a));
    expect(nsgRules("adoptdel").filter((r) => dstOf(r).includes(ipA))).toEqual([]);
    expect(nsgRules("adoptdel").map((r) => [r.name, dstOf(r)])).toEqual([
      [shared, [ipB]],
      ["k8s-azure-lb_deny-all_IPv4", [ipB]],
    ]);
  });
});

describe("azure-allowed-ip-ranges and azure-deny-all-except-load-balancer-source-ranges", () => {
  test("forwarded to the hub under the provider's prefix", () => {
    for (const key of [AZURE_ANNOTATIONS.allowedIpRanges, AZURE_ANNOTATIONS.denyAllExceptSourceRanges])
      expect(azureProvider.annotationPrefixes.some((p) => key.startsWith(p))).toBe(true);
  });

  test("the allowed ranges are the only sources; with deny-all the rest is denied; beside source ranges refused", async () => {
    const t = target("ranges", "cccc5555-0000-0000-0000-000000000005");
    fake.put(SUB, RG, "networkSecurityGroups", "ranges-nsg", {
      location: REGION,
      properties: { securityRules: [] },
    });
    const annotations = {
      [AZURE_ANNOTATIONS.allowedIpRanges]: "10.0.0.0/8, 192.168.0.0/16",
      [AZURE_ANNOTATIONS.denyAllExceptSourceRanges]: "True",
    };
    const [{ ip }] = (await settle(() => lbs.ensure(t, spec({ annotations })))) as [{ ip: string }];
    expect(allowing("ranges", "Internet", ip)).toEqual([]);
    expect(allowing("ranges", "10.0.0.0/8", ip)).toHaveLength(2);
    expect(allowing("ranges", "192.168.0.0/16", ip)).toHaveLength(2);
    const deny = nsgRules("ranges").filter((r) => r.properties["access"] === "Deny");
    expect(deny.map((r) => [srcOf(r), dstOf(r), portsOfRule(r), r.properties["protocol"]])).toEqual([
      [["*"], [ip], ["*"], "*"],
    ]);
    // The deny comes after every allow (upstream takes its priority from the end).
    const allows = nsgRules("ranges").filter((r) => r.properties["access"] === "Allow");
    expect(Math.max(...allows.map((r) => Number(r.properties["priority"])))).toBeLessThan(
      Number(deny[0]?.properties["priority"]),
    );
    await expect(lbs.ensure(t, spec({ annotations, sourceRanges: ["203.0.113.0/24"] }))).rejects.toThrow(
      /cannot set both spec.loadBalancerSourceRanges/,
    );
    expect(() => lbs.checkAnnotations?.({ [AZURE_ANNOTATIONS.allowedIpRanges]: "10.0.0.0" })).toThrow(
      /CIDRs/,
    );
    await settle(() => lbs.ensureDeleted(t));
    expect(nsgRules("ranges")).toEqual([]);
  });
});

describe("probes of UDP ports (healthprobe.go:57-59)", () => {
  const udp = { protocol: "UDP" as const, port: 53, nodePort: 30053, proxyProtocol: false };
  const ours = (list: unknown, uid: string) =>
    ((list as Rule[] | undefined) ?? []).filter((r) => r.name.startsWith(`a${uid.replace(/-/g, "")}`));

  test("externalTrafficPolicy Cluster: a UDP rule has no probe", async () => {
    const uid = "dddd6666-0000-0000-0000-000000000006";
    const t = target("kubernetes", uid);
    await settle(() =>
      lbs.ensure(t, spec({ listeners: [udp], healthCheck: { ...spec().healthCheck, port: 30053 } })),
    );
    const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "kubernetes"));
    expect(ours(props(lb)["probes"], uid)).toEqual([]);
    const rules = ours(props(lb)["loadBalancingRules"], uid);
    expect(rules.map((r) => [r.properties["protocol"], r.properties["probe"]])).toEqual([["Udp", undefined]]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("externalTrafficPolicy Local: the HTTP probe on the health-check node port", async () => {
    const uid = "eeee7777-0000-0000-0000-000000000007";
    const t = target("kubernetes", uid);
    const local = { ...spec().healthCheck, protocol: "HTTP" as const, port: 32053, path: "/healthz" };
    await settle(() => lbs.ensure(t, spec({ listeners: [udp], healthCheck: local })));
    const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "kubernetes"));
    const probes = ours(props(lb)["probes"], uid);
    expect(probes.map((p) => [p.properties["protocol"], p.properties["port"]])).toEqual([["Http", 32053]]);
    const rule = ours(props(lb)["loadBalancingRules"], uid)[0];
    expect(String((rule?.properties["probe"] as Json | undefined)?.["id"])).toMatch(/\/probes\/.*-UDP-53$/);
    await settle(() => lbs.ensureDeleted(t));
  });
});

describe("floating IP off: NSG rules on the backends' addresses and node ports", () => {
  test("new Service: destinations the nodes, ports the node ports; a node change takes a whole ensure", async () => {
    const t = target("fixed", "ffff8888-0000-0000-0000-000000000008");
    fake.put(SUB, RG, "networkSecurityGroups", "fixed-nsg", {
      location: REGION,
      properties: { securityRules: [] },
    });
    const annotations = { [AZURE_ANNOTATIONS.disableFloatingIp]: "true" };
    const [{ ip }] = (await settle(() => lbs.ensure(t, spec({ annotations })))) as [{ ip: string }];
    const rules = nsgRules("fixed");
    expect(rules.map((r) => [dstOf(r), portsOfRule(r)])).toEqual([
      [NODE_IPS, ["30080"]],
      [NODE_IPS, ["30443"]],
    ]);
    expect(rules.some((r) => dstOf(r).includes(ip))).toBe(false);
    await expect(lbs.updateBackends(t, backends.slice(0, 2))).rejects.toThrow(/floating IP off/);
    await settle(() => lbs.ensure(t, spec({ annotations, backends: [...backends].sort().slice(0, 2) })));
    expect(nsgRules("fixed").map(dstOf)).toEqual([NODE_IPS.slice(0, 2), NODE_IPS.slice(0, 2)]);
    await settle(() => lbs.ensureDeleted(t, undefined, { annotations, ingress: [{ ip }] }));
    expect(nsgRules("fixed")).toEqual([]);
  });

  test("adopted: its node ports leave upstream's rules on the nodes' addresses; another Service's stay", async () => {
    const [uidA, uidB] = ["abab9999-0000-0000-0000-000000000009", "baba9999-0000-0000-0000-000000000010"];
    vendorLb("vendorfix", [
      vendorService("vendorfix", uidA, "20.52.0.1", false),
      vendorService("vendorfix", uidB, "20.52.0.2", false),
    ]);
    const rule = (ports: number[], priority: number) => ({
      name: vendorAllowName("Tcp", ["Internet"], ports),
      properties: {
        protocol: "Tcp",
        access: "Allow",
        direction: "Inbound",
        priority,
        sourcePortRange: "*",
        sourceAddressPrefix: "Internet",
        destinationAddressPrefixes: NODE_IPS,
        destinationPortRanges: ports.map(String).sort(),
      },
    });
    // A's node ports, and B's (node ports are unique in a cluster), and one upstream split of both.
    fake.put(SUB, RG, "networkSecurityGroups", "adoptfix-nsg", {
      location: REGION,
      properties: {
        securityRules: [rule([30080, 30443], 500), rule([31080], 501), rule([30080, 31081], 502)],
      },
    });
    const annotations = { [AZURE_ANNOTATIONS.disableFloatingIp]: "true" };
    const a = target("adoptfix", uidA, { scope: { adoptFrom: { vendorCcmClusterName: "vendorfix" } } });
    await settle(() => lbs.ensure(a, spec({ annotations, sourceRanges: ["203.0.113.0/24"] })));
    const internet = nsgRules("adoptfix").filter((r) => srcOf(r).includes("Internet"));
    expect(internet.map((r) => [r.name, dstOf(r), portsOfRule(r)])).toEqual([
      [vendorAllowName("Tcp", ["Internet"], [31080]), NODE_IPS, ["31080"]],
      [vendorAllowName("Tcp", ["Internet"], [31081]), NODE_IPS, ["31081"]],
    ]);
    await settle(() => lbs.ensureDeleted(a, undefined, { annotations, ingress: [] }));
    expect(nsgRules("adoptfix").every((r) => srcOf(r).includes("Internet"))).toBe(true);
  });
});
