// The OpenStack provider's annotations and instances through the fake cloud: what each
// openstack-cloud-controller-manager annotation changes in Octavia and Neutron, the
// load-balancer-id annotation written back, and Nova servers as nodes (providerIDs, flavor,
// zone, addresses in upstream's order, shutdown states).
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork } from "../../../../../sim/src/openstack/store.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import { InstanceNotFoundError, OperationFailedError } from "../../errors.js";
import type {
  AccountBinding,
  CloudProvider,
  LbServiceHints,
  LoadBalancers,
  ServiceTarget,
} from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { A, vendorLbSettings } from "./annotations.js";
import { openstackProvider } from "./index.js";
import { nodeAddresses } from "./instances.js";

let fake: OpenStackFake;
let net: FakeNetwork;
let other: FakeNetwork;
let ext: FakeNetwork;
let ext2: FakeNetwork;
let backends: string[];
let provider: CloudProvider;
let lbs: LoadBalancers;
let seq = 0;

const account = (): AccountBinding => ({
  name: "demo",
  provider: "openstack",
  region: "RegionOne",
  network: net.id,
  endpoint: fake.url,
  credential: "s3cret",
  secret: () => "s3cret",
  credentialNames: ["applicationCredentialSecret"],
  requestTimeoutMs: 5_000,
});

const target = (): ServiceTarget => ({
  cluster: "c1",
  network: net.id,
  scope: {},
  serviceUid: `uid-${++seq}`,
});
const spec = (annotations: Record<string, string> = {}) =>
  sampleLoadBalancerSpec(backends, { annotations, serviceName: `default/web-${seq}` });
const lbOf = (uid: string) =>
  [...fake.store.loadBalancers.values()].find((l) => l.tags.includes(`fleet-ccm.io/service-uid=${uid}`));
const poolsOf = (lbId: string) => [...fake.store.pools.values()].filter((p) => p.lbId === lbId);
const monitorsOf = (lbId: string) => {
  const pools = new Set(poolsOf(lbId).map((p) => p.id));
  return [...fake.store.healthMonitors.values()].filter((h) => pools.has(h.poolId));
};
const fipsOf = (portId: string) => [...fake.store.floatingIps.values()].filter((f) => f.portId === portId);

beforeAll(async () => {
  fake = await OpenStackFake.start({ spec: true });
  fake.createProject("demo");
  fake.createApplicationCredential("demo", "app-1", "s3cret");
  net = fake.createNetwork("demo", "RegionOne", { name: "k8s", cidr: "10.0.0.0/16" });
  other = fake.createNetwork("demo", "RegionOne", { name: "lb-net", cidr: "10.9.0.0/16" });
  ext = fake.createNetwork("demo", "RegionOne", { name: "public", cidr: "172.24.4.0/24", external: true });
  ext2 = fake.createNetwork("demo", "RegionOne", { name: "public2", cidr: "172.25.4.0/24", external: true });
  backends = [0, 1]
    .map(
      (i) =>
        fake.createServer("demo", "RegionOne", {
          name: `node-${i}`,
          networks: [net],
          flavor: "m1.large",
          az: "az-1",
        }).id,
    )
    .sort();
  ({ provider } = await bindRecorded(openstackProvider, account(), {
    applicationCredentialId: "app-1",
    loadBalancer: { floatingNetworkId: ext.id },
  }));
  if (provider.loadBalancers === undefined) throw new Error("no load balancers");
  lbs = provider.loadBalancers;
});

afterAll(async () => {
  // Closed whatever the answer, so a spec problem fails the suite instead of hanging it.
  const problems = fake.specProblems();
  await fake.close();
  expect(problems).toEqual([]);
});

