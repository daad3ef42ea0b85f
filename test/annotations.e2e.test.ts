/**
 * Which annotations reach the hub, end to end (real nats-server, gRPC, hub, the agent as its own
 * process, Kubernetes API simulator, simulated cloud): the prefixes the cluster's provider
 * declares are forwarded and take effect; an undeclared annotation never leaves the cluster.
 */
import { type AgentMessage, type HubMessage, HubService, type Service } from "@fleet-ccm/proto";
import { Server, ServerCredentials, type ServerDuplexStream, status } from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const VENDOR_IDLE = "service.beta.kubernetes.io/simulated-load-balancer-idle-timeout";
const UNIFIED_IDLE = "lb.fleet-ccm.io/idle-timeout";
const SECRET = "example.com/secret-note";
const SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges";

let fleet: LocalFleet | undefined;
let server: Server | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  server?.forceShutdown();
  server = undefined;
});

/**
 * A hub speaking the real protocol that answers each stream's Hello with the next Welcome
 * prefixes of `welcomes` (the last one repeats), records every complete snapshot's Services, and
 * ends the stream after it: the agent then reconnects and meets the next Welcome.
 */
async function scriptedHub(welcomes: readonly (readonly string[])[]) {
  const snapshots: Service[][] = [];
  let streams = 0;
  const s = new Server();
  s.addService(HubService, {
    sync: (call: ServerDuplexStream<AgentMessage, HubMessage>) => {
      const prefixes = welcomes[Math.min(streams++, welcomes.length - 1)] ?? [];
      let services: Service[] = [];
      call.on("data", (m: AgentMessage) => {
        const body = m.body;
        if (body?.$case === "hello")
          call.write({
            body: {
              $case: "welcome",
              value: {
                cluster: body.value.cluster,
                limits: { maxMessageBytes: 4 << 20, maxObjectsPerChunk: 500 },
                desiredSubject: "",
                heartbeatIntervalMs: 1000,
                forwardAnnotationPrefixes: [...prefixes],
                secretReferences: [],
                hubHeartbeatIntervalMs: 0,
                volumeInTreeSources: [],
                volumeCsiDrivers: [],
              },
            },
          });
        if (body?.$case !== "snapshot") return;
        services.push(...body.value.services);
        if (!body.value.last) return;
        snapshots.push(services);
        services = [];
        call.emit("error", { code: status.UNAVAILABLE, details: "scripted hub: next Welcome" });
      });
      call.on("error", () => undefined);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    s.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  server = s;
  return { port, snapshots };
}

describe("forwarded annotations", () => {
  test("a declared vendor annotation reaches the hub and takes effect (the unified key wins); an undeclared one never does", async () => {
    const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
    fleet = f;
    const hub = await f.startHub();
    const cluster = [...f.clusters.keys()][0] ?? "";
    const kube = f.cluster(cluster).kube;
    kube.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "web",
        namespace: "default",
        annotations: {
          [VENDOR_IDLE]: "120",
          [SECRET]: "do-not-ship",
          [SOURCE_RANGES]: "10.0.0.0/8",
          "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
        },
      },
      spec: {
        type: "LoadBalancer",
        selector: { app: "web" },
        ports: [{ name: "http", port: 80, targetPort: 8080 }],
      },
    });
    f.addNodes(cluster, 1);
    // The Service exists before the agent starts: its initial list is filtered by the Welcome too.
    f.spawnAgentProcess(cluster);

    const view = () => hub.fleet.view(cluster)?.services.get("default/web");
    const lb = () => {
      const uid = f.services(cluster).find((s) => s.metadata?.name === "web")?.metadata?.uid ?? "";
      return f.cloud.loadBalancers().find((l) => l.tags["fleet-ccm.io/service-uid"] === uid);
    };
    /** The idle timeout of the Service's one listener. */
    const idle = () => {
      const id = lb()?.id;
      return f.cloud.inventory().listeners.find((l) => l.lbId === id)?.idleTimeoutSeconds;
    };
    expect(await waitFor(() => idle() === 120, 30_000)).toBe(true);
    expect(view()?.annotations).toEqual({ [VENDOR_IDLE]: "120", [SOURCE_RANGES]: "10.0.0.0/8" });
    // The Kubernetes-wide source ranges annotation is part of the unified set.
    const ranges = () =>
      f.cloud
        .firewallRules()
        .filter((r) => r.lbId === lb()?.id)
        .flatMap((r) => r.sourceCidrs);
    expect(await waitFor(() => ranges().join() === "10.0.0.0/8", 20_000)).toBe(true);

    // Both set: the unified key wins.
    kube.patch("Service", "default", "web", "merge", {
      metadata: { annotations: { [UNIFIED_IDLE]: "30", [SECRET]: "still-secret" } },
    });
    expect(await waitFor(() => idle() === 30, 20_000)).toBe(true);
    expect(view()?.annotations).toEqual({
      [VENDOR_IDLE]: "120",
      [UNIFIED_IDLE]: "30",
      [SOURCE_RANGES]: "10.0.0.0/8",
    });
    // A change under the vendor prefix alone still reaches the hub as a delta.
    kube.patch("Service", "default", "web", "merge", {
      metadata: { annotations: { [UNIFIED_IDLE]: null, [VENDOR_IDLE]: "90" } },
    });
    expect(await waitFor(() => idle() === 90, 20_000)).toBe(true);
    expect(Object.keys(view()?.annotations ?? {}).sort()).toEqual([SOURCE_RANGES, VENDOR_IDLE]);
  }, 90_000);
});

