// The fake Compute Engine, driven by the official SDK (the client the gcp provider uses) and
// google-auth-library's service-account flow; every exchange checked against the discovery subset.

import * as compute from "@google-cloud/compute";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { gaxios, JWT } from "google-auth-library";
import { GcpComputeFake } from "./fake.js";

const PROJECT = "fake-project";
const REGION = "us-central1";
let fake: GcpComputeFake;
let key: string;
let clients: ReturnType<typeof makeClients>;

function authFor(keyText: string): JWT {
  const k = JSON.parse(keyText) as { client_email: string; private_key: string; token_uri: string };
  const transporter = new gaxios.Gaxios();
  transporter.interceptors.request.add({
    resolved: async (opts) => {
      if (String(opts.url) === "https://oauth2.googleapis.com/token") opts.url = new URL(k.token_uri);
      return opts;
    },
  });
  return new JWT({
    email: k.client_email,
    key: k.private_key,
    scopes: ["https://www.googleapis.com/auth/compute"],
    transporter,
  });
}

function makeClients(keyText: string) {
  const u = new URL(fake.url);
  const opts = {
    authClient: authFor(keyText),
    apiEndpoint: u.hostname,
    port: Number(u.port),
    protocol: "http",
  } as unknown as ConstructorParameters<typeof compute.InstancesClient>[0];
  return {
    instances: new compute.InstancesClient(opts),
    zones: new compute.ZonesClient(opts),
    addresses: new compute.AddressesClient(opts),
    firewalls: new compute.FirewallsClient(opts),
    targetPools: new compute.TargetPoolsClient(opts),
    forwardingRules: new compute.ForwardingRulesClient(opts),
    routes: new compute.RoutesClient(opts),
    healthChecks: new compute.HealthChecksClient(opts),
    regionHealthChecks: new compute.RegionHealthChecksClient(opts),
    regionBackendServices: new compute.RegionBackendServicesClient(opts),
    regionOperations: new compute.RegionOperationsClient(opts),
    globalOperations: new compute.GlobalOperationsClient(opts),
  };
}

const NO_RETRY = { retry: null, autoPaginate: false } as const;
const RAW = Symbol.for("google-gax.rawHttpResponsePayload");

/** Compute's reason of an SDK error, from the raw JSON error envelope gax keeps. */
function reason(err: unknown): string | undefined {
  const sym = Object.getOwnPropertySymbols(err as object).find((s) => s.description === RAW.description);
  const raw = sym === undefined ? undefined : (err as Record<symbol, unknown>)[sym];
  return (JSON.parse(String(raw)) as { error: { errors: { reason: string }[] } }).error.errors[0]?.reason;
}

beforeAll(async () => {
  fake = await GcpComputeFake.start({ spec: true });
  key = fake.createProject(PROJECT, {
    [REGION]: [`${REGION}-a`, `${REGION}-b`],
    "europe-west1": ["europe-west1-b"],
  }).key;
  clients = makeClients(key);
  for (const n of [0, 1, 2, 3, 4])
    fake.createInstance(PROJECT, { name: `vm-${n}`, zone: `${REGION}-${"ab"[n % 2]}`, tags: ["web"] });
  fake.createInstance(PROJECT, { name: "vm-eu", zone: "europe-west1-b" });
});

afterEach(() => {
  fake.resetFaults();
  fake.operationMs = 0;
  expect(fake.spec?.problems()).toEqual([]);
});

afterAll(async () => {
  await fake.close();
});

describe("OAuth", () => {
  test("the service-account JWT flow gets a token the API accepts; a token it did not issue is refused", async () => {
    const [i] = await clients.instances.get(
      { project: PROJECT, zone: `${REGION}-a`, instance: "vm-0" },
      NO_RETRY,
    );
    expect(i.name).toBe("vm-0");
    expect(fake.tokensIssued).toBeGreaterThan(0);
    const res = await fetch(`${fake.url}/compute/v1/projects/${PROJECT}/zones/${REGION}-a/instances/vm-0`, {
      headers: { authorization: "Bearer ya29.forged" },
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { errors: { reason: string }[] } }).error.errors[0]?.reason).toBe(
      "authError",
    );
  });

  test("an assertion signed with a retired key is refused at the token endpoint", async () => {
    const old = key;
    key = fake.keyFile(PROJECT, true);
    const stale = makeClients(old);
    const err = await stale.zones.list({ project: PROJECT }, NO_RETRY).catch((e: unknown) => e);
    expect(String(err)).toMatch(/invalid_grant|Signature/);
    clients = makeClients(key);
    const [zones] = await clients.zones.list({ project: PROJECT }, NO_RETRY);
    expect(zones.map((z) => z.name).sort()).toEqual(["europe-west1-b", `${REGION}-a`, `${REGION}-b`]);
  });
});

