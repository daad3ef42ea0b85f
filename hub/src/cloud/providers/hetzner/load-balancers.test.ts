// Hetzner load balancers against the fake Hetzner Cloud API: actions running across calls and
// read back by another replica, actions ending in error, adoption of what the Hetzner CCM
// built (only with adoptFrom), the annotations honoured and refused.
import { Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import type {
  FakeHetznerLoadBalancer as FakeLoadBalancer,
  FakeServer,
} from "../../../../../sim/src/hetzner/index.js";
import {
  ACCOUNT,
  type HetznerWorld,
  REGION,
  startHetznerWorld,
} from "../../../../../sim/src/hetzner/world.js";
import { parseLbAnnotations } from "../../../reconcilers/service/annotations.js";
import { loadBalancerSpec } from "../../../reconcilers/service/predicates.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import { CloudError, NeedsEnsureError, OperationFailedError } from "../../errors.js";
import { FAILURE_REPORTED_TAG, OWNER_TAG_CLUSTER } from "../../naming.js";
import {
  type ClusterTarget,
  isInProgress,
  type LbOwner,
  type LoadBalancerSpec,
  type LoadBalancers,
  type ServiceTarget,
} from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { A } from "./annotations.js";
import { hetznerProvider } from "./index.js";
import { ownerOfLabels, UPSTREAM_UID_LABEL } from "./load-balancers.js";

let w: HetznerWorld;
let nodes: FakeServer[];
let seq = 0;

const owner = (at: Partial<ClusterTarget> = {}): ServiceTarget => ({
  cluster: "prod",
  network: "fleet-net",
  scope: {},
  ...at,
  serviceUid: `0b7c${++seq}-uid`,
});
const MIGRATING: Partial<ClusterTarget> = { scope: { adoptFrom: { vendorCcmClusterName: "prod" } } };

async function bind(options: unknown = {}) {
  const b = await bindRecorded(hetznerProvider, w.account(), options);
  const lbs = b.provider.loadBalancers as LoadBalancers;
  const mutations = () => b.ops.filter((op) => /\.(create|update|delete)$/.test(op));
  return { lbs, ops: b.ops, mutations };
}

const spec = (annotations: Record<string, string> = {}, overrides: Partial<LoadBalancerSpec> = {}) =>
  sampleLoadBalancerSpec(
    nodes
      .slice(0, 2)
      .map((n) => String(n.id))
      .sort(),
    { ...(Object.keys(annotations).length > 0 && { annotations }), ...overrides },
  );

function lbOf(o: LbOwner): FakeLoadBalancer | undefined {
  return w.fake.store.loadBalancersOf(ACCOUNT).find((lb) => {
    const x = ownerOfLabels(lb.labels);
    return x?.cluster === o.cluster && x.serviceUid === o.serviceUid;
  });
}

/** As the Hetzner CCM builds it: the UID label alone, its services, public targets. */
const vendorBuilt = (o: LbOwner) =>
  w.fake.putLoadBalancer({
    account: ACCOUNT,
    name: `a${o.serviceUid.replaceAll("-", "")}`,
    type: "lb11",
    location: REGION,
    algorithm: "round_robin",
    labels: { [UPSTREAM_UID_LABEL]: o.serviceUid },
    publicEnabled: true,
    privateNet: [],
    services: [
      {
        protocol: "tcp",
        listen_port: 80,
        destination_port: 30080,
        proxyprotocol: false,
        health_check: { protocol: "tcp", port: 30080, interval: 15, timeout: 10, retries: 3 },
      },
    ],
    targets: nodes.slice(0, 2).map((n) => ({ type: "server" as const, server: n.id, use_private_ip: false })),
  });

beforeAll(async () => {
  w = await startHetznerWorld();
  nodes = [0, 1, 2].map((n) =>
    w.fake.createServer(ACCOUNT, { name: `node-${n}`, location: REGION, networks: [w.networkId] }),
  );
});
afterAll(async () => {
  expect(w.fake.specProblems()).toEqual([]);
  await w.fake.close();
});
beforeEach(() => w.fake.setActionPolls(0));

describe("actions", () => {
  test("a running action answers in progress; the next call, on another replica, reads it from the cloud and changes nothing until it ends", async () => {
    w.fake.setActionPolls(3);
    const o = owner();
    const first = await bind();
    const a = await first.lbs.ensure(o, spec());
    expect(isInProgress(a)).toBe(true);
    expect(first.mutations()).toEqual(["lb.create"]);
    // Another replica: no memory of the create, the action's state read back.
    const second = await bind();
    expect(isInProgress(await second.lbs.ensure(o, spec()))).toBe(true);
    expect(second.mutations()).toEqual([]);
    expect(second.ops).toContain("lb.actions");
    let answer = await second.lbs.ensure(o, spec());
    for (let n = 0; isInProgress(answer) && n < 10; n++) answer = await second.lbs.ensure(o, spec());
    expect(answer).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    // One action per call thereafter: an update of a port runs across calls too.
    const third = await bind();
    const changed = spec(
      {},
      { listeners: [{ protocol: "TCP", port: 80, nodePort: 31111, proxyProtocol: false }] },
    );
    expect(isInProgress(await third.lbs.ensure(o, changed))).toBe(true);
    let done = await third.lbs.ensure(o, changed);
    for (let n = 0; isInProgress(done) && n < 20; n++) done = await third.lbs.ensure(o, changed);
    expect(lbOf(o)?.services.map((s) => [s.listen_port, s.destination_port])).toEqual([[80, 31111]]);
    w.fake.setActionPolls(0);
    await (await bind()).lbs.ensureDeleted(o);
  });

  test("an action ending in error is OperationFailedError once, for any replica; the next ensure does it again", async () => {
    const o = owner();
    const { lbs } = await bind();
    await lbs.ensure(o, spec());
    w.fake.failNextActions("add_service", 1);
    const more = spec(
      {},
      {
        listeners: [
          ...spec().listeners,
          { protocol: "TCP", port: 8080, nodePort: 30880, proxyProtocol: false },
        ],
      },
    );
    const err = await lbs.ensure(o, more).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OperationFailedError);
    expect((err as Error).message).toMatch(/add_service\) ended in error: action_failed/);
    // The failed action undid its change in the cloud, and the report is recorded there.
    expect(lbOf(o)?.services.map((s) => s.listen_port)).toEqual([80, 443]);
    expect(lbOf(o)?.labels[FAILURE_REPORTED_TAG]).toMatch(/^\d+$/);
    const other = await bind();
    expect(await other.lbs.ensure(o, more)).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    expect(lbOf(o)?.services.map((s) => s.listen_port)).toEqual([80, 443, 8080]);
    await other.lbs.ensureDeleted(o);
  });

  test("a create ending in error (read back on the next call) deletes the load balancer; the call after builds it again", async () => {
    w.fake.setActionPolls(1);
    w.fake.failNextActions("create_load_balancer", 1);
    const o = owner();
    const { lbs } = await bind();
    expect(isInProgress(await lbs.ensure(o, spec()))).toBe(true);
    const err = await (await bind()).lbs.ensure(o, spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OperationFailedError);
    expect(lbOf(o)).toBeUndefined();
    w.fake.setActionPolls(0);
    expect(await lbs.ensure(o, spec())).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    await lbs.ensureDeleted(o);
  });

  test("updateBackends without a built load balancer asks for an ensure", async () => {
    const { lbs } = await bind();
    await expect(lbs.updateBackends(owner(), ["1"])).rejects.toBeInstanceOf(NeedsEnsureError);
  });
});

