// The simulated provider's own route behaviour against the real simulated cloud on a loopback
// port: its default-network lookup, paging, blackholes, its answer checks, and each cluster's
// network. What every provider must do with routes is the conformance suite's (conformance.test.ts).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import {
  type SimInstance,
  type SimulatedCloud,
  startSimulatedCloud,
} from "../../../../../sim/src/cloud/index.js";
import { CloudError, SuspectAnswerError } from "../../errors.js";
import { routeOwnerTags } from "../../naming.js";
import type { AccountBinding, ClusterTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { simulatedProvider } from "./index.js";
import type { SimulatedRoutes } from "./routes.js";

const REGION = "sim-east-1";

let cloud: SimulatedCloud;
let apiKey: string;
let defaultNetwork: string;
let node: SimInstance;
let other: SimInstance;

beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 11 });
  ({ apiKey, defaultNetwork } = cloud.createAccount("acme"));
  node = cloud.createInstance("acme", { name: "node-0", region: REGION });
  other = cloud.createInstance("acme", { name: "node-1", region: REGION });
});

afterAll(async () => {
  await cloud.close();
});

beforeEach(() => {
  cloud.resetFaults();
  cloud.resetStats();
  for (const r of cloud.routes()) cloud.deleteRoute(r.id);
});

async function provider(account: Partial<AccountBinding> = {}): Promise<{
  routes: SimulatedRoutes;
  ops: string[];
}> {
  const { provider, ops } = await bindRecorded(simulatedProvider, {
    name: "acme",
    provider: "simulated",
    region: REGION,
    endpoint: cloud.url,
    credential: apiKey,
    requestTimeoutMs: 2_000,
    ...account,
  });
  // This provider's routes are synchronous: its own types say so.
  const routes = provider.routes as SimulatedRoutes | undefined;
  if (routes === undefined) throw new Error("the simulated provider has routes");
  return { routes, ops };
}

const tags = routeOwnerTags("c1");
/** Cluster c1 with no network of its own: the account's default network. */
const c1: ClusterTarget = { cluster: "c1", scope: {} };

describe("simulated provider - routes", () => {
  test("routes - create, list, delete in the account's default network (looked up once)", async () => {
    const { routes, ops } = await provider();
    const created = await routes.create(c1, { destinationCIDR: "10.244.0.0/24", targetInstanceID: node.id });
    expect(created).toEqual({
      id: expect.stringMatching(/^rt-[0-9a-f]{12}$/),
      destinationCIDR: "10.244.0.0/24",
      targetInstanceID: node.id,
      ownerCluster: "c1",
    });
    expect(cloud.routes(defaultNetwork)).toMatchObject([{ id: created.id, description: "fleet-ccm" }]);
    expect(await routes.list(c1)).toEqual([created]);
    await routes.delete(c1, created);
    expect(await routes.list(c1)).toEqual([]);
    expect(ops).toEqual(["network.list", "route.create", "route.list", "route.delete", "route.list"]);
  });

  test("routes - list walks every page", async () => {
    for (let n = 0; n < 1_234; n++) {
      cloud.createRoute("acme", {
        region: REGION,
        destinationCidr: `10.${Math.floor(n / 256)}.${n % 256}.0/24`,
        targetInstanceId: node.id,
        tags,
      });
    }
    const { routes, ops } = await provider();
    const all = await routes.list(c1);
    expect(all).toHaveLength(1_234);
    expect(new Set(all.map((r) => r.id)).size).toBe(1_234);
    expect(ops).toEqual(["network.list", "route.list", "route.list", "route.list"]);
  });

  test("routes - the same destination as a foreign route is a conflict, not an adoption", async () => {
    const foreign = cloud.createRoute("acme", {
      region: REGION,
      destinationCidr: "192.168.0.0/16",
      targetInstanceId: other.id,
      tags: { owner: "someone-else" },
      description: "vpn",
    });
    const { routes } = await provider();
    const err = await routes
      .create(c1, { destinationCIDR: "192.168.0.0/16", targetInstanceID: node.id })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect(cloud.routes().map((r) => r.id)).toEqual([foreign.id]);
  });

  test("routes - delete of a route already gone succeeds; a wrong endpoint's 404 does not", async () => {
    const { routes } = await provider();
    const r = await routes.create(c1, { destinationCIDR: "10.244.3.0/24", targetInstanceID: node.id });
    await routes.delete(c1, r);
    await routes.delete(c1, r);
    const { routes: wrong } = await provider({ endpoint: `${cloud.url}/elsewhere` });
    await expect(wrong.delete({ ...c1, network: defaultNetwork }, r)).rejects.toBeInstanceOf(
      SuspectAnswerError,
    );
  });

  test("routes - a blackhole route (terminated target) is still listed, so it can be removed", async () => {
    const doomed = cloud.createInstance("acme", { name: "doomed", region: REGION });
    const { routes } = await provider();
    const r = await routes.create(c1, { destinationCIDR: "10.244.4.0/24", targetInstanceID: doomed.id });
    cloud.terminateInstance(doomed.id);
    expect(cloud.routes()[0]?.blackhole).toBe(true);
    expect(await routes.list(c1)).toEqual([r]);
    await routes.delete(c1, r);
    expect(cloud.routes()).toEqual([]);
  });

  test("routes - each cluster's own network, without a lookup: two clusters of one account, two route tables", async () => {
    const [netA, netB] = ["vpc-routes0a", "vpc-routes0b"];
    const inA = cloud.createInstance("acme", { name: "in-a", region: REGION, network: netA });
    const inB = cloud.createInstance("acme", { name: "in-b", region: REGION, network: netB });
    const a: ClusterTarget = { cluster: "ca", network: netA, scope: { network: netA } };
    const b: ClusterTarget = { cluster: "cb", network: netB, scope: { network: netB } };
    // One provider for the account serves both, as in the hub.
    const { routes, ops } = await provider();
    const ra = await routes.create(a, { destinationCIDR: "10.250.0.0/24", targetInstanceID: inA.id });
    const rb = await routes.create(b, { destinationCIDR: "10.250.0.0/24", targetInstanceID: inB.id });
    expect(cloud.routes(netA).map((x) => x.id)).toEqual([ra.id]);
    expect(cloud.routes(netB).map((x) => x.id)).toEqual([rb.id]);
    expect(await routes.list(a)).toEqual([ra]);
    expect(await routes.list(b)).toEqual([rb]);
    expect(ops).not.toContain("network.list");
    // An instance outside the cluster's network is refused by the cloud: a plain CloudError.
    await expect(
      routes.create(a, { destinationCIDR: "10.250.1.0/24", targetInstanceID: inB.id }),
    ).rejects.toBeInstanceOf(CloudError);
    await routes.delete(a, ra);
    expect(cloud.routes(netB).map((x) => x.id)).toEqual([rb.id]);
  });

  test("routes - an empty network list is a suspect answer, not an empty route table", async () => {
    cloud.setFaults({ emptyListRate: 1 }, "acme");
    await expect((await provider()).routes.list(c1)).rejects.toBeInstanceOf(SuspectAnswerError);
  });
});
