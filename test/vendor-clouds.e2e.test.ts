/**
 * One hub serving five clouds at once: a DigitalOcean account, a Hetzner Cloud project and a
 * GCP project (reached with a service-account key through the fake's token endpoint) beside a
 * Linode account and an AWS account, one cluster on each. The hub and the agents are their own
 * processes (fleet-ccm hub, fleet-ccm agent), with a real nats-server and the Kubernetes API
 * simulator. Every node gets its own vendor's providerID and labels; a LoadBalancer Service per
 * cluster gets a load balancer of its own cloud, takes a node that joins, and leaves nothing in
 * that cloud's inventory when deleted; pod CIDRs are routed where the vendor has routes
 * (Hetzner's network, GCP's VPC, AWS's route table; DigitalOcean has no route API);
 * PersistentVolumes of the DigitalOcean and Hetzner CSI drivers get their volume's region.
 */

import { readFileSync } from "node:fs";
import { LB_COLLECTIONS } from "@fleet-ccm/sim";
import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { AwsLocalCloud } from "../cli/src/aws-cloud.js";
import { AZURE_DEMO_SUBSCRIPTION, AzureLocalCloud } from "../cli/src/azure-cloud.js";
import { DigitalOceanLocalCloud, DO_DEMO_ACCOUNT } from "../cli/src/digitalocean-cloud.js";
import { GCP_DEMO_PROJECT, GcpLocalCloud } from "../cli/src/gcp-cloud.js";
import { HETZNER_DEMO_ACCOUNT, HetznerLocalCloud } from "../cli/src/hetzner-cloud.js";
import { LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { type LocalCloud, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { MixedLocalCloud } from "../cli/src/mixed-cloud.js";
import { OpenStackLocalCloud } from "../cli/src/openstack-cloud.js";
import { localCloudsFixture } from "./local-clouds-fixture.js";
import { pvEvent, pvObject, readPv } from "./persistent-volumes-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const LINODE = "cluster-001";
const AWS = "cluster-002";
const DO = "cluster-003";
const HETZNER = "cluster-004";
const GCP = "cluster-005";
const ALL = [LINODE, AWS, DO, HETZNER, GCP];
const DO_LB_ID = "kubernetes.digitalocean.com/load-balancer-id";
const REGION = "topology.kubernetes.io/region";
const ZONE = "topology.kubernetes.io/zone";
const TYPE = "node.kubernetes.io/instance-type";

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { providerID?: string };
  status?: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string; reason?: string }[];
  };
}
interface KubeService {
  metadata: { uid: string; annotations?: Record<string, string>; finalizers?: string[] };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}

const { started, useFleet } = localCloudsFixture();

