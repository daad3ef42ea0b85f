import { afterEach, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { AwsLocalCloud } from "../cli/src/aws-cloud.js";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { pvEvent, pvObject, readPv } from "./persistent-volumes-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const A = "service.beta.kubernetes.io/aws-load-balancer-";
const UID_TAG = "fleet-ccm.io/service-uid";

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { providerID?: string; taints?: { key: string }[] };
  status?: { addresses?: { type: string; address: string }[] };
}
interface KubeService {
  metadata: { uid: string; finalizers?: string[] };
  status?: { loadBalancer?: { ingress?: { hostname?: string }[] } };
}

let fleet: LocalFleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

describe("AWS end to end", () => {
  test("two accounts (keys, assumed role), two regions: nodes, classic ELB and NLB, node changes, routes, clean delete", async () => {
    const names = ["cluster-001", "cluster-002"];
    const aws = await AwsLocalCloud.start(names);
    fleet = await LocalFleet.start({
      clusters: 2,
      nodesPerCluster: 0,
      logger,
      cloud: aws,
      configureCloudRoutes: true,
    });
    const f = fleet;
    // The hub and the agents as their own processes, secrets as env references and files.
    const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
    expect(
      await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${hub.httpPort}/readyz`).catch(() => undefined))?.status === 200,
        20_000,
      ),
    ).toBe(true);
    for (const c of names) f.spawnAgentProcess(c, hub.grpcPort);
    for (const c of names) f.addNodes(c, 3);
    expect(await waitFor(() => f.progress().initialized === 6, 30_000)).toBe(true);
    // Credentials never reach the log.
    for (const secret of [aws.keys.secretAccessKey]) expect(hub.output()).not.toContain(secret);

    // Nodes as cloud-provider-aws labels them.
    for (const c of names) {
      const w = aws.world(c);
      for (const n of f.nodes(c) as unknown as KubeNode[]) {
        const i = aws.fake.state.instances.all(w.accountId).find((x) => x.privateDns === n.metadata.name);
        expect(n.spec.providerID).toBe(`aws:///${i?.az}/${i?.id}`);
        expect(n.metadata.labels).toMatchObject({
          "topology.kubernetes.io/region": w.region,
          "topology.kubernetes.io/zone": i?.az,
          "node.kubernetes.io/instance-type": "m5.large",
          "topology.k8s.aws/zone-id": expect.stringMatching(/^usw2-az|^use1-az/),
        });
        expect(n.status?.addresses?.map((a) => a.type)).toEqual([
          "InternalIP",
          "ExternalIP",
          "InternalDNS",
          "Hostname",
          "ExternalDNS",
        ]);
      }
    }
    // The role's account was reached with the role's credentials.
    expect(aws.fake.log.requests({ account: aws.world("cluster-002").accountId }).length).toBeGreaterThan(0);

    // Services: the keys account defaults to classic ELBs, the role account (options) to NLBs.
    const service = (c: string, name: string, annotations: Record<string, string> = {}) =>
      f.cluster(c).kube.create("Service", {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: "default", annotations },
        spec: {
          type: "LoadBalancer",
          selector: { app: name },
          ports: [{ name: "http", port: 80, targetPort: 8080 }],
        },
      });
    service("cluster-001", "classic");
    service("cluster-001", "nlb", { [`${A}type`]: "nlb" });
    service("cluster-002", "nlb-default");
    service("cluster-002", "elsewhere", { [`${A}type`]: "external" });
    const get = (c: string, n: string) =>
      f.cluster(c).kube.get("Service", "default", n) as unknown as KubeService | undefined;
    const hostname = (c: string, n: string) => get(c, n)?.status?.loadBalancer?.ingress?.[0]?.hostname;
    expect(
      await waitFor(
        () =>
          [
            ["cluster-001", "classic"],
            ["cluster-001", "nlb"],
            ["cluster-002", "nlb-default"],
          ].every(([c, n]) => hostname(c!, n!) !== undefined),
        30_000,
      ),
    ).toBe(true);
    const uid = (c: string, n: string) => get(c, n)?.metadata.uid ?? "";
    const classic = () =>
      aws.fake.classicLoadBalancers().filter((l) => l.tags[UID_TAG] === uid("cluster-001", "classic"));
    const nlb = (c: string, n: string) =>
      aws.fake.networkLoadBalancers().filter((l) => l.tags[UID_TAG] === uid(c, n));
    expect(classic()).toHaveLength(1);
    expect(hostname("cluster-001", "classic")).toBe(classic()[0]?.dnsName);
    expect(nlb("cluster-001", "nlb")).toHaveLength(1);
    expect(nlb("cluster-002", "nlb-default")).toHaveLength(1);
    expect(aws.fake.classicLoadBalancers(aws.world("cluster-002").accountId)).toEqual([]);
    // external: the AWS Load Balancer Controller's, left alone.
    expect(hostname("cluster-002", "elsewhere")).toBeUndefined();

    // A node joins cluster-001: both its load balancers take it.
    f.addNodes("cluster-001", 1);
    const targets = (lbArn: string) =>
      aws.fake.state.listeners
        .all()
        .filter((l) => l.lbArn === lbArn)
        .flatMap((l) => aws.fake.state.targetGroups.get(l.targetGroupArn)?.targets ?? []);
    expect(
      await waitFor(
        () =>
          classic()[0]?.instances.length === 4 &&
          targets(nlb("cluster-001", "nlb")[0]?.id ?? "").length === 4,
        30_000,
      ),
    ).toBe(true);

    // Routes: each node's pod CIDR to its instance in the cluster's route table.
    for (const c of names) {
      const nodes = f.nodes(c) as unknown as KubeNode[];
      for (const [i, n] of nodes.entries())
        f.cluster(c).kube.patch("Node", undefined, n.metadata.name, "merge", {
          spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
        });
    }
    const routes = (c: string) =>
      (aws.fake.state.routeTables.get(aws.world(c).routeTable)?.routes ?? []).filter(
        (r) => r.instanceId !== undefined,
      );
    expect(
      await waitFor(() => routes("cluster-001").length === 4 && routes("cluster-002").length === 3, 30_000),
    ).toBe(true);

    // Delete: nothing of theirs is left, the security groups last.
    for (const [c, n] of [
      ["cluster-001", "classic"],
      ["cluster-001", "nlb"],
      ["cluster-002", "nlb-default"],
      ["cluster-002", "elsewhere"],
    ])
      f.cluster(c!).kube.delete("Service", "default", n!);
    const left = () =>
      names.flatMap((c) =>
        (f.services(c) as { metadata?: { name?: string }; spec?: { type?: string } }[])
          .filter((x) => x.spec?.type === "LoadBalancer")
          .map((x) => `${c}/${x.metadata?.name}`),
      );
    await waitFor(() => left().length === 0, 30_000);
    expect(left()).toEqual([]);
    const s = aws.fake.state;
    expect(s.classicLbs.all()).toEqual([]);
    expect(s.v2Lbs.all()).toEqual([]);
    expect(s.targetGroups.all()).toEqual([]);
    expect(s.listeners.all()).toEqual([]);
    expect(s.securityGroups.all().filter((g) => g.name.startsWith("k8s-elb-"))).toEqual([]);
    for (const c of names) expect(s.securityGroups.get(aws.world(c).nodeGroup)?.ingress).toEqual([]);
    aws.fake.spec.assertClean();
  });

  test("EBS PVs, in-tree and CSI: zone and region labels and nodeAffinity; another account's volume gets an Event", async () => {
    const names = ["cluster-001", "cluster-002"];
    const aws = await AwsLocalCloud.start(names);
    fleet = await LocalFleet.start({ clusters: 2, nodesPerCluster: 0, logger, cloud: aws });
    const f = fleet;
    const hub = await f.spawnHubProcess();
    for (const c of names) f.spawnAgentProcess(c, hub.grpcPort);
    const here = aws.world("cluster-001");
    const there = aws.world("cluster-002");
    const inTree = aws.fake.createVolume(here.accountId, `${here.region}b`, { sizeGiB: 50 });
    const csi = aws.fake.createVolume(here.accountId, `${here.region}a`);
    const foreign = aws.fake.createVolume(there.accountId, `${there.region}a`);
    const kube = f.cluster("cluster-001").kube;
    const ebs = (id: string) => ({ csi: { driver: "ebs.csi.aws.com", volumeHandle: id } });
    const inTreeSource = { awsElasticBlockStore: { volumeID: `aws://${here.region}b/${inTree.id}` } };
    kube.create("PersistentVolume", pvObject("in-tree", inTreeSource));
    kube.create("PersistentVolume", pvObject("csi", ebs(csi.id)));
    kube.create("PersistentVolume", pvObject("foreign", ebs(foreign.id)));
    for (const [name, zone] of [
      ["in-tree", `${here.region}b`],
      ["csi", `${here.region}a`],
    ] as const) {
      expect(await waitFor(() => readPv(kube, name)?.spec.nodeAffinity !== undefined, 30_000)).toBe(true);
      expect(readPv(kube, name)?.metadata.labels).toEqual({
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": here.region,
      });
      expect(readPv(kube, name)?.spec.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions).toEqual(
        [
          { key: "topology.kubernetes.io/zone", operator: "In", values: [zone] },
          { key: "topology.kubernetes.io/region", operator: "In", values: [here.region] },
        ],
      );
    }
    expect(await waitFor(() => pvEvent(kube, "foreign", "DiskNotInScope") !== undefined, 30_000)).toBe(true);
    expect(pvEvent(kube, "foreign", "DiskNotInScope")?.message).toContain(
      `disk ${foreign.id} is not in account`,
    );
    expect(readPv(kube, "foreign")?.metadata.labels ?? {}).toEqual({});
    expect(readPv(kube, "foreign")?.spec.nodeAffinity).toBeUndefined();
    // DescribeVolumes: batched by a volume-id filter, one direct VolumeIds read for the foreign one.
    const calls = aws.fake.log.requests({ operation: /DescribeVolumes/ });
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.length).toBeLessThanOrEqual(6);
    aws.fake.spec.assertClean();
  }, 90_000);
});
