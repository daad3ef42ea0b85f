import { afterEach, describe, expect, test } from "@jest/globals";
import { startSimulatedCloud } from "./cloud.js";
import type { SimulatedCloud, SimulatedCloudOptions } from "./types.js";
import type { WireInstance, WireInstanceList } from "./wire.js";

const REGION = "sim-east-1";
const clouds: SimulatedCloud[] = [];

afterEach(async () => {
  await Promise.all(clouds.splice(0).map((c) => c.close()));
});

async function harness(opts: SimulatedCloudOptions = {}) {
  const cloud = await startSimulatedCloud(opts);
  clouds.push(cloud);
  const { apiKey } = cloud.createAccount("acme");
  /** `key` null: no Authorization header. */
  const api = async (path: string, key: string | null = apiKey) => {
    const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
    const res = await fetch(`${cloud.url}${path}`, { headers });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cloud.url}/admin${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown> };
  };
  return { cloud, apiKey, api, admin };
}

function errorCode(body: Record<string, unknown>): unknown {
  return (body["error"] as { code?: unknown } | undefined)?.code;
}

describe("simulated cloud - public API", () => {
  test("api - get returns the instance in wire form", async () => {
    const { cloud, api } = await harness();
    const i = cloud.createInstance("acme", {
      name: "node-1",
      region: REGION,
      tags: { team: "a" },
      instanceType: "sim.large",
    });
    const res = await api(`/v1/regions/${REGION}/instances/${i.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: i.id,
      name: "node-1",
      region: REGION,
      zone: `${REGION}a`,
      instance_type: "sim.large",
      state: "running",
      addresses: i.addresses.map((a) => ({ ...a })),
      network: i.network,
      tags: { team: "a" },
      created_at: i.createdAt,
    } satisfies WireInstance);
  });

  test("api - 404 NotFound names the instance; other account and other region see nothing", async () => {
    const { cloud, api } = await harness();
    const other = cloud.createAccount("other");
    const i = cloud.createInstance("acme", { name: "n", region: REGION });
    const missing = await api(`/v1/regions/${REGION}/instances/i-000000000000`);
    expect(missing.status).toBe(404);
    expect(missing.body["error"]).toMatchObject({
      code: "NotFound",
      resource: { type: "instance", id: "i-000000000000" },
    });
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`, other.apiKey)).status).toBe(404);
    expect((await api(`/v1/regions/sim-west-1/instances/${i.id}`)).status).toBe(404);
  });

  test("api - missing or wrong key is 401; suspended account is 403; unknown region is 400", async () => {
    const { cloud, api } = await harness();
    expect((await api(`/v1/regions/${REGION}/instances`, null)).status).toBe(401);
    const wrong = await api(`/v1/regions/${REGION}/instances`, "sk-wrong");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(errorCode((await api("/v1/regions/nowhere-1/instances")).body)).toBe("InvalidRegion");
    expect(errorCode((await api("/v2/whatever")).body)).toBe("RouteNotFound");
    cloud.setAccountSuspended("acme", true);
    expect((await api(`/v1/regions/${REGION}/instances`)).status).toBe(403);
  });

  test("api - pages: default 100, max 500, opaque tokens walk every instance", async () => {
    const { cloud, api } = await harness();
    const ids = new Set<string>();
    for (let n = 0; n < 1_234; n++)
      ids.add(cloud.createInstance("acme", { name: `n${n}`, region: REGION }).id);
    cloud.createInstance("acme", { name: "elsewhere", region: "sim-west-1" });

    const first = (await api(`/v1/regions/${REGION}/instances`)).body as unknown as WireInstanceList;
    expect(first.instances).toHaveLength(100);
    expect(typeof first.next_page_token).toBe("string");

    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const qs = `page_size=1000${token === undefined ? "" : `&page_token=${encodeURIComponent(token)}`}`;
      const page = (await api(`/v1/regions/${REGION}/instances?${qs}`)).body as unknown as WireInstanceList;
      expect(page.instances.length).toBeLessThanOrEqual(500);
      seen.push(...page.instances.map((i) => i.id));
      token = page.next_page_token;
      pages++;
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(ids.size);
    expect(new Set(seen)).toEqual(ids);

    expect(errorCode((await api(`/v1/regions/${REGION}/instances?page_token=garbage`)).body)).toBe(
      "InvalidPageToken",
    );
    expect(errorCode((await api(`/v1/regions/${REGION}/instances?page_size=0`)).body)).toBe(
      "InvalidParameter",
    );
  });

  test("api - name filter is exact", async () => {
    const { cloud, api } = await harness();
    cloud.createInstance("acme", { name: "web", region: REGION });
    cloud.createInstance("acme", { name: "web-2", region: REGION });
    const res = (await api(`/v1/regions/${REGION}/instances?name=web`)).body as unknown as WireInstanceList;
    expect(res.instances.map((i) => i.name)).toEqual(["web"]);
    const none = (await api(`/v1/regions/${REGION}/instances?name=we`)).body as unknown as WireInstanceList;
    expect(none).toEqual({ instances: [] });
  });

  test("api - terminated instances 404 at once by default", async () => {
    const { cloud, api } = await harness();
    const i = cloud.createInstance("acme", { name: "n", region: REGION });
    cloud.terminateInstance(i.id);
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`)).status).toBe(404);
    expect(cloud.getInstance(i.id)?.state).toBe("terminated");
  });

  test("api - terminated instances linger when configured", async () => {
    let now = 1_000_000;
    const { cloud, api } = await harness({ terminatedLingerMs: 60_000, now: () => now });
    const i = cloud.createInstance("acme", { name: "n", region: REGION });
    cloud.terminateInstance(i.id);
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`)).body["state"]).toBe("terminated");
    now += 60_000;
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`)).status).toBe(404);
  });
});

describe("simulated cloud - faults and limits", () => {
  test("faults - throttleRate 1 answers 429 with Retry-After", async () => {
    const { cloud, api } = await harness();
    cloud.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 7 });
    const res = await api(`/v1/regions/${REGION}/instances`);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(errorCode(res.body)).toBe("Throttling");
  });

  test("faults - errorRate 1 answers 500 or 503, per account override wins", async () => {
    const { cloud, api } = await harness();
    const calm = cloud.createAccount("calm");
    cloud.setFaults({ errorRate: 1 });
    cloud.setFaults({ errorRate: 0 }, "calm");
    const statuses = new Set<number>();
    for (let n = 0; n < 20; n++) statuses.add((await api(`/v1/regions/${REGION}/instances`)).status);
    expect(statuses).toEqual(new Set([500, 503]));
    expect((await api(`/v1/regions/${REGION}/instances`, calm.apiKey)).status).toBe(200);
    cloud.resetFaults();
    expect((await api(`/v1/regions/${REGION}/instances`)).status).toBe(200);
  });

  test("faults - latency delays the answer", async () => {
    const { cloud, api } = await harness();
    cloud.setFaults({ latencyMs: 150 });
    const started = Date.now();
    expect((await api(`/v1/regions/${REGION}/instances`)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  test("faults - a hanging call ends when the client gives up, and is counted as aborted", async () => {
    const { cloud, apiKey } = await harness();
    cloud.setFaults({ timeoutRate: 1 });
    const started = Date.now();
    await expect(
      fetch(`${cloud.url}/v1/regions/${REGION}/instances`, {
        headers: { authorization: `Bearer ${apiKey}` },
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2_000);
    for (let n = 0; n < 50 && cloud.stats().byOutcome["aborted"] === undefined; n++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(cloud.stats().byOutcome).toEqual({ aborted: 1 });
  });

  test("faults - a hang with a short timeoutHangMs ends in 504", async () => {
    const { cloud, api } = await harness();
    cloud.setFaults({ timeoutRate: 1, timeoutHangMs: 50 });
    expect((await api(`/v1/regions/${REGION}/instances`)).status).toBe(504);
  });

  test("faults - close() ends hanging calls at once", async () => {
    const { cloud, apiKey } = await harness();
    cloud.setFaults({ timeoutRate: 1 });
    const pending = fetch(`${cloud.url}/v1/regions/${REGION}/instances`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    await cloud.close();
    await expect(pending).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  test("faults - emptyGetRate, emptyListRate and dropFromListRate", async () => {
    const { cloud, api } = await harness();
    const i = cloud.createInstance("acme", { name: "n", region: REGION });
    for (let n = 0; n < 9; n++) cloud.createInstance("acme", { name: `m${n}`, region: REGION });
    cloud.setFaults({ emptyGetRate: 1 });
    expect(await api(`/v1/regions/${REGION}/instances/${i.id}`)).toMatchObject({ status: 200, body: {} });
    cloud.setFaults({ emptyGetRate: 0, emptyListRate: 1 });
    expect((await api(`/v1/regions/${REGION}/instances?page_size=2`)).body).toEqual({ instances: [] });
    cloud.setFaults({ emptyListRate: 0, dropFromListRate: 1 });
    const dropped = (await api(`/v1/regions/${REGION}/instances?page_size=5`))
      .body as unknown as WireInstanceList;
    expect(dropped.instances).toEqual([]);
    expect(typeof dropped.next_page_token).toBe("string");
  });

  test("faults - staleReadMs serves the previous version right after a change", async () => {
    let now = 1_000_000;
    const { cloud, api } = await harness({ now: () => now });
    const i = cloud.createInstance("acme", { name: "n", region: REGION });
    cloud.setFaults({ staleReadMs: 1_000 });
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`)).status).toBe(404); // not yet visible
    now += 1_000;
    cloud.setInstanceState(i.id, "stopped");
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`)).body["state"]).toBe("running");
    now += 1_000;
    expect((await api(`/v1/regions/${REGION}/instances/${i.id}`)).body["state"]).toBe("stopped");
  });

  test("rate limit - per account token bucket answers 429 RateLimitExceeded", async () => {
    const { cloud, api } = await harness();
    const other = cloud.createAccount("other");
    cloud.setAccountRateLimit("acme", 2);
    const statuses: number[] = [];
    for (let n = 0; n < 4; n++) statuses.push((await api(`/v1/regions/${REGION}/instances`)).status);
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    const limited = await api(`/v1/regions/${REGION}/instances`);
    expect(limited.status).toBe(429);
    expect(errorCode(limited.body)).toBe("RateLimitExceeded");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await api(`/v1/regions/${REGION}/instances`, other.apiKey)).status).toBe(200);
  });
});

describe("simulated cloud - stats and admin API", () => {
  test("stats - counted by account, operation and outcome; reset clears", async () => {
    const { cloud, api } = await harness();
    const i = cloud.createInstance("acme", { name: "n", region: REGION });
    await api(`/v1/regions/${REGION}/instances/${i.id}`);
    await api(`/v1/regions/${REGION}/instances/i-000000000000`);
    await api(`/v1/regions/${REGION}/instances`);
    await api(`/v1/regions/${REGION}/instances`, "bad");
    const stats = cloud.stats();
    expect(stats.totalCalls).toBe(4);
    expect(stats.byOperation).toEqual({ "instances.get": 2, "instances.list": 2 });
    expect(stats.byOutcome).toEqual({ "200": 2, "404": 1, "401": 1 });
    expect(stats.byAccount["acme"]?.totalCalls).toBe(3);
    expect(stats.calls).toContainEqual({
      account: "acme",
      operation: "instances.get",
      outcome: "404",
      count: 1,
    });
    cloud.resetStats();
    expect(cloud.stats().totalCalls).toBe(0);
  });

  test("admin - accounts, instances, faults and stats over HTTP", async () => {
    const { cloud, admin, api } = await harness();
    const created = await admin("POST", "/accounts", {
      name: "beta",
      apiKey: "sk-beta",
      rateLimitPerSecond: 5,
    });
    expect(created).toMatchObject({ status: 201, body: { name: "beta", apiKey: "sk-beta" } });
    expect((await admin("POST", "/accounts", { name: "beta" })).status).toBe(409);

    const inst = await admin("POST", "/instances", {
      account: "beta",
      name: "b1",
      region: REGION,
      tags: { k: "v" },
    });
    expect(inst.status).toBe(201);
    const id = inst.body["id"] as string;
    expect((await api(`/v1/regions/${REGION}/instances/${id}`, "sk-beta")).body["tags"]).toEqual({ k: "v" });

    const batch = await admin("POST", "/instances/batch", {
      account: "beta",
      instances: [
        { name: "b2", region: REGION },
        { name: "b3", region: REGION },
      ],
    });
    expect((batch.body["instances"] as unknown[]).length).toBe(2);
    expect(((await admin("GET", "/instances?account=beta")).body["instances"] as unknown[]).length).toBe(3);

    expect((await admin("PATCH", `/instances/${id}`, { state: "stopped" })).body["state"]).toBe("stopped");
    expect((await admin("DELETE", `/instances/${id}`)).body["state"]).toBe("terminated");
    expect((await admin("GET", `/instances/${id}`)).body["state"]).toBe("terminated");
    expect((await admin("PATCH", `/instances/${id}`, { state: "running" })).status).toBe(409);
    expect((await admin("GET", "/instances/i-000000000000")).status).toBe(404);

    expect((await admin("PATCH", "/faults", { errorRate: 0.25 })).body["global"]).toMatchObject({
      errorRate: 0.25,
    });
    const f = await admin("PATCH", "/faults/accounts/beta", { latencyMs: 5 });
    expect(f.body["accounts"]).toEqual({ beta: { latencyMs: 5 } });
    expect(cloud.faults("beta")).toMatchObject({ errorRate: 0.25, latencyMs: 5 });
    expect((await admin("PATCH", "/faults", { errorRate: 3 })).status).toBe(400);
    expect((await admin("PATCH", "/faults/accounts/nobody", { latencyMs: 5 })).status).toBe(404);
    expect((await admin("DELETE", "/faults")).body).toEqual({ global: cloud.faults(), accounts: {} });
    expect(cloud.faults().errorRate).toBe(0);

    const patched = await admin("PATCH", "/accounts/beta", { rateLimitPerSecond: 0, suspended: true });
    expect(patched.body).toMatchObject({ rateLimitPerSecond: 0, suspended: true });
    expect((await api(`/v1/regions/${REGION}/instances`, "sk-beta")).status).toBe(403);

    const stats = await admin("GET", "/stats");
    expect(stats.body["byAccount"]).toHaveProperty("beta");
    expect((await admin("POST", "/stats/reset")).status).toBe(204);
    expect((await admin("GET", "/stats")).body["totalCalls"]).toBe(0);

    expect((await admin("GET", "/regions")).body["regions"]).toContain(REGION);
    expect((await admin("PUT", "/faults")).status).toBe(405);
    expect((await admin("GET", "/nothing")).status).toBe(404);
  });

  test("bench shape - 25k instances, concurrent gets with latency stay cheap", async () => {
    const { cloud, apiKey } = await harness();
    const ids: string[] = [];
    for (let n = 0; n < 25_000; n++)
      ids.push(cloud.createInstance("acme", { name: `n${n}`, region: REGION }).id);
    cloud.setFaults({ latencyMs: 20, latencyJitterMs: 10 });
    const started = Date.now();
    const results = await Promise.all(
      ids.slice(0, 300).map(async (id) => {
        const res = await fetch(`${cloud.url}/v1/regions/${REGION}/instances/${id}`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(results.every((s) => s === 200)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