test("DigitalOcean, Hetzner and GCP beside Linode and AWS on one hub: nodes, load balancers, node changes, routes, PersistentVolumes, clean delete", async () => {
  const linode = await started(LinodeLocalCloud.start([LINODE]));
  const aws = await started(AwsLocalCloud.start([AWS]));
  const digitalocean = await started(DigitalOceanLocalCloud.start([DO]));
  const hetzner = await started(HetznerLocalCloud.start([HETZNER]));
  const gcp = await started(GcpLocalCloud.start([GCP]));
  // Vendor-like asynchrony: a DigitalOcean load balancer is `new` for two reads and Compute
  // operations take 300 ms: the hub answers "in progress" and comes back. Hetzner's actions end
  // at once here: the fake ends a running action only when it is read, and holds its network
  // locked until then, so a route whose action nobody reads again (the route is already listed)
  // would lock the network for good; the provider's own tests cover running actions.
  digitalocean.fake.setActivation(2);
  gcp.fake.operationMs = 300;
  const byCluster: Record<string, LocalCloud> = {
    [LINODE]: linode,
    [AWS]: aws,
    [DO]: digitalocean,
    [HETZNER]: hetzner,
    [GCP]: gcp,
  };
  const cloud = new MixedLocalCloud([linode, aws, digitalocean, hetzner, gcp], (c) => {
    const found = byCluster[c];
    if (found === undefined) throw new Error(`no cloud for ${c}`);
    return found;
  });
  const f = useFleet(
    await LocalFleet.start({
      clusters: ALL.length,
      nodesPerCluster: 0,
      logger,
      cloud,
      configureCloudRoutes: true,
    }),
  );
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
  for (const c of ALL) f.spawnAgentProcess(c, hub.grpcPort);
  for (const c of ALL) f.addNodes(c, 2);
  expect(await waitFor(() => f.progress().initialized === 10, 90_000)).toBe(true);
  // No credential reaches the log.
  for (const secret of [digitalocean.token, hetzner.token, aws.keys.secretAccessKey])
    expect(hub.output()).not.toContain(secret);

  const nodes = (c: string) => f.nodes(c) as unknown as KubeNode[];
  // DigitalOcean, as its CCM: digitalocean://<droplet id>, the region, the size slug, no zone.
  for (const n of nodes(DO)) {
    const d = digitalocean.droplets(DO).find((x) => x.name === n.metadata.name);
    expect(n.spec.providerID).toBe(`digitalocean://${d?.id}`);
    expect(n.metadata.labels).toMatchObject({ [REGION]: "nyc3", [TYPE]: "s-2vcpu-4gb" });
    expect(n.metadata.labels?.[ZONE]).toBeUndefined();
    expect(n.status?.addresses).toContainEqual({ type: "InternalIP", address: d?.privateIPv4 });
  }
  // Hetzner, as its CCM: hcloud://<server id>, location and legacy datacenter, the network's IP.
  for (const n of nodes(HETZNER)) {
    const s = hetzner.servers(HETZNER).find((x) => x.name === n.metadata.name);
    expect(n.spec.providerID).toBe(`hcloud://${s?.id}`);
    expect(n.metadata.labels).toMatchObject({
      [REGION]: "fsn1",
      [ZONE]: "fsn1-dc14",
      [TYPE]: "cx22",
      "instance.hetzner.cloud/provided-by": "cloud",
    });
    expect(n.status?.addresses).toContainEqual({ type: "InternalIP", address: s?.privateNet[0]?.ip });
  }
  // GCP, as cloud-provider-gcp: gce://<project>/<zone>/<name>, region, zone, machine type.
  for (const n of nodes(GCP)) {
    const zone = gcp.zones.get(n.metadata.name);
    expect(n.spec.providerID).toBe(`gce://${GCP_DEMO_PROJECT}/${zone}/${n.metadata.name}`);
    expect(n.metadata.labels).toMatchObject({
      [REGION]: "us-central1",
      [ZONE]: zone,
      [TYPE]: "e2-standard-2",
    });
  }
  for (const n of nodes(LINODE)) expect(n.spec.providerID).toMatch(/^linode:\/\/\d+$/);
  for (const n of nodes(AWS)) expect(n.spec.providerID).toMatch(/^aws:\/\/\/us-east-1[a-z]\/i-[0-9a-f]+$/);
  // The GCP calls carried tokens from the fake's token endpoint (google-auth-library's flow).
  expect(gcp.fake.tokensIssued).toBeGreaterThan(0);

  // One LoadBalancer Service per cluster.
  for (const c of ALL) f.addServices(c, 1);
  const svc = (c: string) =>
    f.cluster(c).kube.get("Service", "default", "web-0000") as unknown as KubeService;
  const ingress = (c: string) => svc(c)?.status?.loadBalancer?.ingress?.[0];
  expect(await waitFor(() => ALL.every((c) => ingress(c) !== undefined), 90_000)).toBe(true);

  const doLbs = () => digitalocean.loadBalancers(DO);
  expect(doLbs()).toHaveLength(1);
  expect(ingress(DO)?.ip).toBe(doLbs()[0]?.ip);
  const dropletIds = () => digitalocean.droplets(DO).map((d) => d.id);
  expect([...(doLbs()[0]?.droplet_ids ?? [])].sort()).toEqual(dropletIds().sort());
  // The DigitalOcean CCM's own annotation, set by the agent with the ingress.
  expect(await waitFor(() => svc(DO).metadata.annotations?.[DO_LB_ID] !== undefined, 30_000)).toBe(true);
  expect(svc(DO).metadata.annotations?.[DO_LB_ID]).toBe(doLbs()[0]?.id);

  const hzLbs = () => hetzner.loadBalancers(HETZNER);
  expect(hzLbs()).toHaveLength(1);
  expect(hzLbs()[0]?.labels["hcloud-ccm/service-uid"]).toBe(svc(HETZNER).metadata.uid);
  expect(ingress(HETZNER)?.ip).toBe(hzLbs()[0]?.ipv4);
  const serverIds = () => hetzner.servers(HETZNER).map((s) => s.id);
  const hzTargets = () => (hzLbs()[0]?.targets ?? []).map((t) => t.server);

  const pools = () => gcp.fake.list(GCP_DEMO_PROJECT, "targetPools");
  const rules = () => gcp.fake.list(GCP_DEMO_PROJECT, "forwardingRules");
  expect(pools()).toHaveLength(1);
  expect(rules()).toHaveLength(1);
  expect(ingress(GCP)?.ip).toBe(rules()[0]?.["IPAddress"]);
  const poolInstances = () =>
    ((pools()[0]?.["instances"] as string[] | undefined) ?? []).map((u) => u.split("/").slice(-3).join("/"));
  const gcpInstances = () =>
    nodes(GCP).map((n) => `${gcp.zones.get(n.metadata.name)}/instances/${n.metadata.name}`);
  expect(poolInstances().sort()).toEqual(gcpInstances().sort());
  // cloud-provider-gcp's client firewall, k8s-fw-<lbName>, opens the port to the nodes' network tag.
  const clientFirewall = gcp.fake
    .list(GCP_DEMO_PROJECT, "firewalls")
    .find((fw) => fw["name"] === `k8s-fw-${pools()[0]?.["name"]}`);
  expect(clientFirewall?.["targetTags"]).toEqual([`${GCP}-node`]);

  const nbNodes = () =>
    linode.fake.store.nodeBalancersOf(linode.account(LINODE))[0]?.configs[0]?.nodes.length ?? 0;
  const elbInstances = () => aws.fake.classicLoadBalancers()[0]?.instances.length ?? 0;
  expect(nbNodes()).toBe(2);
  expect(elbInstances()).toBe(2);

  // A node joins every cluster: each cloud's load balancer takes its new instance.
  for (const c of ALL) f.addNodes(c, 1);
  expect(await waitFor(() => f.progress().initialized === 15, 60_000)).toBe(true);
  const sorted = (xs: readonly (number | string | undefined)[]) => [...xs].sort();
  expect(
    await waitFor(
      () =>
        sorted(doLbs()[0]?.droplet_ids ?? []).join() === sorted(dropletIds()).join() &&
        sorted(hzTargets()).join() === sorted(serverIds()).join() &&
        sorted(poolInstances()).join() === sorted(gcpInstances()).join() &&
        nbNodes() === 3 &&
        elbInstances() === 3,
      60_000,
    ),
  ).toBe(true);
  expect(dropletIds()).toHaveLength(3);
  expect(serverIds()).toHaveLength(3);
  expect(gcpInstances()).toHaveLength(3);

  // Routes: each node's pod CIDR (DigitalOcean's too: it must cost nothing there).
  for (const c of [AWS, DO, HETZNER, GCP])
    for (const [i, n] of nodes(c).entries())
      f.cluster(c).kube.patch("Node", undefined, n.metadata.name, "merge", {
        spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
      });
  const hzRoutes = () =>
    hetzner
      .network(HETZNER)
      .routes.map((r) => `${r.destination} -> ${r.gateway}`)
      .sort();
  const hzWant = () =>
    nodes(HETZNER)
      .map((n, i) => {
        const s = hetzner.servers(HETZNER).find((x) => x.name === n.metadata.name);
        return `10.244.${i}.0/24 -> ${s?.privateNet[0]?.ip}`;
      })
      .sort();
  const gcpRoutes = () =>
    gcp.fake
      .list(GCP_DEMO_PROJECT, "routes")
      .map((r) => `${r["destRange"]} -> ${String(r["nextHopInstance"]).split("/").slice(-3).join("/")}`)
      .sort();
  const gcpWant = () =>
    nodes(GCP)
      .map((n, i) => `10.244.${i}.0/24 -> ${gcp.zones.get(n.metadata.name)}/instances/${n.metadata.name}`)
      .sort();
  const awsRoutes = () =>
    (aws.fake.state.routeTables.get(aws.world(AWS).routeTable)?.routes ?? []).filter(
      (r) => r.instanceId !== undefined,
    );
  const routesNow = () => ({ hetzner: hzRoutes(), gcp: gcpRoutes(), aws: awsRoutes().length });
  const routesWanted = () => ({ hetzner: hzWant(), gcp: gcpWant(), aws: 3 });
  await waitFor(() => JSON.stringify(routesNow()) === JSON.stringify(routesWanted()), 60_000);
  if (JSON.stringify(routesNow()) !== JSON.stringify(routesWanted()))
    process.stderr.write(
      hub
        .output()
        .split("\n")
        .filter((l) => /route/i.test(l))
        .slice(-20)
        .join("\n"),
    );
  expect(routesNow()).toEqual(routesWanted());
  // Routed nodes are told so, as the route controller tells them.
  const networkUnavailable = (c: string) =>
    nodes(c).map((n) => n.status?.conditions?.find((x) => x.type === "NetworkUnavailable"));
  expect(
    await waitFor(
      () => [HETZNER, GCP].every((c) => networkUnavailable(c).every((x) => x?.status === "False")),
      30_000,
    ),
  ).toBe(true);
  for (const c of [HETZNER, GCP])
    for (const x of networkUnavailable(c)) expect(x?.reason).toBe("RouteCreated");
  // The claims fleet-ccm keeps on the Hetzner network name this cluster.
  expect(Object.entries(hetzner.network(HETZNER).labels).filter(([, v]) => v === HETZNER)).toHaveLength(3);

  // PersistentVolumes of each vendor's CSI driver: region only (neither has zones for volumes),
  // as label and requirement; a volume of another region is left alone with its Event.
  const doVolume = (region: string, name: string) =>
    digitalocean.fake.createVolume(DO_DEMO_ACCOUNT, { name, region, sizeGigabytes: 10 }).id;
  const hzVolume = (location: string, name: string) =>
    String(hetzner.fake.createVolume(HETZNER_DEMO_ACCOUNT, { name, location, size: 10 }).id);
  const volumePvs = [
    {
      c: DO,
      driver: "dobs.csi.digitalocean.com",
      region: "nyc3",
      mine: doVolume("nyc3", "pvc-a"),
      theirs: doVolume("sfo3", "pvc-b"),
    },
    {
      c: HETZNER,
      driver: "csi.hetzner.cloud",
      region: "fsn1",
      mine: hzVolume("fsn1", "pvc-a"),
      theirs: hzVolume("nbg1", "pvc-b"),
    },
  ];
  for (const v of volumePvs)
    for (const [name, handle] of [
      ["mine", v.mine],
      ["theirs", v.theirs],
    ] as const)
      f.cluster(v.c).kube.create(
        "PersistentVolume",
        pvObject(name, { csi: { driver: v.driver, volumeHandle: handle } }),
      );
  for (const v of volumePvs) {
    const kube = f.cluster(v.c).kube;
    expect(await waitFor(() => readPv(kube, "mine")?.spec.nodeAffinity !== undefined, 60_000)).toBe(true);
    expect(readPv(kube, "mine")?.metadata.labels).toEqual({ [REGION]: v.region });
    expect(readPv(kube, "mine")?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: REGION, operator: "In", values: [v.region] }] },
    ]);
    expect(await waitFor(() => pvEvent(kube, "theirs", "DiskNotInScope") !== undefined, 60_000)).toBe(true);
    expect(readPv(kube, "theirs")?.metadata.labels ?? {}).toEqual({});
  }

  // Delete every Service: nothing of theirs is left in any cloud.
  for (const c of ALL) f.cluster(c).kube.delete("Service", "default", "web-0000");
  expect(await waitFor(() => ALL.every((c) => svc(c) === undefined), 90_000)).toBe(true);
  expect(digitalocean.fake.store.loadBalancersOf(DO_DEMO_ACCOUNT)).toEqual([]);
  expect(hetzner.fake.store.loadBalancersOf(HETZNER_DEMO_ACCOUNT)).toEqual([]);
  for (const collection of LB_COLLECTIONS) expect(gcp.fake.list(GCP_DEMO_PROJECT, collection)).toEqual([]);
  expect(linode.fake.store.nodeBalancersOf(linode.account(LINODE))).toEqual([]);
  expect(aws.fake.state.classicLbs.all()).toEqual([]);
}, 400_000);

