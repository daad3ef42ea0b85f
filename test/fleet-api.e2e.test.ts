/**
 * The hub's fleet API against what a real fleet did: nats-server, gRPC, the Kubernetes API
 * simulator and the simulated cloud, no module of ours mocked.
 */

import type { ClusterDetailJson, FleetJson } from "@fleet-ccm/hub";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { type ApiFleet, GHOST, startApiFleet, waitFor } from "./fleet-api-fixture.js";

describe("the hub's fleet API", () => {
  let f: ApiFleet;

  beforeAll(async () => {
    f = await startApiFleet();
  });

  afterAll(async () => {
    await f?.stop();
  });

  test("401 without the API's token, with a wrong one and with a cluster's token", async () => {
    for (const path of ["/api/v1/fleet", "/api/v1/clusters/cluster-001"]) {
      expect((await f.get(path, null)).status).toBe(401);
      expect((await f.get(path, "wrong")).status).toBe(401);
      expect((await f.get(path, f.fleet.cluster("cluster-001").token)).status).toBe(401);
    }
    const res = await fetch(`${f.url}/api/v1/fleet`);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  test("the fleet view matches what the fleet did", async () => {
    const read = async () => (await f.get("/api/v1/fleet")).body as FleetJson;
    // The snapshot after the last patch may still be on its way.
    expect(
      await waitFor(async () => {
        const c = (await read()).clusters.find((x) => x.name === "cluster-001");
        return c?.nodes.initialized === 3 && c.services.ready === 2;
      }, 15_000),
    ).toBe(true);
    const fleet = await read();
    expect(fleet.counts.clusters).toBe(3);
    // Trouble first: the never-connected cluster, then the one with a waiting node.
    expect(fleet.clusters.map((c) => [c.name, c.health])).toEqual([
      ["cluster-003", "unhealthy"],
      ["cluster-002", "warning"],
      ["cluster-001", "ok"],
    ]);
    expect(fleet.health).toBe("unhealthy");
    const c1 = fleet.clusters.find((c) => c.name === "cluster-001");
    expect(c1?.agent).toMatchObject({ connected: true, kubernetesVersion: expect.stringMatching(/^v1\./) });
    expect(c1?.agent.agentVersion).not.toBe("");
    expect(c1?.agent.lastSnapshot).not.toBeNull();
    expect(c1?.nodes).toMatchObject({ total: 3, initialized: 3, waiting: 0 });
    // The simulator's default/kubernetes ClusterIP Service is no load balancer.
    expect(c1?.services).toEqual({ loadBalancers: 2, ready: 2, inProgress: 0, failing: 0 });
    const c3 = fleet.clusters.find((c) => c.name === "cluster-003");
    expect(c3?.agent.connected).toBe(false);
    expect(c3?.problems[0]?.message).toBe("agent never connected");

    const account = fleet.accounts[0];
    expect(account).toMatchObject({ name: "sim-main", provider: "simulated", rateLimit: { perSecond: 500 } });
    expect(account?.clusters).toEqual(["cluster-001", "cluster-002", "cluster-003"]);
    expect(account?.throttled.recent).toBe(0);
    expect(account?.cache.ageSeconds === null || (account?.cache.ageSeconds ?? -1) >= 0).toBe(true);
  });

  test("a node with no instance waits with InstanceNotFound, since when it was seen", async () => {
    const read = async () => (await f.get("/api/v1/clusters/cluster-002")).body as ClusterDetailJson;
    expect(
      await waitFor(async () => (await read()).nodeList.some((n) => n.reason === "InstanceNotFound"), 15_000),
    ).toBe(true);
    const c2 = await read();
    const ghost = c2.nodeList.find((n) => n.name === GHOST);
    expect(ghost).toMatchObject({ state: "waiting", reason: "InstanceNotFound" });
    expect(ghost?.message).toContain(GHOST);
    expect(Date.parse(ghost?.since ?? "")).toBeLessThanOrEqual(Date.now());
    expect(c2.nodes).toMatchObject({
      total: 2,
      initialized: 1,
      waiting: 1,
      waitingReasons: { InstanceNotFound: 1 },
    });
    // Every node the cluster's API server shows initialized, the API shows initialized.
    for (const n of f.fleet.nodes("cluster-002")) {
      const name = (n as { metadata: { name: string } }).metadata.name;
      expect(c2.nodeList.find((x) => x.name === name)?.state).toBe(
        name === GHOST ? "waiting" : "initialized",
      );
    }
    const c1 = (await f.get("/api/v1/clusters/cluster-001")).body as ClusterDetailJson;
    const ips = f.fleet
      .services("cluster-001")
      .flatMap((s) => (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip));
    expect(c1.loadBalancerList.flatMap((l) => l.ingress).sort()).toEqual(ips.sort());
    expect(c1.loadBalancerList.map((l) => l.state)).toEqual(["ready", "ready"]);
    for (const l of c1.loadBalancerList)
      expect(["EnsuredLoadBalancer", "UpdatedLoadBalancer"]).toContain(l.reason);
    expect((await f.get("/api/v1/clusters/nope")).status).toBe(404);
  });

  test("no secret in any response", async () => {
    const secrets = [
      f.token,
      f.fleet.hubNatsPassword,
      ...[...f.fleet.clusters.values()].flatMap((c) => [c.token, c.natsPassword]),
      // The cloud's API key, among the values of the hub's environment references.
      ...Object.values((f.fleet as unknown as { env: Record<string, string> }).env),
    ].filter((s) => s.length > 0);
    for (const path of [
      "/api/v1/fleet",
      "/api/v1/clusters/cluster-001",
      "/api/v1/clusters/cluster-002",
      "/ui/",
      "/ui/app.js",
    ]) {
      const { status, text } = await f.get(path);
      expect(status).toBe(200);
      for (const s of secrets) expect(text).not.toContain(s);
    }
  });

  test("a throttled account and a failing load balancer make their cluster unhealthy", async () => {
    const fleetView = async () => (await f.get("/api/v1/fleet")).body as FleetJson;
    f.fleet.cloud.setFaults({ throttleRate: 1 });
    f.fleet.addNodes("cluster-001", 1);
    expect(
      await waitFor(async () => ((await fleetView()).accounts[0]?.throttled.recent ?? 0) > 0, 15_000),
    ).toBe(true);
    const throttled = await fleetView();
    expect(throttled.accounts[0]?.health).toBe("unhealthy");
    expect(throttled.accounts[0]?.throttled.last).not.toBeNull();
    const c1 = throttled.clusters.find((c) => c.name === "cluster-001");
    expect(c1?.health).toBe("unhealthy");
    expect(c1?.problems.map((p) => p.message)).toContain("account sim-main throttled by the cloud");

    f.fleet.cloud.setFaults({ throttleRate: 0, errorRate: 1 });
    const [svc] = f.fleet.addServices("cluster-002", 1);
    const read = async () => (await f.get("/api/v1/clusters/cluster-002")).body as ClusterDetailJson;
    expect(
      await waitFor(async () => (await read()).loadBalancerList.some((l) => l.state === "failing"), 15_000),
    ).toBe(true);
    const lb = (await read()).loadBalancerList.find((l) => l.name === svc);
    expect(lb).toMatchObject({ state: "failing", reason: "SyncLoadBalancerFailed", ingress: [] });
    expect(lb?.message).toContain("Error syncing load balancer");
    expect((await read()).problems.map((p) => p.message)).toContain("1 load balancer failing");
    f.fleet.cloud.setFaults({ errorRate: 0 });
    // Once the cloud answers again the load balancer becomes ready, and the view says so.
    expect(
      await waitFor(
        async () => (await read()).loadBalancerList.find((l) => l.name === svc)?.state === "ready",
        20_000,
      ),
    ).toBe(true);
  });
});
