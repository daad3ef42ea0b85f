/**
 * One hub serving clusters on two clouds at once: a cluster on the fake Linode API and two on
 * the fake AWS (one account with its own keys, one through an assumed role). The hub and the
 * agents are their own processes, with a real nats-server and the API simulators. Every node
 * gets its own cloud's providerID and labels, every LoadBalancer Service a load balancer of its
 * own cloud, and neither cloud sees a call for the other's clusters.
 */
import { afterAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { AwsLocalCloud } from "../cli/src/aws-cloud.js";
import { LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { MixedLocalCloud } from "../cli/src/mixed-cloud.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const LINODE = ["cluster-001"];
const AWS = ["cluster-002", "cluster-003"];

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { providerID?: string; taints?: { key: string }[] };
}

let fleet: LocalFleet | undefined;
/** Clouds started: closed here too, so one that started before a later start threw stops listening. */
const clouds: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await fleet?.stop();
  for (const c of clouds) await c.close();
});

test("Linode and AWS clusters on one hub: each initialized and load-balanced by its own cloud", async () => {
  const linode = await LinodeLocalCloud.start(LINODE);
  clouds.push(linode);
  const aws = await AwsLocalCloud.start(AWS);
  clouds.push(aws);
  const cloud = new MixedLocalCloud([linode, aws], (c) => (LINODE.includes(c) ? linode : aws));
  fleet = await LocalFleet.start({ clusters: 3, nodesPerCluster: 0, logger, cloud });
  const f = fleet;
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true });
  for (const c of [...LINODE, ...AWS]) f.spawnAgentProcess(c, hub.grpcPort);
  for (const c of [...LINODE, ...AWS]) f.addNodes(c, 3);
  expect(await waitFor(() => f.progress().initialized === 9, 60_000)).toBe(true);

  for (const c of LINODE)
    for (const n of f.nodes(c) as unknown as KubeNode[]) {
      expect(n.spec.providerID).toMatch(/^linode:\/\/\d+$/);
      expect(n.metadata.labels?.["topology.kubernetes.io/region"]).toBe("us-east");
      expect(n.metadata.labels?.["linode.region"]).toBe("us-east");
    }
  for (const c of AWS)
    for (const n of f.nodes(c) as unknown as KubeNode[]) {
      expect(n.spec.providerID).toMatch(/^aws:\/\/\/[a-z0-9-]+\/i-[0-9a-f]+$/);
      expect(n.metadata.labels?.["topology.kubernetes.io/region"]).toBe(aws.world(c).region);
    }

  const linodeCallsBefore = linode.totalCalls();
  for (const c of [...LINODE, ...AWS]) f.addServices(c, 1);
  expect(await waitFor(() => f.serviceProgress().withIngress === 3, 90_000)).toBe(true);
  // One NodeBalancer for the Linode cluster; one ELB per AWS cluster (classic, or NLB where the
  // account defaults to it), in its own account and region.
  const nodeBalancers = linode.fake.store.nodeBalancersOf(linode.account(LINODE[0] ?? ""));
  expect(nodeBalancers).toHaveLength(1);
  expect(linode.totalCalls()).toBeGreaterThan(linodeCallsBefore);
  for (const c of AWS) {
    const w = aws.world(c);
    const s = aws.fake.state;
    const lbs = [...s.classicLbs.all(w.accountId), ...s.v2Lbs.all(w.accountId)];
    expect(lbs.filter((lb) => lb.region === w.region)).toHaveLength(1);
  }
}, 180_000);