/**
 * OpenStack beside the same five clouds on one hub: a project with a network per cluster and
 * node-port security groups on. Nodes get OpenStack providerIDs and labels; a public Service
 * gets an Octavia load balancer with a floating IP, an internal one its VIP, each a security
 * group on the members' ports; a joining node becomes a member of both and gets both groups;
 * pod CIDRs become router extra routes; the deleted Services leave nothing (load balancers,
 * listeners, pools, members, monitors, floating IPs, security groups, port tags). The other
 * clouds' own checks are the test above: here they only serve beside it.
 */
describe("OpenStack beside the other clouds", () => {
  const clouds = localCloudsFixture();
  const OPENSTACK = "cluster-006";
  const INTERNAL = "service.beta.kubernetes.io/openstack-internal-load-balancer";

  test("one hub: OpenStack nodes, a public and an internal Octavia load balancer with security groups, node changes, routes, nothing left", async () => {
    const byCluster = new Map<string, LocalCloud>([
      [LINODE, await clouds.started(LinodeLocalCloud.start([LINODE]))],
      [AWS, await clouds.started(AwsLocalCloud.start([AWS]))],
      [DO, await clouds.started(DigitalOceanLocalCloud.start([DO]))],
      [HETZNER, await clouds.started(HetznerLocalCloud.start([HETZNER]))],
      [GCP, await clouds.started(GcpLocalCloud.start([GCP]))],
    ]);
    const others = [...byCluster.values()];
    const os = await clouds.started(
      OpenStackLocalCloud.start([OPENSTACK], { pendingMs: 100, spec: true, manageSecurityGroups: true }),
    );
    byCluster.set(OPENSTACK, os);
    const cloud = new MixedLocalCloud([...others, os], (c) => {
      const found = byCluster.get(c);
      if (found === undefined) throw new Error(`no cloud for ${c}`);
      return found;
    });
    const every = [...ALL, OPENSTACK];
    const f = clouds.useFleet(
      await LocalFleet.start({
        clusters: every.length,
        nodesPerCluster: 0,
        logger,
        cloud,
        configureCloudRoutes: true,
      }),
    );
    const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
    for (const c of every) f.spawnAgentProcess(c, hub.grpcPort);
    for (const c of every) f.addNodes(c, 2);
    expect(await waitFor(() => f.progress().initialized === 2 * every.length, 120_000)).toBe(true);
    expect(hub.output()).not.toContain(os.secret);

    const nodes = () => f.nodes(OPENSTACK) as unknown as KubeNode[];
    const portOf = (serverId: string) =>
      [...os.fake.store.ports.values()].find((p) => p.deviceId === serverId);
    const ipOf = (serverId: string) => portOf(serverId)?.fixedIps[0]?.ip_address;
    const serverOf = (n: KubeNode) => os.servers(OPENSTACK).find((s) => s.name === n.metadata.name);
    for (const n of nodes()) {
      const s = serverOf(n);
      expect(n.spec.providerID).toBe(`openstack:///${s?.id}`);
      expect(n.metadata.labels).toMatchObject({ [REGION]: "RegionOne", [ZONE]: "nova", [TYPE]: "m1.medium" });
      expect(n.status?.addresses).toContainEqual({ type: "InternalIP", address: ipOf(s?.id ?? "") });
    }

    // A public and an internal Service on OpenStack, one Service on every other cloud.
    for (const c of ALL) f.addServices(c, 1);
    f.addServices(OPENSTACK, 1);
    f.cluster(OPENSTACK).kube.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "internal", namespace: "default", annotations: { [INTERNAL]: "true" } },
      spec: {
        type: "LoadBalancer",
        selector: { app: "internal" },
        ports: [{ name: "dns", port: 5353, protocol: "UDP" }],
      },
    });
    const svcOf = (c: string, name: string) =>
      f.cluster(c).kube.get("Service", "default", name) as unknown as KubeService | undefined;
    const ingressOf = (c: string, name: string) => svcOf(c, name)?.status?.loadBalancer?.ingress?.[0];
    const named = [
      ...ALL.map((c) => [c, "web-0000"] as const),
      [OPENSTACK, "web-0000"],
      [OPENSTACK, "internal"],
    ] as const;
    expect(await waitFor(() => named.every(([c, n]) => ingressOf(c, n) !== undefined), 120_000)).toBe(true);

    const lbs = () => os.loadBalancers(OPENSTACK);
    expect(lbs()).toHaveLength(2);
    const lbOf = (name: string) => lbs().find((l) => l.name === `kube_service_${OPENSTACK}_default_${name}`);
    const fips = () => [...os.fake.store.floatingIps.values()];
    expect(fips().map((x) => x.address)).toEqual([ingressOf(OPENSTACK, "web-0000")?.ip]);
    expect(fips()[0]?.portId).toBe(lbOf("web-0000")?.vipPortId);
    expect(ingressOf(OPENSTACK, "internal")?.ip).toBe(lbOf("internal")?.vipAddress);
    const listeners = (lb: string) =>
      [...os.fake.store.listeners.values()]
        .filter((l) => l.lbId === lbOf(lb)?.id)
        .map((l) => `${l.protocol}:${l.port}`);
    expect(listeners("web-0000")).toEqual(["TCP:80"]);
    expect(listeners("internal")).toEqual(["UDP:5353"]);

    // Each load balancer's security group, upstream's name, on exactly the members' ports.
    const groupOf = (name: string) => {
      const uid = svcOf(OPENSTACK, name)?.metadata.uid ?? "";
      return [...os.fake.store.securityGroups.values()].find(
        (g) => g.name === `lb-sg-${uid}-default-${name}`,
      );
    };
    const members = (name: string) =>
      [...os.fake.store.pools.values()]
        .filter((p) => p.lbId === lbOf(name)?.id)
        .flatMap((p) => p.members.map((m) => m.address))
        .sort()
        .join();
    const serverIPs = () =>
      os
        .servers(OPENSTACK)
        .map((s) => ipOf(s.id) ?? "")
        .sort()
        .join();
    const guarded = (name: string) => {
      const g = groupOf(name);
      return os
        .servers(OPENSTACK)
        .filter((s) => g !== undefined && portOf(s.id)?.securityGroups.includes(g.id))
        .map((s) => ipOf(s.id) ?? "")
        .sort()
        .join();
    };
    const converged = () =>
      ["web-0000", "internal"].every((n) => members(n) === serverIPs() && guarded(n) === serverIPs());
    expect(await waitFor(converged, 60_000)).toBe(true);
    const nodePort = (name: string) =>
      (svcOf(OPENSTACK, name) as unknown as { spec: { ports: { nodePort: number }[] } }).spec.ports[0]
        ?.nodePort;
    const cidr = os.network(OPENSTACK).subnets[0]?.cidr;
    expect(
      groupOf("internal")
        ?.rules.filter((r) => r.direction === "ingress")
        .map((r) => `${r.protocol} ${r.portRangeMin} ${r.remoteIpPrefix}`),
    ).toContain(`udp ${nodePort("internal")} ${cidr}`);

    // A node joins: both pools take it and its port gets both groups.
    f.addNodes(OPENSTACK, 1);
    expect(await waitFor(() => f.progress().initialized === 2 * every.length + 1, 60_000)).toBe(true);
    expect(await waitFor(() => os.servers(OPENSTACK).length === 3 && converged(), 60_000)).toBe(true);

    // Routes: each node's pod CIDR to its fixed IP on the project's router.
    for (const [i, n] of nodes().entries())
      f.cluster(OPENSTACK).kube.patch("Node", undefined, n.metadata.name, "merge", {
        spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
      });
    const want = () =>
      nodes()
        .map((n, i) => `10.244.${i}.0/24 -> ${ipOf(serverOf(n)?.id ?? "")}`)
        .sort();
    expect(await waitFor(() => JSON.stringify(os.routes()) === JSON.stringify(want()), 60_000)).toBe(true);

    // Delete every Service: nothing of OpenStack's is left, nor of the others'.
    for (const [c, n] of named) f.cluster(c).kube.delete("Service", "default", n);
    const left = () => named.filter(([c, n]) => svcOf(c, n) !== undefined).map(([c, n]) => `${c}/${n}`);
    await waitFor(() => left().length === 0, 120_000);
    if (left().length > 0)
      process.stderr.write(
        `${left().join(" ")}\n${hub
          .output()
          .split("\n")
          .filter((l) => /"level":(40|50)/.test(l))
          .slice(-15)
          .join("\n")}\n`,
      );
    expect(left()).toEqual([]);
    expect(lbs()).toEqual([]);
    expect([...os.fake.store.listeners.values()]).toEqual([]);
    expect([...os.fake.store.pools.values()]).toEqual([]);
    expect([...os.fake.store.healthMonitors.values()]).toEqual([]);
    expect(fips()).toEqual([]);
    expect([...os.fake.store.securityGroups.values()]).toEqual([]);
    expect(os.servers(OPENSTACK).map((s) => [portOf(s.id)?.securityGroups, portOf(s.id)?.tags])).toEqual([
      [[], []],
      [[], []],
      [[], []],
    ]);
    expect(os.fake.specProblems()).toEqual([]);
    for (const c of others) expect(c.totalCalls()).toBeGreaterThan(0);
  }, 400_000);
});

