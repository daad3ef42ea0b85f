import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { agentInboxPrefix, clusterSubjectFilter } from "@fleet-ccm/proto";

export interface NatsUser {
  readonly user: string;
  readonly password: string;
  /** Subjects the user may publish to; empty = none. */
  readonly publish: readonly string[];
  /** Subjects the user may subscribe to; empty = none. */
  readonly subscribe: readonly string[];
}

export interface NatsServerOptions {
  readonly users: readonly NatsUser[];
  /**
   * A whole auth configuration instead of `users` (e.g. operator/resolver for decentralized
   * auth); `{dir}` in it is replaced by the server's own temporary directory.
   */
  readonly authConfig?: string;
  /** 0 = a free port, kept across restarts. */
  readonly port?: number;
  /** Also serve nats-server's HTTP monitoring (/varz, /connz) on a free loopback port. */
  readonly monitor?: boolean;
  /** Enable JetStream (the hub replicas' lease bucket), stored in the server's temporary dir. */
  readonly jetstream?: boolean;
  /** More configuration appended as is (a cluster block: see startNatsCluster). */
  readonly extraConfig?: string;
}

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  /** http://127.0.0.1:PORT when `monitor` was asked for. */
  readonly monitorUrl: string | undefined;
  /** The running server's process id (0 while stopped). */
  pid(): number;
  /** Stops the server (SIGTERM, then SIGKILL). */
  stop(): Promise<void>;
  /** What nats-server wrote to stderr (its log) since it first started, the last MiB of it. */
  output(): string;
  /** Stops and starts it again on the same port. */
  restart(downMs?: number): Promise<void>;
}

