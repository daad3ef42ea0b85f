/**
 * The demo as a user runs it: `fleet-ccm demo` writes a kubeconfig per simulated cluster, and
 * kubectl (the machine's, not ours) shows the initialized nodes, the load-balancer IPs and the
 * Events; the fleet page and `fleet-ccm status` it prints answer; Ctrl-C stops it and removes
 * the kubeconfigs and the API token.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "@jest/globals";
import { waitFor } from "../cli/src/local-fleet.js";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const KUBECTL = process.env["KUBECTL"] ?? "/usr/bin/kubectl";

test("kubectl sees the demo's initialized nodes, load-balancer IPs and Events", async () => {
  expect(existsSync(KUBECTL)).toBe(true);
  const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-demo-test-"));
  const demo = spawn(
    process.execPath,
    [CLI, "demo", "--clusters", "2", "--nodes", "3", "--services", "1", "--kubeconfig-dir", dir],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  demo.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  try {
    expect(await waitFor(() => out.includes("press Ctrl-C"), 60_000)).toBe(true);
    const kubeconfig = join(dir, "cluster-002.kubeconfig");
    expect(out).toContain(`kubectl --kubeconfig ${join(dir, "cluster-001.kubeconfig")} get nodes -o wide`);
    const kubectl = (...args: string[]) =>
      execFileSync(KUBECTL, ["--kubeconfig", kubeconfig, ...args], { encoding: "utf8" });

    const nodes = kubectl("get", "nodes", "-o", "wide", "--no-headers")
      .trim()
      .split("\n")
      .map((l) => l.split(/\s+/));
    expect(nodes).toHaveLength(3);
    for (const cols of nodes) {
      expect(cols[0]).toMatch(/^cluster-002-node-/);
      expect(cols[1]).toBe("Ready");
      expect(cols[5]).toMatch(/^\d+\.\d+\.\d+\.\d+$/); // INTERNAL-IP from the cloud
      expect(cols[6]).toMatch(/^\d+\.\d+\.\d+\.\d+$/); // EXTERNAL-IP from the cloud
    }
    const labels = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.labels}");
    expect(labels).toContain("topology.kubernetes.io/region");
    expect(labels).toContain("node.kubernetes.io/instance-type");
    expect(kubectl("get", "nodes", "-o", "jsonpath={.items[*].spec.taints}")).not.toContain("uninitialized");

    const svc = kubectl("get", "svc", "web-0000", "--no-headers").trim().split(/\s+/);
    expect(svc[1]).toBe("LoadBalancer");
    expect(svc[3]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    const events = kubectl("get", "events", "--no-headers");
    expect(events).toMatch(/Normal\s+Synced\s+node\/cluster-002-node-0000\s+Node synced successfully/);
    expect(events).toMatch(/Normal\s+EnsuredLoadBalancer\s+service\/web-0000/);
    // The happy path: the Service's nodes registered with it, not yet initialized, are available
    // nodes (upstream lists them), so no "There are no available nodes" Warning.
    expect(events).not.toContain("UnAvailableLoadBalancer");

    // The fleet page it prints, with the token in the fragment, and `fleet-ccm status` with the token file.
    const page = /fleet page: (http:\/\/127\.0\.0\.1:\d+\/ui\/)#token=(\S+)/.exec(out);
    expect(page).not.toBeNull();
    const [, pageUrl = "", token = ""] = page ?? [];
    expect((await fetch(pageUrl)).status).toBe(200);
    const api = new URL("/api/v1/fleet", pageUrl).toString();
    expect((await fetch(api)).status).toBe(401);
    const fleet = (await (await fetch(api, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      clusters: { name: string }[];
    };
    expect(fleet.clusters.map((c) => c.name).sort()).toEqual(["cluster-001", "cluster-002"]);
    // The status command it prints runs as printed from a shell anywhere (a clone's bin/ is on no
    // PATH): `node <the clone's bin>` and how to put it on PATH.
    const statusLine = /^ {2}(node \S+ status --hub \S+ --token-file (\S+))$/m.exec(out);
    expect(statusLine?.[2]).toBe(join(dir, "api-token"));
    expect(out).toMatch(
      /^ {2}\(to type "fleet-ccm" instead: sudo ln -s \S+\/bin\/fleet-ccm\.js \/usr\/local\/bin\/fleet-ccm\)$/m,
    );
    const printed = spawnSync("sh", ["-c", `${statusLine?.[1]} --json`], {
      cwd: tmpdir(),
      encoding: "utf8",
      env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin` },
    });
    expect(printed.stderr).toBe("");
    expect((JSON.parse(printed.stdout) as { clusters: unknown[] }).clusters).toHaveLength(2);
    // Where the hub's readiness is.
    const readyz = /hub readiness: curl -s (http:\/\/127\.0\.0\.1:\d+\/readyz)/.exec(out)?.[1] ?? "";
    const ready = await fetch(readyz);
    expect([ready.status, await ready.text()]).toEqual([200, "ok\n"]);
    // Exit 0 while healthy, 1 while anything is degraded (a busy machine can make an agent's
    // heartbeat late for a moment); either way the JSON describes the fleet.
    const run = spawnSync(
      process.execPath,
      [CLI, "status", "--hub", new URL(pageUrl).origin, "--token-file", join(dir, "api-token"), "--json"],
      { encoding: "utf8" },
    );
    expect({ exitedHealthyOrDegraded: run.status === 0 || run.status === 1, stderr: run.stderr }).toEqual({
      exitedHealthyOrDegraded: true,
      stderr: "",
    });
    const status = JSON.parse(run.stdout) as { clusters: unknown[]; health: string };
    expect(status.health === "ok").toBe(run.status === 0);
    expect(status.clusters).toHaveLength(2);
  } finally {
    const exited = new Promise<number | null>((resolve) => demo.once("exit", (code) => resolve(code)));
    demo.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(existsSync(join(dir, "cluster-001.kubeconfig"))).toBe(false);
    expect(existsSync(join(dir, "api-token"))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
