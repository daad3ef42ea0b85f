/**
 * One hub serving an OpenStack project beside a Linode account: the hub and the agents are their
 * own processes, with a real nats-server and the Kubernetes API simulator, and the fake OpenStack
 * cloud keeps every Octavia change PENDING_* for a while. Nodes get OpenStack providerIDs and
 * labels; a public Service gets an Octavia load balancer with a floating IP and the
 * load-balancer-id annotation, then turns internal (the VIP, no floating IP); a joining node
 * becomes a member; pod CIDRs become router extra routes beside a route of someone else's, and
 * allowed address pairs of the nodes' ports; the
 * deleted Service leaves nothing behind (load balancer, listeners, pools, members, monitors,
 * floating IP) and the other route stays.
 */
import { afterAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { type LocalCloud, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { MixedLocalCloud } from "../cli/src/mixed-cloud.js";
import {
  OPENSTACK_DEMO_PROJECT,
  OPENSTACK_DEMO_REGION,
  OpenStackLocalCloud,
} from "../cli/src/openstack-cloud.js";
import { pvEvent, pvObject, readPv } from "./persistent-volumes-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const LINODE = "cluster-001";
const OPENSTACK = "cluster-002";
const ALL = [LINODE, OPENSTACK];
const LB_ID = "loadbalancer.openstack.org/load-balancer-id";
const INTERNAL = "service.beta.kubernetes.io/openstack-internal-load-balancer";

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { providerID?: string };
  status?: { addresses?: { type: string; address: string }[] };
}
interface KubeService {
  metadata: { uid: string; annotations?: Record<string, string> };
  status?: { loadBalancer?: { ingress?: { ip?: string }[] } };
}

let fleet: LocalFleet | undefined;
const clouds: LocalCloud[] = [];
afterAll(async () => {
  await fleet?.stop();
  for (const c of clouds) await c.close();
});

test("OpenStack beside Linode on one hub: nodes, a public then internal load balancer, node changes, routes, PersistentVolumes, clean delete", async () => {
  const linode = await LinodeLocalCloud.start([LINODE]);
  clouds.push(linode);
  const os = await OpenStackLocalCloud.start([OPENSTACK], { pendingMs: 150, spec: true });
  clouds.push(os);
  os.fake.addRouterRoute(os.routerId, "192.168.77.0/24", "10.0.0.250");
  const cloud = new MixedLocalCloud([linode, os], (c) => (c === OPENSTACK ? os : linode));
  fleet = await LocalFleet.start({
    clusters: ALL.length,
    nodesPerCluster: 0,
    logger,
    cloud,
    configureCloudRoutes: true,
  });
  const f = fleet;
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
  for (const c of ALL) f.spawnAgentProcess(c, hub.grpcPort);
  for (const c of ALL) f.addNodes(c, 2);
  expect(await waitFor(() => f.progress().initialized === 4, 90_000)).toBe(true);
  expect(hub.output()).not.toContain(os.secret);

  const nodes = () => f.nodes(OPENSTACK) as unknown as KubeNode[];
  const ipOf = (serverId: string) =>
    [...os.fake.store.ports.values()].find((p) => p.deviceId === serverId)?.fixedIps[0]?.ip_address;
  for (const n of nodes()) {
    const s = os.servers(OPENSTACK).find((x) => x.name === n.metadata.name);
    expect(n.spec.providerID).toBe(`openstack:///${s?.id}`);
    expect(n.metadata.labels).toMatchObject({
      "topology.kubernetes.io/region": "RegionOne",
      "topology.kubernetes.io/zone": "nova",
      "node.kubernetes.io/instance-type": "m1.medium",
    });
    expect(n.status?.addresses).toContainEqual({ type: "InternalIP", address: ipOf(s?.id ?? "") });
  }

  // A public Service: an Octavia load balancer, its floating IP the ingress, the id written back.
  f.addServices(OPENSTACK, 1);
  const svc = () => f.cluster(OPENSTACK).kube.get("Service", "default", "web-0000") as unknown as KubeService;
  const ingress = () => svc()?.status?.loadBalancer?.ingress?.[0]?.ip;
  expect(await waitFor(() => ingress() !== undefined, 90_000)).toBe(true);
  const lbs = () => os.loadBalancers(OPENSTACK);
  expect(lbs()).toHaveLength(1);
  const lb = lbs()[0];
  expect(lb?.name).toBe(`kube_service_${OPENSTACK}_default_web-0000`);
  const fips = () => [...os.fake.store.floatingIps.values()];
  expect(fips().map((x) => x.address)).toEqual([ingress()]);
  expect(await waitFor(() => svc().metadata.annotations?.[LB_ID] === lb?.id, 30_000)).toBe(true);
  const members = () =>
    [...os.fake.store.pools.values()]
      .filter((p) => p.lbId === lb?.id)
      .map((p) =>
        p.members
          .map((m) => m.address)
          .sort()
          .join(","),
      );
  const serverIPs = () =>
    os
      .servers(OPENSTACK)
      .map((s) => ipOf(s.id) ?? "")
      .sort()
      .join(",");
  expect(members().every((m) => m === serverIPs())).toBe(true);

  // A node joins: every pool takes it.
  f.addNodes(OPENSTACK, 1);
  expect(await waitFor(() => f.progress().initialized === 5, 60_000)).toBe(true);
  expect(await waitFor(() => members().length > 0 && members().every((m) => m === serverIPs()), 60_000)).toBe(
    true,
  );
  expect(os.servers(OPENSTACK)).toHaveLength(3);

  // Internal now: the VIP is the ingress and the floating IP goes.
  f.cluster(OPENSTACK).kube.patch("Service", "default", "web-0000", "merge", {
    metadata: { annotations: { [INTERNAL]: "true" } },
  });
  expect(await waitFor(() => ingress() === lb?.vipAddress && fips().length === 0, 60_000)).toBe(true);

  // Routes: each node's pod CIDR to its fixed IP, beside the route someone else made.
  for (const [i, n] of nodes().entries())
    f.cluster(OPENSTACK).kube.patch("Node", undefined, n.metadata.name, "merge", {
      spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
    });
  const want = () =>
    [
      "192.168.77.0/24 -> 10.0.0.250",
      ...nodes().map((n, i) => {
        const s = os.servers(OPENSTACK).find((x) => x.name === n.metadata.name);
        return `10.244.${i}.0/24 -> ${ipOf(s?.id ?? "")}`;
      }),
    ].sort();
  expect(await waitFor(() => JSON.stringify(os.routes()) === JSON.stringify(want()), 60_000)).toBe(true);
  // As upstream: each node's port lets its pod CIDR through (an allowed address pair).
  for (const [i, n] of nodes().entries()) {
    const s = os.servers(OPENSTACK).find((x) => x.name === n.metadata.name);
    const port = [...os.fake.store.ports.values()].find((p) => p.deviceId === s?.id);
    expect(port?.allowedAddressPairs.map((a) => a.ip_address)).toEqual([`10.244.${i}.0/24`]);
  }

  // PersistentVolumes of Cinder volumes, in-tree and CSI: the volume's availability zone and the
  // account's region, as labels and requirements; a volume of the catalog's other region is not
  // in the cluster's scope: left alone with its Event.
  const volume = (region: string, name: string) =>
    os.fake.createVolume(OPENSTACK_DEMO_PROJECT, region, { name, size: 10, az: "nova" }).id;
  const kube = f.cluster(OPENSTACK).kube;
  kube.create(
    "PersistentVolume",
    pvObject("csi", {
      csi: { driver: "cinder.csi.openstack.org", volumeHandle: volume(OPENSTACK_DEMO_REGION, "a") },
    }),
  );
  kube.create(
    "PersistentVolume",
    pvObject("in-tree", { cinder: { volumeID: volume(OPENSTACK_DEMO_REGION, "b") } }),
  );
  kube.create(
    "PersistentVolume",
    pvObject("elsewhere", {
      csi: { driver: "cinder.csi.openstack.org", volumeHandle: volume("RegionTwo", "c") },
    }),
  );
  const ZONE = "topology.kubernetes.io/zone";
  const REGION = "topology.kubernetes.io/region";
  for (const name of ["csi", "in-tree"]) {
    expect(await waitFor(() => readPv(kube, name)?.spec.nodeAffinity !== undefined, 60_000)).toBe(true);
    expect(readPv(kube, name)?.metadata.labels).toEqual({ [ZONE]: "nova", [REGION]: OPENSTACK_DEMO_REGION });
    expect(readPv(kube, name)?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      {
        matchExpressions: expect.arrayContaining([
          { key: ZONE, operator: "In", values: ["nova"] },
          { key: REGION, operator: "In", values: [OPENSTACK_DEMO_REGION] },
        ]),
      },
    ]);
  }
  expect(await waitFor(() => pvEvent(kube, "elsewhere", "DiskNotInScope") !== undefined, 60_000)).toBe(true);
  expect(readPv(kube, "elsewhere")?.metadata.labels ?? {}).toEqual({});

  // Delete the Service: nothing of it is left; the foreign route stays.
  f.cluster(OPENSTACK).kube.delete("Service", "default", "web-0000");
  expect(await waitFor(() => svc() === undefined, 90_000)).toBe(true);
  expect(lbs()).toEqual([]);
  expect([...os.fake.store.listeners.values()]).toEqual([]);
  expect([...os.fake.store.pools.values()]).toEqual([]);
  expect([...os.fake.store.healthMonitors.values()]).toEqual([]);
  expect(fips()).toEqual([]);
  expect(os.routes()).toContain("192.168.77.0/24 -> 10.0.0.250");
  expect(os.fake.specProblems()).toEqual([]);
}, 300_000);
