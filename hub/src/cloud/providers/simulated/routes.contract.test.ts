// The simulated provider's routes against the real simulated cloud on a loopback port.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import {
  type SimInstance,
  type SimulatedCloud,
  startSimulatedCloud,
} from "../../../../../sim/src/cloud/index.js";
import { systemClock } from "../../../util/clock.js";
import {
  CloudError,
  isRetryable,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { routeOwnerTags } from "../../naming.js";
import type { AccountBinding, ProviderContext } from "../../provider.js";
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

function provider(opts: { account?: Partial<AccountBinding>; loseAnswerOf?: string } = {}): {
  routes: SimulatedRoutes;
  ops: string[];
} {
  const ops: string[] = [];
  let lost = false;
  const ctx: ProviderContext = {
    account: {
      name: "acme",
      provider: "simulated",
      region: REGION,
      endpoint: cloud.url,
      credential: apiKey,
      requestTimeoutMs: 2_000,
      ...opts.account,
    },
    logger: pino({ level: "silent" }),
    clock: systemClock,
    call: async (op, fn) => {
      ops.push(op);
      const result = await fn(new AbortController().signal);
      if (op === opts.loseAnswerOf && !lost) {
        lost = true;
        throw new Error(`answer of ${op} lost`);
      }
      return result;
    },
  };
  // This provider's routes are synchronous: its own types say so.
  const routes = simulatedProvider.create(ctx).routes as SimulatedRoutes | undefined;
  if (routes === undefined) throw new Error("the simulated provider has routes");
  return { routes, ops };
}

const tags = routeOwnerTags("c1");

describe("simulated provider - routes", () => {
  test("routes - create, list, delete in the account's default network (looked up once)", async () => {
    const { routes, ops } = provider();
    const created = await routes.create(
      {
        destinationCIDR: "10.244.0.0/24",
        targetInstanceID: node.id,
      },
      "c1",
    );
    expect(created).toEqual({
      id: expect.stringMatching(/^rt-[0-9a-f]{12}$/),
      destinationCIDR: "10.244.0.0/24",
      targetInstanceID: node.id,
      ownerCluster: "c1",
    });
    expect(cloud.routes(defaultNetwork)).toMatchObject([{ id: created.id, description: "fleet-ccm" }]);
    expect(await routes.list()).toEqual([created]);
    await routes.delete(created);
    expect(await routes.list()).toEqual([]);
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
    const { routes, ops } = provider();
    const all = await routes.list();
    expect(all).toHaveLength(1_234);
    expect(new Set(all.map((r) => r.id)).size).toBe(1_234);
    expect(ops).toEqual(["network.list", "route.list", "route.list", "route.list"]);
  });

  test("routes - a foreign route is listed as it is and never touched", async () => {
    const foreign = cloud.createRoute("acme", {
      region: REGION,
      destinationCidr: "192.168.0.0/16",
      targetInstanceId: other.id,
      tags: { owner: "someone-else" },
      description: "vpn",
    });
    const { routes } = provider();
    const mine = await routes.create({ destinationCIDR: "10.244.1.0/24", targetInstanceID: node.id }, "c1");
    const listed = await routes.list();
    expect(listed).toContainEqual({
      id: foreign.id,
      destinationCIDR: "192.168.0.0/16",
      targetInstanceID: other.id,
    });
    await routes.delete(mine);
    expect(cloud.routes().map((r) => r.id)).toEqual([foreign.id]);
    // The same destination as the foreign route is a conflict, not an adoption.
    const err = await routes
      .create({ destinationCIDR: "192.168.0.0/16", targetInstanceID: node.id }, "c1")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect(isRetryable(err)).toBe(false);
    expect(cloud.routes().map((r) => r.id)).toEqual([foreign.id]);
  });

  test("routes - create after a lost answer adopts the route it made", async () => {
    const { routes } = provider({ loseAnswerOf: "route.create" });
    const want = { destinationCIDR: "10.244.2.0/24", targetInstanceID: node.id };
    await expect(routes.create(want, "c1")).rejects.toThrow(/lost/);
    const made = cloud.routes();
    expect(made).toHaveLength(1);
    const adopted = await routes.create(want, "c1");
    expect(adopted.id).toBe(made[0]!.id);
    expect(cloud.routes()).toHaveLength(1);
  });

  test("routes - delete of a route already gone succeeds; a wrong endpoint's 404 does not", async () => {
    const { routes } = provider();
    const r = await routes.create({ destinationCIDR: "10.244.3.0/24", targetInstanceID: node.id }, "c1");
    await routes.delete(r);
    await routes.delete(r);
    const { routes: wrong } = provider({
      account: { endpoint: `${cloud.url}/elsewhere`, network: defaultNetwork },
    });
    await expect(wrong.delete(r)).rejects.toBeInstanceOf(SuspectAnswerError);
  });

  test("routes - a blackhole route (terminated target) is still listed, so it can be removed", async () => {
    const doomed = cloud.createInstance("acme", { name: "doomed", region: REGION });
    const { routes } = provider();
    const r = await routes.create({ destinationCIDR: "10.244.4.0/24", targetInstanceID: doomed.id }, "c1");
    cloud.terminateInstance(doomed.id);
    expect(cloud.routes()[0]?.blackhole).toBe(true);
    expect(await routes.list()).toEqual([r]);
    await routes.delete(r);
    expect(cloud.routes()).toEqual([]);
  });

  test("routes - a bound network is used without a lookup", async () => {
    const net = "vpc-routes01";
    const inNet = cloud.createInstance("acme", { name: "in-net", region: REGION, network: net });
    const { routes, ops } = provider({ account: { network: net } });
    const r = await routes.create({ destinationCIDR: "10.250.0.0/24", targetInstanceID: inNet.id }, "c1");
    expect(cloud.routes(net).map((x) => x.id)).toEqual([r.id]);
    expect(await routes.list()).toEqual([r]);
    expect(ops).toEqual(["route.create", "route.list"]);
    // An instance outside the bound network is refused by the cloud: a plain CloudError.
    await expect(
      routes.create({ destinationCIDR: "10.250.1.0/24", targetInstanceID: node.id }, "c1"),
    ).rejects.toBeInstanceOf(CloudError);
  });

  test("routes - throttling, 5xx and a suspect network list are mapped like instances", async () => {
    cloud.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 3 }, "acme");
    const err = await provider()
      .routes.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as ThrottledError).retryAfterMs).toBe(3_000);
    cloud.setFaults({ throttleRate: 0, errorRate: 1 }, "acme");
    await expect(
      provider({ account: { network: defaultNetwork } }).routes.create(
        {
          destinationCIDR: "10.244.5.0/24",
          targetInstanceID: node.id,
        },
        "c1",
      ),
    ).rejects.toBeInstanceOf(TransientCloudError);
    cloud.setFaults({ errorRate: 0, emptyListRate: 1 }, "acme");
    await expect(provider().routes.list()).rejects.toBeInstanceOf(SuspectAnswerError);
  });
});
