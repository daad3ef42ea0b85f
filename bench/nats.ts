// A real nats-server for the benchmark: the same per-user permissions as the local fleet, plus the
// monitoring port (/varz, /connz) so the bytes the hub publishes can be read from the server.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentInboxPrefix, clusterSubjectFilter } from "@fleet-ccm/proto";
import { findNatsServer, freePort, type NatsUser, natsConfig } from "@fleet-ccm/sim";
import { httpText, sleep } from "./util.js";

export interface BenchNats {
  readonly url: string;
  readonly port: number;
  readonly monitorUrl: string;
  readonly pid: number;
  /** Payload bytes the connection named `name` has published (nats-server's in_bytes); null if unknown. */
  publishedBytes(name: string): Promise<{ bytes: number; clientPort: number } | null>;
  stop(): Promise<void>;
}

export interface NatsIdentity {
  readonly cluster: string;
  readonly password: string;
}

export function natsUsers(hubPassword: string, agents: readonly NatsIdentity[]): NatsUser[] {
  return [
    { user: "hub", password: hubPassword, publish: ["fleet.v1.>"], subscribe: ["_INBOX_hub.>"] },
    ...agents.map((a) => ({
      user: `agent-${a.cluster}`,
      password: a.password,
      publish: [],
      subscribe: [clusterSubjectFilter(a.cluster), `${agentInboxPrefix(a.cluster)}.>`],
    })),
  ];
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ port, host: "127.0.0.1" }, () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

interface Connz {
  connections?: { name?: string; port?: number; in_bytes?: number }[];
}

export async function startBenchNats(users: readonly NatsUser[]): Promise<BenchNats> {
  const bin = findNatsServer();
  if (bin === undefined) throw new Error("nats-server not found: run `npm run setup`");
  const port = await freePort();
  const monitorPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-bench-nats-"));
  const conf = join(dir, "nats.conf");
  writeFileSync(conf, `${natsConfig(port, users)}http: "127.0.0.1:${monitorPort}"\n`, { mode: 0o600 });
  const child: ChildProcess = spawn(bin, ["-c", conf], { stdio: ["ignore", "ignore", "ignore"] });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  await waitForPort(port, 10_000);
  await waitForPort(monitorPort, 10_000);
  const monitorUrl = `http://127.0.0.1:${monitorPort}`;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorUrl,
    pid: child.pid ?? 0,
    async publishedBytes(name) {
      try {
        const connz = JSON.parse(await httpText(`${monitorUrl}/connz?limit=100000`)) as Connz;
        const c = connz.connections?.find((x) => x.name === name);
        return c === undefined ? null : { bytes: c.in_bytes ?? 0, clientPort: c.port ?? 0 };
      } catch {
        return null;
      }
    },
    async stop() {
      process.removeListener("exit", kill);
      if (child.exitCode === null) {
        const exited = new Promise<void>((r) => child.once("exit", () => r()));
        child.kill("SIGTERM");
        await Promise.race([exited, sleep(3000)]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
