/**
 * The agent (as a process) against a real nats-server it cannot use: a wrong password is one
 * clear error line and a non-zero exit; an unreachable NATS is a warning naming the servers and
 * the flag, retried with backoff and summarized, and the agent connects by itself once NATS is
 * up.
 */
import type { ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

let fleet: LocalFleet;
let cluster: string;
const agents: ChildProcess[] = [];

beforeAll(async () => {
  fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger });
  cluster = [...fleet.clusters.keys()][0] ?? "";
  await fleet.startHub();
});

afterAll(async () => {
  for (const a of agents) a.kill("SIGKILL");
  await fleet?.stop();
});

/** True when nothing accepts a TCP connection on the loopback port. */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, "127.0.0.1");
    sock.once("connect", () => {
      sock.destroy();
      resolve(false);
    });
    sock.once("error", () => resolve(true));
  });
}

function parsed(lines: readonly string[]): { level?: number; msg: string; [k: string]: unknown }[] {
  return lines.map((l) => {
    try {
      return JSON.parse(l) as { msg: string };
    } catch {
      return { msg: l };
    }
  });
}

test("a wrong NATS password: one error line naming NATS, the server and the flags; exit 1; no stack", async () => {
  const output: string[] = [];
  const agent = fleet.spawnAgentProcess(cluster, {
    natsPassword: "not-the-password",
    output,
    natsAuthWaitMs: 0,
  });
  agents.push(agent);
  const code = await new Promise<number | null>((resolve) => agent.once("exit", (c) => resolve(c)));
  expect(code).toBe(1);
  const errors = parsed(output).filter((l) => (l.level ?? 50) >= 50);
  expect(errors).toHaveLength(1);
  const line = errors[0]?.msg ?? "";
  expect(line).toContain("NATS");
  expect(line).toContain(fleet.nats.url);
  expect(line).toContain("--nats-user");
  expect(line).toContain("--nats-password-file");
  expect(line).toContain("FLEET_CCM_NATS_PASSWORD");
  expect(output.join("\n")).not.toMatch(/\n\s+at /);
  expect(output.join("\n")).not.toContain("AuthorizationError:");
});

test("credentials refused at start are tried again for --nats-auth-wait-ms (a cluster the hub has not read yet), then exit 1", async () => {
  const output: string[] = [];
  const startedAt = Date.now();
  const agent = fleet.spawnAgentProcess(cluster, {
    natsPassword: "not-the-password-either",
    output,
    natsAuthWaitMs: 2500,
  });
  agents.push(agent);
  const code = await new Promise<number | null>((resolve) => agent.once("exit", (c) => resolve(c)));
  expect(code).toBe(1);
  expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2500);
  const lines = parsed(output);
  const waiting = lines.filter((l) => l.msg.includes("NATS accepting the agent's credentials"));
  // The first refusal is one warning (no line per try), saying what to check and why it waits.
  expect(waiting).toHaveLength(1);
  expect(waiting[0]?.level).toBe(40);
  expect(String(waiting[0]?.["check"])).toContain("--nats-password-file");
  expect(String(waiting[0]?.["check"])).toContain("--reload-interval");
  const errors = lines.filter((l) => (l.level ?? 50) >= 50);
  expect(errors).toHaveLength(1);
  expect(errors[0]?.msg).toContain("refused the agent's credentials");
  expect(output.join("\n")).not.toContain("not-the-password-either");
});

test("NATS down when the agent starts: warning naming the server and --nats, backoff, summary; connects when NATS is up", async () => {
  const output: string[] = [];
  const down = fleet.nats.restart(12_000);
  // The server is down once its port refuses connections.
  expect(await waitFor(() => refuses(fleet.nats.port), 10_000)).toBe(true);
  const agent = fleet.spawnAgentProcess(cluster, { output, logLevel: "info" });
  agents.push(agent);
  expect(
    await waitFor(() => parsed(output).some((l) => l.msg.includes("connecting to NATS failed")), 20_000),
  ).toBe(true);
  const warning = parsed(output).find((l) => l.msg.includes("connecting to NATS failed"));
  expect(warning?.msg).toContain("retrying with backoff");
  expect(warning?.["servers"]).toEqual([fleet.nats.url]);
  expect(String(warning?.["check"])).toContain("--nats");
  expect(agent.exitCode).toBeNull();
  await down;
  // Connects by itself, and the cluster works: a node joins and is initialized.
  expect(await waitFor(() => parsed(output).some((l) => l.msg === "connected to NATS"), 40_000)).toBe(true);
  // About ten seconds of retries: at most a first line and a summary, not a line per try.
  expect(parsed(output).filter((l) => l.msg.includes("connecting to NATS")).length).toBeLessThanOrEqual(2);
  expect(parsed(output).some((l) => l.msg === "connecting to NATS recovered")).toBe(true);
  fleet.addNodes(cluster, 1);
  expect(await waitFor(() => fleet.progress().initialized === 1, 30_000)).toBe(true);

  // NATS restarted under the running agent: it says so, reconnects, and the cluster still works.
  await fleet.nats.restart(3_000);
  expect(await waitFor(() => parsed(output).some((l) => l.msg === "reconnected to NATS"), 40_000)).toBe(true);
  expect(parsed(output).filter((l) => l.msg.startsWith("NATS connection lost")).length).toBeLessThanOrEqual(
    2,
  );
  fleet.addNodes(cluster, 1);
  expect(await waitFor(() => fleet.progress().initialized === 2, 30_000)).toBe(true);
});
