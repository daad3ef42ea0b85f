/**
 * Least privilege, enforced: every cluster's API server simulator authorizes the agent's
 * requests against the ClusterRole shipped in deploy/agent/rbac.yaml (no `services: patch`).
 * Node initialization, addresses, routes' NetworkUnavailable, the load-balancer finalizer and
 * ingress, the finalizer's removal, node deletion and Events all work under it; the same fleet
 * under a role without `services/status` gets 403s, so the check is real.
 */
import { readFileSync } from "node:fs";
import type { KubePolicyRule } from "@fleet-ccm/sim";
import { afterEach, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseAllDocuments } from "yaml";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const USER = "system:serviceaccount:fleet-ccm-system:fleet-ccm-agent";
const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

function shippedRules(): KubePolicyRule[] {
  const docs = parseAllDocuments(readFileSync(new URL("../deploy/agent/rbac.yaml", import.meta.url), "utf8"));
  const role = docs.map((d) => d.toJS()).find((o) => o?.kind === "ClusterRole");
  return role.rules as KubePolicyRule[];
}

let fleet: LocalFleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

async function applyOutcomes(f: LocalFleet, outcome: string): Promise<number> {
  const m = await f.hub?.metrics.applyResults.get();
  return (m?.values ?? []).filter((v) => v.labels.outcome === outcome).reduce((a, v) => a + v.value, 0);
}

test("the agent does all its work under the shipped ClusterRole", async () => {
  const rules = shippedRules();
  expect(rules.some((r) => r.resources?.includes("services") && r.verbs.includes("patch"))).toBe(false);
  const f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    configureCloudRoutes: true,
    kubeRbac: { user: USER, rules },
    hubConfig: {
      routes: { periodMs: 300, maxConcurrentPerAccount: 4 },
      lifecycle: { monitorPeriodMs: 100, deleteAfterChecks: 2, deleteAfterMs: 300 },
    },
  });
  fleet = f;
  await f.startHub();
  await f.startAgents();
  const c = [...f.clusters.keys()][0] ?? "";
  const kube = f.cluster(c).kube;

  // The main resource is read-only to the agent, with the API server's wording.
  const [probe] = f.addServices(c, 1);
  const res = await fetch(`${kube.url}/api/v1/namespaces/default/services/${probe}`, {
    method: "PATCH",
    headers: { "content-type": "application/merge-patch+json" },
    body: JSON.stringify({ metadata: { finalizers: [FINALIZER] } }),
  });
  expect(res.status).toBe(403);
  expect(((await res.json()) as { message: string }).message).toBe(
    `services "${probe}" is forbidden: User "${USER}" cannot patch resource "services" in API group "" in the namespace "default"`,
  );

  const [gone, stays] = f.addNodes(c, 2);
  expect(await waitFor(() => f.progress().initialized === 2, 20_000)).toBe(true);
  [gone, stays].forEach((n, i) => {
    kube.patch("Node", undefined, n ?? "", "merge", {
      spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
    });
  });
  const svc = () => f.services(c).find((s) => s.metadata?.name === probe);
  expect(
    await waitFor(
      () =>
        (svc()?.metadata?.finalizers ?? []).includes(FINALIZER) &&
        (svc()?.status?.loadBalancer?.ingress ?? []).length === 1,
      30_000,
    ),
  ).toBe(true);
  const networkReady = (name: string) =>
    (
      (kube.get("Node", undefined, name) as { status?: { conditions?: { type: string; status: string }[] } })
        ?.status?.conditions ?? []
    ).some((x) => x.type === "NetworkUnavailable" && x.status === "False");
  expect(await waitFor(() => networkReady(gone ?? "") && networkReady(stays ?? ""), 20_000)).toBe(true);

  // Deleting the Service: the load balancer goes, then the agent removes the finalizer.
  kube.delete("Service", "default", probe ?? "");
  expect(await waitFor(() => svc() === undefined, 30_000)).toBe(true);

  // A terminated instance: the agent deletes its Node and records the Event.
  const inst = f.cloud.listInstances().find((x) => x.name === gone && x.state !== "terminated");
  f.cloud.terminateInstance(inst?.id ?? "");
  kube.patch(
    "Node",
    undefined,
    gone ?? "",
    "strategic",
    { status: { conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady", message: "" }] } },
    "status",
  );
  expect(await waitFor(() => kube.get("Node", undefined, gone ?? "") === undefined, 20_000)).toBe(true);
  const reasons = (kube.list("Event") as { reason?: string }[]).map((e) => e.reason);
  expect(reasons).toContain("DeletingNode");
  expect(reasons).toContain("EnsuredLoadBalancer");
  expect(await applyOutcomes(f, "APPLY_OUTCOME_FAILED")).toBe(0);
}, 120_000);

test("without services/status the finalizer and ingress are refused (403): the check is enforced", async () => {
  const rules = shippedRules().filter((r) => !r.resources?.includes("services/status"));
  const f = await LocalFleet.start({
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    kubeRbac: { user: USER, rules },
  });
  fleet = f;
  await f.startHub();
  await f.startAgents();
  const c = [...f.clusters.keys()][0] ?? "";
  f.addNodes(c, 1);
  const [name] = f.addServices(c, 1);
  expect(await waitFor(async () => (await applyOutcomes(f, "APPLY_OUTCOME_FAILED")) > 0, 30_000)).toBe(true);
  const s = f.services(c).find((x) => x.metadata?.name === name);
  expect(s?.metadata?.finalizers ?? []).not.toContain(FINALIZER);
  expect(s?.status?.loadBalancer?.ingress ?? []).toEqual([]);
}, 60_000);
