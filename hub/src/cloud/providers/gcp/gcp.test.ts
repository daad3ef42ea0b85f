// The gcp provider's own behaviour against the fake Compute Engine: upstream's names and wire
// shapes, operations across passes and replicas, operations ending in error, tokens and keys.

import { GcpComputeFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import { InstanceNotFoundError, OperationFailedError, ThrottledError } from "../../errors.js";
import { type AccountBinding, type CloudProvider, isInProgress, type ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { gcpProvider } from "./index.js";
import { gceLoadBalancerName, gceRouteName } from "./names.js";

const PROJECT = "test-project";
const REGION = "us-central1";
let fake: GcpComputeFake;
let key: string;

beforeAll(async () => {
  fake = await GcpComputeFake.start({ spec: true });
  key = fake.createProject(PROJECT, { [REGION]: [`${REGION}-a`, `${REGION}-b`] }).key;
  for (const n of [0, 1, 2])
    fake.createInstance(PROJECT, { name: `node-${n}`, zone: `${REGION}-a`, tags: ["gke-node"] });
});

afterAll(async () => {
  fake.spec?.assertClean();
  await fake.close();
});

beforeEach(() => {
  fake.resetFaults();
  fake.operationMs = 0;
  fake.maxPageItems = 500;
});

const account = (secret: () => string = () => key): AccountBinding => ({
  name: "gcp",
  provider: "gcp",
  region: REGION,
  network: "default",
  endpoint: fake.url,
  credential: secret(),
  secret: () => secret(),
  requestTimeoutMs: 5_000,
});

async function bind(secret?: () => string): Promise<{ provider: CloudProvider; ops: string[] }> {
  return bindRecorded(gcpProvider, account(secret), { operationPollMs: 20 });
}

let uid = 0;
const target = (): ServiceTarget => ({
  cluster: "prod",
  network: "default",
  scope: {},
  // Upstream's name keeps 31 characters of the uid: these differ at the front.
  serviceUid: `${String(++uid).padStart(8, "0")}-0d4e-4f5a-8b9c-3f6a2b1c0d4e`,
});
const backends = [`${REGION}-a/node-0`, `${REGION}-a/node-1`];

describe("instances", () => {
  test("providerID, addresses in upstream's order, type, zone, region, state, tags", async () => {
    const i = fake.createInstance(PROJECT, {
      name: "web-1",
      zone: `${REGION}-b`,
      tags: ["web"],
      labels: { team: "a" },
      ipv6: true,
      machineType: "n2-standard-4",
    });
    const nic = (i.networkInterfaces as Record<string, unknown>[])[0] as {
      networkIP: string;
      accessConfigs: { natIP: string }[];
      ipv6Address: string;
    };
    const { provider } = await bind();
    const meta = await provider.instances.getByProviderID(`gce://${PROJECT}/${REGION}-b/web-1`);
    expect(meta).toMatchObject({
      instanceID: `${REGION}-b/web-1`,
      name: "web-1",
      instanceType: "n2-standard-4",
      zone: `${REGION}-b`,
      region: REGION,
      state: "running",
      network: "default",
      tags: { team: "a", "gce.tag/web": "" },
    });
    expect(meta.addresses).toEqual([
      { type: "InternalIP", address: nic.networkIP },
      { type: "ExternalIP", address: nic.accessConfigs[0]?.natIP },
      { type: "InternalIP", address: nic.ipv6Address },
    ]);
    fake.setInstanceStatus(PROJECT, `${REGION}-b`, "web-1", "TERMINATED");
    expect((await provider.instances.getByProviderID(meta.providerID)).state).toBe("stopped");
    // Upstream reports no shutdown at all; only the documented settled states are "stopped".
    // Transitions (and a host-error repair) are neither shut down nor gone.
    for (const [status, state] of [
      ["STOPPING", "unknown"],
      ["SUSPENDING", "unknown"],
      ["REPAIRING", "unknown"],
      ["STOPPED", "stopped"],
      ["SUSPENDED", "stopped"],
      ["TERMINATED", "stopped"],
      ["RUNNING", "running"],
    ] as const) {
      fake.setInstanceStatus(PROJECT, `${REGION}-b`, "web-1", status);
      expect([status, (await provider.instances.getByProviderID(meta.providerID)).state]).toEqual([
        status,
        state,
      ]);
    }
    fake.deleteInstance(PROJECT, `${REGION}-b`, "web-1");
    await expect(provider.instances.getByProviderID(meta.providerID)).rejects.toBeInstanceOf(
      InstanceNotFoundError,
    );
    // Another project's or region's providerID is not ours: no call.
    expect(provider.instances.parseProviderID(`gce://other/${REGION}-a/x`)).toBeUndefined();
    expect(provider.instances.parseProviderID(`gce://${PROJECT}/europe-west1-b/x`)).toBeUndefined();
  });
});

describe("load balancer names and shapes as upstream", () => {
  test("address, k8s-fw, the shared node health check and its firewall, target pool, forwarding rule", async () => {
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    expect(lbName).toBe(`a${t.serviceUid.replace(/-/g, "")}`.slice(0, 32));
    expect(lbName).toHaveLength(32);
    const { provider } = await bind();
    const spec = sampleLoadBalancerSpec(backends, {
      serviceName: "default/web",
      sourceRanges: ["10.0.0.0/8"],
    });
    const [ingress] = await settle(() => provider.loadBalancers!.ensure(t, spec));
    const named = (collection: string, name: string) =>
      fake.list(PROJECT, collection).find((r) => r.name === name);
    const address = named("addresses", lbName);
    expect(ingress).toEqual({ ip: address?.address });
    expect(address?.status).toBe("IN_USE");
    expect(JSON.parse(String(address?.description))).toMatchObject({
      "kubernetes.io/service-name": "default/web",
    });
    expect(named("firewalls", `k8s-fw-${lbName}`)).toMatchObject({
      sourceRanges: ["10.0.0.0/8"],
      targetTags: ["gke-node"],
      allowed: [{ IPProtocol: "tcp", ports: ["443", "80"] }],
      destinationRanges: [address?.address],
    });
    expect(named("httpHealthChecks", "k8s-prod-node")).toMatchObject({
      port: 10256,
      requestPath: "/healthz",
      checkIntervalSec: 8,
    });
    expect(named("firewalls", "k8s-prod-node-http-hc")).toMatchObject({
      allowed: [{ IPProtocol: "tcp", ports: ["10256"] }],
    });
    const pool = named("targetPools", lbName);
    expect(pool?.healthChecks).toEqual([expect.stringMatching(/\/global\/httpHealthChecks\/k8s-prod-node$/)]);
    expect(
      ((pool?.instances as string[] | undefined) ?? []).map((u) => u.replace(/^.*\/zones\//, "")),
    ).toEqual([`${REGION}-a/instances/node-0`, `${REGION}-a/instances/node-1`]);
    expect(named("forwardingRules", lbName)).toMatchObject({
      IPAddress: address?.address,
      IPProtocol: "TCP",
      portRange: "80-443",
    });
    await settle(() => provider.loadBalancers!.ensureDeleted(t));
    for (const c of ["addresses", "firewalls", "httpHealthChecks", "targetPools", "forwardingRules"])
      expect(
        fake
          .list(PROJECT, c)
          .filter((r) => String(r.name).includes(lbName) || String(r.name).startsWith("k8s-prod-node")),
      ).toEqual([]);
  });

  test("externalTrafficPolicy Local: a health check of the Service's own on healthCheckNodePort", async () => {
    const t = target();
    const lbName = gceLoadBalancerName(t.serviceUid);
    const { provider } = await bind();
    const spec = sampleLoadBalancerSpec(backends, {
      healthCheck: {
        protocol: "HTTP",
        port: 31999,
        path: "/healthz",
        intervalSeconds: 10,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 3,
      },
    });
    await settle(() => provider.loadBalancers!.ensure(t, spec));
    expect(fake.list(PROJECT, "httpHealthChecks").find((h) => h.name === lbName)).toMatchObject({
      port: 31999,
    });
    expect(fake.list(PROJECT, "firewalls").find((f) => f.name === `k8s-${lbName}-http-hc`)).toBeDefined();
    await settle(() => provider.loadBalancers!.ensureDeleted(t));
    expect(fake.list(PROJECT, "httpHealthChecks").find((h) => h.name === lbName)).toBeUndefined();
  });
});

describe("operations", () => {
  test("an operation outliving the pass: in progress, resumed by a new provider from the cloud, never inserted twice", async () => {
    fake.operationMs = 1_000;
    const t = target();
    const mark = fake.log.mark();
    const first = await bind();
    const answer = await first.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(backends));
    expect(isInProgress(answer)).toBe(true);
    // A restarted hub (a new provider, nothing in memory) finds the running operation.
    const second = await bind();
    const again = await second.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(backends));
    expect(isInProgress(again)).toBe(true);
    // It read the running operation from the cloud (the guard's aggregated listing, or the insert's own).
    expect(second.ops.some((op) => op.startsWith("operations."))).toBe(true);
    const [ingress] = await settle(() =>
      second.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(backends)),
    );
    expect(ingress?.ip).toBeDefined();
    expect(
      fake.log.requests({ operation: "addresses.insert", afterSeq: mark }).filter((r) => r.outcome === "200"),
    ).toHaveLength(1);
    await settle(() => second.provider.loadBalancers!.ensureDeleted(t));
  });

  test("a delete waits for its Service's running insert, found on a later page of the operations", async () => {
    // A page of one operation: the other Service's insert, issued first, fills the first page.
    fake.operationMs = 400;
    fake.maxPageItems = 1;
    const [other, mine] = [target(), target()];
    const { provider } = await bind();
    const lbs = provider.loadBalancers!;
    expect(isInProgress(await lbs.ensure(other, sampleLoadBalancerSpec(backends)))).toBe(true);
    // Operation names start with their millisecond: a later one sorts after.
    await new Promise((r) => setTimeout(r, 5));
    expect(isInProgress(await lbs.ensure(mine, sampleLoadBalancerSpec(backends)))).toBe(true);
    expect(fake.pendingOperations().map((o) => String(o.targetLink).split("/").pop())).toEqual([
      gceLoadBalancerName(other.serviceUid),
      gceLoadBalancerName(mine.serviceUid),
    ]);
    const deleted = await lbs.ensureDeleted(mine);
    expect(isInProgress(deleted) && deleted.message).toMatch(/insert/);
    await settle(() => lbs.ensureDeleted(mine));
    await new Promise((r) => setTimeout(r, 450));
    const left = (uid: string) =>
      fake.list(PROJECT, "addresses").filter((a) => a.name === gceLoadBalancerName(uid));
    expect(left(mine.serviceUid)).toEqual([]);
    expect(left(other.serviceUid)).toHaveLength(1);
    await settle(() => lbs.ensureDeleted(other));
    expect(left(other.serviceUid)).toEqual([]);
  });

  test("a delete pass reads the running operations of every scope in one aggregated listing", async () => {
    const t = target();
    const { provider } = await bind();
    const lbs = provider.loadBalancers!;
    await settle(() => lbs.ensure(t, sampleLoadBalancerSpec(backends)));
    const mark = fake.log.mark();
    await settle(() => lbs.ensureDeleted(t));
    const reads = fake.log.requests({ afterSeq: mark }).filter((r) => r.operation.includes("perations."));
    const statusFilter = (r: { query: string }) =>
      new URLSearchParams(r.query).get("filter")?.startsWith("status") === true;
    // The guard: one aggregated listing a pass, nothing listed per scope by status. (Each
    // resource's own delete still reads its latest operation, by its targetLink.)
    const guard = reads.filter(statusFilter);
    expect(guard.length).toBeGreaterThan(0);
    expect(guard.every((r) => r.operation === "globalOperations.aggregatedList")).toBe(true);
    expect(reads.filter((r) => !statusFilter(r)).every((r) => r.operation.endsWith("Operations.list"))).toBe(
      true,
    );
  });

  test("an operation ending in error: quota is throttling, another error OperationFailedError once, then a fresh build", async () => {
    const t = target();
    const { provider } = await bind();
    fake.failNextInserts(1);
    const quota = await settle(() =>
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(backends)),
    ).catch((e: unknown) => e);
    expect(String(quota)).toMatch(/QUOTA_EXCEEDED/);
    expect(quota).toBeInstanceOf(ThrottledError);
    fake.failNextInserts(1, { code: "INTERNAL_ERROR", message: "Internal error.", status: 500 });
    fake.operationMs = 100;
    const other = await bind();
    await expect(
      settle(() => other.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(backends))),
    ).rejects.toBeInstanceOf(OperationFailedError);
    const [ingress] = await settle(() => provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(backends)));
    expect(ingress?.ip).toBeDefined();
    await settle(() => provider.loadBalancers!.ensureDeleted(t));
  });
});