describe("annotations", () => {
  test("a public Service: a floating IP on the VIP as its ingress, the load-balancer-id annotation written back, upstream's name", async () => {
    const t = target();
    const annotated: Record<string, string> = {};
    const hints: LbServiceHints = { annotations: {}, ingress: [], annotate: (k, v) => (annotated[k] = v) };
    const ingress = await settle(() => lbs.ensure(t, spec(), undefined, hints));
    const lb = lbOf(t.serviceUid);
    expect(lb?.name).toBe(`kube_service_c1_default_web-${seq}`);
    const [fip] = fipsOf(lb?.vipPortId ?? "");
    expect(ingress).toEqual([{ ip: fip?.address }]);
    expect(fip?.floatingNetworkId).toBe(ext.id);
    expect(annotated).toEqual({ [A.loadBalancerId]: lb?.id });
    expect(lbs.capabilities.serviceAnnotationKeys).toEqual([A.loadBalancerId]);
    await settle(() => lbs.ensureDeleted(t));
    expect(fake.store.floatingIps.size).toBe(0);
  });

  test("PROXY protocol: the ingress says ipMode Proxy, as upstream writes it", async () => {
    const t = target();
    const base = spec();
    const proxied = { ...base, listeners: base.listeners.map((l) => ({ ...l, proxyProtocol: true })) };
    const ingress = await settle(() => lbs.ensure(t, proxied));
    const lb = lbOf(t.serviceUid);
    expect(poolsOf(lb?.id ?? "").map((p) => p.protocol)).toEqual(base.listeners.map(() => "PROXY"));
    const [fip] = fipsOf(lb?.vipPortId ?? "");
    expect(ingress).toEqual([{ ip: fip?.address, ipMode: "Proxy" }]);
    expect(await settle(() => lbs.ensure(t, base))).toEqual([{ ip: fip?.address }]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("internal: the VIP is the ingress, no floating IP; keep-floatingip keeps it past delete", async () => {
    const t = target();
    const ingress = await settle(() => lbs.ensure(t, spec({ [A.internal]: "true" })));
    const lb = lbOf(t.serviceUid);
    expect(ingress).toEqual([{ ip: lb?.vipAddress }]);
    expect(fipsOf(lb?.vipPortId ?? "")).toEqual([]);
    const k = target();
    const keep = { [A.keepFloatingIp]: "true", [A.floatingNetworkId]: ext2.id };
    await settle(() => lbs.ensure(k, spec(keep)));
    const kept = fipsOf(lbOf(k.serviceUid)?.vipPortId ?? "");
    expect(kept.map((f) => f.floatingNetworkId)).toEqual([ext2.id]);
    await settle(() => lbs.ensureDeleted(k, undefined, { annotations: keep, ingress: [] }));
    expect(fake.store.floatingIps.get(kept[0]?.id ?? "")).toBeDefined();
    fake.store.floatingIps.delete(kept[0]?.id ?? "");
    await settle(() => lbs.ensureDeleted(t));
  });

  test("subnet-id and network-id place the VIP; lb-method sets the pools' algorithm", async () => {
    const t = target();
    await settle(() =>
      lbs.ensure(t, spec({ [A.subnetId]: other.subnets[0]?.id ?? "", [A.lbMethod]: "LEAST_CONNECTIONS" })),
    );
    const lb = lbOf(t.serviceUid);
    expect(lb?.vipSubnetId).toBe(other.subnets[0]?.id);
    expect(poolsOf(lb?.id ?? "").map((p) => p.lbAlgorithm)).toEqual([
      "LEAST_CONNECTIONS",
      "LEAST_CONNECTIONS",
    ]);
    const n = target();
    await settle(() => lbs.ensure(n, spec({ [A.networkId]: other.id })));
    expect(lbOf(n.serviceUid)?.vipNetworkId).toBe(other.id);
    for (const x of [t, n]) await settle(() => lbs.ensureDeleted(x));
  });

  test("enable-health-monitor=false drops the monitors; health-monitor-* set them through the unified settings", async () => {
    const t = target();
    await settle(() => lbs.ensure(t, spec()));
    const lb = lbOf(t.serviceUid);
    expect(monitorsOf(lb?.id ?? "")).toHaveLength(2);
    await settle(() => lbs.ensure(t, spec({ [A.enableHealthMonitor]: "false" })));
    expect(monitorsOf(lb?.id ?? "")).toHaveLength(0);
    const settings = vendorLbSettings({
      [A.healthDelay]: "7",
      [A.healthTimeout]: "3",
      [A.healthMaxRetries]: "2",
      [A.healthMaxRetriesDown]: "4",
    });
    expect(settings).toEqual({
      healthCheckIntervalSeconds: 7,
      healthCheckTimeoutSeconds: 3,
      healthyThreshold: 2,
      unhealthyThreshold: 4,
    });
    const base = spec();
    await settle(() =>
      lbs.ensure(t, {
        ...base,
        healthCheck: {
          ...base.healthCheck,
          intervalSeconds: 7,
          timeoutSeconds: 3,
          healthyThreshold: 2,
          unhealthyThreshold: 4,
        },
      }),
    );
    expect(
      monitorsOf(lb?.id ?? "").map((m) => [
        m.settings["delay"],
        m.settings["timeout"],
        m.settings["max_retries"],
        m.settings["max_retries_down"],
      ]),
    ).toEqual([
      [7, 3, 2, 4],
      [7, 3, 2, 4],
    ]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("a value upstream refuses is an AnnotationError before any call", () => {
    expect(() => lbs.checkAnnotations?.({ [A.lbMethod]: "FASTEST" })).toThrow(AnnotationError);
    expect(() => lbs.checkAnnotations?.({ [A.internal]: "maybe" })).toThrow(AnnotationError);
    expect(() => lbs.checkAnnotations?.({ [A.timeoutClientData]: "-1" })).toThrow(AnnotationError);
  });

  test("an annotated load-balancer-id of a load balancer nobody adopted is refused without adoptFrom", async () => {
    const theirs = fake.putLoadBalancer("demo", "RegionOne", {
      name: "kube_service_old_default_web",
      subnetId: net.subnets[0]?.id ?? "",
    });
    const t = target();
    const annotations = { [A.loadBalancerId]: theirs.id };
    await expect(
      settle(() => lbs.ensure(t, spec(annotations), undefined, { annotations, ingress: [] })),
    ).rejects.toThrow(/no adoptFrom/);
    expect(fake.store.loadBalancers.get(theirs.id)?.tags).toEqual([]);
  });
});

/** What openstack-cloud-controller-manager (cluster `kubernetes`) built for `default/web-<seq>`. */
function vendorLb(
  opts: {
    provider?: string;
    listeners?: readonly { protocol: string; port: number; nodePort: number }[];
    monitor?: { type: string; settings?: Record<string, unknown> };
    monitorPort?: number;
  } = {},
) {
  const lb = fake.putLoadBalancer("demo", "RegionOne", {
    name: `kube_service_kubernetes_default_web-${seq}`,
    description: `Kubernetes external service default/web-${seq} from cluster kubernetes`,
    subnetId: net.subnets[0]?.id ?? "",
    ...(opts.provider !== undefined && { provider: opts.provider }),
  });
  const ip = (id: string) =>
    [...fake.store.ports.values()].find((p) => p.deviceId === id)?.fixedIps[0]?.ip_address ?? "";
  for (const l of opts.listeners ?? [{ protocol: "TCP", port: 80, nodePort: 30080 }])
    fake.putListener(lb.id, {
      protocol: l.protocol,
      port: l.port,
      members: backends.map((b) => ({
        address: ip(b),
        port: l.nodePort,
        ...(opts.monitorPort !== undefined && { monitorPort: opts.monitorPort }),
      })),
      ...(opts.monitor !== undefined && { monitor: opts.monitor }),
    });
  return lb;
}
const adopting = (): ServiceTarget => ({
  ...target(),
  scope: { adoptFrom: { vendorCcmClusterName: "kubernetes" } },
});

describe("floating IPs, as upstream's ensureFloatingIP", () => {
  test("an internal Service with keep-floatingip: the floating IP is detached from the VIP, kept", async () => {
    const t = target();
    const keep = { [A.keepFloatingIp]: "true" };
    await settle(() => lbs.ensure(t, spec(keep)));
    const lb = lbOf(t.serviceUid);
    const [fip] = fipsOf(lb?.vipPortId ?? "");
    expect(fip).toBeDefined();
    const ingress = await settle(() => lbs.ensure(t, spec({ ...keep, [A.internal]: "true" })));
    expect(ingress).toEqual([{ ip: lb?.vipAddress }]);
    // Off the VIP port: the "internal" load balancer is no longer reachable from outside.
    expect(fake.store.floatingIps.get(fip?.id ?? "")?.portId).toBeNull();
    await settle(() => lbs.ensureDeleted(t));
    fake.store.floatingIps.delete(fip?.id ?? "");
  });

  test("a floating IP ensure did not make (a user's, on an adopted VIP) is detached, never deleted: on a switch to internal and on delete", async () => {
    const mine = (description: string) => {
      const t = adopting();
      const lb = vendorLb();
      const fip = fake.attachFloatingIpToLb(lb.id, ext, description);
      return { t, lb, fip };
    };
    const users = mine("reserved for www.example.com");
    await settle(() => lbs.ensure(users.t, spec()));
    expect(lbOf(users.t.serviceUid)?.id).toBe(users.lb.id);
    await settle(() => lbs.ensure(users.t, spec({ [A.internal]: "true" })));
    expect(fake.store.floatingIps.get(users.fip.id)?.portId).toBeNull();

    const again = mine("reserved for api.example.com");
    await settle(() => lbs.ensure(again.t, spec()));
    await settle(() => lbs.ensureDeleted(again.t));
    expect(fake.store.floatingIps.get(again.fip.id)?.portId).toBeNull();

    // One upstream made (its description) is the Service's: deleted with it.
    const upstreams = mine(
      `Floating IP for Kubernetes external service default/web-${seq} from cluster kubernetes`,
    );
    await settle(() => lbs.ensure(upstreams.t, spec()));
    await settle(() => lbs.ensureDeleted(upstreams.t));
    expect(fake.store.floatingIps.has(upstreams.fip.id)).toBe(false);
    await settle(() => lbs.ensureDeleted(users.t));
    for (const f of [users.fip, again.fip]) fake.store.floatingIps.delete(f.id);
  });

  test("loadBalancerIP naming a free floating IP of the project attaches it; one on another port is refused", async () => {
    const reserved = fake.reserveFloatingIp("demo", "RegionOne", ext, "our public address");
    const t = target();
    const ingress = await settle(() => lbs.ensure(t, { ...spec(), loadBalancerIP: reserved.address }));
    expect(ingress).toEqual([{ ip: reserved.address }]);
    const lb = lbOf(t.serviceUid);
    expect(fipsOf(lb?.vipPortId ?? "").map((f) => f.id)).toEqual([reserved.id]);
    const taken = target();
    await expect(
      settle(() => lbs.ensure(taken, { ...spec(), loadBalancerIP: reserved.address })),
    ).rejects.toThrow(/is not available/);
    // The user's address outlives the Service.
    await settle(() => lbs.ensureDeleted(t));
    expect(fake.store.floatingIps.get(reserved.id)?.portId).toBeNull();
    await settle(() => lbs.ensureDeleted(taken));
    fake.store.floatingIps.delete(reserved.id);
  });
});

describe("health monitors, as upstream's buildMonitorCreateOpts", () => {
  const HCNP = 32000;
  const udp = [{ protocol: "UDP" as const, port: 53, nodePort: 30053, proxyProtocol: false }];
  /** externalTrafficPolicy Local, as predicates.ts says it. */
  const local = (listeners = spec().listeners) => ({
    ...spec(),
    listeners,
    healthCheck: { ...spec().healthCheck, protocol: "HTTP" as const, port: HCNP, path: "/healthz" },
  });
  const monitors = (uid: string) =>
    monitorsOf(lbOf(uid)?.id ?? "").map((m) => `${m.type} ${String(m.settings["url_path"] ?? "-")}`);
  const monitorPorts = (uid: string) =>
    poolsOf(lbOf(uid)?.id ?? "").flatMap((p) => p.members.map((m) => m.monitorPort));
  let ovn: LoadBalancers;
  beforeAll(async () => {
    const bound = await bindRecorded(openstackProvider, account(), {
      applicationCredentialId: "app-1",
      loadBalancer: { floatingNetworkId: ext.id, provider: "ovn" },
    });
    if (bound.provider.loadBalancers === undefined) throw new Error("no load balancers");
    ovn = bound.provider.loadBalancers;
  });

  test("UDP with externalTrafficPolicy Local: HTTP /healthz on the health-check node port, not UDP-CONNECT", async () => {
    const t = target();
    await settle(() => lbs.ensure(t, local(udp)));
    expect(monitors(t.serviceUid)).toEqual(["HTTP /healthz"]);
    expect(monitorPorts(t.serviceUid)).toEqual([HCNP, HCNP]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("monitor_port only for Local (not another port's node port), and not with monitors off", async () => {
    const t = target();
    await settle(() => lbs.ensure(t, spec()));
    expect(monitors(t.serviceUid)).toEqual(["TCP -", "TCP -"]);
    expect(monitorPorts(t.serviceUid)).toEqual([null, null, null, null]);
    await settle(() => lbs.ensure(t, { ...local(), annotations: { [A.enableHealthMonitor]: "false" } }));
    expect(monitors(t.serviceUid)).toEqual([]);
    expect(monitorPorts(t.serviceUid)).toEqual([null, null, null, null]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("Octavia's OVN provider, which refuses HTTP monitors: TCP and UDP-CONNECT, no monitor_port", async () => {
    const t = target();
    await settle(() => ovn.ensure(t, local([...spec().listeners.slice(0, 1), ...udp])));
    expect(monitors(t.serviceUid).sort()).toEqual(["TCP -", "UDP-CONNECT -"]);
    expect(monitorPorts(t.serviceUid)).toEqual([null, null, null, null]);
    await settle(() => ovn.ensure(t, spec()));
    await settle(() => ovn.ensureDeleted(t));
  });

  test("adopting the monitors upstream built right keeps them (no delete and recreate)", async () => {
    const settings = { delay: 10, timeout: 5, max_retries: 2, max_retries_down: 3 };
    const amphora = adopting();
    const http = vendorLb({
      listeners: [{ protocol: "UDP", port: 53, nodePort: 30053 }],
      monitor: {
        type: "HTTP",
        settings: { ...settings, url_path: "/healthz", http_method: "GET", expected_codes: "200" },
      },
      monitorPort: HCNP,
    });
    const before = monitorsOf(http.id).map((m) => m.id);
    await settle(() => lbs.ensure(amphora, local(udp)));
    expect(monitorsOf(http.id).map((m) => m.id)).toEqual(before);
    expect(monitorPorts(amphora.serviceUid)).toEqual([HCNP, HCNP]);

    const onOvn = adopting();
    const tcp = vendorLb({ provider: "ovn", monitor: { type: "TCP", settings } });
    const tcpBefore = monitorsOf(tcp.id).map((m) => m.id);
    await settle(() => ovn.ensure(onOvn, local(spec().listeners.slice(0, 1))));
    expect(monitorsOf(tcp.id).map((m) => m.id)).toEqual(tcpBefore);
    expect(monitorPorts(onOvn.serviceUid)).toEqual([null, null]);
    await settle(() => lbs.ensureDeleted(amphora));
    await settle(() => ovn.ensureDeleted(onOvn));
  });
});

describe("an ERROR load balancer", () => {
  test("without recreateOnError it is reported on every sync and never deleted", async () => {
    const t = target();
    fake.failNextCreates(1);
    await expect(settle(() => lbs.ensure(t, spec()))).rejects.toBeInstanceOf(OperationFailedError);
    await expect(settle(() => lbs.ensure(t, spec()))).rejects.toThrow(/recreateOnError/);
    const lb = lbOf(t.serviceUid);
    expect(lb === undefined ? undefined : fake.lbStatus(lb.id)).toBe("ERROR");
    await settle(() => lbs.ensureDeleted(t));
    expect(lbOf(t.serviceUid)).toBeUndefined();
  });
});

describe("instances", () => {
  test("providerID, flavor from the embedded flavor, zone, region, addresses; gone and shutdown", async () => {
    const id = backends[0] ?? "";
    const meta = await provider.instances.getByProviderID(`openstack:///${id}`);
    expect(meta).toMatchObject({
      providerID: `openstack:///${id}`,
      instanceType: "m1.large",
      zone: "az-1",
      region: "RegionOne",
      network: net.id,
      state: "running",
    });
    expect(meta.addresses[0]?.type).toBe("InternalIP");
    expect(provider.instances.parseProviderID(`openstack://RegionOne/${id}`)).toBe(id);
    expect(provider.instances.parseProviderID(`openstack://RegionTwo/${id}`)).toBeUndefined();
    // Shut down only SHUTOFF, as upstream's InstanceShutdown (node-instances.test.ts has the rest).
    fake.setServerStatus(id, "SHUTOFF");
    expect((await provider.instances.getByProviderID(`openstack:///${id}`)).state).toBe("stopped");
    for (const status of ["SUSPENDED", "PAUSED", "SHELVED_OFFLOADED", "SOFT_DELETED"] as const) {
      fake.setServerStatus(id, status);
      expect((await provider.instances.getByProviderID(`openstack:///${id}`)).state).toBe("unknown");
    }
    fake.setServerStatus(id, "DELETED");
    await expect(provider.instances.getByProviderID(`openstack:///${id}`)).rejects.toBeInstanceOf(
      InstanceNotFoundError,
    );
    fake.setServerStatus(id, "ACTIVE");
    await expect(
      provider.instances.getByProviderID("openstack:///5e0c0000-0000-4000-8000-0000ffffffff"),
    ).rejects.toBeInstanceOf(InstanceNotFoundError);
  });

  test("addresses in upstream's order: port fixed IPs, then Nova's by network name, floating ones external", () => {
    const server = {
      id: "s",
      name: "n",
      status: "ACTIVE",
      addresses: {
        zeta: [{ addr: "10.2.0.5", "OS-EXT-IPS:type": "fixed" }],
        alpha: [
          { addr: "10.0.0.5", "OS-EXT-IPS:type": "fixed" },
          { addr: "203.0.113.9", "OS-EXT-IPS:type": "floating" },
        ],
        pub: [{ addr: "198.51.100.3", "OS-EXT-IPS:type": "fixed" }],
      },
    };
    const ports = [{ id: "p", device_id: "s", network_id: "n1", fixed_ips: [{ ip_address: "10.0.0.5" }] }];
    expect(
      nodeAddresses(server, ports, {
        internalNetworkName: [],
        publicNetworkName: ["pub"],
      }),
    ).toEqual([
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "ExternalIP", address: "203.0.113.9" },
      { type: "ExternalIP", address: "198.51.100.3" },
      { type: "InternalIP", address: "10.2.0.5" },
    ]);
    // internal-network-name: only the named networks' fixed addresses are internal.
    expect(
      nodeAddresses(server, [], {
        internalNetworkName: ["zeta"],
        publicNetworkName: [],
      }).map((a) => a.address),
    ).toEqual(["203.0.113.9", "10.2.0.5"]);
  });
});

describe("TLS termination (default-tls-container-ref)", () => {
  const REF = "https://barbican.example.com/v1/containers/0b5f6f4e-0000-4000-8000-00000000c0de";
  const listenersOf = (lbId: string) =>
    [...fake.store.listeners.values()]
      .filter((l) => l.lbId === lbId)
      .map((l) => `${l.protocol}:${l.port} ${String(l.settings["default_tls_container_ref"] ?? "-")}`)
      .sort();

  test("with a certificate reference the TCP ports terminate TLS (TERMINATED_HTTPS, HTTP pools), as upstream; a new reference is put on the listeners; without one they are TCP again", async () => {
    fake.addCertificate(REF);
    const t = target();
    await settle(() => lbs.ensure(t, spec({ [A.tlsContainerRef]: REF, [A.xForwardedFor]: "true" })));
    const lb = lbOf(t.serviceUid);
    expect(listenersOf(lb?.id ?? "")).toEqual([`TERMINATED_HTTPS:443 ${REF}`, `TERMINATED_HTTPS:80 ${REF}`]);
    expect(poolsOf(lb?.id ?? "").map((p) => p.protocol)).toEqual(["HTTP", "HTTP"]);
    expect(
      [...fake.store.listeners.values()]
        .filter((l) => l.lbId === lb?.id)
        .map((l) => l.settings["insert_headers"]),
    ).toEqual([{ "X-Forwarded-For": "true" }, { "X-Forwarded-For": "true" }]);

    const renewed = `${REF.slice(0, -4)}beef`;
    fake.addCertificate(renewed);
    await settle(() => lbs.ensure(t, spec({ [A.tlsContainerRef]: renewed })));
    expect(listenersOf(lb?.id ?? "")).toEqual([
      `TERMINATED_HTTPS:443 ${renewed}`,
      `TERMINATED_HTTPS:80 ${renewed}`,
    ]);

    await settle(() => lbs.ensure(t, spec()));
    expect(listenersOf(lb?.id ?? "")).toEqual(["TCP:443 -", "TCP:80 -"]);
    expect(poolsOf(lb?.id ?? "").map((p) => p.protocol)).toEqual(["TCP", "TCP"]);
    await settle(() => lbs.ensureDeleted(t));
  });

  test("a reference Octavia cannot retrieve is Octavia's refusal, reported; nothing half-built stays TLS-less", async () => {
    const t = target();
    const missing = "https://barbican.example.com/v1/containers/0b5f6f4e-0000-4000-8000-00000000dead";
    await expect(settle(() => lbs.ensure(t, spec({ [A.tlsContainerRef]: missing })))).rejects.toThrow(
      /Could not retrieve certificate/,
    );
    const lb = lbOf(t.serviceUid);
    expect(listenersOf(lb?.id ?? "")).toEqual([]);
    await settle(() => lbs.ensureDeleted(t));
  });
});
