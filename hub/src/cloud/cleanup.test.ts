// deleteClusterResources against the simulated provider through its fake (the simulated
// cloud), with asynchronous deletes: everything the departing cluster owns goes, nothing of
// another cluster's or of nobody's, and what cannot be listed is said.
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { type SimulatedCloud, startSimulatedCloud } from "../../../sim/src/cloud/index.js";
import { deleteClusterResources } from "./cleanup.js";
import { sampleLoadBalancerSpec, settle } from "./conformance/conformance.testkit.js";
import type { CloudProvider, ServiceTarget } from "./provider.js";
import { simulatedProvider } from "./providers/simulated/index.js";
import { bindRecorded } from "./recording-context.testkit.js";

const REGION = "sim-east-1";
const ACCOUNT = "acme";
let cloud: SimulatedCloud;
let provider: CloudProvider;
let calls: string[] = [];

beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 7 });
  const { apiKey } = cloud.createAccount(ACCOUNT);
  cloud.setAccountRateLimit(ACCOUNT, 0);
  // Load balancers are PENDING_CREATE, and PENDING_DELETE, for two reads each (the cloud's setting).
  cloud.setLoadBalancerAsync(ACCOUNT, { polls: 2, pollMs: 5 });
  ({ provider } = await bindRecorded(
    simulatedProvider,
    {
      name: ACCOUNT,
      provider: "simulated",
      region: REGION,
      endpoint: cloud.url,
      credential: apiKey,
      requestTimeoutMs: 2000,
    },
    undefined,
    {
      before: (op) => {
        calls.push(op);
      },
    },
  ));
});

afterAll(async () => {
  await cloud?.close();
});

describe("deleteClusterResources", () => {
  test("deletes the cluster's load balancers and routes, waiting out in-progress answers; another cluster's and foreign ones stay", async () => {
    const backend = cloud.createInstance(ACCOUNT, { name: "n1", region: REGION }).id;
    const gone = { cluster: "gone", scope: {} };
    const stays = { cluster: "stays", scope: {} };
    const owners: ServiceTarget[] = [
      { ...gone, serviceUid: "u1" },
      { ...gone, serviceUid: "u2" },
      { ...stays, serviceUid: "u3" },
    ];
    const lbs = provider.loadBalancers;
    const routes = provider.routes;
    if (lbs === undefined || routes === undefined) throw new Error("simulated provider lacks a capability");
    for (const o of owners) await settle(() => lbs.ensure(o, sampleLoadBalancerSpec([backend])));
    await settle(() => routes.create(gone, { destinationCIDR: "10.1.0.0/24", targetInstanceID: backend }));
    await settle(() => routes.create(stays, { destinationCIDR: "10.2.0.0/24", targetInstanceID: backend }));
    const foreign = cloud.createRoute(ACCOUNT, {
      region: REGION,
      destinationCidr: "192.168.0.0/24",
      targetInstanceId: backend,
      description: "made by hand",
    });

    calls = [];
    const progress: string[] = [];
    const report = await deleteClusterResources(provider, gone, {
      onProgress: (s) => progress.push(s),
      sleep: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 5))),
    });
    expect(report.problems).toEqual([]);
    expect(report.loadBalancers.map((l) => l.serviceUid).sort()).toEqual(["u1", "u2"]);
    expect(report.routes.map((r) => r.destinationCIDR)).toEqual(["10.1.0.0/24"]);
    expect(progress.some((p) => p.startsWith("deleting load balancer"))).toBe(true);

    expect(await lbs.get(owners[0] as ServiceTarget)).toBeUndefined();
    expect(await lbs.get(owners[1] as ServiceTarget)).toBeUndefined();
    expect(await lbs.get(owners[2] as ServiceTarget)).toBeDefined();
    const left = await routes.list(gone);
    expect(left.map((r) => r.destinationCIDR).sort()).toEqual(["10.2.0.0/24", "192.168.0.0/24"]);
    expect(left.find((r) => r.id === foreign.id)?.ownerCluster).toBeUndefined();
    // Nothing of the cluster's left, said by a last listing.
    const again = await deleteClusterResources(provider, gone);
    expect(again).toEqual({ loadBalancers: [], routes: [], problems: [] });
  });

  test("a provider that cannot list the load balancers it owns: they are left, and it says why", async () => {
    const { listOwned: _, ...rest } = provider.loadBalancers ?? ({} as never);
    const blind: CloudProvider = {
      ...provider,
      loadBalancers: rest as NonNullable<CloudProvider["loadBalancers"]>,
    };
    const report = await deleteClusterResources(blind, { cluster: "stays", scope: {} });
    expect(report.loadBalancers).toEqual([]);
    expect(report.problems).toEqual([
      expect.stringContaining("cannot list the load balancers it owns: delete the cluster's Services"),
    ]);
  });
});
