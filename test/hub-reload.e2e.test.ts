/**
 * Hub.reload, the live half of register/unregister: a removed cluster's stream closes at once
 * and its state goes; a cluster added back is admitted again; a changed token closes the
 * stream and refuses the old one; a bad configuration changes nothing. Real gRPC, real
 * nats-server, in-process hub and agents.
 */
import { type HubConfig, parseHubConfig } from "@fleet-ccm/hub";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum } from "./hub-metrics.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
let fleet: LocalFleet;
let base: HubConfig;
const [A, B] = ["cluster-001", "cluster-002"] as const;

function initialized(cluster: string): number {
  return fleet.nodes(cluster).filter((n) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED))
    .length;
}

function streams(): Promise<number> {
  const hub = fleet.hub;
  if (hub === undefined) throw new Error("no hub");
  return metricSum(hub, "fleet_ccm_hub_streams_connected");
}

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 2, nodesPerCluster: 0, logger, convergeDeadlineMs: 2000 });
  await fleet.startHub();
  await fleet.startAgents();
  base = parseHubConfig(fleet.hubConfigText(), "test");
  fleet.addNodes(A, 1);
  fleet.addNodes(B, 1);
  expect(await waitFor(() => initialized(A) === 1 && initialized(B) === 1, 20_000)).toBe(true);
});

afterAll(async () => {
  await fleet?.stop();
});

describe("Hub.reload", () => {
  test("a removed cluster's stream closes at once and its state is dropped; the other carries on", async () => {
    const hub = fleet.hub!;
    expect(await streams()).toBe(2);
    const outcome = hub.reload({ ...base, clusters: base.clusters.filter((c) => c.name !== B) });
    expect(outcome).toEqual({ added: [], removed: [B], changed: [], needsRestart: [] });
    expect(hub.clusterNames()).toEqual([A]);
    expect(await waitFor(async () => (await streams()) === 1, 5000)).toBe(true);
    expect(hub.fleet.view(B)).toBeUndefined();
    fleet.addNodes(A, 1);
    expect(await waitFor(() => initialized(A) === 2, 20_000)).toBe(true);
  });

  test("a configuration that cannot apply changes nothing", () => {
    const hub = fleet.hub!;
    const a = base.clusters.find((c) => c.name === A)!;
    // Two clusters with one token.
    const clash = { ...base, clusters: [a, { ...a, name: B }] };
    expect(() => hub.reload(clash)).toThrow(/same token/);
    const region = { ...base, clusters: [{ ...a, region: "nowhere-1" }] };
    expect(() => hub.reload(region)).toThrow(/does not serve region "nowhere-1"/);
    expect(hub.clusterNames()).toEqual([A]);
  });

  test("a cluster added back is admitted: its agent reconnects and its new node is initialized", async () => {
    const hub = fleet.hub!;
    expect(hub.reload(base).added).toEqual([B]);
    expect(await waitFor(async () => (await streams()) === 2, 30_000)).toBe(true);
    fleet.addNodes(B, 1);
    expect(await waitFor(() => initialized(B) === 2, 30_000)).toBe(true);
  });

  test("a changed token closes the cluster's stream and the old token is refused", async () => {
    const hub = fleet.hub!;
    const rotated = {
      ...base,
      clusters: base.clusters.map((c) =>
        c.name === B ? { ...c, token: undefined, tokenHash: `sha256:${"0".repeat(64)}` } : c,
      ),
    };
    expect(hub.reload(rotated).changed).toEqual([B]);
    expect(await waitFor(async () => (await streams()) === 1, 5000)).toBe(true);
    // The agent keeps trying with its old token: never admitted again.
    fleet.addNodes(B, 1);
    fleet.addNodes(A, 1);
    expect(await waitFor(() => initialized(A) === 3, 20_000)).toBe(true);
    expect(await streams()).toBe(1);
    expect(initialized(B)).toBe(2);
  });
});
