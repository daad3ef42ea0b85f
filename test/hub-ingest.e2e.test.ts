/**
 * The hub's ingest end to end (real nats-server, gRPC, hub, agent, Kubernetes API simulator):
 * one bad object costs only that object, and a snapshot that drops most of a cluster at once is
 * held instead of acted on.
 */
import {
  type AgentMessage,
  type ClusterEvent,
  DesiredBatch,
  HubClient,
  type HubMessage,
} from "@fleet-ccm/proto";
import { credentials, Metadata } from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "@jest/globals";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { waitForReconciles } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges";
const OWNER = "fleet-ccm.io/cluster";

let fleet: LocalFleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

interface KubeEvent {
  reason?: string;
  type?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string; uid?: string };
}

function ingressOf(f: LocalFleet, cluster: string, name: string): string | undefined {
  const s = f.services(cluster).find((x) => x.metadata?.name === name);
  return s?.status?.loadBalancer?.ingress?.[0]?.ip;
}

function lbService(
  name: string,
  spec: Record<string, unknown> = {},
  annotations: Record<string, string> = {},
) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default", annotations },
    spec: {
      type: "LoadBalancer",
      selector: { app: name },
      ports: [{ name: "http", port: 80, targetPort: 8080 }],
      ...spec,
    },
  };
}

async function counter(
  f: LocalFleet,
  metric: "objectsRefused" | "snapshotDrops",
  labels: Record<string, string>,
): Promise<number> {
  const m = await f.hub?.metrics[metric].get();
  return (
    m?.values
      .filter((v) =>
        Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want),
      )
      .reduce((a, v) => a + v.value, 0) ?? 0
  );
}

