/**
 * The Linode provider end to end: a hub process with two Linode accounts against the fake
 * Linode API, three clusters (two sharing an account) with their agents as processes, a real
 * nats-server. Nodes are initialized with Linode providerIDs, labels and addresses; Services
 * get NodeBalancers with a config per port and a Cloud Firewall; node changes rebuild the
 * backends, and so does a node's private-ip annotation; a shut-down Linode taints its node;
 * deleting the Services leaves nothing behind.
 */
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LINODE_DEMO_REGION, LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { pvEvent, pvObject, readPv } from "./persistent-volumes-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown";
const CLUSTERS = ["cluster-001", "cluster-002", "cluster-003"];
const ACCOUNT_OF: Record<string, string> = {
  "cluster-001": "linode-a",
  "cluster-002": "linode-a",
  "cluster-003": "linode-b",
};

interface KubeNode {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string; taints?: { key: string }[] };
  status: { addresses?: { type: string; address: string }[] };
}
interface KubeService {
  metadata: { name: string; uid: string };
  spec: { ports: { port: number; nodePort: number }[] };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}

let fleet: LocalFleet;
let hub: ChildProcess;

let cloud: LinodeLocalCloud;
const linode = () => cloud.fake;
const nodesOf = (c: string) => fleet.nodes(c) as unknown as KubeNode[];
const svcOf = (c: string, name: string) =>
  fleet.cluster(c).kube.get("Service", "default", name) as unknown as KubeService | undefined;
const linodeOf = (c: string, name: string) =>
  linode()
    .store.linodesOf(ACCOUNT_OF[c] ?? "")
    .find((l) => l.label === name);
const nbOf = (c: string, uid: string) =>
  linode()
    .store.nodeBalancersOf(ACCOUNT_OF[c] ?? "")
    .find((nb) => nb.tags.includes(`fccm:u=${uid}`));
/** The private IPs the cluster's eligible nodes have. */
const privateIPs = (c: string) =>
  nodesOf(c)
    .map((n) => linodeOf(c, n.metadata.name)?.privateIPv4 ?? "")
    .sort();
const backendIPs = (c: string, uid: string, port: number) =>
  (nbOf(c, uid)?.configs.find((x) => x.port === port)?.nodes ?? [])
    .map((n) => n.address.split(":")[0] ?? "")
    .sort();

beforeAll(async () => {
  cloud = await LinodeLocalCloud.start(CLUSTERS, { accountOf: (c) => ACCOUNT_OF[c] ?? "" });
  fleet = await LocalFleet.start({
    cloud,
    clusters: CLUSTERS.length,
    nodesPerCluster: 0,
    logger,
    hubConfig: { lifecycle: { monitorPeriodMs: 200 } },
  });
  const spawned = await fleet.spawnHubProcess();
  hub = spawned.child;
  for (const c of CLUSTERS) fleet.spawnAgentProcess(c, spawned.grpcPort);
  for (const c of CLUSTERS) fleet.addNodes(c, 3);
  expect(await waitFor(() => fleet.progress().initialized === 9, 60_000)).toBe(true);
}, 90_000);

afterAll(async () => {
  hub?.kill("SIGTERM");
  await fleet?.stop();
});