describe("adoption of the Hetzner CCM's load balancer", () => {
  test("refused without adoptFrom, nothing of it changed; adopted with it, keeping its address and upstream's label", async () => {
    const o = owner();
    const built = vendorBuilt(o);
    const before = JSON.stringify(built);
    const { lbs } = await bind();
    const refused = await lbs.ensure(o, spec()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CloudError);
    expect((refused as Error).message).toMatch(/built by the Hetzner CCM.*adoptFrom/);
    expect(await lbs.ensureDeleted(o)).toBeUndefined();
    expect(await lbs.get(o)).toBeUndefined();
    expect(JSON.stringify(w.fake.store.loadBalancers.get(built.id))).toBe(before);
    const adopting = { ...o, ...MIGRATING };
    expect(await lbs.ensure(adopting, spec())).toEqual([{ ip: built.ipv4 }]);
    const after = w.fake.store.loadBalancers.get(built.id);
    expect(after?.labels).toMatchObject({ [UPSTREAM_UID_LABEL]: o.serviceUid, [OWNER_TAG_CLUSTER]: "prod" });
    expect(after?.services.map((s) => s.listen_port)).toEqual([80, 443]);
    expect((await lbs.get(o))?.id).toBe(String(built.id));
    await lbs.ensureDeleted(adopting);
    expect(w.fake.store.loadBalancers.get(built.id)).toBeUndefined();
  });

  test("one labelled for another cluster is never taken, with or without adoptFrom", async () => {
    const o = owner();
    const theirs = vendorBuilt(o);
    theirs.labels = {
      ...theirs.labels,
      [OWNER_TAG_CLUSTER]: "staging",
      "fleet-ccm.io/service-uid": o.serviceUid,
    };
    const { lbs } = await bind();
    await expect(lbs.ensure({ ...o, ...MIGRATING }, spec())).rejects.toThrow(/belongs to cluster staging/);
    expect(await lbs.ensureDeleted({ ...o, ...MIGRATING })).toBeUndefined();
    expect(w.fake.store.loadBalancers.get(theirs.id)).toBeDefined();
    w.fake.store.loadBalancers.delete(theirs.id);
  });

  test("a Service UID that is no label value is refused before any call (no selector injection)", async () => {
    const { lbs, ops } = await bind();
    await expect(lbs.get({ ...owner(), serviceUid: "x,hcloud-ccm/service-uid" })).rejects.toBeInstanceOf(
      CloudError,
    );
    expect(ops).toEqual([]);
  });
});

