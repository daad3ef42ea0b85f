/**
 * The agent (as a process) against the hub's limits: a stream the hub refuses for its own
 * reasons is retried with a growing backoff, not at a fixed rate with a full snapshot each
 * time; an object too large for one message is left out with a warning and a Warning Event on
 * it, and the rest of the cluster keeps flowing.
 */
import type { ChildProcess } from "node:child_process";
import { afterEach, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

let fleet: LocalFleet | undefined;
let agent: ChildProcess | undefined;
afterEach(async () => {
  agent?.kill("SIGKILL");
  await fleet?.stop();
  fleet = undefined;
});

function hubLog(): { lines: { msg: string; [k: string]: unknown }[]; logger: pino.Logger } {
  const lines: { msg: string }[] = [];
  return { lines, logger: pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s)) }) };
}

test("a stream the hub refuses for its own reasons is retried with growing backoff", async () => {
  const { lines, logger } = hubLog();
  const f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    hubConfig: { limits: { maxStreamsPerCluster: 1 } },
  });
  fleet = f;
  const c = [...f.clusters.keys()][0] ?? "";
  await f.startHub();
  f.addNodes(c, 2);
  // A second agent of the same cluster (a botched rollout): the first holds the only stream.
  await f.startAgent(c);
  expect(await waitFor(() => f.hub?.fleet.view(c)?.synced === true, 20_000)).toBe(true);
  const output: string[] = [];
  agent = f.spawnAgentProcess(c, { output, logLevel: "info" });
  /** When the hub refused each of the second agent's streams (pino's `time`, epoch ms). */
  const refusedAt = () =>
    lines.filter((l) => l.msg.startsWith("stream refused")).map((l) => Number(l["time"]));
  // Four refusals, then the gaps between them: the refused backoff is 2 s doubling, jittered
  // into [d/2, d], so each gap is at least 1 s, 2 s, 4 s. A fixed 400 ms rate (~50 streams and
  // snapshots in 20 s) or a backoff that does not grow fails here, however loaded the machine.
  expect(await waitFor(() => refusedAt().length >= 4, 40_000)).toBe(true);
  const [t0 = 0, t1 = 0, t2 = 0, t3 = 0] = refusedAt();
  expect(t1 - t0).toBeGreaterThanOrEqual(1000);
  expect(t2 - t1).toBeGreaterThanOrEqual(2000);
  expect(t3 - t2).toBeGreaterThanOrEqual(4000);
  // Four failures, at most three lines: the first failure, then summaries.
  const agentLines = output.filter((l) => l.includes("hub stream"));
  expect(agentLines.some((l) => l.includes("RESOURCE_EXHAUSTED"))).toBe(true);
  expect(agentLines.length).toBeLessThanOrEqual(3);

  // The stream is free again: the next try gets through.
  const connected = () => lines.filter((l) => l.msg === "agent connected").length;
  const before = connected();
  await f.stopAgent(c);
  expect(await waitFor(() => connected() > before && f.hub?.fleet.view(c)?.connected === true, 130_000)).toBe(
    true,
  );
  expect(await waitFor(() => f.hub?.fleet.view(c)?.nodes.size === 2, 10_000)).toBe(true);
}, 180_000);

test("an object too large for a message is left out with a warning and an Event; the rest keeps flowing", async () => {
  const { lines, logger } = hubLog();
  const f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    hubConfig: { limits: { maxMessageBytes: 64 * 1024 } },
  });
  fleet = f;
  const c = [...f.clusters.keys()][0] ?? "";
  await f.startHub();
  const kube = f.cluster(c).kube;
  // 5,000 source ranges: some 70 KB, more than the hub's 64 KiB message limit.
  const ranges = Array.from({ length: 5000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`).join(",");
  kube.create("Service", {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "huge",
      namespace: "default",
      annotations: { "service.beta.kubernetes.io/load-balancer-source-ranges": ranges },
    },
    spec: { type: "LoadBalancer", selector: { app: "huge" }, ports: [{ port: 80, targetPort: 8080 }] },
  });
  f.addNodes(c, 2);
  const output: string[] = [];
  agent = f.spawnAgentProcess(c, { output, logLevel: "info" });
  expect(await waitFor(() => f.progress().initialized === 2, 30_000)).toBe(true);

  const [web] = f.addServices(c, 1);
  const hasIngress = (name: string) =>
    (f.services(c).find((s) => s.metadata?.name === name)?.status?.loadBalancer?.ingress ?? []).length > 0;
  expect(await waitFor(() => hasIngress(web ?? ""), 30_000)).toBe(true);
  f.addNodes(c, 1);
  expect(await waitFor(() => f.progress().initialized === 3, 30_000)).toBe(true);

  const event = () =>
    (
      kube.list("Event", "default") as {
        type?: string;
        reason?: string;
        message?: string;
        involvedObject?: { name?: string; kind?: string };
      }[]
    ).find((e) => e.involvedObject?.name === "huge" && e.reason === "TooLargeForHub");
  expect(await waitFor(() => event() !== undefined, 20_000)).toBe(true);
  expect(event()?.type).toBe("Warning");
  expect(event()?.involvedObject?.kind).toBe("Service");
  expect(event()?.message).toContain("65536");
  expect(output.filter((l) => l.includes("object too large for the hub"))).toHaveLength(1);
  expect(hasIngress("huge")).toBe(false);
  // One stream all along: nothing was refused.
  expect(lines.filter((l) => l.msg === "agent connected")).toHaveLength(1);
  expect(f.hub?.fleet.view(c)?.services.has("default/huge")).toBe(false);
});
