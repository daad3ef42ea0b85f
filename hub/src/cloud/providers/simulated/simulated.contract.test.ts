// The simulated provider against the real simulated cloud on a random loopback port: its own
// behaviour; what every provider must do is in conformance.test.ts.
// Tests may import sim/; hub/src code never does.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../../sim/src/cloud/index.js";
import {
  ForbiddenError,
  InstanceNotFoundError,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import type { AccountBinding, CloudProvider, InstanceMetadata } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { simulatedProvider } from "./index.js";

const REGION = "sim-east-1";
const TIMEOUT_MS = 400;

let cloud: SimulatedCloud;
let apiKey: string;

beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 42 });
  apiKey = cloud.createAccount("acme").apiKey;
});

afterAll(async () => {
  await cloud.close();
});

beforeEach(() => {
  cloud.resetFaults();
  cloud.setAccountRateLimit("acme", 0);
  cloud.resetStats();
});

async function provider(
  overrides: Partial<AccountBinding> = {},
): Promise<{ readonly provider: CloudProvider; readonly ops: string[] }> {
  return bindRecorded(simulatedProvider, {
    name: "acme",
    provider: "simulated",
    region: REGION,
    endpoint: cloud.url,
    credential: apiKey,
    requestTimeoutMs: TIMEOUT_MS,
    ...overrides,
  });
}

let nameSeq = 0;
function uniqueName(prefix: string): string {
  return `${prefix}-${++nameSeq}`;
}

