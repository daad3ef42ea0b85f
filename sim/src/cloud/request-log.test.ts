import { afterEach, describe, expect, test } from "@jest/globals";
import { startSimulatedCloud } from "./cloud.js";
import type { SimulatedCloud } from "./types.js";

const REGION = "sim-east-1";
const clouds: SimulatedCloud[] = [];

afterEach(async () => {
  await Promise.all(clouds.splice(0).map((c) => c.close()));
});

describe("simulated cloud - request log", () => {
  test("every public call is logged with its outcome and injected fault; admin calls are not", async () => {
    const cloud = await startSimulatedCloud();
    clouds.push(cloud);
    const { apiKey } = cloud.createAccount("acme");
    cloud.createAccount("calm");
    const instance = cloud.createInstance("acme", { name: "n1", region: REGION });
    const get = (path: string, key: string | null = apiKey) =>
      fetch(`${cloud.url}${path}`, key === null ? {} : { headers: { authorization: `Bearer ${key}` } });

    expect((await get(`/v1/regions/${REGION}/instances/${instance.id}`)).status).toBe(200);
    expect((await get(`/v1/regions/${REGION}/instances?name=n1`)).status).toBe(200);
    expect((await get(`/v1/regions/${REGION}/instances`, null)).status).toBe(401);
    const mark = cloud.requests().at(-1)?.seq ?? 0;
    cloud.setFaults({ throttleRate: 1 }, "acme");
    expect((await get(`/v1/regions/${REGION}/instances/${instance.id}`)).status).toBe(429);
    cloud.resetFaults();
    expect((await fetch(`${cloud.url}/admin/stats`)).status).toBe(200);

    expect(cloud.requests().map((r) => [r.account, r.operation, r.outcome, r.fault])).toEqual([
      ["acme", "instances.get", "200", undefined],
      ["acme", "instances.list", "200", undefined],
      ["(unauthenticated)", "instances.list", "401", undefined],
      ["acme", "instances.get", "429", "throttled"],
    ]);
    expect(cloud.requests({ afterSeq: mark })).toEqual([
      expect.objectContaining({
        method: "GET",
        path: `/v1/regions/${REGION}/instances/${instance.id}`,
        query: "",
        fault: "throttled",
        requestId: expect.stringMatching(/^req-/),
      }),
    ]);
    expect(cloud.requests({ operation: "instances.list", outcome: "200" })[0]?.query).toBe("name=n1");
    expect(cloud.stats().totalCalls).toBe(4);
    cloud.resetStats();
    expect(cloud.requests()).toEqual([]);
  });
});
