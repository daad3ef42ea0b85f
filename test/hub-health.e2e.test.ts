/**
 * The hub's own health in the fleet API, `fleet-ccm status` and the page, with a real
 * nats-server killed under a running fleet: the hub says NATS is down first, no cluster is `ok`
 * while its results cannot be delivered, and a Service created meanwhile says why it waits.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ClusterAnswerJson, FleetJson } from "@fleet-ccm/hub";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet } from "../cli/src/local-fleet.js";
import { type ApiFleet, startApiFleet, waitFor } from "./fleet-api-fixture.js";
import { TEST_REPLICAS } from "./replicas-fixture.js";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";

function run(
  cmd: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { PATH: process.env["PATH"] }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const status = (f: ApiFleet, ...args: string[]) =>
  run(process.execPath, [CLI, "status", "--hub", f.url, "--token-file", f.tokenFile, ...args]);

describe("the hub's own health, NATS killed under a running fleet", () => {
  let f: ApiFleet;
  const fleetView = async () => (await f.get("/api/v1/fleet")).body as FleetJson;

  beforeAll(async () => {
    f = await startApiFleet();
  });

  afterAll(async () => {
    await f?.stop();
  });

  test("healthy: the hub section comes first and says NATS connected, gRPC listening, no replicas", async () => {
    const fleet = await fleetView();
    expect(Object.keys(fleet).slice(0, 2)).toEqual(["generatedAt", "hub"]);
    expect(fleet.hub).toMatchObject({
      health: "ok",
      problems: [],
      nats: { connected: true, problem: null },
      grpc: { listening: true },
      leases: null,
    });
    expect(fleet.clusters.find((c) => c.name === "cluster-001")?.health).toBe("ok");
    const r = await status(f);
    expect(r.stdout.split("\n")[0]).toMatch(
      /^HUB ok {2}NATS connected \S+ · gRPC listening on \S+ · no replicas$/,
    );
  });

  test("NATS down: the hub is unhealthy first, no cluster is ok, a new Service says why it waits; all recovers", async () => {
    const pid = f.fleet.nats.pid();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, "SIGKILL");
    try {
      expect(await waitFor(async () => !(await fleetView()).hub.nats.connected, 15_000)).toBe(true);
      const [svc] = f.fleet.addServices("cluster-001", 1);
      const detail = async () => (await f.get("/api/v1/clusters/cluster-001")).body as ClusterAnswerJson;
      // The hub has ensured the load balancer; its status waits for NATS.
      expect(await waitFor(async () => (await fleetView()).hub.nats.kept > 0, 20_000)).toBe(true);
      const fleet = await fleetView();
      expect(fleet.hub.health).toBe("unhealthy");
      expect(fleet.hub.problems[0]?.message).toMatch(/^NATS: /);
      expect(fleet.hub.nats.problem).toContain(f.fleet.nats.url.replace(/^nats:\/\//, ""));
      expect(fleet.health).toBe("unhealthy");
      for (const c of fleet.clusters) {
        expect(c.health).not.toBe("ok");
        expect(c.problems.map((p) => p.message).join("\n")).toMatch(
          /results cannot reach the agent \(NATS: /,
        );
      }
      const lb = (await detail()).loadBalancerList.find((l) => l.name === svc);
      expect(lb).toMatchObject({ state: "in-progress", reason: "ResultsUndeliverable" });
      expect(lb?.message).toMatch(
        /^results cannot reach the agent \(NATS: .*\); \d+ results? kept for delivery$/,
      );
      expect((await detail()).hub.health).toBe("unhealthy");

      // `fleet-ccm status`: the hub's line first, exit 1; --json carries the same section.
      const text = await status(f);
      expect(text.code).toBe(1);
      const lines = text.stdout.split("\n");
      expect(lines[0]).toMatch(
        /^HUB unhealthy {2}NATS down \S+ \(\d+ results kept\) · gRPC listening on \S+ · no replicas$/,
      );
      expect(lines[1]).toMatch(/^! NATS: /);
      expect(text.stdout).toMatch(/^cluster-001\s+unhealthy\s.*results cannot reach the agent/m);
      const json = await status(f, "--json");
      expect(json.code).toBe(1);
      expect((JSON.parse(json.stdout) as FleetJson).hub.nats.connected).toBe(false);
      const one = await status(f, "--cluster", "cluster-001");
      expect(one.code).toBe(1);
      expect(one.stdout.split("\n")[0]).toMatch(/^HUB unhealthy/);
      expect(one.stdout).toMatch(
        new RegExp(`^default/${svc}\\s+in-progress\\s+-\\s+ResultsUndeliverable: results cannot reach`, "m"),
      );

      // The page: the hub's section above the clusters, unhealthy, with the NATS problem.
      const page = await run(CHROMIUM, [
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--virtual-time-budget=4000",
        "--dump-dom",
        `${f.url}/ui/#cluster=cluster-001&token=${encodeURIComponent(f.token)}`,
      ]);
      expect(page.code).toBe(0);
      const dom = page.stdout;
      expect(dom).toMatch(/<section id="hub" data-health="unhealthy">/);
      expect(dom.indexOf('id="hub"')).toBeLessThan(dom.indexOf('id="grid"'));
      expect(dom).toMatch(
        /id="hub-parts">NATS down for \S+, \d+ results kept for delivery · gRPC listening on/,
      );
      expect(dom).toMatch(/<ul id="hub-problems"[^>]*><li data-health="unhealthy">NATS: /);
      expect(dom).toMatch(/ResultsUndeliverable<div class="dim">results cannot reach the agent/);
    } finally {
      await f.fleet.nats.restart();
    }
    // NATS back: the hub is ok again and the Service gets its ingress.
    expect(
      await waitFor(async () => {
        const v = await fleetView();
        const c1 = v.clusters.find((c) => c.name === "cluster-001");
        return (
          v.hub.health === "ok" && c1?.health === "ok" && c1.services.ready === c1.services.loadBalancers
        );
      }, 40_000),
    ).toBe(true);
  });
});

describe("the hub's own health with hub replicas: the lease store", () => {
  test("reachable: leases ok; NATS (and its JetStream) killed: leases failing with the reason; back: ok", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-health-replicas-"));
    const token = randomBytes(24).toString("base64url");
    writeFileSync(join(dir, "api-token"), token, { mode: 0o600 });
    const fleet = await LocalFleet.start({
      clusters: 1,
      nodesPerCluster: 0,
      logger: pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" }),
      jetstream: true,
      hubConfig: {
        replicas: TEST_REPLICAS,
        api: { listen: "127.0.0.1:0", token: { file: join(dir, "api-token") } },
      },
    });
    try {
      const hub = await fleet.startHub();
      const read = async () =>
        (await (
          await fetch(`http://127.0.0.1:${hub.apiPort()}/api/v1/fleet`, {
            headers: { authorization: `Bearer ${token}` },
          })
        ).json()) as FleetJson;
      expect(await waitFor(async () => (await read()).hub.leases?.ok === true, 20_000)).toBe(true);
      expect((await read()).hub.leases).toEqual({ ok: true, problem: null });
      process.kill(fleet.nats.pid(), "SIGKILL");
      try {
        expect(await waitFor(async () => (await read()).hub.leases?.ok === false, 15_000)).toBe(true);
        const down = (await read()).hub;
        expect(down.health).toBe("unhealthy");
        expect(down.leases?.problem).toContain("NATS");
        expect(down.problems.map((p) => p.message)).toContain(`leases: ${down.leases?.problem}`);
      } finally {
        await fleet.nats.restart();
      }
      expect(await waitFor(async () => (await read()).hub.leases?.ok === true, 30_000)).toBe(true);
    } finally {
      await fleet.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("NATS up but refusing one cluster's subject to the hub", () => {
  test("that cluster is unhealthy with the refusal, its waiting nodes say why; the other is ok", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-health-refused-"));
    const token = randomBytes(24).toString("base64url");
    writeFileSync(join(dir, "api-token"), token, { mode: 0o600 });
    const fleet = await LocalFleet.start({
      clusters: 2,
      nodesPerCluster: 0,
      logger: pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" }),
      hubNatsPublish: ["fleet.v1.cluster-001.>"],
      hubConfig: { api: { listen: "127.0.0.1:0", token: { file: join(dir, "api-token") } } },
    });
    try {
      const hub = await fleet.startHub();
      await fleet.startAgents();
      fleet.addNodes("cluster-001", 1);
      const [stuck] = fleet.addNodes("cluster-002", 1);
      const read = async () =>
        (await (
          await fetch(`http://127.0.0.1:${hub.apiPort()}/api/v1/fleet`, {
            headers: { authorization: `Bearer ${token}` },
          })
        ).json()) as FleetJson;
      const refusedCluster = async () => (await read()).clusters.find((c) => c.name === "cluster-002");
      expect(
        await waitFor(
          async () =>
            (await refusedCluster())?.problems.some((p) => p.message.includes("was refused")) === true,
          20_000,
        ),
      ).toBe(true);
      const fleetView = await read();
      expect(fleetView.hub.nats.connected).toBe(true);
      const c2 = fleetView.clusters.find((c) => c.name === "cluster-002");
      expect(c2?.health).toBe("unhealthy");
      expect(c2?.problems.map((p) => p.message)).toContain(
        "results cannot reach the agent (NATS: the hub's publish to fleet.v1.cluster-002.desired was refused (permissions violation): its NATS user must be allowed to publish fleet.v1.>)",
      );
      const detail = (await (
        await fetch(`http://127.0.0.1:${hub.apiPort()}/api/v1/clusters/cluster-002`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).json()) as ClusterAnswerJson;
      expect(detail.nodeList.find((n) => n.name === stuck)).toMatchObject({
        state: "waiting",
        reason: "ResultsUndeliverable",
      });
      expect(
        await waitFor(
          async () => (await read()).clusters.find((c) => c.name === "cluster-001")?.health === "ok",
          20_000,
        ),
      ).toBe(true);
    } finally {
      await fleet.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
