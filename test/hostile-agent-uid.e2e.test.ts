/**
 * A hostile cluster reports a Service with another cluster's Service uid (uids are no secret:
 * they show in Events and tags). Cloud resources are named and tagged from (cluster, uid), so
 * the hostile cluster gets a load balancer of its own, and deleting its Service deletes only
 * that: the other cluster's load balancer, members and ingress stay as they were.
 */
import { type AgentMessage, HubClient, type HubMessage, RELEASE_VERSION } from "@fleet-ccm/proto";
import { credentials, Metadata } from "@grpc/grpc-js";
import { afterAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const OWNER = "fleet-ccm.io/cluster";
const UID = "fleet-ccm.io/service-uid";
let f: LocalFleet | undefined;
afterAll(async () => {
  await f?.stop();
});

test("another cluster's Service uid: a load balancer of its own; its deletion leaves the other's", async () => {
  const fleet = await LocalFleet.start({
    clusters: 2,
    nodesPerCluster: 0,
    logger: pino({ level: "silent" }),
  });
  f = fleet;
  await fleet.startHub();
  const [hostile = "", victim = ""] = [...fleet.clusters.keys()];
  await fleet.startAgent(victim);
  fleet.addNodes(victim, 2);
  fleet.addServices(victim, 1);
  expect(await waitFor(() => fleet.serviceProgress().withIngress === 1, 20_000)).toBe(true);
  const stolen = [...(fleet.hub?.fleet.view(victim)?.services.values() ?? [])].find(
    (s) => s.type === "LoadBalancer",
  );
  if (stolen === undefined) throw new Error("no victim Service");
  const lbOf = (cluster: string) =>
    fleet.cloud.loadBalancers().find((l) => l.tags[OWNER] === cluster && l.tags[UID] === stolen.uid);
  const victimLb = lbOf(victim);
  const members = () =>
    fleet.cloud
      .pools()
      .filter((p) => p.lbId === victimLb?.id)
      .flatMap((p) => p.members)
      .sort();
  expect(await waitFor(() => members().length === 2, 20_000)).toBe(true);
  const membersBefore = members();
  const ingress = () => JSON.stringify(fleet.services(victim).map((s) => s.status?.loadBalancer?.ingress));
  const ingressBefore = ingress();

  const client = new HubClient(`127.0.0.1:${fleet.hubPort}`, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${fleet.cluster(hostile).token}`);
  const call = client.sync(md);
  const received: HubMessage[] = [];
  call.on("data", (m: HubMessage) => received.push(m));
  call.on("error", () => undefined);
  const send = (body: AgentMessage["body"]) => call.write({ body });
  let seq = 0;
  const beat = setInterval(
    () => send({ $case: "heartbeat", value: { seq, sentAt: undefined, receivedGeneration: 0 } }),
    500,
  );
  try {
    send({
      $case: "hello",
      value: { cluster: hostile, agentVersion: RELEASE_VERSION, kubernetesVersion: "v1.31.0" },
    });
    expect(await waitFor(() => received.some((m) => m.body?.$case === "welcome"), 5000)).toBe(true);
    const copy = { ...stolen, finalizers: ["service.kubernetes.io/load-balancer-cleanup"] };
    send({
      $case: "snapshot",
      value: { snapshotId: 1, nodes: [], services: [copy], persistentVolumes: [], last: true, seq },
    });
    expect(await waitFor(() => lbOf(hostile) !== undefined, 20_000)).toBe(true);
    expect(lbOf(hostile)?.id).not.toBe(victimLb?.id);
    expect(lbOf(hostile)?.name).not.toBe(victimLb?.name);

    // Deleted (deletionTimestamp with the finalizer): the hub removes only the hostile one.
    seq = 1;
    send({
      $case: "delta",
      value: {
        seq,
        change: {
          $case: "service",
          value: { ...copy, resourceVersion: "999", deletionTimestamp: new Date() },
        },
      },
    });
    expect(await waitFor(() => lbOf(hostile) === undefined, 20_000)).toBe(true);
    expect(lbOf(victim)?.id).toBe(victimLb?.id);
    expect(members()).toEqual(membersBefore);
    expect(ingress()).toBe(ingressBefore);
  } finally {
    clearInterval(beat);
    call.end();
    client.close();
  }
}, 90_000);