describe("credentials", () => {
  test("a token that expires mid-run is refreshed and the call repeated", async () => {
    const { provider } = await bind();
    await provider.instances.findByName("node-0");
    const issued = fake.tokensIssued;
    fake.expireTokens();
    expect((await provider.instances.findByName("node-0")).map((m) => m.name)).toEqual(["node-0"]);
    expect(fake.tokensIssued).toBe(issued + 1);
  });

  test("a rotated key file is used at once, without a new provider", async () => {
    let current = key;
    const { provider } = await bind(() => current);
    await provider.instances.findByName("node-1");
    current = fake.keyFile(PROJECT, true);
    fake.expireTokens();
    expect((await provider.instances.findByName("node-1")).map((m) => m.name)).toEqual(["node-1"]);
    key = current;
  });
});

describe("routes", () => {
  test("upstream's shape: <cluster>-<suffix>, k8s-node-route, priority 1000, nextHopInstance, in the cluster's network", async () => {
    const { provider } = await bind();
    const cluster = { cluster: "prod", network: "default", scope: {} };
    const route = await settle(() =>
      provider.routes!.create(cluster, {
        destinationCIDR: "10.64.1.0/24",
        targetInstanceID: `${REGION}-a/node-2`,
      }),
    );
    const name = gceRouteName("prod", "10.64.1.0/24", `${REGION}-a/node-2`);
    expect(route).toMatchObject({ id: name, ownerCluster: "prod" });
    expect(fake.list(PROJECT, "routes").find((r) => r.name === name)).toMatchObject({
      destRange: "10.64.1.0/24",
      priority: 1000,
      description: "k8s-node-route",
      nextHopInstance: expect.stringMatching(/\/zones\/us-central1-a\/instances\/node-2$/),
      network: expect.stringMatching(/\/global\/networks\/default$/),
    });
    // A route upstream made for this cluster (named after a node uid) is listed as owned.
    fake.put(PROJECT, "global", "routes", {
      name: "prod-0b0c2a4e-1111-4222-8333-444455556666",
      description: "k8s-node-route",
      network: "https://www.googleapis.com/compute/v1/projects/test-project/global/networks/default",
      destRange: "10.64.2.0/24",
      nextHopInstance:
        "https://www.googleapis.com/compute/v1/projects/test-project/zones/us-central1-a/instances/node-1",
    });
    const listed = await provider.routes!.list(cluster);
    expect(listed.find((r) => r.destinationCIDR === "10.64.2.0/24")).toMatchObject({
      ownerCluster: "prod",
      targetInstanceID: `${REGION}-a/node-1`,
    });
    await settle(() => provider.routes!.delete(cluster, route));
    expect(fake.list(PROJECT, "routes").find((r) => r.name === name)).toBeUndefined();
  });
});

