// The Linode client and Instances against the fake Linode API: pages, X-Filter, token rotation,
// 429 storms, 5xx, timeouts, typed errors, and the Linode CCM's instance metadata.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { LinodeFake } from "../../../../../sim/src/linode/index.js";
import {
  CloudError,
  ForbiddenError,
  InstanceNotFoundError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { LinodeApiError, toContractError } from "./errors.js";
import { ACCOUNT, type LinodeHarness, linodeHarness, REGION, VPC } from "./linode.testkit.js";

let h: LinodeHarness<LinodeFake>;

beforeAll(async () => {
  h = linodeHarness(await LinodeFake.start({ spec: true, seed: 3 }));
});

afterEach(() => {
  h.fake.resetFaults();
  expect(h.fake.specProblems()).toEqual([]);
});

afterAll(async () => {
  await h?.close();
});

describe("client", () => {
  test("lists follow every page at the account's page size; one ctx.call per HTTP request", async () => {
    for (let i = 0; i < 60; i++) h.fake.createLinode(ACCOUNT, { label: `paged-${i}`, region: REGION });
    const { provider, ops } = await h.provider({}, { pageSize: 25 });
    const mark = h.fake.log.mark();
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await provider.instances.listPage(token);
      seen.push(...page.instances.map((i) => i.name));
      token = page.nextPageToken;
    } while (token !== undefined);
    for (let i = 0; i < 60; i++) expect(seen).toContain(`paged-${i}`);
    const calls = h.fake.log.requests({ afterSeq: mark });
    expect(calls.map((c) => c.query)).toEqual(
      expect.arrayContaining(["page=1&page_size=25", "page=2&page_size=25", "page=3&page_size=25"]),
    );
    expect(ops).toHaveLength(calls.length);
  });

  test("findByName asks with X-Filter: one call however many Linodes the account has", async () => {
    const { provider, ops } = await h.provider({}, { pageSize: 25 });
    const found = await provider.instances.findByName("paged-42");
    expect(found.map((m) => m.name)).toEqual(["paged-42"]);
    expect(ops).toEqual(["instances.getByName"]);
  });

  test("a token rotated mid-run is used from the next request on, without a new provider", async () => {
    const { provider } = await h.provider();
    const l = h.fake.createLinode(ACCOUNT, { label: "rotating", region: REGION });
    await provider.instances.getByProviderID(`linode://${l.id}`);
    h.fake.rotateToken(ACCOUNT, "rotated-token-1");
    // The file still holds the old token: Linode refuses it, and that is no "not found".
    await expect(provider.instances.getByProviderID(`linode://${l.id}`)).rejects.toBeInstanceOf(
      ForbiddenError,
    );
    h.token.value = "rotated-token-1";
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).name).toBe("rotating");
  });

  test("a 429 storm: every call is ThrottledError with Linode's Retry-After, then service resumes", async () => {
    const { provider } = await h.provider();
    h.fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 4 }, ACCOUNT);
    const errs = await Promise.all(
      Array.from({ length: 20 }, () => provider.instances.findByName("paged-1").catch((e: unknown) => e)),
    );
    for (const e of errs) {
      expect(e).toBeInstanceOf(ThrottledError);
      expect((e as ThrottledError).retryAfterMs).toBe(4_000);
    }
    expect(h.fake.log.stats().byAccount[ACCOUNT]?.byOutcome["429"]).toBeGreaterThanOrEqual(20);
    h.fake.resetFaults();
    expect(await provider.instances.findByName("paged-1")).toHaveLength(1);
  });

  test("5xx and timeouts are TransientCloudError, never a not-found", async () => {
    const { provider } = await h.provider({ requestTimeoutMs: 100 });
    h.fake.setFaults({ errorRate: 1 }, ACCOUNT);
    await expect(provider.instances.getByProviderID("linode://1")).rejects.toBeInstanceOf(
      TransientCloudError,
    );
    h.fake.resetFaults();
    h.fake.setFaults({ latencyMs: 400 }, ACCOUNT);
    await expect(provider.instances.findByName("paged-1")).rejects.toBeInstanceOf(TransientCloudError);
  });

  test("errors carry Linode's reason and field; busy answers are transient", () => {
    const refused = new LinodeApiError(
      "POST",
      "/nodebalancers",
      400,
      [{ reason: "Region is required", field: "region" }],
      undefined,
    );
    const mapped = toContractError(refused, 0);
    expect(mapped).toBeInstanceOf(CloudError);
    expect(mapped).not.toBeInstanceOf(TransientCloudError);
    expect((mapped as Error).message).toContain("region: Region is required");
    expect(refused.reason).toBe("Region is required");
    expect(refused.field).toBe("region");
    const busy = new LinodeApiError("PUT", "/nodebalancers/1", 400, [{ reason: "Linode busy." }], undefined);
    expect(toContractError(busy, 0)).toBeInstanceOf(TransientCloudError);
    const throttled = new LinodeApiError(
      "GET",
      "/x",
      429,
      [{ reason: "Too many requests" }],
      "Thu, 01 Jan 1970 00:00:10 GMT",
    );
    expect((toContractError(throttled, 4_000) as ThrottledError).retryAfterMs).toBe(6_000);
  });
});

