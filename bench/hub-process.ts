// The hub as its own process, started through the CLI exactly as in production
// (`fleet-ccm hub --config FILE`), with its secrets as {env: NAME} references.

import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@fleet-ccm/sim";
import {
  cpuSeconds,
  httpText,
  parsePrometheus,
  peakRssBytes,
  type Sample,
  terminate,
  until,
} from "./util.js";

export const ACCOUNT = "sim-main";
export const REGION = "sim-east-1";
export const CLI_BIN = fileURLToPath(new URL("../../bin/fleet-ccm.js", import.meta.url));

export interface ClusterSecret {
  readonly cluster: string;
  readonly token: string;
}

export interface HubSettings {
  readonly natsUrl: string;
  readonly natsPassword: string;
  readonly cloudUrl: string;
  readonly cloudKey: string;
  readonly clusters: readonly ClusterSecret[];
  readonly workers: number;
  readonly rateLimitPerSecond: number;
  readonly convergeDeadlineMs: number;
  /** Absent: the hub's default. */
  readonly heartbeatIntervalMs?: number;
  readonly refresh?: { periodMs: number; cacheScope: "account" | "cluster" };
  readonly lifecycle?: Record<string, unknown>;
  readonly logLevel: string;
  /** Write a V8 CPU profile of the hub into this directory (node --cpu-prof). */
  readonly cpuProfDir?: string;
  readonly pinPrefix: readonly string[];
  /** NODE_OPTIONS and MALLOC_* of the hub process. */
  readonly runtimeEnv: Readonly<Record<string, string>>;
  /** V8 flags on the hub's node command line (those NODE_OPTIONS refuses, e.g. --single-threaded-gc). */
  readonly nodeArgs?: readonly string[];
  readonly dir: string;
  /** Reuse these ports (a fresh hub in the same fleet: agents reconnect to the same address). */
  readonly grpcPort?: number;
  readonly httpPort?: number;
  /** The CLI to run the hub with (default this tree's bin/fleet-ccm.js). */
  readonly hubBin?: string;
  /** The hub's `replicas` section (several hubs sharing the fleet), and this one's id. */
  readonly replicas?: Record<string, unknown>;
  readonly replicaId?: string;
}

export class HubProcess {
  private constructor(
    readonly child: ChildProcess,
    readonly grpcPort: number,
    readonly httpPort: number,
    readonly logFile: string,
    /** When the process was spawned (Date.now()): where a window falls in its CPU profile. */
    readonly startedAt: number,
  ) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  get address(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  static async start(s: HubSettings, label: string): Promise<HubProcess> {
    const grpcPort = s.grpcPort ?? (await freePort());
    const httpPort = s.httpPort ?? (await freePort());
    const env: Record<string, string> = {
      FLEET_CCM_SIM_KEY: s.cloudKey,
      FLEET_CCM_NATS_HUB: s.natsPassword,
    };
    const clusters = s.clusters.map((c) => {
      const envName = `FLEET_CCM_TOKEN_${c.cluster.replaceAll("-", "_").toUpperCase()}`;
      env[envName] = c.token;
      return {
        name: c.cluster,
        token: { env: envName },
        account: ACCOUNT,
        scope: { tags: { "fleet-ccm.io/cluster": c.cluster } },
      };
    });
    const config = {
      grpc: { listen: `127.0.0.1:${grpcPort}`, insecure: true },
      http: { listen: `127.0.0.1:${httpPort}` },
      nats: { servers: [s.natsUrl], user: "hub", password: { env: "FLEET_CCM_NATS_HUB" } },
      reconcile: {
        workers: s.workers,
        convergeDeadlineMs: s.convergeDeadlineMs,
        ...(s.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: s.heartbeatIntervalMs }),
      },
      ...(s.refresh === undefined ? {} : { refresh: s.refresh }),
      ...(s.lifecycle === undefined ? {} : { lifecycle: s.lifecycle }),
      ...(s.replicas === undefined ? {} : { replicas: { ...s.replicas, id: s.replicaId } }),
      accounts: [
        {
          name: ACCOUNT,
          provider: "simulated",
          region: REGION,
          endpoint: s.cloudUrl,
          credentials: { env: "FLEET_CCM_SIM_KEY" },
          rateLimit: {
            perSecond: s.rateLimitPerSecond,
            burst: Math.max(1, Math.round(s.rateLimitPerSecond)),
          },
          requestTimeoutMs: 10_000,
        },
      ],
      clusters,
    };
    const configFile = join(s.dir, `hub-${label}.yaml`);
    // JSON is YAML.
    writeFileSync(configFile, JSON.stringify(config, null, 1), { mode: 0o600 });
    const logFile = join(s.dir, `hub-${label}.log`);
    const fd = openSync(logFile, "a");
    const nodeArgs = [
      ...(s.nodeArgs ?? []),
      ...(s.cpuProfDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", s.cpuProfDir]),
      s.hubBin ?? CLI_BIN,
      "hub",
      "--config",
      configFile,
      "--log-level",
      s.logLevel,
    ];
    const [cmd, ...prefixArgs] = s.pinPrefix.length > 0 ? s.pinPrefix : [process.execPath];
    const args = s.pinPrefix.length > 0 ? [...prefixArgs, process.execPath, ...nodeArgs] : nodeArgs;
    const startedAt = Date.now();
    // stdout too: what V8 traces (--hub-node-args=--trace-gc) lands beside the hub's log.
    const child = spawn(cmd ?? process.execPath, args, {
      stdio: ["ignore", fd, fd],
      env: { ...process.env, ...env, ...s.runtimeEnv },
    });
    closeSync(fd);
    const hub = new HubProcess(child, grpcPort, httpPort, logFile, startedAt);
    const kill = () => child.kill("SIGKILL");
    process.once("exit", kill);
    child.once("exit", () => process.removeListener("exit", kill));
    const ready = await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`hub exited (${child.exitCode}); see ${logFile}`);
        try {
          await httpText(`http://127.0.0.1:${httpPort}/readyz`, 1000);
          return true;
        } catch {
          return false;
        }
      },
      30_000,
      100,
    );
    if (!ready) throw new Error(`hub not ready within 30 s; see ${logFile}`);
    return hub;
  }

  async metrics(): Promise<Sample[]> {
    return parsePrometheus(await httpText(`http://127.0.0.1:${this.httpPort}/metrics`, 10_000));
  }

  cpuSeconds(): number | null {
    return cpuSeconds(this.pid);
  }

  peakRssBytes(): number | null {
    return peakRssBytes(this.pid);
  }

  /** SIGTERM (the hub stops gracefully and, with --cpu-prof, writes its profile), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    await terminate(this.child);
  }
}