describe("instances", () => {
  test("get answers the instance, a missing one is 404 notFound", async () => {
    const [i] = await clients.instances.get(
      { project: PROJECT, zone: `${REGION}-b`, instance: "vm-1" },
      NO_RETRY,
    );
    expect(i.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP).toMatch(/^34\./);
    const err = await clients.instances
      .get({ project: PROJECT, zone: `${REGION}-b`, instance: "nope" }, NO_RETRY)
      .catch((e: unknown) => e);
    expect((err as { httpStatusCode?: number }).httpStatusCode).toBe(404);
    expect(reason(err)).toBe("notFound");
  });

  test("list pages with maxResults and pageToken, filters by name", async () => {
    const zone = `${REGION}-a`;
    const [first, , raw] = await clients.instances.list({ project: PROJECT, zone, maxResults: 2 }, NO_RETRY);
    expect(first.map((i) => i.name)).toEqual(["vm-0", "vm-2"]);
    expect(raw?.nextPageToken).toBeTruthy();
    const [rest, , raw2] = await clients.instances.list(
      { project: PROJECT, zone, maxResults: 2, pageToken: raw?.nextPageToken ?? "" },
      NO_RETRY,
    );
    expect(rest.map((i) => i.name)).toEqual(["vm-4"]);
    expect(raw2?.nextPageToken ?? "").toBe("");
    const [named] = await clients.instances.list(
      { project: PROJECT, zone, filter: 'name = "vm-2"' },
      NO_RETRY,
    );
    expect(named.map((i) => i.name)).toEqual(["vm-2"]);
    // A page may hold fewer than maxResults asks: the token still reaches the rest.
    fake.maxPageItems = 1;
    try {
      const [one, , r1] = await clients.instances.list({ project: PROJECT, zone, maxResults: 2 }, NO_RETRY);
      expect(one.map((i) => i.name)).toEqual(["vm-0"]);
      const [two] = await clients.instances.list(
        { project: PROJECT, zone, maxResults: 2, pageToken: r1?.nextPageToken ?? "" },
        NO_RETRY,
      );
      expect(two.map((i) => i.name)).toEqual(["vm-2"]);
    } finally {
      fake.maxPageItems = 500;
    }
  });

  test("aggregatedList keys instances by zone, with a warning for a zone without any, across pages", async () => {
    const seen: string[] = [];
    for await (const [scope, list] of clients.instances.aggregatedListAsync(
      { project: PROJECT, maxResults: 2, filter: 'name eq "vm-.*"' },
      { retry: null },
    ))
      for (const i of list.instances ?? []) seen.push(`${scope}/${i.name}`);
    expect(seen.sort()).toEqual([
      "zones/europe-west1-b/vm-eu",
      `zones/${REGION}-a/vm-0`,
      `zones/${REGION}-a/vm-2`,
      `zones/${REGION}-a/vm-4`,
      `zones/${REGION}-b/vm-1`,
      `zones/${REGION}-b/vm-3`,
    ]);
  });
});