describe("annotations", () => {
  test("type, algorithm, network zone and use-private-ip shape the load balancer", async () => {
    const o = owner();
    const { lbs } = await bind();
    await lbs.ensure(
      o,
      spec({
        [A.type]: "lb21",
        [A.algorithm]: "least_connections",
        [A.networkZone]: "eu-central",
        [A.usePrivateIP]: "true",
      }),
    );
    const lb = lbOf(o);
    expect(lb).toMatchObject({ type: "lb21", algorithm: "least_connections", networkZone: "eu-central" });
    expect(lb?.privateNet.map((p) => p.network)).toEqual([w.networkId]);
    expect(lb?.targets.every((t) => t.use_private_ip)).toBe(true);
    // Changed later: change_type and change_algorithm actions, in place.
    await lbs.ensure(
      o,
      spec({
        [A.type]: "lb11",
        [A.algorithm]: "round_robin",
        [A.networkZone]: "eu-central",
        [A.usePrivateIP]: "true",
      }),
    );
    expect(lbOf(o)).toMatchObject({ id: lb?.id, type: "lb11", algorithm: "round_robin" });
    await lbs.ensureDeleted(o);
  });

  test("without type and algorithm keys an existing load balancer keeps what the console set (upstream never downgrades); an account default is applied", async () => {
    const o = { ...owner(), ...MIGRATING };
    const built = vendorBuilt(o);
    // Resized and switched in the Hetzner console after the Hetzner CCM built it.
    built.type = "lb21";
    built.algorithm = "least_connections";
    const { lbs, mutations } = await bind();
    expect(await lbs.ensure(o, spec())).toEqual([{ ip: built.ipv4 }]);
    expect(mutations()).not.toContain("lb.type.update");
    expect(mutations()).not.toContain("lb.algorithm.update");
    expect(w.fake.store.loadBalancers.get(built.id)).toMatchObject({
      type: "lb21",
      algorithm: "least_connections",
    });
    // An account that names them (HCLOUD_LOAD_BALANCERS_TYPE, _ALGORITHM_TYPE): applied.
    const account = await bind({ loadBalancers: { type: "lb31", algorithm: "round_robin" } });
    await account.lbs.ensure(o, spec());
    expect(w.fake.store.loadBalancers.get(built.id)).toMatchObject({
      type: "lb31",
      algorithm: "round_robin",
    });
    await lbs.ensureDeleted(o);
  });

  test("a new load balancer without type and algorithm keys: lb11, round_robin", async () => {
    const o = owner();
    const { lbs } = await bind();
    await lbs.ensure(o, spec());
    expect(lbOf(o)).toMatchObject({ type: "lb11", algorithm: "round_robin" });
    await lbs.ensureDeleted(o);
  });

  test('disable-public-network on an existing load balancer: disabled after the network and the private targets, the private IP as ingress; left as is without the key; enabled again by "false"', async () => {
    const o = owner();
    const { lbs, mutations } = await bind();
    await lbs.ensure(o, spec());
    const lb = lbOf(o);
    expect(lb?.publicEnabled).toBe(true);
    const warned: string[] = [];
    const hints = { annotations: {}, ingress: [], warn: (reason: string) => warned.push(reason) };
    const internal = { [A.disablePublicNetwork]: "true", [A.usePrivateIP]: "true" };
    const ingress = await lbs.ensure(o, spec(internal), undefined, hints);
    expect(lbOf(o)?.publicEnabled).toBe(false);
    expect(lbOf(o)?.targets.every((t) => t.use_private_ip)).toBe(true);
    expect(ingress).toEqual([{ ip: lbOf(o)?.privateNet[0]?.ip }]);
    expect(warned).toEqual([]);
    // The network first, the targets on their private IPs, then the public interface.
    const order = mutations().filter((op) =>
      ["lb.network.update", "lb.target.create", "lb.public.update"].includes(op),
    );
    expect(order[0]).toBe("lb.network.update");
    expect(order.at(-1)).toBe("lb.public.update");
    // Without the key upstream leaves the interface as it is.
    await lbs.ensure(o, spec({ [A.usePrivateIP]: "true" }));
    expect(lbOf(o)?.publicEnabled).toBe(false);
    expect(
      await lbs.ensure(o, spec({ [A.disablePublicNetwork]: "false", [A.usePrivateIP]: "true" })),
    ).toEqual([{ ip: lb?.ipv4 }]);
    expect(lbOf(o)?.publicEnabled).toBe(true);
    // An internal Service (the unified key) asks the same.
    await lbs.ensure(o, spec({ [A.usePrivateIP]: "true" }, { internal: true }));
    expect(lbOf(o)?.publicEnabled).toBe(false);
    await lbs.ensureDeleted(o);
  });

  test("a UDP port is skipped with upstream's warning, the TCP ports built; a Service of UDP ports alone is refused", async () => {
    const o = owner();
    const { lbs } = await bind();
    const warned: string[] = [];
    const hints = {
      annotations: {},
      ingress: [],
      warn: (reason: string, message: string) => warned.push(`${reason}: ${message}`),
    };
    const withUdp = spec(
      {},
      {
        listeners: [
          ...spec().listeners,
          { protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false },
        ],
      },
    );
    expect(await lbs.ensure(o, withUdp, undefined, hints)).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    expect(lbOf(o)?.services.map((s) => s.listen_port)).toEqual([80, 443]);
    expect(warned).toEqual([
      "UnsupportedProtocolConfigured: Service port 53/UDP is skipped: Hetzner Cloud load balancers take TCP ports only",
    ]);
    // Again, on the existing load balancer: nothing for the UDP port.
    expect(await lbs.ensure(o, withUdp, undefined, hints)).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    expect(lbOf(o)?.services.map((s) => s.listen_port)).toEqual([80, 443]);
    const udpOnly = spec(
      {},
      { listeners: [{ protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false }] },
    );
    await expect(lbs.ensure(owner(), udpOnly)).rejects.toThrow(/TCP Service ports only/);
    await lbs.ensureDeleted(o);
  });

  test("a load balancer with delete protection is left in place, as upstream leaves it: no DELETE, the Service let go", async () => {
    const o = owner();
    const { lbs, mutations } = await bind();
    await lbs.ensure(o, spec());
    const lb = lbOf(o);
    if (lb === undefined) throw new Error("not built");
    // Protected in the Hetzner console.
    lb.deleteProtected = true;
    const warned: string[] = [];
    expect(
      await lbs.ensureDeleted(o, undefined, {
        annotations: {},
        ingress: [],
        warn: (reason) => warned.push(reason),
      }),
    ).toBeUndefined();
    expect(lbOf(o)?.id).toBe(lb.id);
    expect(mutations()).not.toContain("lb.delete");
    expect(warned).toEqual(["HetznerLoadBalancerDeleteProtected"]);
    lb.deleteProtected = false;
    await lbs.ensureDeleted(o);
    expect(lbOf(o)).toBeUndefined();
  });

  test("a health-check path alone leaves a tcp service's check TCP on the load balancer, as upstream reads it", async () => {
    const annotations = { [A.healthPath]: "/healthz" };
    const svc = Service.fromPartial({
      namespace: "default",
      name: "web",
      annotations,
      ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
    });
    const built = loadBalancerSpec(
      svc,
      parseLbAnnotations(annotations, hetznerProvider.lbSettings),
      spec().backends,
    );
    const o = owner();
    const { lbs } = await bind();
    await lbs.ensure(o, built);
    expect(lbOf(o)?.services[0]?.health_check).toMatchObject({ protocol: "tcp", port: 30080 });
    expect(lbOf(o)?.services[0]?.health_check.http).toBeUndefined();
    await lbs.ensureDeleted(o);
  });

  test("the health-check path stands for the unified one only with an http(s) protocol", () => {
    expect(hetznerProvider.lbSettings?.({ [A.healthPath]: "/healthz" })).toEqual({});
    expect(hetznerProvider.lbSettings?.({ [A.healthPath]: "/healthz", [A.healthProtocol]: "tcp" })).toEqual({
      healthCheckProtocol: "TCP",
    });
    expect(hetznerProvider.lbSettings?.({ [A.healthPath]: "/healthz", [A.protocol]: "http" })).toEqual({
      healthCheckPath: "/healthz",
    });
    expect(hetznerProvider.lbSettings?.({ [A.healthPath]: "/healthz", [A.protocol]: "https" })).toEqual({
      healthCheckPath: "/healthz",
    });
  });

  test("uses-proxyprotocol and the health-check keys stand for unified settings", () => {
    expect(
      hetznerProvider.lbSettings?.({
        [A.proxyProtocol]: "true",
        [A.healthProtocol]: "http",
        [A.healthPath]: "/healthz",
        [A.healthInterval]: "15s",
        [A.healthTimeout]: "10s",
        [A.healthRetries]: "3",
      }),
    ).toEqual({
      proxyProtocol: true,
      healthCheckProtocol: "HTTP",
      healthCheckPath: "/healthz",
      healthCheckIntervalSeconds: 15,
      healthCheckTimeoutSeconds: 10,
      unhealthyThreshold: 3,
    });
    expect(() => hetznerProvider.lbSettings?.({ [A.healthInterval]: "soon" })).toThrow(AnnotationError);
  });

  test("what fleet-ccm does not build is refused before any call", async () => {
    const { lbs, ops } = await bind();
    const refused: Record<string, string>[] = [
      // A node selector that does not parse.
      { [A.nodeSelector]: "role in (edge" },
      { "load-balancer.hetzner.cloud/private-ipv4": "10.0.0.9" },
      { "load-balancer.hetzner.cloud/private-subnet-ip-range": "10.0.1.0/24" },
      { "load-balancer.hetzner.cloud/id": "42" },
      { [A.type]: "lb99" },
    ];
    for (const a of refused) {
      expect(() => lbs.checkAnnotations?.(a)).toThrow(AnnotationError);
      await expect(lbs.ensure(owner(), spec(a))).rejects.toBeInstanceOf(AnnotationError);
    }
    expect(ops).toEqual([]);
  });

  test("node-selector: upstream's label selector, the hub filters the backends by it", async () => {
    const { lbs } = await bind();
    expect(lbs.nodeSelector?.({})).toBeUndefined();
    const selector = lbs.nodeSelector?.({ [A.nodeSelector]: "role=edge,!spot" });
    expect(selector?.({ role: "edge" })).toBe(true);
    expect(selector?.({ role: "edge", spot: "true" })).toBe(false);
    expect(() => lbs.nodeSelector?.({ [A.nodeSelector]: "role in (edge" })).toThrow(AnnotationError);
  });

  test("hostname and ipv6 ingress, as upstream writes them", async () => {
    const o = owner();
    const { lbs } = await bind();
    expect(await lbs.ensure(o, spec({ [A.hostname]: "lb.example.com" }))).toEqual([
      { hostname: "lb.example.com" },
    ]);
    const lb = lbOf(o);
    expect(await lbs.ensure(o, spec({ [A.ipv6Disabled]: "false" }))).toEqual([
      { ip: lb?.ipv4 },
      { ip: lb?.ipv6 },
    ]);
    await lbs.ensureDeleted(o);
  });

  test("PROXY protocol: every ingress entry says ipMode Proxy, as upstream writes it; the listing reads it from the services", async () => {
    const o = owner();
    const { lbs } = await bind();
    const base = spec({ [A.ipv6Disabled]: "false" });
    const proxied = { ...base, listeners: base.listeners.map((l) => ({ ...l, proxyProtocol: true })) };
    expect(await lbs.ensure(o, proxied)).toEqual([
      { ip: lbOf(o)?.ipv4, ipMode: "Proxy" },
      { ip: lbOf(o)?.ipv6, ipMode: "Proxy" },
    ]);
    expect(lbOf(o)?.services.every((x) => x.proxyprotocol)).toBe(true);
    const listed = (await lbs.listOwned?.(undefined))?.items.find((x) => x.owner.serviceUid === o.serviceUid);
    expect(listed?.ingress).toEqual([{ ip: lbOf(o)?.ipv4, ipMode: "Proxy" }]);
    expect(await lbs.ensure(o, base)).toEqual([{ ip: lbOf(o)?.ipv4 }, { ip: lbOf(o)?.ipv6 }]);
    await lbs.ensureDeleted(o);
  });

  test("an internal Service: no public interface, on the cluster's network, the private IP as ingress", async () => {
    const o = owner();
    const { lbs } = await bind();
    const ingress = await lbs.ensure(o, spec({}, { internal: true }));
    const lb = lbOf(o);
    expect(lb?.publicEnabled).toBe(false);
    expect(lb?.privateNet.map((p) => p.network)).toEqual([w.networkId]);
    expect(ingress).toEqual([{ ip: lb?.privateNet[0]?.ip }]);
    // Moving it later is not possible on Hetzner: warned, left where it is.
    const warned: string[] = [];
    await lbs.ensure(o, spec({ [A.location]: "nbg1" }, { internal: true }), undefined, {
      annotations: {},
      ingress: [],
      warn: (reason) => warned.push(reason),
    });
    expect(warned).toEqual(["HetznerLocationUnchanged"]);
    await lbs.ensureDeleted(o);
  });

  test("source ranges cannot be enforced: a warning, as the Hetzner CCM ignores them", async () => {
    const o = owner();
    const { lbs } = await bind();
    const warned: string[] = [];
    await lbs.ensure(o, spec({}, { sourceRanges: ["10.0.0.0/8"] }), undefined, {
      annotations: {},
      ingress: [],
      warn: (reason) => warned.push(reason),
    });
    expect(warned).toEqual(["LoadBalancerSourceRangesIgnored"]);
    await lbs.ensureDeleted(o);
  });
});

