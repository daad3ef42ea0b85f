// Asynchronous load balancers of the simulated cloud over its public API: PENDING_CREATE and
// PENDING_DELETE for N reads, ERROR on a drawn failure, PENDING_* immutable (409
// LoadBalancerBusy), and the synchronous default.
import { afterEach, describe, expect, test } from "@jest/globals";
import { startSimulatedCloud } from "./cloud.js";
import type { SimulatedCloud } from "./types.js";

const REGION = "sim-east-1";
const clouds: SimulatedCloud[] = [];

afterEach(async () => {
  await Promise.all(clouds.splice(0).map((c) => c.close()));
});

type Body = Record<string, unknown>;

async function harness() {
  const cloud = await startSimulatedCloud({ seed: 3 });
  clouds.push(cloud);
  const { apiKey } = cloud.createAccount("acme");
  const node = cloud.createInstance("acme", { name: "node-0", region: REGION });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cloud.url}/v1/regions/${REGION}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Body };
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cloud.url}/admin${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Body };
  };
  const createLb = async (name: string) => (await call("POST", "/load-balancers", { name })).body;
  const status = async (id: string) => {
    const got = await call("GET", `/load-balancers/${id}`);
    return got.status === 404 ? "gone" : got.body["status"];
  };
  const poolOf = (lbId: string) => ({
    name: "p",
    lb_id: lbId,
    protocol: "TCP",
    target_port: 30080,
    members: [node.id],
  });
  return { cloud, call, admin, createLb, status, poolOf };
}

