// The conformance suite against the OpenStack provider through the fake OpenStack cloud (Keystone,
// Nova, Neutron, Octavia over HTTP), every request and answer checked against the spec subsets:
// Octavia settling at once, and Octavia leaving each change PENDING_* for a while (every
// mutation of ensure and delete then answers in progress), and with node-port security groups,
// with an adoption of a load balancer
// built as openstack-cloud-controller-manager builds it.
import { afterAll, expect } from "@jest/globals";
import { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork } from "../../../../../sim/src/openstack/store.js";
import {
  type ConformanceFake,
  type ConformanceFixture,
  describeProviderConformance,
  type FakeResource,
  type VendorMode,
} from "../../conformance/conformance.testkit.js";
import type { AccountBinding, LbOwner } from "../../provider.js";
import { openstackProvider } from "./index.js";
import { ownerOfTags } from "./load-balancers.js";
import { claimTag } from "./routes.js";
import { CINDER_CSI_DRIVER, CINDER_IN_TREE, CLUSTER_METADATA } from "./volumes.js";

const PROJECT = "demo";
const REGION = "RegionOne";
const fakes: OpenStackFake[] = [];
let volumes = 0;

/** Every load-balancer resource of the project, with the owner the load balancer's tags record. */
export function octaviaResources(fake: OpenStackFake): FakeResource[] {
  const out: FakeResource[] = [];
  const ownerOfLb = new Map<string, LbOwner | undefined>();
  for (const lb of fake.store.loadBalancers.values()) {
    if (lb.account !== PROJECT || fake.lbStatus(lb.id) === "DELETED") continue;
    const o = ownerOfTags(lb.tags);
    ownerOfLb.set(lb.id, o);
    out.push({ kind: "load-balancer", id: lb.id, ...(o !== undefined && { lbOwner: o }) });
  }
  const sub = (kind: string, id: string, lbId: string) => {
    if (!ownerOfLb.has(lbId)) return;
    const o = ownerOfLb.get(lbId);
    out.push({ kind, id, ...(o !== undefined && { lbOwner: o }) });
  };
  for (const l of fake.store.listeners.values()) sub(`listener:${l.protocol}:${l.port}`, l.id, l.lbId);
  for (const p of fake.store.pools.values()) sub("pool", p.id, p.lbId);
  for (const h of fake.store.healthMonitors.values()) {
    const pool = fake.store.pools.get(h.poolId);
    if (pool !== undefined) sub("healthmonitor", h.id, pool.lbId);
  }
  // A floating IP is the owner's while on its VIP port, or (orphaned) by the description ensure wrote.
  for (const f of fake.store.floatingIps.values()) {
    if (f.account !== PROJECT) continue;
    const lb = [...fake.store.loadBalancers.values()].find((x) => x.vipPortId === f.portId);
    const described = /Kubernetes external service (\S+) from cluster (\S+)$/.exec(f.description);
    const o =
      lb !== undefined
        ? ownerOfLb.get(lb.id)
        : described === null
          ? undefined
          : { serviceUid: described[1] ?? "", cluster: described[2] ?? "" };
    out.push({ kind: "floatingip", id: f.id, ...(o !== undefined && { lbOwner: o }) });
  }
  // Node-port security groups: the owner's by their tags, or (untagged: a create cut short) by
  // the uid in upstream's name and the cluster in its description.
  for (const g of fake.store.securityGroups.values()) {
    if (g.account !== PROJECT) continue;
    const d = /^Security Group for (\S+)\/(\S+) Service LoadBalancer in cluster (\S+)$/.exec(g.description);
    const suffix = d === null ? "" : `-${d[1]}-${d[2]}`;
    const o =
      ownerOfTags(g.tags) ??
      (d === null || !g.name.startsWith("lb-sg-") || !g.name.endsWith(suffix)
        ? undefined
        : { cluster: d[3] ?? "", serviceUid: g.name.slice(6, g.name.length - suffix.length) });
    out.push({ kind: "securitygroup", id: g.id, ...(o !== undefined && { lbOwner: o }) });
  }
  // Routes of the project's routers, owned by the cluster whose claim tag the router carries.
  for (const r of fake.store.routers.values())
    for (const route of r.routes) {
      const owner = r.tags
        .map((t) => /^fleet-ccm\.route=(.+)=[^=]+$/.exec(t)?.[1])
        .find((c) => c !== undefined && r.tags.includes(claimTag(c, route.destination)));
      out.push({
        kind: "route",
        id: `${r.id}/${route.destination}/${route.nexthop}`,
        destinationCIDR: route.destination,
        ...(owner !== undefined && { routeOwner: owner }),
      });
    }
  return out;
}

