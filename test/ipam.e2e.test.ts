/**
 * Node IPAM end to end: the hub (its own process, killed and started again mid-allocation) gives
 * every node of three clusters (one dual-stack) its pod ranges through real agent processes,
 * real NATS and gRPC, onto the Kubernetes API simulators; no range is given twice across the
 * fleet; an exhausted cluster's waiting node gets a CIDRNotAvailable Warning and a metric, then
 * the range of a deleted node; a configuration whose clusters' pod networks overlap is refused
 * at load, naming both.
 */
import { type ChildProcess, execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum } from "./hub-metrics.js";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const KUBECTL = process.env["KUBECTL"] ?? "/usr/bin/kubectl";
const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

const [A, B, C] = ["cluster-001", "cluster-002", "cluster-003"] as const;
/** cluster-003's /18 holds 64 node ranges of /24. */
const NETWORKS: Record<string, { cidrs: string[] }> = {
  [A]: { cidrs: ["10.100.0.0/16", "fd00:100::/56"] },
  [B]: { cidrs: ["10.101.0.0/16"] },
  [C]: { cidrs: ["10.102.0.0/18"] },
};
const PER_CLUSTER = 50;

interface KubeNode {
  metadata: { name: string; uid: string };
  spec: { podCIDR?: string; podCIDRs?: string[] };
}
interface KubeEvent {
  type?: string;
  reason?: string;
  message?: string;
  involvedObject?: { name?: string };
}

let fleet: LocalFleet;
let dir: string;
let hub: { child: ChildProcess; grpcPort: number; httpPort: number; output: () => string };
const agents: ChildProcess[] = [];

function nodes(cluster: string): KubeNode[] {
  return fleet.nodes(cluster) as unknown as KubeNode[];
}

function withRanges(cluster: string): KubeNode[] {
  return nodes(cluster).filter((n) => (n.spec.podCIDRs ?? []).length > 0);
}

function allocated(): number {
  return [A, B, C].reduce((sum, c) => sum + withRanges(c).length, 0);
}

/** The machine's kubectl against a cluster's API simulator. */
function kubectl(cluster: string, args: string): Promise<string> {
  const kubeconfig = join(dir, `${cluster}.kubeconfig`);
  writeFileSync(kubeconfig, fleet.cluster(cluster).kube.kubeconfigYaml(), { mode: 0o600 });
  const line = `${KUBECTL} --kubeconfig ${kubeconfig} --cache-dir ${join(dir, "kube-cache")} ${args}`;
  return new Promise((resolve) => {
    execFile("bash", ["-c", line], { timeout: 30_000 }, (_err, stdout, stderr) =>
      resolve(`${stdout}${stderr}`),
    );
  });
}

/** Nothing changes for a while (the agents have applied what they received). */
async function quiet(): Promise<boolean> {
  return waitFor(async () => {
    const n = allocated();
    await new Promise((r) => setTimeout(r, 500));
    return allocated() === n;
  }, 15_000);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-ipam-"));
  fleet = await LocalFleet.start({
    clusters: 3,
    nodesPerCluster: 0,
    logger,
    convergeDeadlineMs: 2000,
    clusterSettings: (cluster) => ({ podNetwork: NETWORKS[cluster] }),
  });
  hub = await fleet.spawnHubProcess(undefined, { captureOutput: true });
  for (const c of [A, B, C])
    agents.push(fleet.spawnAgentProcess(c, { hubPort: hub.grpcPort, logLevel: "error" }));
});