describe("simulated provider - contract", () => {
  test("contract - a found instance maps every field", async () => {
    const i = cloud.createInstance("acme", {
      name: uniqueName("node"),
      region: REGION,
      zone: `${REGION}b`,
      instanceType: "sim.xlarge",
      network: "vpc-cafe0001",
      tags: { "fleet-ccm/cluster": "a", team: "x" },
    });
    const { provider: p, ops } = await provider();
    const meta = await p.instances.getByProviderID(`simulated://${REGION}/${i.id}`);
    const want: InstanceMetadata = {
      providerID: `simulated://${REGION}/${i.id}`,
      instanceID: i.id,
      name: i.name,
      instanceType: "sim.xlarge",
      region: REGION,
      zone: `${REGION}b`,
      addresses: i.addresses,
      state: "running",
      network: "vpc-cafe0001",
      tags: { "fleet-ccm/cluster": "a", team: "x" },
    };
    expect(meta).toEqual(want);
    expect(meta.addresses.map((a) => a.type)).toEqual([
      "InternalIP",
      "ExternalIP",
      "Hostname",
      "InternalDNS",
    ]);
    expect(meta.addresses.find((a) => a.type === "Hostname")?.address).toBe(i.name);
    expect(ops).toEqual(["instances.get"]);
    expect(p.name).toBe("simulated");
  });

  test("contract - stopped state comes through", async () => {
    const i = cloud.createInstance("acme", { name: uniqueName("node"), region: REGION, state: "stopped" });
    const meta = await (await provider()).provider.instances.getByProviderID(`simulated://${REGION}/${i.id}`);
    expect(meta.state).toBe("stopped");
  });

  test("contract - not found, terminated and another account's instance are InstanceNotFoundError", async () => {
    const { provider: p } = await provider();
    const gone = cloud.createInstance("acme", { name: uniqueName("node"), region: REGION });
    cloud.terminateInstance(gone.id);
    cloud.createAccount("rival-1");
    const theirs = cloud.createInstance("rival-1", { name: uniqueName("node"), region: REGION });
    for (const id of ["i-000000000000", gone.id, theirs.id]) {
      await expect(p.instances.getByProviderID(`simulated://${REGION}/${id}`)).rejects.toBeInstanceOf(
        InstanceNotFoundError,
      );
    }
  });

  test("contract - the cloud's own rate limit is ThrottledError too", async () => {
    cloud.setAccountRateLimit("acme", 1);
    const { provider: p } = await provider();
    await p.instances.listPage(undefined);
    const err = await p.instances.listPage(undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as ThrottledError).retryAfterMs).toBeGreaterThanOrEqual(1_000);
  });

  test("contract - a hanging call is TransientCloudError within the request timeout", async () => {
    cloud.setFaults({ timeoutRate: 1 });
    const started = Date.now();
    const err = await (await provider()).provider.instances
      .getByProviderID(`simulated://${REGION}/i-000000000000`)
      .catch((e: unknown) => e);
    const elapsedMs = Date.now() - started;
    expect(err).toBeInstanceOf(TransientCloudError);
    expect((err as Error).message).toMatch(/400 ms/);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 1_500);
  });

  test("contract - a caller's abort is TransientCloudError", async () => {
    cloud.setFaults({ latencyMs: 5_000 });
    const abort = new AbortController();
    const pending = (await provider()).provider.instances.listPage(undefined, abort.signal);
    abort.abort();
    await expect(pending).rejects.toBeInstanceOf(TransientCloudError);
  });

  test("contract - pagination walks every instance across pages", async () => {
    const { apiKey: bigKey } = cloud.createAccount("big");
    const ids = new Set<string>();
    for (let n = 0; n < 1_234; n++)
      ids.add(cloud.createInstance("big", { name: `big-${n}`, region: REGION }).id);
    cloud.createInstance("big", { name: "big-west", region: "sim-west-1" });
    const { provider: p, ops } = await provider({ name: "big", credential: bigKey });
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await p.instances.listPage(token);
      seen.push(...page.instances.map((i) => i.instanceID));
      for (const i of page.instances) expect(i.providerID).toBe(`simulated://${REGION}/${i.instanceID}`);
      token = page.nextPageToken;
    } while (token !== undefined);
    expect(ops).toEqual(["instances.list", "instances.list", "instances.list"]);
    expect(seen).toHaveLength(ids.size);
    expect(new Set(seen)).toEqual(ids);
  });

  test("contract - findByName is exact: one match, none, several (with their tags)", async () => {
    const { provider: p, ops } = await provider();
    const name = uniqueName("web");
    const i = cloud.createInstance("acme", { name, region: REGION });
    cloud.createInstance("acme", { name: `${name}-0`, region: REGION });
    expect((await p.instances.findByName(name)).map((m) => m.instanceID)).toEqual([i.id]);
    expect(ops).toEqual(["instances.getByName"]);
    expect(await p.instances.findByName(uniqueName("nobody"))).toEqual([]);
    const twin = uniqueName("twin");
    const t1 = cloud.createInstance("acme", { name: twin, region: REGION, tags: { c: "one" } });
    const t2 = cloud.createInstance("acme", { name: twin, region: REGION, tags: { c: "two" } });
    const both = await p.instances.findByName(twin);
    expect(both.map((m) => [m.instanceID, m.tags["c"]])).toEqual([
      [t1.id, "one"],
      [t2.id, "two"],
    ]);
  });

  test("contract - findByName finds a reused name past terminated predecessors", async () => {
    const name = uniqueName("reused");
    for (let n = 0; n < 3; n++)
      cloud.terminateInstance(cloud.createInstance("acme", { name, region: REGION }).id);
    const current = cloud.createInstance("acme", { name, region: REGION });
    const live = (await (await provider()).provider.instances.findByName(name)).filter(
      (m) => m.state !== "terminated",
    );
    expect(live.map((m) => m.instanceID)).toEqual([current.id]);
  });

  test("contract - foreign providerIDs are refused without a cloud call", async () => {
    const { provider: p, ops } = await provider();
    const i = cloud.createInstance("acme", { name: uniqueName("node"), region: REGION });
    for (const foreign of [
      `aws:///us-east-1a/${i.id}`,
      `simulated://sim-west-1/${i.id}`,
      `simulated://${i.id}`,
      "",
      `simulated://${REGION}/../../admin/stats`,
    ]) {
      expect(p.instances.parseProviderID(foreign)).toBeUndefined();
      await expect(p.instances.getByProviderID(foreign)).rejects.toBeInstanceOf(ForbiddenError);
    }
    expect(p.instances.parseProviderID(`simulated://${REGION}/${i.id}`)).toBe(i.id);
    expect(ops).toEqual([]);
    expect(cloud.stats().totalCalls).toBe(0);
  });

  test("contract - a wrong API key is ForbiddenError, so is a suspended account", async () => {
    const { provider: wrong } = await provider({ credential: "sk-not-a-key" });
    await expect(wrong.instances.listPage(undefined)).rejects.toBeInstanceOf(ForbiddenError);
    cloud.createAccount("frozen", { apiKey: "sk-frozen" });
    cloud.setAccountSuspended("frozen", true);
    const { provider: frozen } = await provider({ name: "frozen", credential: "sk-frozen" });
    await expect(
      frozen.instances.getByProviderID(`simulated://${REGION}/i-000000000000`),
    ).rejects.toBeInstanceOf(ForbiddenError);
  });

  test("contract - an empty or mismatching 200 is SuspectAnswerError", async () => {
    const i = cloud.createInstance("acme", { name: uniqueName("node"), region: REGION });
    cloud.setFaults({ emptyGetRate: 1 });
    await expect(
      (await provider()).provider.instances.getByProviderID(`simulated://${REGION}/${i.id}`),
    ).rejects.toBeInstanceOf(SuspectAnswerError);
  });

  test("contract - a wrong endpoint is never not-found", async () => {
    const { provider: p } = await provider({ endpoint: `${cloud.url}/elsewhere` });
    await expect(p.instances.getByProviderID(`simulated://${REGION}/i-000000000000`)).rejects.toBeInstanceOf(
      SuspectAnswerError,
    );
    const { provider: closed } = await provider({ endpoint: "http://127.0.0.1:1" });
    await expect(closed.instances.listPage(undefined)).rejects.toBeInstanceOf(TransientCloudError);
  });

  test("contract - the cloud counts every call by account, operation and outcome", async () => {
    const { provider: p } = await provider();
    const i = cloud.createInstance("acme", { name: uniqueName("node"), region: REGION });
    await p.instances.getByProviderID(`simulated://${REGION}/${i.id}`);
    await p.instances.getByProviderID(`simulated://${REGION}/i-000000000000`).catch(() => undefined);
    await p.instances.findByName(i.name);
    await p.instances.listPage(undefined);
    const stats = cloud.stats();
    expect(stats.totalCalls).toBe(4);
    expect(stats.byAccount["acme"]).toEqual({
      totalCalls: 4,
      byOperation: { "instances.get": 2, "instances.list": 2 },
      byOutcome: { "200": 3, "404": 1 },
    });
  });

  test("contract - binding refuses an account it cannot serve", async () => {
    const base = {
      name: "x",
      provider: "simulated",
      region: REGION,
      credential: "k",
      requestTimeoutMs: 1_000,
    } satisfies AccountBinding;
    await expect(bindRecorded(simulatedProvider, base)).rejects.toThrow(/endpoint/);
    await expect(bindRecorded(simulatedProvider, { ...base, endpoint: "ftp://x" })).rejects.toThrow(/http/);
    await expect(
      bindRecorded(simulatedProvider, { ...base, endpoint: cloud.url, provider: "aws" }),
    ).rejects.toThrow(/provider/);
    expect(simulatedProvider.name).toBe("simulated");
  });
});