function vendorModes(fake: OpenStackFake, net: FakeNetwork, ext: FakeNetwork): VendorMode[] {
  return [
    {
      mode: "octavia",
      async build(owner, spec, vendorCluster) {
        const lb = fake.putLoadBalancer(PROJECT, REGION, {
          name: `kube_service_${vendorCluster}_default_svc-${owner.serviceUid}`,
          description: "Kubernetes external service default/svc from cluster vendor",
          subnetId: net.subnets[0]?.id ?? "",
        });
        const ip = (id: string) =>
          [...fake.store.ports.values()].find((p) => p.deviceId === id)?.fixedIps[0]?.ip_address ?? "";
        for (const l of spec.listeners)
          fake.putListener(lb.id, {
            protocol: "TCP",
            port: l.port,
            members: spec.backends.map((b) => ({ address: ip(b), port: l.nodePort })),
          });
        const fip = fake.attachFloatingIpToLb(
          lb.id,
          ext,
          `Floating IP for Kubernetes external service default/svc-${owner.serviceUid} from cluster ${vendorCluster}`,
        );
        return {
          ingress: [{ ip: fip.address }],
          annotations: { "loadbalancer.openstack.org/load-balancer-id": lb.id },
          exposure: () =>
            [...fake.store.listeners.values()]
              .filter((l) => l.lbId === lb.id && fake.lbStatus(lb.id) !== "DELETED")
              .flatMap((l) => {
                const cidrs = l.settings["allowed_cidrs"];
                return (Array.isArray(cidrs) && cidrs.length > 0 ? cidrs : ["0.0.0.0/0"]).map(
                  (c) => `${l.port} ${c}`,
                );
              }),
        };
      },
    },
  ];
}

