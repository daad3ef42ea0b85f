/**
 * Every node fleet-ccm initializes gets its Synced Event, even when the hub dies between the
 * agent applying the initialization patch and the hub seeing it: the hub runs as its own
 * process, is frozen (SIGSTOP) while the agent applies what it already received, killed and
 * restarted on the same port.
 */
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

interface KubeNode {
  metadata: { name: string; uid: string };
  spec: { taints?: { key: string }[] };
}
interface KubeEvent {
  reason?: string;
  count?: number;
  involvedObject?: { name?: string; uid?: string };
}

let fleet: LocalFleet;
let cluster: string;

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger, convergeDeadlineMs: 2000 });
  cluster = [...fleet.clusters.keys()][0] ?? "";
});

afterAll(async () => {
  await fleet?.stop();
});

function nodes(): KubeNode[] {
  return fleet.nodes(cluster) as unknown as KubeNode[];
}

function initialized(): KubeNode[] {
  return nodes().filter((n) => !(n.spec.taints ?? []).some((t) => t.key === UNINITIALIZED));
}

/** Synced Events by node uid (the agent aggregates repeats into one Event with a count). */
function synced(): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of fleet.cluster(cluster).kube.list("Event", "default") as KubeEvent[])
    if (e.reason === "Synced" && e.involvedObject?.uid)
      out.set(e.involvedObject.uid, (out.get(e.involvedObject.uid) ?? 0) + (e.count ?? 1));
  return out;
}

describe("Synced Event across a hub restart mid-join", () => {
  test("nodes initialized while the hub was dying get their Synced Event from its successor", async () => {
    const { child: first, grpcPort } = await fleet.spawnHubProcess();
    await fleet.startAgent(cluster, grpcPort);
    fleet.addNodes(cluster, 40);
    // Freeze the hub as soon as the agent starts applying: whatever it received it still applies,
    // and the frozen hub never sees those reports.
    expect(await waitFor(() => initialized().length > 0, 30_000, 2)).toBe(true);
    first.kill("SIGSTOP");
    const applied = await waitFor(async () => {
      const n = initialized().length;
      // Quiescence: the agent has no "nothing left to apply" signal and the frozen hub no metrics.
      await new Promise((r) => setTimeout(r, 300));
      return initialized().length === n;
    }, 10_000);
    expect(applied).toBe(true);
    const missing = initialized().filter((n) => !synced().has(n.metadata.uid));
    first.kill("SIGKILL");
    await new Promise((r) => first.once("exit", r));
    // The reproduction: some nodes are initialized without their Event.
    expect(missing.length).toBeGreaterThan(0);

    await fleet.spawnHubProcess(grpcPort);
    expect(await waitFor(() => initialized().length === 40, 40_000)).toBe(true);
    expect(
      await waitFor(() => {
        const s = synced();
        return nodes().every((n) => s.has(n.metadata.uid));
      }, 20_000),
    ).toBe(true);
  }, 120_000);
});