/** The nats-server binary: on PATH, or where Debian's package puts it. */
export function findNatsServer(): string | undefined {
  const dirs = [...(process.env["PATH"] ?? "").split(delimiter), "/usr/sbin", "/usr/bin", "/usr/local/bin"];
  for (const d of dirs) {
    const p = join(d, "nats-server");
    if (d !== "" && existsSync(p)) return p;
  }
  return undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function quote(s: string): string {
  return JSON.stringify(s);
}

function list(subjects: readonly string[]): string {
  return subjects.length === 0 ? `{ deny: [">"] }` : `{ allow: [${subjects.map(quote).join(", ")}] }`;
}

export interface FleetNatsIdentity {
  readonly cluster: string;
  readonly password: string;
}

/**
 * The fleet's NATS users: the hub may publish desired state to every cluster; each cluster's
 * agent may only subscribe to its own subjects and inbox, and publish nothing.
 */
export function fleetNatsUsers(hubPassword: string, agents: readonly FleetNatsIdentity[]): NatsUser[] {
  return [
    {
      user: "hub",
      password: hubPassword,
      // JetStream API and the lease bucket's subjects: hub replicas share clusters by leases in KV.
      publish: ["fleet.v1.>", "$JS.API.>", "$KV.>"],
      subscribe: ["_INBOX_hub.>"],
    },
    ...agents.map((a) => ({
      user: `agent-${a.cluster}`,
      password: a.password,
      publish: [],
      subscribe: [clusterSubjectFilter(a.cluster), `${agentInboxPrefix(a.cluster)}.>`],
    })),
  ];
}

/** nats-server configuration with one user per identity and per-user subject permissions. */
export function natsConfig(port: number, users: readonly NatsUser[], authConfig?: string): string {
  if (authConfig !== undefined)
    return [
      `listen: "127.0.0.1:${port}"`,
      `max_payload: 1048576`,
      `ping_interval: "10s"`,
      authConfig,
      ``,
    ].join("\n");
  const lines = users.map(
    (u) =>
      `    { user: ${quote(u.user)}, password: ${quote(u.password)}, permissions: { publish: ${list(u.publish)}, subscribe: ${list(u.subscribe)} } }`,
  );
  return [
    `listen: "127.0.0.1:${port}"`,
    `max_payload: 1048576`,
    `ping_interval: "10s"`,
    `authorization {`,
    `  users: [`,
    ...lines,
    `  ]`,
    `}`,
    ``,
  ].join("\n");
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
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts a real nats-server on loopback with the given users. */
export async function startNatsServer(opts: NatsServerOptions): Promise<NatsServer> {
  const bin = findNatsServer();
  if (bin === undefined)
    throw new Error("nats-server not found: install the Debian package nats-server (npm run setup does)");
  const port = opts.port && opts.port > 0 ? opts.port : await freePort();
  const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-nats-"));
  const confPath = join(dir, "nats.conf");
  const monitorPort = opts.monitor ? await freePort() : undefined;
  const monitorLine = monitorPort === undefined ? "" : `http: "127.0.0.1:${monitorPort}"\n`;
  const auth = opts.authConfig?.replaceAll("{dir}", dir);
  const jetstreamLine = opts.jetstream
    ? `jetstream { store_dir: ${quote(join(dir, "js"))}, max_memory_store: 67108864, max_file_store: 268435456 }\n`
    : "";
  writeFileSync(
    confPath,
    natsConfig(port, opts.users, auth) + monitorLine + jetstreamLine + (opts.extraConfig ?? ""),
    { mode: 0o600 },
  );
  let child: ChildProcess | undefined;
  let stderr = "";
  let log = "";

  const start = async () => {
    stderr = "";
    const proc = spawn(bin, ["-c", confPath], { stdio: ["ignore", "ignore", "pipe"] });
    child = proc;
    proc.stderr?.on("data", (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-4000);
      log = (log + b.toString()).slice(-(1 << 20));
    });
    const exited = new Promise<never>((_, reject) =>
      proc.once("exit", (code) => reject(new Error(`nats-server exited (${code}): ${stderr}`))),
    );
    exited.catch(() => undefined);
    await Promise.race([waitForPort(port, 10_000), exited]);
    if (monitorPort !== undefined) await Promise.race([waitForPort(monitorPort, 10_000), exited]);
  };

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => proc.kill("SIGKILL"), 3000);
      proc.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      proc.kill("SIGTERM");
    });
  };

  await start();
  const exitHook = () => child?.kill("SIGKILL");
  process.once("exit", exitHook);
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorUrl: monitorPort === undefined ? undefined : `http://127.0.0.1:${monitorPort}`,
    pid: () => child?.pid ?? 0,
    output: () => log,
    stop: async () => {
      await stop();
      process.removeListener("exit", exitHook);
      rmSync(dir, { recursive: true, force: true });
    },
    restart: async (downMs = 0) => {
      await stop();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
  };
}

export interface NatsCluster {
  readonly nodes: readonly NatsServer[];
  /** Every node's client URL (clients are given them all). */
  readonly urls: readonly string[];
  /** SIGKILL of one node: its clients reconnect to the others. */
  kill(index: number): void;
  stop(): Promise<void>;
}

/**
 * A NATS cluster on loopback: `size` nodes with routes to each other and clustered JetStream
 * (a KV bucket with 3 replicas survives the loss of one node), the same users on every node.
 */
export async function startNatsCluster(opts: {
  users: readonly NatsUser[];
  size?: number;
}): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => quote(`nats-route://127.0.0.1:${p}`)).join(", ");
  const nodes = await Promise.all(
    ports.map((port, i) =>
      startNatsServer({
        users: opts.users,
        port,
        jetstream: true,
        extraConfig: [
          `server_name: "n${i + 1}"`,
          `cluster { name: "fleet", listen: "127.0.0.1:${routePorts[i]}", routes: [${routes}] }`,
          "",
        ].join("\n"),
      }),
    ),
  );
  return {
    nodes,
    urls: nodes.map((n) => n.url),
    kill(index) {
      const pid = nodes[index]?.pid() ?? 0;
      if (pid > 0) process.kill(pid, "SIGKILL");
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
