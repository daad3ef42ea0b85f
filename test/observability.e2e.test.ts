/**
 * deploy/observability against the hub's real /metrics: a hub process (the built CLI) with one
 * connected cluster and one without an agent, a node the cloud does not know (it waits), a load
 * balancer that becomes ready and one that fails once the cloud throttles every call. The scrape
 * passes `promtool check metrics`, shows the fleet-state gauges, and names every metric the
 * Grafana dashboard and the alerting rules use; `promtool check rules` and `promtool test rules`
 * accept the rules. promtool comes with the Debian package prometheus (npm run setup).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { kubeletNode } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parse, stringify } from "yaml";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { TEST_REPLICAS } from "./replicas-fixture.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIR = join(ROOT, "deploy/observability");
const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

function promtool(): string {
  for (const d of [...(process.env["PATH"] ?? "").split(delimiter), "/usr/bin"]) {
    const p = join(d, "promtool");
    if (d !== "" && existsSync(p)) return p;
  }
  throw new Error("promtool not found on PATH: install the Debian package prometheus (npm run setup)");
}

function run(args: readonly string[], input?: string): { status: number | null; out: string } {
  const r = spawnSync(promtool(), args, { cwd: DIR, input, encoding: "utf8", timeout: 30_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Metric families of a Prometheus text exposition (from its # TYPE lines). */
function families(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1] ?? ""));
}

/** The value of one sample, labels given in exposition order; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const l = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  const line = text.split("\n").find((x) => x.startsWith(l === "" ? `${name} ` : `${name}{${l}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** fleet_ccm_* and process metric names an expression reads, histogram series mapped to their family. */
function metricsIn(expr: string): string[] {
  const names = [...expr.matchAll(/\b((?:fleet_ccm|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1] ?? "");
  return names.map((n) => n.replace(/_(bucket|sum|count)$/, ""));
}

const TAINT = "node.cloudprovider.kubernetes.io/uninitialized";
let fleet: LocalFleet;
let httpPort = 0;
let scrape = "";
/** The scrape once converged, before the cloud throttles. */
let ready = "";

async function metrics(): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${httpPort}/metrics`);
  expect(r.status).toBe(200);
  return r.text();
}

beforeAll(async () => {
  // One hub replica (leases in JetStream), so the replica metrics are in the scrape too.
  fleet = await LocalFleet.start({
    clusters: 2,
    nodesPerCluster: 0,
    logger,
    convergeDeadlineMs: 2000,
    jetstream: true,
    hubConfig: { replicas: TEST_REPLICAS },
  });
  const hub = await fleet.spawnHubProcess();
  httpPort = hub.httpPort;
  const ok = await waitFor(
    async () => (await fetch(`http://127.0.0.1:${httpPort}/readyz`).catch(() => undefined))?.ok === true,
    20_000,
  );
  expect(ok).toBe(true);
  fleet.addNodes("cluster-001", 2);
  // Registered as kubelet does, but no such machine in the cloud: it keeps waiting.
  fleet.cluster("cluster-001").kube.create("Node", kubeletNode("ghost-node"));
  fleet.addServices("cluster-001", 1);
  await fleet.startAgent("cluster-001", hub.grpcPort);
  const converged = await waitFor(async () => {
    scrape = await metrics();
    return (
      sample(scrape, "fleet_ccm_load_balancers", { cluster: "cluster-001", state: "ready" }) === 1 &&
      sample(scrape, "fleet_ccm_nodes_waiting_initialization", { cluster: "cluster-001" }) === 1
    );
  }, 30_000);
  expect(converged).toBe(true);
  ready = scrape;
  expect(fleet.nodes("cluster-001").filter((n) => n.spec?.taints?.some((t) => t.key === TAINT))).toHaveLength(
    1,
  );
  // Every cloud call throttled from now on: a new load balancer fails its sync and backs off.
  fleet.cloud.setFaults({ throttleRate: 1 });
  fleet.addServices("cluster-001", 1);
  const failing = await waitFor(async () => {
    scrape = await metrics();
    return sample(scrape, "fleet_ccm_load_balancers", { cluster: "cluster-001", state: "failing" })! >= 1;
  }, 30_000);
  expect(failing).toBe(true);
}, 90_000);