describe("simulated cloud - asynchronous load balancers", () => {
  test("lb async - by default a create is ACTIVE at once and a delete removes at once", async () => {
    const { cloud, call, createLb, status } = await harness();
    const lb = await createLb("sync");
    expect(lb).toMatchObject({ status: "ACTIVE" });
    expect(lb["status_message"]).toBeUndefined();
    expect(lb["poll_after_ms"]).toBeUndefined();
    expect((await call("DELETE", `/load-balancers/${lb["id"]}`)).status).toBe(204);
    expect(await status(String(lb["id"]))).toBe("gone");
    expect(cloud.loadBalancers("acme")).toEqual([]);
  });

  test("lb async - PENDING_CREATE for N reads (gets and lists alike), then ACTIVE; the create's own answer does not count", async () => {
    const { cloud, call, createLb, status } = await harness();
    cloud.setLoadBalancerAsync("acme", { polls: 3, pollMs: 250 });
    const lb = await createLb("slow");
    expect(lb).toMatchObject({ status: "PENDING_CREATE", poll_after_ms: 250 });
    const id = String(lb["id"]);
    expect(await status(id)).toBe("PENDING_CREATE");
    const listed = await call("GET", "/load-balancers?name=slow");
    expect(listed.body["load_balancers"]).toMatchObject([{ id, status: "PENDING_CREATE" }]);
    expect(await status(id)).toBe("PENDING_CREATE");
    // The in-process truth is no API read: it does not move the load balancer on.
    expect(cloud.loadBalancers("acme")[0]?.status).toBe("PENDING_CREATE");
    expect(await status(id)).toBe("ACTIVE");
    expect((await call("GET", `/load-balancers/${id}`)).body["poll_after_ms"]).toBeUndefined();
  });

  test("lb async - PENDING_* is immutable: writes to it and its sub-resources are 409 LoadBalancerBusy; health checks are not its own", async () => {
    const { cloud, call, createLb, poolOf, status } = await harness();
    cloud.setLoadBalancerAsync("acme", { polls: 1 });
    const lb = await createLb("busy");
    const id = String(lb["id"]);
    for (const [method, path, body] of [
      ["POST", "/pools", poolOf(id)],
      ["PATCH", `/load-balancers/${id}`, { tags: { a: "b" } }],
      ["DELETE", `/load-balancers/${id}`, undefined],
    ] as const) {
      const refused = await call(method, path, body);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ error: { code: "LoadBalancerBusy" } });
    }
    const hc = await call("POST", "/health-checks", { name: "hc", protocol: "TCP", port: 30080 });
    expect(hc.status).toBe(201);
    expect(await status(id)).toBe("PENDING_CREATE");
    expect(await status(id)).toBe("ACTIVE");
    const pool = await call("POST", "/pools", poolOf(id));
    expect(pool.status).toBe(201);
    // A delete: PENDING_DELETE for N reads, immutable meanwhile (its pool too), then gone.
    expect((await call("DELETE", `/load-balancers/${id}`)).status).toBe(204);
    expect(await status(id)).toBe("PENDING_DELETE");
    const poolDelete = await call("DELETE", `/pools/${pool.body["id"]}`);
    expect(poolDelete.body).toMatchObject({ error: { code: "LoadBalancerBusy" } });
    expect((await call("GET", "/load-balancers?name=busy")).body["load_balancers"]).toEqual([]);
    expect(await status(id)).toBe("gone");
    // Its pool is an orphan now, deletable again.
    expect((await call("DELETE", `/pools/${pool.body["id"]}`)).status).toBe(204);
  });

  test("lb async - failNextLoadBalancerCreates: those creates end in ERROR with a status_message, the next one works; ERROR takes tags and deletes", async () => {
    const { cloud, call, createLb, status } = await harness();
    cloud.setLoadBalancerAsync("acme", { polls: 1, pollMs: 5 });
    cloud.failNextLoadBalancerCreates("acme", 1);
    const failed = String((await createLb("doomed"))["id"]);
    const works = String((await createLb("fine"))["id"]);
    expect(await status(failed)).toBe("PENDING_CREATE");
    expect(await status(works)).toBe("PENDING_CREATE");
    const got = (await call("GET", `/load-balancers/${failed}`)).body;
    expect(got).toMatchObject({ status: "ERROR", status_message: expect.stringMatching(/failed/) });
    expect(got["poll_after_ms"]).toBeUndefined();
    expect(await status(failed)).toBe("ERROR"); // final
    expect(await status(works)).toBe("ACTIVE");
    expect((await call("PATCH", `/load-balancers/${failed}`, { tags: { seen: "yes" } })).status).toBe(200);
    expect((await call("DELETE", `/load-balancers/${failed}`)).status).toBe(204);
    expect(await status(failed)).toBe("PENDING_DELETE");
    expect(await status(failed)).toBe("gone");
  });

  test("lb async - synchronous and failing: the create's answer is ERROR at once", async () => {
    const { cloud, createLb } = await harness();
    cloud.failNextLoadBalancerCreates("acme", 1);
    expect(await createLb("now")).toMatchObject({ status: "ERROR" });
    expect(await createLb("then")).toMatchObject({ status: "ACTIVE" });
  });

  test("lb async - failRate draws failures from the seed; the handle's creates and deletes are not asynchronous", async () => {
    const { cloud, createLb } = await harness();
    cloud.setLoadBalancerAsync("acme", { failRate: 1 });
    expect(await createLb("drawn")).toMatchObject({ status: "ERROR" });
    cloud.setLoadBalancerAsync("acme", { failRate: 0, polls: 5 });
    const made = cloud.createLoadBalancer("acme", { name: "by-hand", region: REGION });
    expect(made.status).toBe("ACTIVE");
    const pending = String((await createLb("pending"))["id"]);
    cloud.deleteLbResource(pending);
    expect(cloud.loadBalancers("acme").map((l) => l.name)).toEqual(["drawn", "by-hand"]);
  });

  test("lb async - the admin API sets and shows the account's timing and failures; bad values are 400", async () => {
    const { admin, createLb } = await harness();
    const set = await admin("PATCH", "/accounts/acme", {
      loadBalancerAsync: { polls: 2, pollMs: 100 },
      failNextLoadBalancerCreates: 1,
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      loadBalancerAsync: { polls: 2, pollMs: 100, failRate: 0 },
      failNextLoadBalancerCreates: 1,
    });
    expect(await createLb("x")).toMatchObject({ status: "PENDING_CREATE", poll_after_ms: 100 });
    for (const bad of [{ polls: -1 }, { pollMs: 0 }, { failRate: 2 }, { nope: 1 }]) {
      const refused = await admin("PATCH", "/accounts/acme", { loadBalancerAsync: bad });
      expect(refused.status).toBe(400);
    }
    expect((await admin("PATCH", "/accounts/nobody", { loadBalancerAsync: { polls: 1 } })).status).toBe(404);
  });
});
