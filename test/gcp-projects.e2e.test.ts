/**
 * One hub with two GCP projects, one reached with a service-account key over two regions, the
 * other through workload identity federation (the fake's STS, impersonating the project's
 * service account), beside a Linode and an AWS account. The hub and the agents are their own
 * processes with a real nats-server and the Kubernetes API simulator. Nodes get GCE providerIDs
 * of their own project and zone; external and internal load balancers are built in the right
 * project and region, take a node that joins, and leave nothing in either project when deleted;
 * pod CIDRs are routed in each project's VPC, each cluster only its own nodes; PersistentVolumes
 * of persistent disks (regional CSI, in-tree) get their zones, another project's an Event.
 */

import { LB_COLLECTIONS } from "@fleet-ccm/sim";
import { expect, test } from "@jest/globals";
import { pino } from "pino";
import { AwsLocalCloud } from "../cli/src/aws-cloud.js";
import { GcpLocalCloud } from "../cli/src/gcp-cloud.js";
import { LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { MixedLocalCloud } from "../cli/src/mixed-cloud.js";
import { localCloudsFixture } from "./local-clouds-fixture.js";
import { pvEvent, pvObject, readPv } from "./persistent-volumes-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const LINODE = "cluster-001";
const AWS = "cluster-002";
/** Project alpha (key): us-central1, then europe-west1; project beta (federated): us-east1. */
const CENTRAL = "cluster-003";
const EUROPE = "cluster-004";
const FEDERATED = "cluster-005";
const GCP = [CENTRAL, EUROPE, FEDERATED];
const ALL = [LINODE, AWS, ...GCP];
const ALPHA = "fleet-alpha-1";
const BETA = "fleet-beta-22";
const REGION = "topology.kubernetes.io/region";
const ZONE = "topology.kubernetes.io/zone";
const INTERNAL = "networking.gke.io/load-balancer-type";

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { providerID?: string };
}
interface KubeService {
  metadata: { uid: string };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}

const { started, useFleet } = localCloudsFixture();

const tailOf = (link: unknown, parts: number) => String(link).split("/").slice(-parts).join("/");

