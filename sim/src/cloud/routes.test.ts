import { afterEach, describe, expect, test } from "@jest/globals";
import { startSimulatedCloud } from "./cloud.js";
import type { SimulatedCloud } from "./types.js";
import type { WireNetworkList, WireRoute, WireRouteList } from "./wire.js";

const REGION = "sim-east-1";
const clouds: SimulatedCloud[] = [];

afterEach(async () => {
  await Promise.all(clouds.splice(0).map((c) => c.close()));
});

type Body = Record<string, unknown>;

async function harness() {
  const cloud = await startSimulatedCloud({ seed: 5 });
  clouds.push(cloud);
  const { apiKey, defaultNetwork } = cloud.createAccount("acme");
  const call = async (method: string, path: string, body?: unknown, key: string = apiKey) => {
    const res = await fetch(`${cloud.url}/v1/regions/${REGION}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}` },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Body };
  };
  const node = cloud.createInstance("acme", { name: "node-0", region: REGION });
  const routesPath = `/networks/${defaultNetwork}/routes`;
  return { cloud, apiKey, call, node, defaultNetwork, routesPath };
}

function errorCode(body: Body): unknown {
  return (body["error"] as { code?: unknown } | undefined)?.code;
}

describe("simulated cloud - networks and routes", () => {
  test("networks - default network first, then those the account's instances use", async () => {
    const { cloud, call, defaultNetwork } = await harness();
    cloud.createInstance("acme", { name: "n", region: REGION, network: "vpc-cafe0001" });
    cloud.createInstance("acme", { name: "w", region: "sim-west-1", network: "vpc-west0001" });
    const list = (await call("GET", "/networks")).body as unknown as WireNetworkList;
    expect(list.networks.map((n) => [n.id, n.is_default])).toEqual([
      [defaultNetwork, true],
      ["vpc-cafe0001", false],
    ]);
    expect(list.networks[0]!.route_table_id).toMatch(/^rtb-[0-9a-f]{12}$/);
    expect(cloud.networks("acme", "sim-west-1").map((n) => n.id)).toEqual([defaultNetwork, "vpc-west0001"]);
  });

  test("routes - create, get, list, delete", async () => {
    const { cloud, call, node, routesPath, defaultNetwork } = await harness();
    const res = await call("POST", routesPath, {
      destination_cidr: "10.244.1.0/24",
      target_instance_id: node.id,
      description: "pod cidr of node-0",
      tags: { "fleet-ccm.io/cluster": "c1" },
    });
    expect(res.status).toBe(201);
    const route = res.body as unknown as WireRoute;
    expect(route).toMatchObject({
      region: REGION,
      network: defaultNetwork,
      destination_cidr: "10.244.1.0/24",
      target_instance_id: node.id,
      description: "pod cidr of node-0",
      blackhole: false,
      tags: { "fleet-ccm.io/cluster": "c1" },
    });
    expect(route.id).toMatch(/^rt-[0-9a-f]{12}$/);
    expect((await call("GET", `${routesPath}/${route.id}`)).body).toEqual(route);
    expect(((await call("GET", routesPath)).body as unknown as WireRouteList).routes).toEqual([route]);
    expect(cloud.routes(defaultNetwork).map((r) => r.id)).toEqual([route.id]);
    expect((await call("DELETE", `${routesPath}/${route.id}`)).status).toBe(204);
    const again = await call("DELETE", `${routesPath}/${route.id}`);
    expect(again.status).toBe(404);
    expect(again.body["error"]).toMatchObject({
      code: "NotFound",
      resource: { type: "route", id: route.id },
    });
    expect(cloud.routes()).toEqual([]);
  });

  test("routes - a destination is unique per table: 409 RouteAlreadyExists, also for another spelling", async () => {
    const { cloud, call, node, routesPath } = await harness();
    const first = await call("POST", routesPath, {
      destination_cidr: "fd00:1::/64",
      target_instance_id: node.id,
    });
    expect(first.status).toBe(201);
    const dup = await call("POST", routesPath, {
      destination_cidr: "fd00:1:0::/64",
      target_instance_id: node.id,
    });
    expect([dup.status, errorCode(dup.body)]).toEqual([409, "RouteAlreadyExists"]);
    // Another network's table is another table.
    const other = cloud.createInstance("acme", { name: "o", region: REGION, network: "vpc-other001" });
    const elsewhere = await call("POST", "/networks/vpc-other001/routes", {
      destination_cidr: "fd00:1::/64",
      target_instance_id: other.id,
    });
    expect(elsewhere.status).toBe(201);
  });

  test("routes - the target must be a live instance of that network; bad CIDRs are refused", async () => {
    const { cloud, call, node, routesPath } = await harness();
    const gone = cloud.createInstance("acme", { name: "gone", region: REGION });
    cloud.terminateInstance(gone.id);
    const elsewhere = cloud.createInstance("acme", { name: "e", region: REGION, network: "vpc-other001" });
    cloud.createAccount("rival");
    const theirs = cloud.createInstance("rival", { name: "t", region: REGION });
    for (const [cidr, target] of [
      ["10.0.0.0/24", gone.id],
      ["10.0.0.0/24", elsewhere.id],
      ["10.0.0.0/24", theirs.id],
      ["10.0.0.0/24", "i-000000000000"],
      ["10.0.0.5/24", node.id],
      ["10.0.0.0", node.id],
      ["nonsense", node.id],
    ]) {
      const res = await call("POST", routesPath, { destination_cidr: cidr, target_instance_id: target });
      expect([res.status, errorCode(res.body)]).toEqual([400, "InvalidParameter"]);
    }
    expect((await call("GET", "/networks/vpc-nowhere/routes")).status).toBe(404);
    expect(
      (await call("POST", routesPath, { destination_cidr: "10.0.0.0/24", target: node.id })).status,
    ).toBe(400);
  });

  test("routes - a terminated target leaves a blackhole route", async () => {
    const { cloud, call, node, routesPath } = await harness();
    const route = cloud.createRoute("acme", {
      region: REGION,
      destinationCidr: "10.1.0.0/16",
      targetInstanceId: node.id,
    });
    expect(route.blackhole).toBe(false);
    cloud.terminateInstance(node.id);
    const listed = ((await call("GET", routesPath)).body as unknown as WireRouteList).routes;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: route.id, blackhole: true });
    expect(cloud.routes()[0]?.blackhole).toBe(true);
  });

  test("routes - pages and tag filters; list faults apply", async () => {
    const { cloud, call, node, routesPath } = await harness();
    for (let n = 0; n < 250; n++) {
      cloud.createRoute("acme", {
        region: REGION,
        destinationCidr: `10.${100 + Math.floor(n / 256)}.${n % 256}.0/24`,
        targetInstanceId: node.id,
        tags: { owner: n % 2 === 0 ? "even" : "odd" },
      });
    }
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const qs = `page_size=100${token === undefined ? "" : `&page_token=${token}`}`;
      const page = (await call("GET", `${routesPath}?${qs}`)).body as unknown as WireRouteList;
      seen.push(...page.routes.map((r) => r.destination_cidr));
      token = page.next_page_token;
      pages++;
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(250);
    const odd = (await call("GET", `${routesPath}?tag=owner=odd&page_size=500`))
      .body as unknown as WireRouteList;
    expect(odd.routes).toHaveLength(125);
    cloud.setFaults({ emptyListRate: 1 });
    expect((await call("GET", routesPath)).body).toEqual({ routes: [] });
    cloud.setFaults({ emptyListRate: 0, throttleRate: 1 });
    expect(
      (await call("POST", routesPath, { destination_cidr: "10.9.0.0/16", target_instance_id: node.id }))
        .status,
    ).toBe(429);
    cloud.resetFaults();
    expect(cloud.stats().byAccount["acme"]?.byOperation).toMatchObject({
      "route.list": 5,
      "route.create": 1,
    });
  });

  test("admin - routes and networks over HTTP", async () => {
    const { cloud, node, defaultNetwork } = await harness();
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${cloud.url}/admin${path}`, {
        method,
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Body };
    };
    const created = await admin("POST", "/routes", {
      account: "acme",
      region: REGION,
      destinationCidr: "10.7.0.0/16",
      targetInstanceId: node.id,
    });
    expect(created.status).toBe(201);
    expect(
      ((await admin("GET", `/routes?network=${defaultNetwork}`)).body["routes"] as unknown[]).length,
    ).toBe(1);
    expect(
      ((await admin("GET", `/networks?account=acme&region=${REGION}`)).body["networks"] as unknown[]).length,
    ).toBe(1);
    expect((await admin("DELETE", `/routes/${created.body["id"]}`)).status).toBe(204);
    expect((await admin("DELETE", `/routes/${created.body["id"]}`)).status).toBe(404);
  });
});