describe("instances", () => {
  test("the Linode CCM's metadata: providerID, type, region, no zone, linode.region, address order", async () => {
    const l = h.fake.createLinode(ACCOUNT, {
      label: "web-1",
      region: REGION,
      type: "g6-standard-4",
      vpcSubnetId: h.subnetId,
    });
    const { provider } = await h.provider({ network: VPC });
    const meta = await provider.instances.getByProviderID(`linode://${l.id}`);
    const vpcIP = l.interfaces.find((i) => i.purpose === "vpc")?.vpcIPv4;
    expect(meta).toMatchObject({
      providerID: `linode://${l.id}`,
      instanceID: String(l.id),
      name: "web-1",
      instanceType: "g6-standard-4",
      region: REGION,
      zone: "",
      state: "running",
      network: VPC,
      additionalLabels: { "linode.region": REGION },
    });
    expect(meta.addresses).toEqual([
      { type: "Hostname", address: "web-1" },
      { type: "InternalIP", address: vpcIP },
      { type: "ExternalIP", address: l.publicIPv4 },
      { type: "InternalIP", address: l.privateIPv4 },
      { type: "ExternalIP", address: l.ipv6.replace(/\/128$/, "") },
    ]);
    // Without a VPC the account makes no VPC calls and lists no VPC address.
    const { provider: plain, ops } = await h.provider();
    const noVpc = await plain.instances.getByProviderID(`linode://${l.id}`);
    expect(noVpc.addresses.map((a) => a.address)).not.toContain(vpcIP);
    expect(ops).toEqual(["instances.get"]);
  });

  test("two clusters of the account on two VPCs: each Linode's network and VPC address are its own VPC's", async () => {
    const other = h.fake.createVpc(ACCOUNT, {
      label: "vpc-two",
      region: REGION,
      subnets: [{ label: "nodes", ipv4: "10.7.0.0/16" }],
    });
    const inOther = h.fake.createLinode(ACCOUNT, {
      label: "two-1",
      region: REGION,
      vpcSubnetId: other.subnets[0]!.id,
    });
    const inFirst = h.fake.createLinode(ACCOUNT, { label: "one-1", region: REGION, vpcSubnetId: h.subnetId });
    // The account names the first VPC; a second cluster names its own (clusters[].network).
    const { provider } = await h.provider({ network: VPC }, undefined, { clusterNetworks: [VPC, "vpc-two"] });
    const two = await provider.instances.getByProviderID(`linode://${inOther.id}`);
    const one = await provider.instances.getByProviderID(`linode://${inFirst.id}`);
    expect(two.network).toBe("vpc-two");
    expect(two.addresses).toContainEqual({
      type: "InternalIP",
      address: inOther.interfaces.find((i) => i.purpose === "vpc")?.vpcIPv4,
    });
    expect(one.network).toBe(VPC);
  });

  test("offline and shutting_down are shutdown states (the hub taints those nodes)", async () => {
    const l = h.fake.createLinode(ACCOUNT, { label: "sleepy", region: REGION });
    const { provider } = await h.provider();
    h.fake.setLinodeStatus(l.id, "offline");
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).state).toBe("stopped");
    h.fake.setLinodeStatus(l.id, "shutting_down");
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).state).toBe("stopping");
    h.fake.setLinodeStatus(l.id, "booting");
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).state).toBe("pending");
  });

  test("deleting and stopped are neither gone nor shut down (the Linode CCM: exists while listed, shutdown only offline or shutting_down)", async () => {
    const l = h.fake.createLinode(ACCOUNT, { label: "going", region: REGION });
    const { provider } = await h.provider();
    h.fake.setLinodeStatus(l.id, "deleting");
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).state).toBe("unknown");
    h.fake.setLinodeStatus(l.id, "stopped");
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).state).toBe("unknown");
  });

  test("a deleted Linode is InstanceNotFoundError from its own URL; foreign and out-of-region ids are refused", async () => {
    const l = h.fake.createLinode(ACCOUNT, { label: "doomed", region: REGION });
    const elsewhere = h.fake.createLinode(ACCOUNT, { label: "far", region: "eu-west" });
    h.fake.deleteLinode(l.id);
    const { provider, ops } = await h.provider();
    await expect(provider.instances.getByProviderID(`linode://${l.id}`)).rejects.toBeInstanceOf(
      InstanceNotFoundError,
    );
    await expect(provider.instances.getByProviderID(`linode://${elsewhere.id}`)).rejects.toBeInstanceOf(
      ForbiddenError,
    );
    const before = ops.length;
    await expect(provider.instances.getByProviderID("aws:///us-east-1a/i-1")).rejects.toBeInstanceOf(
      ForbiddenError,
    );
    expect(ops).toHaveLength(before);
    expect(provider.instances.parseProviderID("linode://123")).toBe("123");
    expect(provider.instances.parseProviderID("linode://abc")).toBeUndefined();
  });

  test("a just-created Linode missing from lists: the name query says so, its providerID finds it", async () => {
    h.fake.setListLag(60_000);
    const l = h.fake.createLinode(ACCOUNT, { label: "newborn", region: REGION });
    const { provider } = await h.provider();
    expect(await provider.instances.findByName("newborn")).toEqual([]);
    expect((await provider.instances.getByProviderID(`linode://${l.id}`)).name).toBe("newborn");
    h.fake.setListLag(0);
    expect((await provider.instances.findByName("newborn")).map((m) => m.instanceID)).toEqual([String(l.id)]);
  });
});