/**
 * An Azure subscription beside a Linode account on one hub (processes, nats-server, the
 * Kubernetes API simulator as above): cloud-provider-azure's providerIDs and labels, a public and
 * an internal Service in the cluster's two shared load balancers, a joining node in both pools,
 * the cluster's route table, PersistentVolumes of managed disks labeled with their zone and
 * region, and each load balancer deleted with its last frontend.
 */
describe("Azure beside Linode on one hub", () => {
  // Its own fixture: the clouds and fleet of this test stop after it.
  const azureRun = localCloudsFixture();
  const LIN = "cluster-001";
  const AZ = "cluster-002";
  const INTERNAL = "service.beta.kubernetes.io/azure-load-balancer-internal";

  test("Azure nodes, a public and an internal Service, a node joining, routes, PersistentVolumes of managed disks, and nothing left after delete", async () => {
    const linode = await azureRun.started(LinodeLocalCloud.start([LIN]));
    // The third node (the one joining) is a uniform scale set's VM: its address is its NIC's, read
    // through the scale set's NIC API.
    const azure = await azureRun.started(AzureLocalCloud.start([AZ], { scaleSetFrom: 2 }));
    const byCluster: Record<string, LocalCloud> = { [LIN]: linode, [AZ]: azure };
    const cloud = new MixedLocalCloud([linode, azure], (c) => {
      const found = byCluster[c];
      if (found === undefined) throw new Error(`no cloud for ${c}`);
      return found;
    });
    const f = azureRun.useFleet(
      await LocalFleet.start({ clusters: 2, nodesPerCluster: 0, logger, cloud, configureCloudRoutes: true }),
    );
    const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
    for (const c of [LIN, AZ]) f.spawnAgentProcess(c, hub.grpcPort);
    for (const c of [LIN, AZ]) f.addNodes(c, 2);
    expect(await waitFor(() => f.progress().initialized === 4, 90_000)).toBe(true);
    expect(hub.output()).not.toContain(readFileSync(azure.secretFile, "utf8"));

    // As cloud-provider-azure: azure://<VM's ARM id> (resource group lower-cased), location, zone, size.
    const sub = AZURE_DEMO_SUBSCRIPTION;
    const nodes = () => f.nodes(AZ) as unknown as KubeNode[];
    const vms = () => azure.fake.list(sub, "virtualMachines");
    for (const n of nodes()) {
      const vm = vms().find((v) => v.name === n.metadata.name);
      expect(n.spec.providerID).toBe(
        `azure://${vm?.id.replace(/\/resourceGroups\/([^/]+)\//, (_m, rg: string) => `/resourceGroups/${rg.toLowerCase()}/`)}`,
      );
      expect(n.metadata.labels).toMatchObject({
        [REGION]: "eastus",
        [ZONE]: `eastus-${(vm?.body["zones"] as string[] | undefined)?.[0]}`,
        [TYPE]: "Standard_D2s_v3",
      });
      expect(n.status?.addresses?.[0]?.type).toBe("InternalIP");
    }

    // A public Service and an internal one.
    f.addServices(AZ, 1);
    f.cluster(AZ).kube.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "internal-0", namespace: "default", annotations: { [INTERNAL]: "true" } },
      spec: {
        type: "LoadBalancer",
        selector: { app: "internal-0" },
        ports: [{ name: "http", port: 80, targetPort: 8080 }],
      },
    });
    const svc = (name: string) =>
      f.cluster(AZ).kube.get("Service", "default", name) as unknown as KubeService;
    const ingressOf = (name: string) => svc(name)?.status?.loadBalancer?.ingress?.[0]?.ip;
    expect(
      await waitFor(
        () => ingressOf("web-0000") !== undefined && ingressOf("internal-0") !== undefined,
        90_000,
      ),
    ).toBe(true);
    const lb = (name: string) => azure.fake.list(sub, "loadBalancers").find((l) => l.name === name);
    const lbProps = (name: string) => (lb(name)?.body["properties"] ?? {}) as Record<string, unknown>;
    const frontends = (name: string) =>
      (lbProps(name)["frontendIPConfigurations"] ?? []) as {
        name: string;
        properties: { privateIPAddress?: string };
      }[];
    const uid = (name: string) => svc(name).metadata.uid.replace(/-/g, "");
    expect(frontends(AZ).map((x) => x.name)).toEqual([`a${uid("web-0000")}`]);
    const pip = azure.fake.list(sub, "publicIPAddresses").find((p) => p.name === `${AZ}-a${uid("web-0000")}`);
    expect(ingressOf("web-0000")).toBe(
      (pip?.body["properties"] as { ipAddress?: string } | undefined)?.ipAddress,
    );
    expect(frontends(`${AZ}-internal`).map((x) => [x.name, x.properties.privateIPAddress])).toEqual([
      [`a${uid("internal-0")}`, ingressOf("internal-0")],
    ]);
    // Linode's cluster beside it, on the same hub.
    for (const n of f.nodes(LIN) as unknown as KubeNode[])
      expect(n.spec.providerID).toMatch(/^linode:\/\/\d+$/);

    // A node joins: both pools take its address.
    type Pool = { properties?: { loadBalancerBackendAddresses?: { properties?: { ipAddress?: string } }[] } };
    const poolIps = (name: string) =>
      (
        ((lbProps(name)["backendAddressPools"] ?? []) as Pool[])[0]?.properties
          ?.loadBalancerBackendAddresses ?? []
      )
        .map((a) => a.properties?.ipAddress)
        .sort();
    const nodeIps = () =>
      nodes()
        .map((n) => n.status?.addresses?.find((a) => a.type === "InternalIP")?.address)
        .sort();
    f.addNodes(AZ, 1);
    expect(await waitFor(() => f.progress().initialized === 5, 60_000)).toBe(true);
    expect(
      await waitFor(
        () =>
          nodeIps().length === 3 &&
          JSON.stringify(poolIps(AZ)) === JSON.stringify(nodeIps()) &&
          JSON.stringify(poolIps(`${AZ}-internal`)) === JSON.stringify(nodeIps()),
        60_000,
      ),
    ).toBe(true);
    // The joined node is the scale-set VM, with its NIC's address from the cloud.
    const ssNic = azure.fake.list(sub, "vmssNetworkInterfaces")[0]?.body["properties"] as
      | { ipConfigurations: { properties: { privateIPAddress: string } }[] }
      | undefined;
    const joined = nodes().find((n) => n.spec.providerID?.includes(`/virtualMachineScaleSets/${AZ}-vmss/`));
    expect(joined?.status?.addresses?.[0]).toEqual({
      type: "InternalIP",
      address: ssNic?.ipConfigurations[0]?.properties.privateIPAddress,
    });

    // Routes: the cluster's route table, one route per node to its address.
    for (const [i, n] of nodes().entries())
      f.cluster(AZ).kube.patch("Node", undefined, n.metadata.name, "merge", {
        spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
      });
    const routes = () =>
      (
        (
          azure.fake.list(sub, "routeTables").find((t) => t.name === `${AZ}-routetable`)?.body[
            "properties"
          ] as { routes?: { properties: { addressPrefix: string; nextHopIpAddress: string } }[] } | undefined
        )?.routes ?? []
      )
        .map((r) => `${r.properties.addressPrefix} -> ${r.properties.nextHopIpAddress}`)
        .sort();
    const wanted = () =>
      nodes()
        .map(
          (n, i) =>
            `10.244.${i}.0/24 -> ${n.status?.addresses?.find((a) => a.type === "InternalIP")?.address}`,
        )
        .sort();
    expect(await waitFor(() => JSON.stringify(routes()) === JSON.stringify(wanted()), 60_000)).toBe(true);

    // PersistentVolumes of Azure managed disks, by the Disk CSI driver's volumeHandle and the
    // in-tree azureDisk's diskURI (both the disk's ARM id): a zonal disk gets its zone as nodes
    // are labeled (<region>-<n>) and the region, a regional one the region only, as label and
    // requirement; a disk of another region, or of a resource group not the account's, is left
    // alone with its Event.
    const rg = vms()[0]?.resourceGroup ?? "";
    azure.fake.createResourceGroup(sub, "rg-not-ours");
    const disk = (name: string, o: { zone?: string; location?: string; resourceGroup?: string } = {}) =>
      azure.fake.createDisk(sub, {
        resourceGroup: o.resourceGroup ?? rg,
        name,
        location: o.location ?? "eastus",
        sizeGiB: 10,
        ...(o.zone !== undefined && { zone: o.zone }),
      }).id;
    const csiPv = (id: string) => ({ csi: { driver: "disk.csi.azure.com", volumeHandle: id } });
    const azKube = f.cluster(AZ).kube;
    azKube.create("PersistentVolume", pvObject("zonal", csiPv(disk("pvc-zonal", { zone: "2" }))));
    const regionalId = disk("pvc-regional");
    azKube.create(
      "PersistentVolume",
      pvObject("regional", {
        azureDisk: { diskName: "pvc-regional", diskURI: regionalId, kind: "Managed" },
      }),
    );
    azKube.create(
      "PersistentVolume",
      pvObject("other-region", csiPv(disk("pvc-west", { location: "westus", zone: "1" }))),
    );
    azKube.create(
      "PersistentVolume",
      pvObject("other-group", csiPv(disk("pvc-theirs", { resourceGroup: "rg-not-ours" }))),
    );
    for (const name of ["zonal", "regional"])
      expect(await waitFor(() => readPv(azKube, name)?.spec.nodeAffinity !== undefined, 60_000)).toBe(true);
    expect(readPv(azKube, "zonal")?.metadata.labels).toEqual({ [ZONE]: "eastus-2", [REGION]: "eastus" });
    expect(readPv(azKube, "zonal")?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      {
        matchExpressions: [
          { key: ZONE, operator: "In", values: ["eastus-2"] },
          { key: REGION, operator: "In", values: ["eastus"] },
        ],
      },
    ]);
    expect(readPv(azKube, "regional")?.metadata.labels).toEqual({ [REGION]: "eastus" });
    expect(readPv(azKube, "regional")?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: REGION, operator: "In", values: ["eastus"] }] },
    ]);
    for (const name of ["other-region", "other-group"]) {
      expect(await waitFor(() => pvEvent(azKube, name, "DiskNotInScope") !== undefined, 60_000)).toBe(true);
      expect(pvEvent(azKube, name, "DiskNotInScope")?.type).toBe("Warning");
      expect(readPv(azKube, name)?.metadata.labels ?? {}).toEqual({});
      expect(readPv(azKube, name)?.spec.nodeAffinity).toBeUndefined();
    }

    // Delete both: the frontends, rules, public IP and NSG rules go, each load balancer with its last frontend.
    for (const name of ["web-0000", "internal-0"]) f.cluster(AZ).kube.delete("Service", "default", name);
    expect(
      await waitFor(() => svc("web-0000") === undefined && svc("internal-0") === undefined, 90_000),
    ).toBe(true);
    expect(azure.fake.list(sub, "loadBalancers")).toEqual([]);
    expect(azure.fake.list(sub, "publicIPAddresses")).toEqual([]);
    const nsg = azure.fake.list(sub, "networkSecurityGroups").find((n) => n.name === `${AZ}-nsg`);
    expect((nsg?.body["properties"] as { securityRules?: unknown[] } | undefined)?.securityRules).toEqual([]);
    azure.fake.assertSpecClean();
  }, 300_000);
});