test("two GCP projects (a key over two regions, workload identity federation) beside Linode and AWS: nodes, external and internal load balancers, node changes, routes, PersistentVolumes of zonal, regional and another project's disks, clean delete", async () => {
  const linode = await started(LinodeLocalCloud.start([LINODE]));
  const aws = await started(AwsLocalCloud.start([AWS]));
  const gcp = await started(
    GcpLocalCloud.start(GCP, {
      sites: [
        { project: ALPHA, regions: ["us-central1", "europe-west1"] },
        { project: BETA, regions: ["us-east1"], auth: "workloadIdentity" },
      ],
    }),
  );
  gcp.fake.operationMs = 200;
  expect(GCP.map((c) => `${gcp.placement(c).project}/${gcp.placement(c).region}`)).toEqual([
    `${ALPHA}/us-central1`,
    `${ALPHA}/europe-west1`,
    `${BETA}/us-east1`,
  ]);
  const cloud = new MixedLocalCloud([linode, aws, gcp], (c) =>
    c === LINODE ? linode : c === AWS ? aws : gcp,
  );
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

  // GCE providerIDs of each cluster's own project and zone, and its region's labels.
  const nodes = (c: string) => f.nodes(c) as unknown as KubeNode[];
  for (const c of GCP) {
    const { project, region } = gcp.placement(c);
    for (const n of nodes(c)) {
      const zone = gcp.zones.get(n.metadata.name);
      expect(zone?.startsWith(`${region}-`)).toBe(true);
      expect(n.spec.providerID).toBe(`gce://${project}/${zone}/${n.metadata.name}`);
      expect(n.metadata.labels).toMatchObject({ [REGION]: region, [ZONE]: zone });
    }
  }
  // The federated project's calls went through STS and impersonation, not a key.
  expect(gcp.fake.sts.exchanges).toBeGreaterThan(0);
  expect(gcp.fake.sts.impersonations).toBeGreaterThan(0);

  // External Services in us-central1 and the federated project, an internal one in europe-west1.
  for (const c of ALL) f.addServices(c, 1);
  f.cluster(EUROPE).kube.patch("Service", "default", "web-0000", "merge", {
    metadata: { annotations: { [INTERNAL]: "Internal" } },
  });
  const svc = (c: string) =>
    f.cluster(c).kube.get("Service", "default", "web-0000") as unknown as KubeService;
  // An IP on GCP and Linode, the ELB's hostname on AWS.
  const ingress = (c: string) => {
    const first = svc(c)?.status?.loadBalancer?.ingress?.[0];
    return first?.ip ?? first?.hostname;
  };
  expect(await waitFor(() => ALL.every((c) => ingress(c) !== undefined), 120_000)).toBe(true);

  const rulesOf = (c: string) => {
    const { project, region } = gcp.placement(c);
    return gcp.fake.list(project, "forwardingRules").filter((r) => tailOf(r["region"], 1) === region);
  };
  for (const c of GCP) {
    const rules = rulesOf(c);
    expect(rules).toHaveLength(1);
    expect(rules[0]?.["IPAddress"]).toBe(ingress(c));
    expect(rules[0]?.["loadBalancingScheme"]).toBe(c === EUROPE ? "INTERNAL" : "EXTERNAL");
  }
  // Alpha holds the two of its regions, beta only its own: nothing crossed projects.
  expect(gcp.fake.list(ALPHA, "forwardingRules")).toHaveLength(2);
  expect(gcp.fake.list(BETA, "forwardingRules")).toHaveLength(1);
  expect(gcp.fake.list(BETA, "instanceGroups")).toEqual([]);

  // Each load balancer's backends are exactly its cluster's instances.
  const instancesOf = (c: string) =>
    nodes(c)
      .map((n) => `${gcp.zones.get(n.metadata.name)}/instances/${n.metadata.name}`)
      .sort();
  const poolOf = (c: string) =>
    (
      (gcp.fake
        .list(gcp.placement(c).project, "targetPools")
        .find((p) => p["selfLink"] === rulesOf(c)[0]?.["target"])?.["instances"] as string[] | undefined) ??
      []
    )
      .map((u) => tailOf(u, 3))
      .sort();
  const groupMembers = (c: string) =>
    gcp.fake
      .list(gcp.placement(c).project, "instanceGroups")
      .flatMap((g) =>
        gcp.fake.groupMembers(gcp.placement(c).project, tailOf(g["zone"], 1), String(g["name"])),
      )
      .map((u) => tailOf(u, 3))
      .sort();
  const backends = () => ({
    central: poolOf(CENTRAL),
    federated: poolOf(FEDERATED),
    europe: groupMembers(EUROPE),
  });
  const wanted = () => ({
    central: instancesOf(CENTRAL),
    federated: instancesOf(FEDERATED),
    europe: instancesOf(EUROPE),
  });
  expect(await waitFor(() => JSON.stringify(backends()) === JSON.stringify(wanted()), 60_000)).toBe(true);

  // A node joins every cluster: each load balancer takes its new instance.
  for (const c of ALL) f.addNodes(c, 1);
  expect(await waitFor(() => f.progress().initialized === 15, 60_000)).toBe(true);
  expect(await waitFor(() => JSON.stringify(backends()) === JSON.stringify(wanted()), 60_000)).toBe(true);
  for (const list of Object.values(backends())) expect(list).toHaveLength(3);

  // Routes: each cluster's pod CIDRs in its project's VPC, to its own instances.
  for (const c of GCP)
    for (const [i, n] of nodes(c).entries())
      f.cluster(c).kube.patch("Node", undefined, n.metadata.name, "merge", {
        spec: {
          podCIDR: `10.${GCP.indexOf(c) + 1}.${i}.0/24`,
          podCIDRs: [`10.${GCP.indexOf(c) + 1}.${i}.0/24`],
        },
      });
  const routesNow = (project: string) =>
    gcp.fake
      .list(project, "routes")
      .map((r) => `${r["destRange"]} -> ${tailOf(r["nextHopInstance"], 3)}`)
      .sort();
  const routesWanted = (project: string) =>
    GCP.filter((c) => gcp.placement(c).project === project)
      .flatMap((c) =>
        nodes(c).map(
          (n, i) =>
            `10.${GCP.indexOf(c) + 1}.${i}.0/24 -> ${gcp.zones.get(n.metadata.name)}/instances/${n.metadata.name}`,
        ),
      )
      .sort();
  expect(
    await waitFor(
      () => [ALPHA, BETA].every((p) => JSON.stringify(routesNow(p)) === JSON.stringify(routesWanted(p))),
      60_000,
    ),
  ).toBe(true);
  expect(routesNow(ALPHA)).toHaveLength(6);
  expect(routesNow(BETA)).toHaveLength(3);

  // PersistentVolumes of project alpha's us-central1 cluster: a regional PD CSI disk gets both
  // replica zones ("__"-joined label, an In requirement on either), an in-tree pdName its zone;
  // a disk of project beta (another account) is left alone with its Event.
  const kube = f.cluster(CENTRAL).kube;
  const zoneOf = gcp.zones.get(nodes(CENTRAL)[0]?.metadata.name ?? "") ?? "";
  const replicas = [`us-central1-a`, `us-central1-b`];
  gcp.fake.createDisk(ALPHA, {
    name: "pvc-regional",
    sizeGb: 100,
    region: "us-central1",
    replicaZones: replicas,
  });
  gcp.fake.createDisk(ALPHA, { name: "pd-legacy", sizeGb: 10, zone: zoneOf });
  gcp.fake.createDisk(BETA, { name: "pvc-beta", sizeGb: 10, zone: "us-east1-b" });
  const pd = (handle: string) => ({ csi: { driver: "pd.csi.storage.gke.io", volumeHandle: handle } });
  kube.create(
    "PersistentVolume",
    pvObject("regional", pd(`projects/${ALPHA}/regions/us-central1/disks/pvc-regional`)),
  );
  kube.create(
    "PersistentVolume",
    pvObject("legacy", { gcePersistentDisk: { pdName: "pd-legacy", fsType: "ext4" } }),
  );
  kube.create("PersistentVolume", pvObject("beta", pd(`projects/${BETA}/zones/us-east1-b/disks/pvc-beta`)));
  expect(
    await waitFor(
      () => ["regional", "legacy"].every((n) => readPv(kube, n)?.spec.nodeAffinity !== undefined),
      60_000,
    ),
  ).toBe(true);
  expect(readPv(kube, "regional")?.metadata.labels).toEqual({
    [ZONE]: replicas.join("__"),
    [REGION]: "us-central1",
  });
  expect(readPv(kube, "regional")?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
    {
      matchExpressions: [
        { key: ZONE, operator: "In", values: replicas },
        { key: REGION, operator: "In", values: ["us-central1"] },
      ],
    },
  ]);
  expect(readPv(kube, "legacy")?.metadata.labels).toEqual({ [ZONE]: zoneOf, [REGION]: "us-central1" });
  expect(await waitFor(() => pvEvent(kube, "beta", "DiskNotInScope") !== undefined, 60_000)).toBe(true);
  expect(readPv(kube, "beta")?.metadata.labels ?? {}).toEqual({});
  expect(readPv(kube, "beta")?.spec.nodeAffinity).toBeUndefined();

  // Delete every Service: nothing of theirs is left in either project (nor in Linode or AWS).
  for (const c of ALL) f.cluster(c).kube.delete("Service", "default", "web-0000");
  expect(await waitFor(() => ALL.every((c) => svc(c) === undefined), 120_000)).toBe(true);
  for (const project of [ALPHA, BETA])
    for (const collection of LB_COLLECTIONS) expect(gcp.fake.list(project, collection)).toEqual([]);
  expect(linode.fake.store.nodeBalancersOf(linode.account(LINODE))).toEqual([]);
  expect(aws.fake.state.classicLbs.all()).toEqual([]);
  // No credential reaches the log: neither project's key nor the subject token.
  expect(hub.output()).not.toMatch(/BEGIN PRIVATE KEY|fake-oidc-/);
}, 400_000);
