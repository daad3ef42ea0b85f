/**
 * Cross-cluster reach on Linode: two clusters in one Linode account, the hostile one's Services
 * (its agent, or a tenant who can only edit its Services) naming cluster B's NodeBalancer, a
 * NodeBalancer that has nothing to do with Kubernetes, and B's hub-made firewall. Each is
 * refused with a Warning Event naming why, with no mutating call on the resource (counted in the
 * fake) and B's resources as they were. With clusters[].adoptFrom set for the hostile cluster
 * naming its former Linode CCM's --cluster-name, a NodeBalancer built as that CCM builds it
 * (tagged with the cluster name) is adopted.
 */
import type { FakeNodeBalancer } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LINODE_DEMO_ACCOUNT, LINODE_DEMO_REGION, LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const P = "service.beta.kubernetes.io/linode-loadbalancer-";
const CLUSTERS = ["cluster-001", "cluster-002"];
const [HOSTILE = "", VICTIM = ""] = CLUSTERS;
/** The Linode CCM's --cluster-name the hostile cluster ran with before the hub. */
const VENDOR_NAME = "lke-hostile";

interface KubeEvent {
  type?: string;
  reason?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string };
}

let f: LocalFleet;
let cloud: LinodeLocalCloud;

beforeAll(async () => {
  cloud = await LinodeLocalCloud.start(CLUSTERS, {
    adoptFrom: (c) => (c === HOSTILE ? VENDOR_NAME : undefined),
  });
  f = await LocalFleet.start({ cloud, clusters: CLUSTERS.length, nodesPerCluster: 0, logger });
  await f.startHub();
  await f.startAgents();
  for (const c of CLUSTERS) f.addNodes(c, 2);
  expect(await waitFor(() => f.progress().initialized === 4, 60_000)).toBe(true);
}, 90_000);

afterAll(async () => {
  await f?.stop();
  await cloud?.close();
});

const store = () => cloud.fake.store;
const nbsOf = (cluster: string) =>
  store()
    .nodeBalancersOf(LINODE_DEMO_ACCOUNT)
    .filter((nb) => nb.tags.includes(`fccm:c=${cluster}`));
const ingressOf = (cluster: string, name: string) =>
  f.services(cluster).find((s) => s.metadata?.name === name)?.status?.loadBalancer?.ingress ?? [];

function service(
  cluster: string,
  name: string,
  annotations: Record<string, string>,
  sourceRanges?: string[],
) {
  f.cluster(cluster).kube.create("Service", {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default", annotations },
    spec: {
      type: "LoadBalancer",
      selector: { app: name },
      ports: [{ name: "http", port: 80, targetPort: 8080 }],
      ...(sourceRanges !== undefined && { loadBalancerSourceRanges: sourceRanges }),
    },
  });
}

function warning(cluster: string, name: string, text: string): boolean {
  return (f.cluster(cluster).kube.list("Event", "default") as KubeEvent[]).some(
    (e) =>
      e.type === "Warning" &&
      e.reason === "SyncLoadBalancerFailed" &&
      e.involvedObject?.name === name &&
      (e.message ?? "").includes(text),
  );
}

/** Mutating calls whose path names the NodeBalancer or firewall, or whose body names its id. */
function writesTo(mark: number, kind: "nodebalancers" | "networking/firewalls", id: number) {
  const path = new RegExp(`/${kind}/${id}(/|$)`);
  return cloud.fake.mutations.filter(
    (m) => m.seq > mark && (path.test(m.path) || JSON.stringify(m.body ?? null).includes(`:${id}`)),
  );
}

const snapshot = (nb: FakeNodeBalancer) => JSON.stringify(store().nodeBalancers.get(nb.id));