const fixture = (pendingMs: number, manageSecurityGroups = false): ConformanceFixture => ({
  vendorModes: ["octavia"],
  async start(): Promise<ConformanceFake> {
    const fake = await OpenStackFake.start({ spec: true, pendingMs });
    fakes.push(fake);
    fake.createProject(PROJECT);
    fake.createApplicationCredential(PROJECT, "app-1", "s3cret");
    const net = fake.createNetwork(PROJECT, REGION, { name: "k8s", cidr: "10.0.0.0/16" });
    const other = fake.createNetwork(PROJECT, REGION, { name: "k8s-b", cidr: "10.8.0.0/16" });
    const ext = fake.createNetwork(PROJECT, REGION, {
      name: "public",
      cidr: "172.24.4.0/24",
      external: true,
    });
    const far = fake.createNetwork(PROJECT, "RegionTwo", { name: "k8s", cidr: "10.1.0.0/16" });
    const router = fake.createRouter(PROJECT, REGION, "k8s-router");
    const server = (name: string, region: string, network: FakeNetwork) => {
      const s = fake.createServer(PROJECT, region, { name, networks: [network] });
      return { instanceID: s.id, providerID: `openstack:///${s.id}` };
    };
    let foreign = 0;
    const account = (): AccountBinding => ({
      name: PROJECT,
      provider: "openstack",
      region: REGION,
      network: net.id,
      endpoint: `${fake.url}/v3`,
      credential: "s3cret",
      secret: () => "s3cret",
      credentialNames: ["applicationCredentialSecret"],
      requestTimeoutMs: 2_000,
    });
    return {
      factory: openstackProvider,
      account,
      options: {
        applicationCredentialId: "app-1",
        pageSize: 10,
        routerId: router.id,
        // The suite's recovery case needs the opt-in to rebuild an ERROR load balancer.
        loadBalancer: { floatingNetworkId: ext.id, recreateOnError: true, manageSecurityGroups },
      },
      isMutation: (op) => !op.startsWith("keystone.") && /\.(create|update|delete)$/.test(op),
      createInstance: ({ name, inScope }) =>
        inScope ? server(name, REGION, net) : server(name, "RegionTwo", far),
      terminateInstance: (id) => fake.deleteServer(id),
      disks: {
        zonal: true,
        create: ({ sizeGiB, inScope, ownerCluster, attachedTo }) => {
          const v = fake.createVolume(PROJECT, inScope ? REGION : "RegionTwo", {
            name: `pvc-${++volumes}`,
            size: sizeGiB,
            ...(attachedTo !== undefined && { serverId: attachedTo }),
            ...(ownerCluster !== undefined && { metadata: { [CLUSTER_METADATA]: ownerCluster } }),
          });
          // CSI handles for attached volumes, in-tree ones for the rest: both name the volume by its UUID.
          return attachedTo !== undefined
            ? { id: v.id, source: "csi", csiDriver: CINDER_CSI_DRIVER, handle: v.id }
            : { id: v.id, source: CINDER_IN_TREE, csiDriver: "", handle: v.id };
        },
        missing: () => ({
          id: "5e0c0000-0000-4000-8000-00000000fffe",
          source: "csi",
          csiDriver: CINDER_CSI_DRIVER,
          handle: "5e0c0000-0000-4000-8000-00000000fffe",
        }),
      },
      missingProviderID: () => "openstack:///5e0c0000-0000-4000-8000-0000ffffffff",
      instancePageSize: 10,
      throttle: (seconds) =>
        fake.faults.set({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, PROJECT),
      failWithServerErrors: () => fake.faults.set({ errorRate: 1 }, PROJECT),
      clearFaults: () => fake.faults.reset(),
      resources: () => octaviaResources(fake),
      // A fresh provider first takes its Keystone token; then the page and its floating IPs.
      listOwnedReadsPerPage: 3,
      backendPorts: (o) => {
        const lb = [...fake.store.loadBalancers.values()].find((l) => {
          const owner = ownerOfTags(l.tags);
          return owner?.cluster === o.cluster && owner.serviceUid === o.serviceUid;
        });
        const ports = [...fake.store.pools.values()]
          .filter((p) => p.lbId === lb?.id)
          .flatMap((p) => p.members.map((m) => m.port));
        return [...new Set(ports)].sort((a, b) => a - b);
      },
      otherNetwork: { network: other.id, createInstance: (name) => server(name, REGION, other) },
      failNextCreates: (n) => fake.failNextCreates(n),
      createForeignLoadBalancer: () => {
        foreign++;
        fake.putLoadBalancer(PROJECT, REGION, {
          name: `theirs-${foreign}`,
          subnetId: net.subnets[0]?.id ?? "",
          tags: ["team=x"],
        });
      },
      vendorModes: vendorModes(fake, net, ext),
      createForeignRoute: (cidr, target) => {
        const ip = [...fake.store.ports.values()].find((p) => p.deviceId === target)?.fixedIps[0]?.ip_address;
        if (ip === undefined) throw new Error(`server ${target} has no port`);
        fake.addRouterRoute(router.id, cidr, ip);
      },
      close: () => fake.close(),
    };
  },
});

describeProviderConformance("openstack", fixture(0), { digests: true });
// Octavia keeps every change PENDING_* for 100 ms: each mutation answers in progress, even on a
// loaded machine where the read after it comes late (at 10 ms a slow read found the delete done),
// and the suite's 50 ms pauses keep it within its poll limit.
describeProviderConformance("openstack (Octavia pending)", fixture(100), { digests: true, inProgress: true });
// With upstream's manage-security-groups: every crash, delete and listing case also covers the
// node-port security group, its rules and the members' ports.
describeProviderConformance("openstack (node-port security groups)", fixture(0, true), { digests: true });

afterAll(() => {
  for (const fake of fakes) expect(fake.specProblems()).toEqual([]);
});