describe("a value past its setting's bound", () => {
  test("a 64 KiB health-check-path: the cluster sees one Warning naming the key and the bound; no load balancer until it is fixed", async () => {
    const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
    fleet = f;
    await f.startHub();
    await f.startAgents();
    const cluster = [...f.clusters.keys()][0] ?? "";
    const kube = f.cluster(cluster).kube;
    f.addNodes(cluster, 1);
    // A node set change re-syncs every Service: let it happen before the Service exists.
    expect(await waitFor(() => f.progress().initialized === 1, 20_000)).toBe(true);
    const PATH = "lb.fleet-ccm.io/health-check-path";
    kube.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "web",
        namespace: "default",
        annotations: { [PATH]: `/${"a".repeat(64 * 1024 - 1)}` },
      },
      spec: {
        type: "LoadBalancer",
        selector: { app: "web" },
        ports: [{ name: "http", port: 80, targetPort: 8080 }],
      },
    });
    const failed = () =>
      (kube.list("Event", "default") as { reason?: string; message?: string; count?: number }[]).filter(
        (e) => e.reason === "SyncLoadBalancerFailed",
      );
    expect(await waitFor(() => failed().length > 0, 30_000)).toBe(true);
    const message = failed()[0]?.message ?? "";
    expect(message).toContain(`invalid annotation ${PATH}="/aaa`);
    expect(message).toContain(
      "expected an absolute URL path such as /healthz, 1 to 1024 characters (65536 characters)",
    );
    expect(message.length).toBeLessThan(300);
    const uid = () => f.services(cluster).find((s) => s.metadata?.name === "web")?.metadata?.uid ?? "";
    const lb = () => f.cloud.loadBalancers().find((l) => l.tags["fleet-ccm.io/service-uid"] === uid());
    // Nothing in the cloud, and no retries: the one Event is not repeated while the Service stays.
    await new Promise((r) => setTimeout(r, 2000));
    expect(lb()).toBeUndefined();
    expect(f.cloud.inventory().healthChecks).toEqual([]);
    expect(failed()).toHaveLength(1);
    expect(failed()[0]?.count ?? 1).toBe(1);

    // Fixed: the next sync builds it, health-checking the path.
    kube.patch("Service", "default", "web", "merge", { metadata: { annotations: { [PATH]: "/healthz" } } });
    expect(await waitFor(() => lb() !== undefined, 30_000)).toBe(true);
    const paths = () => f.cloud.inventory().healthChecks.map((h) => h.path);
    expect(await waitFor(() => paths().includes("/healthz"), 20_000)).toBe(true);
  }, 90_000);
});

describe("what the agent sends", () => {
  test("only the Welcome's prefixes; none named (an older hub): the unified set; a new set is listed afresh", async () => {
    const f = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
    fleet = f;
    const cluster = [...f.clusters.keys()][0] ?? "";
    const annotations = {
      [VENDOR_IDLE]: "120",
      [UNIFIED_IDLE]: "30",
      [SECRET]: "do-not-ship",
      [SOURCE_RANGES]: "10.0.0.0/8",
    };
    f.cluster(cluster).kube.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "default", annotations },
      spec: {
        type: "LoadBalancer",
        selector: { app: "web" },
        ports: [{ name: "http", port: 80, targetPort: 8080 }],
      },
    });
    const hub = await scriptedHub([
      [],
      ["lb.fleet-ccm.io/", "example.com/"],
      ["service.beta.kubernetes.io/simulated-"],
    ]);
    await f.startAgent(cluster, hub.port);
    expect(await waitFor(() => hub.snapshots.length >= 3, 30_000)).toBe(true);
    const sent = hub.snapshots.map((services) => services.find((x) => x.name === "web")?.annotations);
    expect(sent.slice(0, 3)).toEqual([
      { [UNIFIED_IDLE]: "30", [SOURCE_RANGES]: "10.0.0.0/8" },
      { [UNIFIED_IDLE]: "30", [SECRET]: "do-not-ship" },
      { [VENDOR_IDLE]: "120" },
    ]);
  }, 60_000);
});