test("NodeBalancers and firewalls outside the cluster's scope are refused; adoptFrom adopts the cluster's own", async () => {
  // Cluster B: a Service filtered by source ranges, so a hub-made firewall too.
  service(VICTIM, "victim", {}, ["192.0.2.0/24"]);
  expect(await waitFor(() => ingressOf(VICTIM, "victim").length > 0, 30_000)).toBe(true);
  const [victimNb] = nbsOf(VICTIM);
  if (victimNb === undefined) throw new Error("no NodeBalancer of the victim");
  const [victimFw] = store().firewallsOfDevice(LINODE_DEMO_ACCOUNT, "nodebalancer", victimNb.id);
  if (victimFw === undefined) throw new Error("no firewall of the victim");
  // A NodeBalancer that has nothing to do with Kubernetes, and one the Linode CCM made for
  // another cluster (cluster B's former Linode CCM).
  const unrelated = cloud.fake.createNodeBalancer(LINODE_DEMO_ACCOUNT, {
    label: "billing-frontend",
    region: LINODE_DEMO_REGION,
    tags: ["billing"],
    ports: [443],
    nodes: ["192.168.250.1:443"],
  });
  const foreignCcm = cloud.fake.createNodeBalancer(LINODE_DEMO_ACCOUNT, {
    label: "ccm-0a1b2c3d4e5f",
    region: LINODE_DEMO_REGION,
    tags: ["lke-victim"],
    ports: [80],
    nodes: ["192.168.250.2:30080"],
  });
  const before = {
    victimNb: snapshot(victimNb),
    victimFw: JSON.stringify(store().firewalls.get(victimFw.id)),
    unrelated: snapshot(unrelated),
    foreignCcm: snapshot(foreignCcm),
  };
  const hostileBefore = nbsOf(HOSTILE).length;
  const mark = cloud.fake.log.mark();

  service(HOSTILE, "steal-b", { [`${P}nodebalancer-id`]: String(victimNb.id) });
  service(HOSTILE, "steal-unrelated", { [`${P}nodebalancer-id`]: String(unrelated.id) });
  service(HOSTILE, "steal-ccm", { [`${P}nodebalancer-id`]: String(foreignCcm.id) });
  service(HOSTILE, "steal-fw", { [`${P}firewall-id`]: String(victimFw.id) });
  expect(
    await waitFor(
      () =>
        warning(HOSTILE, "steal-b", "belongs to another Service (cluster cluster-002)") &&
        warning(HOSTILE, "steal-unrelated", `lacks the tag ${VENDOR_NAME}`) &&
        warning(HOSTILE, "steal-ccm", `lacks the tag ${VENDOR_NAME}`) &&
        warning(HOSTILE, "steal-fw", "one fleet-ccm made for another Service (cluster cluster-002)"),
      30_000,
    ),
  ).toBe(true);

  // No mutating call on any of them; B's NodeBalancer and firewall as they were.
  expect(writesTo(mark, "nodebalancers", victimNb.id)).toEqual([]);
  expect(writesTo(mark, "nodebalancers", unrelated.id)).toEqual([]);
  expect(writesTo(mark, "nodebalancers", foreignCcm.id)).toEqual([]);
  expect(writesTo(mark, "networking/firewalls", victimFw.id)).toEqual([]);
  expect(snapshot(victimNb)).toBe(before.victimNb);
  expect(JSON.stringify(store().firewalls.get(victimFw.id))).toBe(before.victimFw);
  expect(snapshot(unrelated)).toBe(before.unrelated);
  expect(snapshot(foreignCcm)).toBe(before.foreignCcm);
  expect(nbsOf(HOSTILE)).toHaveLength(hostileBefore);
  for (const name of ["steal-b", "steal-unrelated", "steal-ccm", "steal-fw"])
    expect(ingressOf(HOSTILE, name)).toEqual([]);
  expect(ingressOf(VICTIM, "victim")).toMatchObject([{ ip: victimNb.ipv4, hostname: victimNb.hostname }]);

  // The hostile cluster's own former Linode CCM NodeBalancer (tagged with its --cluster-name,
  // as that CCM tags them): adoptFrom names it, so it is adopted in place.
  const own = cloud.fake.createNodeBalancer(LINODE_DEMO_ACCOUNT, {
    label: "ccm-ffeeddccbbaa",
    region: LINODE_DEMO_REGION,
    tags: [VENDOR_NAME],
    ports: [80],
    nodes: ["192.168.250.3:30080"],
  });
  const count = store().nodeBalancersOf(LINODE_DEMO_ACCOUNT).length;
  service(HOSTILE, "migrated", { [`${P}nodebalancer-id`]: String(own.id) });
  expect(
    await waitFor(
      () => ingressOf(HOSTILE, "migrated").some((i) => i.ip === own.ipv4 && i.hostname === own.hostname),
      30_000,
    ),
  ).toBe(true);
  expect(store().nodeBalancers.get(own.id)?.tags).toEqual(
    expect.arrayContaining(["fleet-ccm", `fccm:c=${HOSTILE}`]),
  );
  expect(store().nodeBalancersOf(LINODE_DEMO_ACCOUNT)).toHaveLength(count);
  expect(snapshot(victimNb)).toBe(before.victimNb);
}, 120_000);
