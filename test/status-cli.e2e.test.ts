/**
 * `fleet-ccm status` as a user runs it (the built CLI, its own process) against a running fleet's
 * hub: the JSON, the table when piped and on request in colour, the exit statuses, --watch.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ClusterDetailJson, FleetJson } from "@fleet-ccm/hub";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { type ApiFleet, GHOST, startApiFleet, waitFor } from "./fleet-api-fixture.js";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const ESC = "\x1b[";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;

/**
 * Runs the CLI with stdout a pipe, or with `tty` a terminal (util-linux `script` gives it a
 * pseudo-terminal); `until` ends it with SIGINT once its output satisfies it.
 */
function run(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  until?: (out: string) => boolean,
  tty = false,
): Promise<Run> {
  const argv = [CLI, "status", ...args];
  const [cmd, cmdArgs] = tty
    ? ["script", ["-qec", [process.execPath, ...argv].map(quote).join(" "), "/dev/null"]]
    : [process.execPath, argv];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, cmdArgs, {
      env: { PATH: process.env["PATH"], ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (until?.(stdout)) child.kill("SIGINT");
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("fleet-ccm status", () => {
  let f: ApiFleet;
  let base: string[];

  beforeAll(async () => {
    f = await startApiFleet();
    base = ["--hub", f.url, "--token-file", f.tokenFile];
    // The reports after the last patches, and the ghost node's Event, are in the hub's view.
    await waitFor(async () => {
      const c2 = (await f.get("/api/v1/clusters/cluster-002")).body as ClusterDetailJson;
      const fleet = (await f.get("/api/v1/fleet")).body as FleetJson;
      return (
        c2.nodeList.some((n) => n.reason === "InstanceNotFound") &&
        fleet.clusters.some(
          (c) => c.name === "cluster-001" && c.nodes.initialized === 3 && c.services.ready === 2,
        )
      );
    }, 15_000);
  });

  afterAll(async () => {
    await f?.stop();
  });

  test("--json is the API's document; exit 1 while a cluster is unhealthy", async () => {
    const r = await run([...base, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout) as FleetJson;
    const api = (await f.get("/api/v1/fleet")).body as FleetJson;
    expect(doc.clusters.map((c) => [c.name, c.health])).toEqual(api.clusters.map((c) => [c.name, c.health]));
    expect(doc.clusters[0]?.name).toBe("cluster-003");
  });

  test("piped: a plain table, trouble first; --color always paints it", async () => {
    const r = await run(base);
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain(ESC);
    const rows = r.stdout.split("\n").filter((l) => l.startsWith("cluster-"));
    expect(rows.map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ["cluster-003", "unhealthy"],
      ["cluster-002", "warning"],
      ["cluster-001", "ok"],
    ]);
    expect(rows[0]).toContain("agent never connected");
    expect(rows[1]).toContain("InstanceNotFound:1");
    expect(rows[2]).toMatch(/cluster-001\s+ok\s+up \S+\s+3\/3\s+0\s+2\/2\s+0/);
    expect(r.stdout).toMatch(/sim-main\s+ok\s+[\d.]+\s+500\s/);
    const coloured = await run([...base, "--color", "always"]);
    expect(coloured.stdout).toContain(`${ESC}31;1munhealthy`);
    expect(coloured.stdout).toContain(`${ESC}32mok`);
    // NO_COLOR and a pipe both keep auto plain.
    expect((await run(base, { NO_COLOR: "1" })).stdout).not.toContain(ESC);
  });

  test("--cluster: its nodes and load balancers with their reasons; exit 0 when healthy", async () => {
    const ok = await run([...base, "--cluster", "cluster-001"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout.match(/^cluster-001-\S+\s+initialized/gm)).toHaveLength(3);
    expect(ok.stdout.match(/^default\/web-\d+\s+ready\s+\d+\.\d+\.\d+\.\d+/gm)).toHaveLength(2);
    const waiting = await run([...base, "--cluster", "cluster-002", "--json"]);
    expect(waiting.code).toBe(0);
    const c2 = JSON.parse(waiting.stdout) as ClusterDetailJson;
    expect(c2.nodeList.find((n) => n.name === GHOST)).toMatchObject({
      state: "waiting",
      reason: "InstanceNotFound",
    });
    const table = await run([...base, "--cluster", "cluster-002"]);
    expect(table.stdout).toMatch(new RegExp(`^${GHOST}\\s+waiting\\s+\\S+\\s+InstanceNotFound`, "m"));
    expect((await run([...base, "--cluster", "cluster-003"])).code).toBe(1);
    const missing = await run([...base, "--cluster", "nope"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('no cluster "nope"');
  });

  test("a wrong token, no token, an unreachable hub", async () => {
    const wrong = join(f.dir, "wrong-token");
    writeFileSync(wrong, "not-the-token\n");
    const refused = await run(["--hub", f.url, "--token-file", wrong]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("refused the token (401)");
    expect(refused.stderr).not.toContain("not-the-token");
    const none = await run(["--hub", f.url]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--token-file");
    expect((await run(["--hub", f.url], { FLEET_CCM_API_TOKEN: f.token, NO_COLOR: "1" })).code).toBe(1);
    const down = await run(["--hub", "http://127.0.0.1:1", "--token-file", f.tokenFile]);
    expect(down.code).toBe(3);
    expect(down.stderr).toContain("cannot reach");
  });

  test("on a terminal: colour, and --watch redraws in place", async () => {
    const r = await run(base, {}, undefined, true);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${ESC}31;1munhealthy`);
    expect((await run(base, { NO_COLOR: "1" }, undefined, true)).stdout).not.toContain(ESC);
    const redraw = `${ESC}H${ESC}2J`;
    const w = await run(
      [...base, "--watch", "--interval", "1"],
      {},
      (out) => out.split(redraw).length > 2,
      true,
    );
    expect(w.stdout.split(redraw).length).toBeGreaterThan(2);
  });

  test("--watch refreshes until interrupted; its exit status is the last refresh's", async () => {
    const frames = (out: string) => out.split("FLEET ").length - 1;
    const r = await run([...base, "--watch", "--interval", "1"], {}, (out) => frames(out) >= 2);
    expect(frames(r.stdout)).toBeGreaterThanOrEqual(2);
    expect(r.stdout).not.toContain(ESC);
    expect(r.code).toBe(1);
    const ok = await run(
      [...base, "--watch", "--json", "--interval", "1", "--cluster", "cluster-001"],
      {},
      (out) => out.split("\n").filter((l) => l.startsWith("{")).length >= 2,
    );
    expect(ok.code).toBe(0);
    for (const line of ok.stdout.trim().split("\n"))
      expect((JSON.parse(line) as ClusterDetailJson).name).toBe("cluster-001");
  });
});
