/**
 * The demo's start-up progress: one line updated in place on stderr when it is a terminal (a
 * real pseudo-terminal, via util-linux `script`), nothing when piped, plain lines when piped
 * with --verbose; stdout (--json) is the same in every case.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "@jest/globals";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const SCRIPT = "/usr/bin/script";
const ARGS = ["demo", "--clusters", "1", "--nodes", "2", "--exit-when-converged", "--json"];
const CLEAR_LINE = "\r\x1b[2K";

function demo(extra: readonly string[] = []): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...ARGS, ...extra], { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function summaryOf(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split(/\r?\n/);
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? "") as Record<string, unknown>;
}

describe("fleet-ccm demo progress", () => {
  const dirs: string[] = [];

  test("piped: nothing on stderr but the logs, one JSON summary on stdout", () => {
    const r = demo();
    expect(r.status).toBe(0);
    const summary = summaryOf(r.stdout);
    expect(summary).toMatchObject({
      clusters: 1,
      nodes: 2,
      nodesInitialized: 2,
      converged: true,
      readyz: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/readyz$/),
    });
    dirs.push(String(summary["kubeconfigDir"]));
    expect(r.stderr).not.toContain("initialized");
    expect(r.stderr).not.toContain("\r");
  });

  test("piped with --verbose: plain progress lines on stderr, no control characters; stdout unchanged", () => {
    const r = demo(["--verbose"]);
    expect(r.status).toBe(0);
    const summary = summaryOf(r.stdout);
    expect(summary).toMatchObject({ nodesInitialized: 2, converged: true });
    dirs.push(String(summary["kubeconfigDir"]));
    const lines = r.stderr.split("\n");
    expect(lines).toContain("starting 1 agents");
    expect(lines).toContain("initialized 2/2 nodes");
    expect(lines).toContain("converged");
    expect(r.stderr).not.toContain("\r");
    expect(r.stderr).not.toContain("\x1b");
  });

  test("the default kubeconfig folder is each run's own, in the temporary directory, and goes with it", () => {
    expect(dirs).toHaveLength(2);
    for (const d of dirs) {
      expect(d.startsWith(`${tmpdir()}/fleet-ccm-demo-`)).toBe(true);
      expect(existsSync(d)).toBe(false);
    }
    expect(dirs[0]).not.toBe(dirs[1]);
  });

  test("on a terminal: the status line is rewritten in place and cleared before the summary", () => {
    expect(existsSync(SCRIPT)).toBe(true);
    const cmd = [process.execPath, CLI, ...ARGS].map((a) => `'${a}'`).join(" ");
    const r = spawnSync(SCRIPT, ["-q", "-e", "-c", cmd, "/dev/null"], { encoding: "utf8", timeout: 60_000 });
    expect(r.status).toBe(0);
    const out = r.stdout;
    expect(out).toContain(`${CLEAR_LINE}starting 1 agents (`);
    expect(out.split(CLEAR_LINE).some((l) => /^initialized 2\/2 nodes \(\d+\.\d s\)$/.test(l))).toBe(true);
    // The summary starts on a cleared line, alone.
    const json = out.slice(out.lastIndexOf(CLEAR_LINE) + CLEAR_LINE.length);
    expect(summaryOf(json)).toMatchObject({ nodesInitialized: 2, converged: true });
  });
});