describe("operations and resources", () => {
  test("an insert answers a PENDING operation that goes RUNNING, then DONE; wait returns it DONE", async () => {
    fake.operationMs = 300;
    const [lro] = await clients.addresses.insert(
      { project: PROJECT, region: REGION, addressResource: { name: "ip-1" } },
      { retry: null },
    );
    const op = (lro as unknown as { latestResponse: compute.protos.google.cloud.compute.v1.IOperation })
      .latestResponse;
    expect(op.status).toBe("PENDING");
    const missing = await clients.addresses
      .get({ project: PROJECT, region: REGION, address: "ip-1" }, NO_RETRY)
      .catch((e: unknown) => e);
    expect(reason(missing)).toBe("notFound");
    await new Promise((r) => setTimeout(r, 170));
    const [running] = await clients.regionOperations.get(
      { project: PROJECT, region: REGION, operation: op.name ?? "" },
      NO_RETRY,
    );
    expect(running.status).toBe("RUNNING");
    const [done] = await clients.regionOperations.wait(
      { project: PROJECT, region: REGION, operation: op.name ?? "" },
      NO_RETRY,
    );
    expect(done.status).toBe("DONE");
    const [ip] = await clients.addresses.get({ project: PROJECT, region: REGION, address: "ip-1" }, NO_RETRY);
    expect(ip.status).toBe("RESERVED");
    // The operation is found on its target, as a restarted client finds it.
    const [ops] = await clients.regionOperations.list(
      { project: PROJECT, region: REGION, filter: `targetLink = "${ip.selfLink}"` },
      NO_RETRY,
    );
    expect(ops.map((o) => o.name)).toEqual([op.name]);
    await clients.addresses.delete({ project: PROJECT, region: REGION, address: "ip-1" }, { retry: null });
  });

  test("globalOperations.aggregatedList: the operations of every scope by scope, filtered by status", async () => {
    fake.operationMs = 400;
    const [lro] = await clients.addresses.insert(
      { project: PROJECT, region: REGION, addressResource: { name: "ip-agg" } },
      { retry: null },
    );
    const name = (lro as unknown as { latestResponse: { name: string } }).latestResponse.name;
    const running = async () => {
      const found: [string, string][] = [];
      for await (const [scope, list] of clients.globalOperations.aggregatedListAsync(
        { project: PROJECT, filter: 'status != "DONE"', maxResults: 1 },
        { retry: null, autoPaginate: false },
      ))
        for (const o of list.operations ?? []) found.push([scope, o.name ?? ""]);
      return found;
    };
    // Pages of one (maxResults 1): the earlier test's delete may still run beside this insert.
    expect(await running()).toContainEqual([`regions/${REGION}`, name]);
    await clients.regionOperations.wait({ project: PROJECT, region: REGION, operation: name }, NO_RETRY);
    expect((await running()).map(([, n]) => n)).not.toContain(name);
    await clients.addresses.delete({ project: PROJECT, region: REGION, address: "ip-agg" }, { retry: null });
  });

  test("a second insert of a name is 409 alreadyExists; an operation can end with error", async () => {
    await clients.firewalls.insert(
      {
        project: PROJECT,
        firewallResource: {
          name: "fw-1",
          allowed: [{ IPProtocol: "tcp", ports: ["80"] }],
          targetTags: ["web"],
        },
      },
      { retry: null },
    );
    const dup = await clients.firewalls
      .insert({ project: PROJECT, firewallResource: { name: "fw-1" } }, { retry: null })
      .catch((e: unknown) => e);
    expect((dup as { httpStatusCode?: number }).httpStatusCode).toBe(409);
    expect(reason(dup)).toBe("alreadyExists");
    fake.failNextInserts(1);
    const [lro] = await clients.firewalls.insert(
      { project: PROJECT, firewallResource: { name: "fw-2" } },
      { retry: null },
    );
    const op = (lro as unknown as { latestResponse: compute.protos.google.cloud.compute.v1.IOperation })
      .latestResponse;
    expect(op.status).toBe("DONE");
    expect(op.error?.errors?.[0]?.code).toBe("QUOTA_EXCEEDED");
    expect(op.httpErrorStatusCode).toBe(403);
    // The failed insert left the name free.
    await clients.firewalls.insert({ project: PROJECT, firewallResource: { name: "fw-2" } }, { retry: null });
    for (const name of ["fw-1", "fw-2"])
      await clients.firewalls.delete({ project: PROJECT, firewall: name }, { retry: null });
  });

  test("a target pool used by a forwarding rule is resourceInUseByAnotherResource; instances added and removed", async () => {
    await clients.addresses.insert(
      { project: PROJECT, region: REGION, addressResource: { name: "lb-ip" } },
      { retry: null },
    );
    const [ip] = await clients.addresses.get(
      { project: PROJECT, region: REGION, address: "lb-ip" },
      NO_RETRY,
    );
    await clients.targetPools.insert(
      { project: PROJECT, region: REGION, targetPoolResource: { name: "pool-1" } },
      { retry: null },
    );
    const vm = `projects/${PROJECT}/zones/${REGION}-a/instances/vm-0`;
    await clients.targetPools.addInstance(
      {
        project: PROJECT,
        region: REGION,
        targetPool: "pool-1",
        targetPoolsAddInstanceRequestResource: { instances: [{ instance: vm }] },
      },
      { retry: null },
    );
    const [pool] = await clients.targetPools.get(
      { project: PROJECT, region: REGION, targetPool: "pool-1" },
      NO_RETRY,
    );
    expect(pool.instances).toEqual([`https://www.googleapis.com/compute/v1/${vm}`]);
    await clients.forwardingRules.insert(
      {
        project: PROJECT,
        region: REGION,
        forwardingRuleResource: {
          name: "fr-1",
          IPAddress: ip.address ?? "",
          IPProtocol: "TCP",
          portRange: "80-80",
          target: pool.selfLink ?? "",
        },
      },
      { retry: null },
    );
    const [inUse] = await clients.addresses.get(
      { project: PROJECT, region: REGION, address: "lb-ip" },
      NO_RETRY,
    );
    expect(inUse.status).toBe("IN_USE");
    const busy = await clients.targetPools
      .delete({ project: PROJECT, region: REGION, targetPool: "pool-1" }, { retry: null })
      .catch((e: unknown) => e);
    expect((busy as { httpStatusCode?: number }).httpStatusCode).toBe(400);
    expect(reason(busy)).toBe("resourceInUseByAnotherResource");
    await clients.targetPools.removeInstance(
      {
        project: PROJECT,
        region: REGION,
        targetPool: "pool-1",
        targetPoolsRemoveInstanceRequestResource: { instances: [{ instance: vm }] },
      },
      { retry: null },
    );
    await clients.forwardingRules.delete(
      { project: PROJECT, region: REGION, forwardingRule: "fr-1" },
      { retry: null },
    );
    await clients.targetPools.delete(
      { project: PROJECT, region: REGION, targetPool: "pool-1" },
      { retry: null },
    );
    await clients.addresses.delete({ project: PROJECT, region: REGION, address: "lb-ip" }, { retry: null });
    expect(fake.list(PROJECT, "targetPools")).toEqual([]);
  });

  test("forwarding-rule labels: setLabels replaces them under the fingerprint read; a stale one is 412 conditionNotMet", async () => {
    await clients.targetPools.insert(
      { project: PROJECT, region: REGION, targetPoolResource: { name: "pool-labels" } },
      { retry: null },
    );
    const [pool] = await clients.targetPools.get(
      { project: PROJECT, region: REGION, targetPool: "pool-labels" },
      NO_RETRY,
    );
    await clients.forwardingRules.insert(
      {
        project: PROJECT,
        region: REGION,
        forwardingRuleResource: {
          name: "fr-labels",
          IPProtocol: "TCP",
          portRange: "80-80",
          target: pool.selfLink ?? "",
        },
      },
      { retry: null },
    );
    const get = async () =>
      (
        await clients.forwardingRules.get(
          { project: PROJECT, region: REGION, forwardingRule: "fr-labels" },
          NO_RETRY,
        )
      )[0];
    const before = await get();
    expect(before.labels ?? {}).toEqual({});
    expect(before.labelFingerprint).toBeTruthy();
    const set = (labels: Record<string, string>, labelFingerprint: string | null | undefined) =>
      clients.forwardingRules.setLabels(
        {
          project: PROJECT,
          region: REGION,
          resource: "fr-labels",
          regionSetLabelsRequestResource: { labels, labelFingerprint: labelFingerprint ?? null },
        },
        { retry: null },
      );
    await set({ "fleet-ccm-spec-digest": "0123456789abcdef" }, before.labelFingerprint);
    const after = await get();
    expect(after.labels).toEqual({ "fleet-ccm-spec-digest": "0123456789abcdef" });
    expect(after.labelFingerprint).not.toBe(before.labelFingerprint);
    const stale = await set({ other: "x" }, before.labelFingerprint).catch((e: unknown) => e);
    expect((stale as { httpStatusCode?: number }).httpStatusCode).toBe(412);
    expect(reason(stale)).toBe("conditionNotMet");
    const bad = await set({ "Upper.Case": "x" }, after.labelFingerprint).catch((e: unknown) => e);
    expect((bad as { httpStatusCode?: number }).httpStatusCode).toBe(400);
    expect((await get()).labels).toEqual({ "fleet-ccm-spec-digest": "0123456789abcdef" });
    await clients.forwardingRules.delete(
      { project: PROJECT, region: REGION, forwardingRule: "fr-labels" },
      { retry: null },
    );
  });

  test("an EXTERNAL backend service takes a regional health check only; its rule needs an EXTERNAL backend service and a reserved IP", async () => {
    const base = `https://www.googleapis.com/compute/v1/projects/${PROJECT}`;
    const hc = { type: "HTTP", httpHealthCheck: { port: 10256, requestPath: "/healthz" } };
    await clients.healthChecks.insert(
      { project: PROJECT, healthCheckResource: { name: "global-hc", ...hc } },
      { retry: null },
    );
    await clients.regionHealthChecks.insert(
      { project: PROJECT, region: REGION, healthCheckResource: { name: "regional-hc", ...hc } },
      { retry: null },
    );
    const [regional] = await clients.regionHealthChecks.get(
      { project: PROJECT, region: REGION, healthCheck: "regional-hc" },
      NO_RETRY,
    );
    expect(regional.selfLink).toBe(`${base}/regions/${REGION}/healthChecks/regional-hc`);
    const bs = (name: string, link: string) =>
      clients.regionBackendServices.insert(
        {
          project: PROJECT,
          region: REGION,
          backendServiceResource: {
            name,
            loadBalancingScheme: "EXTERNAL",
            protocol: "TCP",
            healthChecks: [link],
          },
        },
        { retry: null },
      );
    await expect(bs("rbs-global", `${base}/global/healthChecks/global-hc`)).rejects.toThrow(
      /requires a regional health check/,
    );
    await bs("rbs-1", `${base}/regions/${REGION}/healthChecks/regional-hc`);
    const rule = (name: string, extra: Record<string, string>) =>
      clients.forwardingRules.insert(
        {
          project: PROJECT,
          region: REGION,
          forwardingRuleResource: {
            name,
            IPProtocol: "TCP",
            portRange: "80-80",
            backendService: `${base}/regions/${REGION}/backendServices/rbs-1`,
            ...extra,
          },
        },
        { retry: null },
      );
    await expect(rule("fr-int", { loadBalancingScheme: "INTERNAL" })).rejects.toThrow();
    await expect(
      rule("fr-unreserved", { loadBalancingScheme: "EXTERNAL", IPAddress: "34.9.9.9" }),
    ).rejects.toThrow(/not reserved/);
    await rule("fr-rbs", { loadBalancingScheme: "EXTERNAL" });
    // The check is in use by the backend service, the backend service by the rule.
    await expect(
      clients.regionHealthChecks.delete(
        { project: PROJECT, region: REGION, healthCheck: "regional-hc" },
        { retry: null },
      ),
    ).rejects.toThrow(/already being used/);
    await clients.forwardingRules.delete(
      { project: PROJECT, region: REGION, forwardingRule: "fr-rbs" },
      { retry: null },
    );
    await clients.regionBackendServices.delete(
      { project: PROJECT, region: REGION, backendService: "rbs-1" },
      { retry: null },
    );
    await clients.regionHealthChecks.delete(
      { project: PROJECT, region: REGION, healthCheck: "regional-hc" },
      { retry: null },
    );
    await clients.healthChecks.delete({ project: PROJECT, healthCheck: "global-hc" }, { retry: null });
    expect(fake.list(PROJECT, "healthChecks")).toEqual([]);
  });

  test("routes: insert, list filtered by network, delete", async () => {
    const network = `https://www.googleapis.com/compute/v1/projects/${PROJECT}/global/networks/default`;
    await clients.routes.insert(
      {
        project: PROJECT,
        routeResource: {
          name: "r-1",
          network,
          destRange: "10.1.0.0/24",
          priority: 1000,
          nextHopInstance: `projects/${PROJECT}/zones/${REGION}-a/instances/vm-0`,
          description: "k8s-node-route",
        },
      },
      { retry: null },
    );
    const [mine] = await clients.routes.list(
      { project: PROJECT, filter: `network = "${network}"` },
      NO_RETRY,
    );
    expect(mine.map((r) => r.name)).toEqual(["r-1"]);
    const [none] = await clients.routes.list({ project: PROJECT, filter: 'network = "elsewhere"' }, NO_RETRY);
    expect(none).toEqual([]);
    await clients.routes.delete({ project: PROJECT, route: "r-1" }, { retry: null });
  });
});

describe("faults", () => {
  test("throttling is 429 rateLimitExceeded with Retry-After and RetryInfo; 5xx is backendError", async () => {
    fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 3 }, PROJECT);
    const t = await clients.zones.list({ project: PROJECT }, NO_RETRY).catch((e: unknown) => e);
    expect((t as { httpStatusCode?: number }).httpStatusCode).toBe(429);
    expect(reason(t)).toBe("rateLimitExceeded");
    const details = (t as { statusDetails?: { retryDelay?: { seconds?: unknown } }[] }).statusDetails;
    expect(Number(details?.[0]?.retryDelay?.seconds)).toBe(3);
    fake.setFaults({ throttleRate: 0, errorRate: 1 }, PROJECT);
    const e = await clients.zones.list({ project: PROJECT }, NO_RETRY).catch((x: unknown) => x);
    expect([500, 503]).toContain((e as { httpStatusCode?: number }).httpStatusCode);
    expect(fake.log.requests({ operation: "zones.list" }).at(-1)?.fault).toMatch(/internal|unavailable/);
  });
});