afterAll(async () => {
  for (const a of agents) a.kill("SIGKILL");
  hub?.child.kill("SIGKILL");
  await fleet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("node IPAM", () => {
  test("3 clusters × 50 nodes get their own ranges, none given twice, across a hub restart mid-allocation", async () => {
    const started = Date.now();
    for (const c of [A, B, C]) fleet.addNodes(c, PER_CLUSTER - 10);
    // Freeze the hub once ranges land: the agents apply what they received, the hub never sees it.
    expect(await waitFor(() => allocated() > 0, 60_000, 5)).toBe(true);
    hub.child.kill("SIGSTOP");
    for (const c of [A, B, C]) fleet.addNodes(c, 10);
    expect(await quiet()).toBe(true);
    const before = allocated();
    hub.child.kill("SIGKILL");
    await new Promise((r) => hub.child.once("exit", r));
    expect(before).toBeLessThan(3 * PER_CLUSTER);
    hub = await fleet.spawnHubProcess(hub.grpcPort, { captureOutput: true });
    const done = await waitFor(() => allocated() === 3 * PER_CLUSTER, 90_000);
    if (!done) throw new Error(`${allocated()} of ${3 * PER_CLUSTER} allocated:\n${hub.output()}`);
    process.stdout.write(
      `ipam: ${3 * PER_CLUSTER} nodes in 3 clusters allocated in ${Date.now() - started} ms (${before} before the hub was killed)\n`,
    );
    const seen = new Map<string, string>();
    for (const c of [A, B, C])
      for (const n of nodes(c)) {
        const cidrs = n.spec.podCIDRs ?? [];
        expect(n.spec.podCIDR).toBe(cidrs[0]);
        if (c === A) {
          expect(cidrs).toHaveLength(2);
          expect(cidrs[0]).toMatch(/^10\.100\.\d+\.0\/24$/);
          expect(cidrs[1]).toMatch(/^fd00:100:0:[0-9a-f]{1,2}::\/64$|^fd00:100::\/64$/);
        } else {
          expect(cidrs).toHaveLength(1);
          expect(cidrs[0]).toMatch(
            c === B ? /^10\.101\.\d+\.0\/24$/ : /^10\.102\.([0-9]|[1-5][0-9]|6[0-3])\.0\/24$/,
          );
        }
        for (const cidr of cidrs) {
          expect(`${cidr} given to ${seen.get(cidr) ?? "nobody else"}`).toBe(`${cidr} given to nobody else`);
          seen.set(cidr, `${c}/${n.metadata.name}`);
        }
      }
    expect(seen.size).toBe(3 * PER_CLUSTER + PER_CLUSTER);
    // What a user sees, with the machine's kubectl.
    const table = await kubectl(A, "get nodes -o custom-columns=NAME:.metadata.name,PODCIDRS:.spec.podCIDRs");
    expect(table.split("\n").filter((l) => /\[10\.100\.\d+\.0\/24 fd00:100:/.test(l))).toHaveLength(
      PER_CLUSTER,
    );
  }, 180_000);

  test("an exhausted pod network: a CIDRNotAvailable Warning and a metric for the waiting node, which gets a deleted node's range", async () => {
    const added = fleet.addNodes(C, 15);
    const last = added[added.length - 1] ?? "";
    const notAvailable = () =>
      (fleet.cluster(C).kube.list("Event", "default") as KubeEvent[]).filter(
        (e) => e.reason === "CIDRNotAvailable" && e.type === "Warning",
      );
    expect(await waitFor(() => withRanges(C).length === 64 && notAvailable().length > 0, 60_000)).toBe(true);
    const waiting = nodes(C).filter((n) => (n.spec.podCIDRs ?? []).length === 0);
    expect(waiting.map((n) => n.metadata.name)).toEqual([last]);
    expect(notAvailable().map((e) => e.involvedObject?.name)).toEqual([last]);
    expect(notAvailable()[0]?.message).toContain("no free range left in pod network 10.102.0.0/18");
    expect(
      await waitFor(
        async () =>
          (await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_ipam_nodes_waiting", { cluster: C })) === 1,
        10_000,
      ),
    ).toBe(true);

    const gone = nodes(C)[7] as KubeNode;
    fleet.cluster(C).kube.delete("Node", undefined, gone.metadata.name);
    expect(
      await waitFor(
        () =>
          (fleet.cluster(C).kube.get("Node", undefined, last) as unknown as KubeNode).spec.podCIDR !==
          undefined,
        30_000,
      ),
    ).toBe(true);
    const reused = fleet.cluster(C).kube.get("Node", undefined, last) as unknown as KubeNode;
    expect(reused.spec.podCIDRs).toEqual(gone.spec.podCIDRs);
    expect(
      await waitFor(
        async () =>
          (await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_ipam_nodes_waiting", { cluster: C })) === 0,
        10_000,
      ),
    ).toBe(true);
  }, 120_000);

  test("two clusters whose pod networks overlap: the hub refuses the configuration at load, naming both", () => {
    const cfg = JSON.parse(fleet.hubConfigText()) as { clusters: { podNetwork?: unknown }[] };
    const second = cfg.clusters[1];
    if (second !== undefined) second.podNetwork = { cidrs: ["10.100.128.0/17"] };
    const path = join(dir, "overlap.yaml");
    writeFileSync(path, JSON.stringify(cfg), { mode: 0o600 });
    const r = spawnSync(process.execPath, [CLI, "hub", "--config", path], {
      encoding: "utf8",
      env: { ...process.env, ...fleet.hubEnv() },
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      `clusters[1].podNetwork.cidrs[0]: pod network 10.100.128.0/17 of cluster "${B}" overlaps 10.100.0.0/16 of cluster "${A}" (clusters[0])`,
    );
  });
});