afterAll(async () => {
  await fleet?.stop();
});

describe("the hub's /metrics", () => {
  test("promtool check metrics accepts it: it parses, and the hub's own series pass the lint", () => {
    // prom-client's default Node.js gauges nodejs_active_{handles,requests,resources}_total break
    // the "_total only on counters" lint; they are kept under their well-known names.
    const PROM_CLIENT_LINT =
      /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;
    for (const text of [ready, scrape]) {
      const r = run(["check", "metrics"], text);
      const problems = r.out.split("\n").filter((l) => l !== "" && !PROM_CLIENT_LINT.test(l));
      expect({ problems }).toEqual({ problems: [] });
      // 3: lint findings only (1 would be a parse error).
      expect([0, 3]).toContain(r.status);
    }
  });

  test("the fleet-state gauges show the agents, the waiting node and the load balancers", () => {
    expect(sample(scrape, "fleet_ccm_cluster_agent_connected", { cluster: "cluster-001" })).toBe(1);
    expect(sample(scrape, "fleet_ccm_cluster_agent_connected", { cluster: "cluster-002" })).toBe(0);
    expect(sample(scrape, "fleet_ccm_cluster_agent_disconnected_seconds", { cluster: "cluster-001" })).toBe(
      0,
    );
    expect(
      sample(scrape, "fleet_ccm_cluster_agent_disconnected_seconds", { cluster: "cluster-002" }),
    ).toBeGreaterThan(0);
    expect(sample(scrape, "fleet_ccm_nodes_waiting_initialization", { cluster: "cluster-001" })).toBe(1);
    expect(sample(scrape, "fleet_ccm_nodes_waiting_initialization", { cluster: "cluster-002" })).toBe(0);
    expect(
      sample(scrape, "fleet_ccm_nodes_waiting_initialization_oldest_seconds", { cluster: "cluster-001" }),
    ).toBeGreaterThan(0);
    expect(sample(ready, "fleet_ccm_load_balancers", { cluster: "cluster-001", state: "ready" })).toBe(1);
    expect(sample(ready, "fleet_ccm_load_balancers", { cluster: "cluster-001", state: "failing" })).toBe(0);
    expect(
      sample(scrape, "fleet_ccm_load_balancers", { cluster: "cluster-001", state: "failing" }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(scrape, "fleet_ccm_nodes_initialized_total")).toBe(2);
    // The replica holds the lease of the one cluster whose agent streams to it.
    expect(sample(scrape, "fleet_ccm_hub_owned_clusters")).toBe(1);
    expect(
      sample(scrape, "fleet_ccm_hub_lease_transitions_total", { event: "acquired", reason: "stream" }),
    ).toBe(1);
    expect(sample(scrape, "fleet_ccm_hub_lease_renew_failures_total")).toBe(0);
    const throttled = scrape
      .split("\n")
      .filter((l) => l.startsWith("fleet_ccm_cloud_calls_total{") && l.includes('outcome="throttled"'));
    expect(throttled.length).toBeGreaterThan(0);
  });
});

describe("deploy/observability/grafana-dashboard.json", () => {
  // biome-ignore lint/suspicious/noExplicitAny: the dashboard model is checked field by field.
  const dash = JSON.parse(readFileSync(join(DIR, "grafana-dashboard.json"), "utf8")) as Record<string, any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  const panels = dash["panels"] as Record<string, any>[];

  test("current schema, a Prometheus data-source variable every panel uses, built-in panel types only", () => {
    expect(dash["schemaVersion"]).toBeGreaterThanOrEqual(39);
    const ds = dash["templating"]["list"].find((v: { type: string }) => v.type === "datasource");
    expect(ds).toMatchObject({ name: "datasource", query: "prometheus" });
    for (const p of panels) {
      expect({ panel: p["title"], type: ["row", "timeseries", "stat"].includes(p["type"]) }).toEqual({
        panel: p["title"],
        type: true,
      });
      if (p["type"] === "row") continue;
      expect({ panel: p["title"], ds: p["datasource"] }).toEqual({
        panel: p["title"],
        ds: { type: "prometheus", uid: "$" + "{datasource}" },
      });
    }
    const ids = panels.map((p) => p["id"]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("every panel's expression is valid PromQL (promtool check rules on them as recording rules)", () => {
    const exprs = panels.flatMap((p) => (p["targets"] ?? []).map((t: { expr: string }) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const rules = exprs.map((e, i) => ({
      record: `dashboard:panel_${i}`,
      expr: e.replaceAll("$__rate_interval", "5m").replaceAll(/\$(cluster|job)\b/g, ".*"),
    }));
    const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-dashboard-"));
    try {
      const file = join(dir, "panels.yaml");
      writeFileSync(file, stringify({ groups: [{ name: "dashboard", rules }] }));
      const r = run(["check", "rules", file]);
      expect({ status: r.status, out: r.out }).toMatchObject({ status: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("every panel's expression reads metrics the hub exports", () => {
    const exported = families(scrape);
    const used = new Set<string>();
    for (const p of panels)
      for (const t of p["targets"] ?? []) {
        const names = metricsIn(t.expr as string);
        expect({ panel: p["title"], expr: t.expr, reads: names.length > 0 }).toMatchObject({ reads: true });
        for (const n of names) {
          used.add(n);
          expect({ panel: p["title"], metric: n, exported: exported.has(n) }).toEqual({
            panel: p["title"],
            metric: n,
            exported: true,
          });
        }
      }
    // The list: each of these is on the dashboard.
    for (const n of [
      "fleet_ccm_hub_streams_connected",
      "fleet_ccm_node_init_hub_overhead_seconds",
      "fleet_ccm_hub_queue_depth",
      "fleet_ccm_reconcile_duration_seconds",
      "fleet_ccm_cloud_calls_total",
      "fleet_ccm_lifecycle_node_deletions_total",
      "fleet_ccm_lifecycle_deletions_blocked_total",
      "fleet_ccm_load_balancers",
      "fleet_ccm_hub_owned_clusters",
      "fleet_ccm_hub_lease_transitions_total",
    ])
      expect(used).toContain(n);
  });
});

describe("deploy/observability/alerts.yaml", () => {
  test("promtool check rules and promtool test rules (alerts.test.yaml) pass", () => {
    const check = run(["check", "rules", "alerts.yaml"]);
    expect({ status: check.status, out: check.out }).toMatchObject({ status: 0 });
    const tests = run(["test", "rules", "alerts.test.yaml"]);
    expect({ status: tests.status, out: tests.out }).toMatchObject({ status: 0 });
  });

  test("every alert reads metrics the hub exports, and has severity, summary, description and a runbook in the README", () => {
    const exported = families(scrape);
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const rules = (
      parse(readFileSync(join(DIR, "alerts.yaml"), "utf8")) as {
        groups: {
          rules: {
            alert: string;
            expr: string;
            labels: Record<string, string>;
            annotations: Record<string, string>;
          }[];
        }[];
      }
    ).groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert).sort()).toEqual([
      "FleetCcmAgentDisconnected",
      "FleetCcmCloudAccountThrottled",
      "FleetCcmClusterMisbehaving",
      "FleetCcmDeletionsBlocked",
      "FleetCcmHubLeaseRenewalsFailing",
      "FleetCcmHubLeasesFenced",
      "FleetCcmLoadBalancerSyncFailing",
      "FleetCcmNodesWaitingForInitialization",
    ]);
    for (const r of rules) {
      for (const n of metricsIn(r.expr))
        expect({ alert: r.alert, metric: n, exported: exported.has(n) }).toEqual({
          alert: r.alert,
          metric: n,
          exported: true,
        });
      expect(["warning", "critical"]).toContain(r.labels["severity"]);
      expect(r.annotations["summary"]).toBeTruthy();
      expect(r.annotations["description"]).toBeTruthy();
      expect(r.annotations["runbook"]).toBe(`README.md#runbook-${r.alert.toLowerCase()}`);
      expect(readme).toContain(`#### Runbook: ${r.alert}`);
    }
  });
});