describe("volumes", () => {
  test("a regional disk spans both replica zones; an in-tree pdName is found in the region's zones; a batch is one aggregated list", async () => {
    fake.createDisk(PROJECT, {
      name: "pvc-regional",
      sizeGb: 200,
      region: REGION,
      replicaZones: [`${REGION}-b`, `${REGION}-a`],
      users: [`${REGION}-a/node-0`],
    });
    fake.createDisk(PROJECT, { name: "pd-legacy", sizeGb: 10, zone: `${REGION}-b` });
    const { provider, ops } = await bind();
    const volumes = provider.volumes;
    if (volumes === undefined) throw new Error("gcp has volumes");
    const handle = `projects/${PROJECT}/regions/${REGION}/disks/pvc-regional`;
    expect(volumes.parseVolumeHandle("csi", "pd.csi.storage.gke.io", handle)).toEqual({ id: handle });
    expect(volumes.parseVolumeHandle("gcePersistentDisk", "", "pd-legacy")).toEqual({ id: "pd-legacy" });
    expect(
      volumes.parseVolumeHandle("csi", "pd.csi.storage.gke.io", "projects/x/zones/a/disks/UPPER"),
    ).toBeUndefined();
    expect(await volumes.get(handle)).toMatchObject({
      region: REGION,
      zones: [`${REGION}-a`, `${REGION}-b`],
      sizeGiB: 200,
      state: "in-use",
      attachedTo: `${REGION}-a/node-0`,
    });
    expect(await volumes.get("pd-legacy")).toMatchObject({
      id: "pd-legacy",
      zones: [`${REGION}-b`],
      state: "available",
    });
    ops.length = 0;
    const batch = await volumes.getMany([handle, "pd-legacy", "pd-gone"]);
    expect(batch.map((d) => d.id).sort()).toEqual([handle, "pd-legacy"].sort());
    expect(ops).toEqual(["disks.batch"]);
    // Another project's disk is another account's: not found, without a call.
    ops.length = 0;
    await expect(volumes.get(`projects/other/zones/${REGION}-a/disks/pvc-x`)).rejects.toThrow(/not found/i);
    expect(ops).toEqual([]);
  });
});