describe("one bad object costs only that object", () => {
  test("500 source ranges reach the hub whole; an over-limit Service gets a Warning Event and nothing else stops", async () => {
    const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
    fleet = f;
    await f.startHub();
    let syncs = 0;
    f.hub?.fleet.subscribe({ onSynced: () => syncs++ });
    await f.startAgents();
    const cluster = [...f.clusters.keys()][0] ?? "";
    const kube = f.cluster(cluster).kube;
    f.addNodes(cluster, 2);
    expect(await waitFor(() => f.progress().initialized === 2, 20_000)).toBe(true);

    // A real Service: 500 CIDRs in the upstream annotation (over 7,000 characters).
    const cidrs = Array.from({ length: 500 }, (_, i) => `100.64.${i >> 2}.${(i & 3) * 64}/26`);
    expect(cidrs.join(",").length).toBeGreaterThan(7000);
    kube.create("Service", lbService("wide", {}, { [SOURCE_RANGES]: cidrs.join(",") }));
    // Over the hub's limit (10,000 entries) yet accepted by the API server: 10,001 source ranges.
    const tooMany = Array.from({ length: 10_001 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}/32`);
    kube.create("Service", lbService("huge", { loadBalancerSourceRanges: tooMany }));
    const [plain] = f.addServices(cluster, 1);

    expect(await waitFor(() => ingressOf(f, cluster, plain ?? "") !== undefined, 30_000)).toBe(true);
    // The 500-CIDR Service reached the hub whole, and was not refused.
    const wide = f.hub?.fleet.view(cluster)?.services.get("default/wide");
    expect(wide?.annotations[SOURCE_RANGES]?.split(",")).toEqual(cidrs);
    expect(f.hub?.fleet.view(cluster)?.refused.has("service/default/wide")).toBe(false);

    // The over-limit Service: a Warning Event on it naming the limit, absent from the hub's view.
    const hugeUid = f.services(cluster).find((s) => s.metadata?.name === "huge")?.metadata?.uid ?? "";
    const refusedEvent = () =>
      (kube.list("Event", "default") as KubeEvent[]).find(
        (e) => e.reason === "ObjectRefused" && e.involvedObject?.name === "huge",
      );
    expect(await waitFor(() => refusedEvent() !== undefined, 20_000)).toBe(true);
    const ev = refusedEvent();
    expect(ev?.type).toBe("Warning");
    expect(ev?.involvedObject?.uid).toBe(hugeUid);
    expect(ev?.message).toContain("10001 source ranges; the limit is 10000");
    expect(f.hub?.fleet.view(cluster)?.services.has("default/huge")).toBe(false);
    expect(f.hub?.fleet.view(cluster)?.refused.get("service/default/huge")?.limit).toBe("list-length");
    expect(ingressOf(f, cluster, "huge")).toBeUndefined();
    expect(f.cloud.loadBalancers().some((l) => l.tags["fleet-ccm.io/service-uid"] === hugeUid)).toBe(false);
    expect(await counter(f, "objectsRefused", { kind: "service", reason: "list-length" })).toBe(1);

    // The stream stayed up: a node joining now is initialized, with no new snapshot.
    const [late] = f.addNodes(cluster, 1);
    expect(
      await waitFor(
        () =>
          f
            .nodes(cluster)
            .some(
              (n) =>
                n.metadata?.name === late &&
                !(n.spec?.taints ?? []).some((t) => t.key.endsWith("/uninitialized")),
            ),
        20_000,
      ),
    ).toBe(true);
    expect(syncs).toBe(1);
  });
});

describe("500 source ranges", () => {
  // The simulated cloud takes at most 100 CIDRs per firewall rule: the provider splits them.
  test("the Service gets its load balancer with all 500 source ranges", async () => {
    const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
    fleet = f;
    await f.startHub();
    await f.startAgents();
    const cluster = [...f.clusters.keys()][0] ?? "";
    f.addNodes(cluster, 1);
    const cidrs = Array.from({ length: 500 }, (_, i) => `100.64.${i >> 2}.${(i & 3) * 64}/26`);
    f.cluster(cluster).kube.create("Service", lbService("wide", {}, { [SOURCE_RANGES]: cidrs.join(",") }));
    expect(await waitFor(() => ingressOf(f, cluster, "wide") !== undefined, 15_000)).toBe(true);
    const uid = f.services(cluster).find((s) => s.metadata?.name === "wide")?.metadata?.uid ?? "";
    const lb = f.cloud.loadBalancers().find((l) => l.tags["fleet-ccm.io/service-uid"] === uid);
    const got = f.cloud
      .firewallRules()
      .filter((r) => r.lbId === lb?.id)
      .flatMap((r) => r.sourceCidrs);
    expect(new Set(got)).toEqual(new Set(cidrs));
  });
});

/** A client speaking the real protocol with the cluster's token, as a faulty agent would. */
function craftedAgent(port: number, token: string) {
  const client = new HubClient(`127.0.0.1:${port}`, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${token}`);
  const call = client.sync(md);
  const received: HubMessage[] = [];
  call.on("data", (m: HubMessage) => received.push(m));
  call.on("error", () => undefined);
  const send = (body: AgentMessage["body"]) => call.write({ body });
  const beat = setInterval(
    () => send({ $case: "heartbeat", value: { seq: 0, sentAt: undefined, receivedGeneration: 0 } }),
    500,
  );
  return {
    received,
    send,
    close: () => {
      clearInterval(beat);
      call.end();
      client.close();
    },
  };
}

describe("a snapshot that drops most of a cluster is held", () => {
  test("no route, backend or node goes on a snapshot missing most nodes; a snapshot after confirmAfterMs is applied", async () => {
    const CONFIRM_MS = 3000;
    const f = await LocalFleet.start({
      clusters: 1,
      nodesPerCluster: 0,
      logger,
      configureCloudRoutes: true,
      hubConfig: {
        routes: { periodMs: 300, maxConcurrentPerAccount: 4 },
        snapshotHold: { maxObjects: 1, maxPercent: 10, confirmAfterMs: CONFIRM_MS },
        // A confirmed drop is still no observed deletion: its routes go by the unclaimed-route
        // rule (lifecycle evidence and blast radius), kept short and wide here.
        lifecycle: {
          deleteAfterChecks: 2,
          deleteAfterMs: 1000,
          blastRadius: { maxPercent: 100, maxNodes: 10, windowMs: 600_000 },
        },
      },
    });
    fleet = f;
    await f.startHub();
    await f.startAgents();
    const cluster = [...f.clusters.keys()][0] ?? "";
    const kube = f.cluster(cluster).kube;
    const names = f.addNodes(cluster, 6);
    expect(await waitFor(() => f.progress().initialized === 6, 20_000)).toBe(true);
    names.forEach((n, i) => {
      kube.patch("Node", undefined, n, "merge", {
        spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
      });
    });
    const [svc] = f.addServices(cluster, 1);
    const routes = () => f.cloud.routes().filter((r) => r.tags[OWNER] === cluster).length;
    const members = () => f.cloud.pools().reduce((a, p) => a + p.members.length, 0);
    expect(
      await waitFor(
        () => routes() === 6 && members() === 6 && ingressOf(f, cluster, svc ?? "") !== undefined,
        30_000,
      ),
    ).toBe(true);

    // The real agent goes; a faulty one reports 1 of the 6 nodes.
    await f.stopAgent(cluster);
    const view = f.hub?.fleet.view(cluster);
    const wireNodes = [...(view?.nodes.values() ?? [])];
    const wireServices = [...(view?.services.values() ?? [])];
    // What the hub publishes for the cluster, read as the cluster's agent would.
    const nc = await connect({
      servers: f.nats.url,
      user: `agent-${cluster}`,
      pass: f.cluster(cluster).natsPassword,
      inboxPrefix: `_INBOX_${cluster}`,
    });
    const events: ClusterEvent[] = [];
    nc.subscribe(`fleet.v1.${cluster}.>`, {
      callback: (_e, m) => {
        events.push(...DesiredBatch.decode(m.data).events);
      },
    });
    await nc.flush();
    const faulty = craftedAgent(f.hubPort, f.cluster(cluster).token);
    faulty.send({ $case: "hello", value: { cluster, agentVersion: "faulty", kubernetesVersion: "v1.31.0" } });
    expect(await waitFor(() => faulty.received.some((m) => m.body?.$case === "welcome"), 5000)).toBe(true);
    const partial = {
      nodes: wireNodes.slice(0, 1),
      services: wireServices,
      persistentVolumes: [],
      last: true,
      seq: 0,
    };
    faulty.send({ $case: "snapshot", value: { snapshotId: 1, ...partial } });
    expect(
      await waitFor(
        async () => (await counter(f, "snapshotDrops", { kind: "node", outcome: "held" })) === 5,
        5000,
      ),
    ).toBe(true);
    expect((await f.hub?.metrics.objectsHeld.get())?.values[0]?.value).toBe(5);
    // A Warning Event on each held node, saying why and until when.
    const held = () => events.filter((e) => e.reason === "SnapshotDropHeld");
    expect(await waitFor(() => held().length === 5, 5000)).toBe(true);
    expect(
      held()
        .map((e) => e.name)
        .sort(),
    ).toEqual(
      wireNodes
        .slice(1)
        .map((n) => n.name)
        .sort(),
    );
    expect(held()[0]?.type).toBe("Warning");
    expect(held()[0]?.message).toContain("5 of 6 nodes at once");

    // Reconcilers run on the held view (route syncs every 300 ms) and remove nothing.
    const hub = f.hub;
    if (hub === undefined) throw new Error("no hub");
    expect(await waitForReconciles(hub, "route", 3, 10_000)).toBe(true);
    expect(f.hub?.fleet.view(cluster)?.nodes.size).toBe(6);
    expect(routes()).toBe(6);
    expect(members()).toBe(6);
    expect(f.nodes(cluster)).toHaveLength(6);

    // After confirmAfterMs the hub asks for a fresh snapshot; one that still lacks them confirms.
    expect(
      await waitFor(() => faulty.received.some((m) => m.body?.$case === "resync"), CONFIRM_MS + 5000),
    ).toBe(true);
    faulty.send({ $case: "snapshot", value: { snapshotId: 2, ...partial } });
    expect(await waitFor(() => f.hub?.fleet.view(cluster)?.nodes.size === 1, 5000)).toBe(true);
    expect(await counter(f, "snapshotDrops", { kind: "node", outcome: "confirmed" })).toBe(5);
    expect((await f.hub?.metrics.objectsHeld.get())?.values[0]?.value).toBe(0);
    expect(await waitFor(() => routes() === 1 && members() === 1, 15_000)).toBe(true);
    faulty.close();
    await nc.close();
  });
});