describe("reverse DNS (upstream's changeIPv4RDNS and changeIPv6RDNS)", () => {
  test("ipv4-rdns and ipv6-rdns set the PTR of a new load balancer's public addresses by change_dns_ptr, once", async () => {
    const o = owner();
    const { lbs, ops } = await bind();
    const a = { [A.ipv4Rdns]: "lb.example.com", [A.ipv6Rdns]: "lb6.example.com" };
    await lbs.ensure(o, spec(a));
    const lb = lbOf(o)!;
    expect(lb.dnsPtr).toEqual({ [lb.ipv4]: "lb.example.com", [lb.ipv6]: "lb6.example.com" });
    expect(ops.filter((x) => x === "lb.dns.update")).toHaveLength(2);
    const before = ops.length;
    await lbs.ensure(o, spec(a));
    expect(ops.slice(before)).not.toContain("lb.dns.update");
    await lbs.ensureDeleted(o);
  });

  test("adopted: a PTR the Hetzner CCM set is kept as it is; a changed key is applied to that address alone; without the key nothing is touched", async () => {
    const o = owner(MIGRATING);
    const made = vendorBuilt(o);
    made.dnsPtr = { [made.ipv4]: "old.example.com" };
    const { lbs, ops } = await bind();
    await lbs.ensure(o, spec({ [A.ipv4Rdns]: "old.example.com" }));
    expect(ops).not.toContain("lb.dns.update");
    await lbs.ensure(o, spec({ [A.ipv4Rdns]: "new.example.com" }));
    expect(ops.filter((x) => x === "lb.dns.update")).toHaveLength(1);
    expect(lbOf(o)?.dnsPtr).toEqual({ [made.ipv4]: "new.example.com" });
    await lbs.ensure(o, spec());
    expect(ops.filter((x) => x === "lb.dns.update")).toHaveLength(1);
    expect(lbOf(o)?.dnsPtr).toEqual({ [made.ipv4]: "new.example.com" });
    await lbs.ensureDeleted(o);
  });

  test("a value that is no FQDN (empty, a trailing dot) is refused before any call, naming the key", async () => {
    const { lbs, ops } = await bind();
    for (const v of ["", "lb.example.com."]) {
      const a = { [A.ipv6Rdns]: v };
      expect(() => lbs.checkAnnotations?.(a)).toThrow(AnnotationError);
      const err = await lbs.ensure(owner(), spec(a)).catch((e: unknown) => e);
      expect((err as AnnotationError).annotation).toBe(A.ipv6Rdns);
    }
    expect(ops).toEqual([]);
  });
});