describe("Linode end to end", () => {
  test("nodes carry Linode providerIDs, the Linode CCM's labels and addresses", () => {
    for (const c of CLUSTERS)
      for (const n of nodesOf(c)) {
        const l = linodeOf(c, n.metadata.name);
        expect(l).toBeDefined();
        expect(n.spec.providerID).toBe(`linode://${l?.id}`);
        expect(n.metadata.labels).toMatchObject({
          "topology.kubernetes.io/region": LINODE_DEMO_REGION,
          "node.kubernetes.io/instance-type": l?.type,
          "linode.region": LINODE_DEMO_REGION,
        });
        expect(n.metadata.labels["topology.kubernetes.io/zone"]).toBeUndefined();
        expect(n.status.addresses).toEqual(
          expect.arrayContaining([
            { type: "Hostname", address: n.metadata.name },
            { type: "ExternalIP", address: l?.publicIPv4 },
            { type: "InternalIP", address: l?.privateIPv4 },
          ]),
        );
      }
  });

  test("NodeBalancers per Service in the cluster's account, firewall, rebuilds, shutdown, clean deletion", async () => {
    const services = new Map<string, string>();
    for (const c of CLUSTERS) services.set(c, fleet.addServices(c, 1)[0] ?? "");
    const ready = () =>
      CLUSTERS.every(
        (c) => (svcOf(c, services.get(c) ?? "")?.status?.loadBalancer?.ingress ?? []).length > 0,
      );
    expect(await waitFor(ready, 60_000)).toBe(true);
    for (const c of CLUSTERS) {
      const s = svcOf(c, services.get(c) ?? "");
      const nb = nbOf(c, s?.metadata.uid ?? "");
      expect(nb).toBeDefined();
      expect(s?.status?.loadBalancer?.ingress).toEqual(
        [{ ip: nb?.ipv4, hostname: nb?.hostname, ipMode: "VIP" }].map(({ ipMode: _, ...i }) =>
          expect.objectContaining(i),
        ),
      );
      expect(nb?.configs.map((x) => x.port)).toEqual([80]);
      // Only this cluster's Linodes, though two clusters share the account.
      expect(backendIPs(c, s?.metadata.uid ?? "", 80)).toEqual(privateIPs(c));
      expect(nb?.configs[0]?.nodes.every((n) => n.address.endsWith(`:${s?.spec.ports[0]?.nodePort}`))).toBe(
        true,
      );
    }
    expect(linode().store.nodeBalancersOf("linode-a")).toHaveLength(2);
    expect(linode().store.nodeBalancersOf("linode-b")).toHaveLength(1);

    // loadBalancerSourceRanges: a Cloud Firewall attached to the NodeBalancer.
    const c1 = "cluster-001";
    const s1 = svcOf(c1, services.get(c1) ?? "");
    const uid1 = s1?.metadata.uid ?? "";
    fleet.cluster(c1).kube.patch("Service", "default", services.get(c1) ?? "", "merge", {
      spec: { loadBalancerSourceRanges: ["203.0.113.0/24"] },
    });
    const firewall = () =>
      linode().store.firewallsOfDevice("linode-a", "nodebalancer", nbOf(c1, uid1)?.id ?? 0)[0];
    expect(await waitFor(() => firewall() !== undefined, 30_000)).toBe(true);
    expect(firewall()?.rules).toMatchObject({
      inbound_policy: "DROP",
      inbound: [
        expect.objectContaining({ action: "ACCEPT", ports: "80", addresses: { ipv4: ["203.0.113.0/24"] } }),
      ],
    });

    // A new node joins the backends; node ids of the others are kept.
    const before = new Map((nbOf(c1, uid1)?.configs[0]?.nodes ?? []).map((n) => [n.address, n.id]));
    fleet.addNodes(c1, 1);
    expect(await waitFor(() => backendIPs(c1, uid1, 80).length === 4, 30_000)).toBe(true);
    expect(backendIPs(c1, uid1, 80)).toEqual(privateIPs(c1));
    for (const n of nbOf(c1, uid1)?.configs[0]?.nodes ?? [])
      if (before.has(n.address)) expect(n.id).toBe(before.get(n.address));

    // The Linode CCM's node annotation private-ip moves that node's backend address, in place.
    const moved = nodesOf(c1)[0]?.metadata.name ?? "";
    const nbId = nbOf(c1, uid1)?.id;
    fleet.cluster(c1).kube.patch("Node", undefined, moved, "merge", {
      metadata: { annotations: { "node.k8s.linode.com/private-ip": "192.168.222.1" } },
    });
    expect(await waitFor(() => backendIPs(c1, uid1, 80).includes("192.168.222.1"), 30_000)).toBe(true);
    expect(backendIPs(c1, uid1, 80)).toHaveLength(4);
    expect(backendIPs(c1, uid1, 80)).not.toContain(linodeOf(c1, moved)?.privateIPv4);
    expect(nbOf(c1, uid1)?.id).toBe(nbId);

    // A shut-down Linode (its kubelet gone quiet): the node is tainted, so nothing is scheduled there.
    const sleeper = nodesOf("cluster-003")[0]?.metadata.name ?? "";
    linode().setLinodeStatus(linodeOf("cluster-003", sleeper)?.id ?? 0, "offline");
    fleet.cluster("cluster-003").kube.patch(
      "Node",
      undefined,
      sleeper,
      "strategic",
      {
        status: {
          conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady", message: "" }],
        },
      },
      "status",
    );
    const tainted = () =>
      (nodesOf("cluster-003").find((n) => n.metadata.name === sleeper)?.spec.taints ?? []).some(
        (t) => t.key === SHUTDOWN,
      );
    expect(await waitFor(tainted, 30_000)).toBe(true);

    // Deleting the Services leaves nothing in either account.
    for (const c of CLUSTERS) fleet.cluster(c).kube.delete("Service", "default", services.get(c) ?? "");
    expect(
      await waitFor(() => CLUSTERS.every((c) => svcOf(c, services.get(c) ?? "") === undefined), 30_000),
    ).toBe(true);
    for (const a of ["linode-a", "linode-b"]) {
      expect(linode().store.nodeBalancersOf(a)).toEqual([]);
      expect(linode().store.firewallsOf(a)).toEqual([]);
    }
  }, 120_000);

  test("Block Storage PVs: the volume's region label and nodeAffinity; another account's volume gets an Event", async () => {
    const kube = fleet.cluster("cluster-001").kube;
    const csi = (handle: string) => ({ csi: { driver: "linodebs.csi.linode.com", volumeHandle: handle } });
    const mine = linode().createVolume("linode-a", { label: "pvc-mine", region: LINODE_DEMO_REGION });
    const theirs = linode().createVolume("linode-b", { label: "pvc-theirs", region: LINODE_DEMO_REGION });
    kube.create("PersistentVolume", pvObject("mine", csi(`${mine.id}-pvc-mine`)));
    kube.create("PersistentVolume", pvObject("theirs", csi(`${theirs.id}-pvc-theirs`)));
    expect(await waitFor(() => readPv(kube, "mine")?.spec.nodeAffinity !== undefined, 30_000)).toBe(true);
    // Linode volumes have a region and no zone: the region alone, as label and requirement.
    expect(readPv(kube, "mine")?.metadata.labels).toEqual({
      "topology.kubernetes.io/region": LINODE_DEMO_REGION,
    });
    expect(readPv(kube, "mine")?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      {
        matchExpressions: [
          { key: "topology.kubernetes.io/region", operator: "In", values: [LINODE_DEMO_REGION] },
        ],
      },
    ]);
    expect(await waitFor(() => pvEvent(kube, "theirs", "DiskNotInScope") !== undefined, 30_000)).toBe(true);
    expect(pvEvent(kube, "theirs", "DiskNotInScope")?.message).toContain(
      `disk ${theirs.id} is not in account linode-a`,
    );
    expect(readPv(kube, "theirs")?.metadata.labels ?? {}).toEqual({});
    expect(readPv(kube, "theirs")?.spec.nodeAffinity).toBeUndefined();
  }, 60_000);
});