describe("health-check-port (upstream's LBSvcHealthCheckPort)", () => {
  test("every service's check goes to the port as given, on a new load balancer and, changed, on an existing one", async () => {
    const o = owner();
    const { lbs, ops } = await bind();
    await lbs.ensure(o, spec({ [A.healthPort]: "10256" }));
    expect(lbOf(o)?.services.map((x) => x.health_check.port)).toEqual([10256, 10256]);
    await lbs.ensure(o, spec({ [A.healthPort]: "10257" }));
    expect(lbOf(o)?.services.map((x) => x.health_check.port)).toEqual([10257, 10257]);
    // Without the key: each service's node port again.
    await lbs.ensure(o, spec());
    expect(lbOf(o)?.services.map((x) => x.health_check.port)).toEqual(
      lbOf(o)?.services.map((x) => x.destination_port),
    );
    expect(ops.filter((x) => x === "lb.service.update").length).toBeGreaterThan(0);
    expect(() => lbs.checkAnnotations?.({ [A.healthPort]: "http" })).toThrow(AnnotationError);
    await lbs.ensureDeleted(o);
  });

  test("adopted: the Hetzner CCM's check on the annotated port is left as it is", async () => {
    const o = owner(MIGRATING);
    const made = vendorBuilt(o);
    made.services[0]!.health_check.port = 10256;
    const { lbs, ops } = await bind();
    // The rest of the check as the Hetzner CCM's (interval and timeout keys the reconciler read).
    const base = spec();
    await lbs.ensure(
      o,
      spec(
        { [A.healthPort]: "10256" },
        {
          listeners: base.listeners.filter((l) => l.port === 80),
          healthCheck: { ...base.healthCheck, intervalSeconds: 15, timeoutSeconds: 10 },
        },
      ),
    );
    expect(ops).not.toContain("lb.service.update");
    expect(lbOf(o)?.services[0]?.health_check.port).toBe(10256);
    await lbs.ensureDeleted(o);
  });
});
