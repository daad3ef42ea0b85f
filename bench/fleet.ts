// The benchmark's fleet: every process and simulator one run needs, and the counters it reads.
//
//   this process (core 1)   simulated cloud (HTTP), cloud call timer, kube watchers, orchestration
//   fleet workers (core 1)  one Kubernetes API simulator per cluster + in-process agents
//                           (CLUSTERS_PER_WORKER clusters each)
//   agent process (core 1)  the first cluster's agent, through the CLI (its VmHWM is the agent figure)
//   nats-server (core 1)    with its monitoring port
//   hub process (core 0)    `fleet-ccm hub --config FILE`

import { type ChildProcess, fork, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CloudStats,
  createMachine,
  nodeName,
  type SimulatedCloud,
  startSimulatedCloud,
} from "@fleet-ccm/sim";
import { CloudCallTimer } from "./cloud-timing.js";
import { ACCOUNT, CLI_BIN, HubProcess, type HubSettings, REGION } from "./hub-process.js";
import { WorkerClient } from "./ipc.js";
import { type BenchNats, natsUsers, startBenchNats } from "./nats.js";
import { FleetObserver } from "./observer.js";
import type { Method, NodeRef, ServiceSpecRef, WorkerApi, WorkerStats } from "./protocol.js";
import {
  cpuSeconds,
  histogramQuantile,
  metricSum,
  type Pinning,
  peakRssBytes,
  type Sample,
  sleep,
  tcpBytesAcked,
  until,
} from "./util.js";

/**
 * Clusters per fleet worker process. During a join storm a cluster holds ~20 sockets in its
 * worker (its agent's watches and up to 16 apply requests, at both ends, and the observer's
 * watch), so 1,000 clusters in one process passed a common RLIMIT_NOFILE of 20,000 (connect
 * EMFILE); every worker runs on the fleet's core all the same.
 */
const CLUSTERS_PER_WORKER = 400;

export interface FleetOptions {
  readonly clusters: number;
  readonly cloudLatencyMs: number;
  readonly watchServices: boolean;
  /** Run the first cluster's agent as its own process through the CLI. */
  readonly separateAgent: boolean;
  /** NODE_OPTIONS and MALLOC_* of that process. */
  readonly agentEnv: Readonly<Record<string, string>>;
  /** NODE_OPTIONS and MALLOC_* of the hub process. */
  readonly hubEnv: Readonly<Record<string, string>>;
  /** V8 flags on the hub's node command line. */
  readonly hubNodeArgs?: readonly string[];
  readonly pinning: Pinning;
  readonly logLevel: string;
  readonly watchHistory: number;
  /** Write a V8 CPU profile of the fleet worker into this directory. */
  readonly cpuProfDir?: string | undefined;
  readonly log: (line: string) => void;
  /** JetStream on nats-server (hub replicas keep their leases there). */
  readonly jetstream?: boolean;
}

/** Counters read at the start and the end of a measured window. */
export interface Snapshot {
  readonly t: number;
  readonly hubCpu: number | null;
  readonly workerCpu: number | null;
  readonly agentCpu: number | null;
  readonly natsCpu: number | null;
  readonly selfCpu: number;
  /** TCP bytes the agents sent to the hub's gRPC port (every agent, wire level). */
  readonly grpcWire: number | null;
  /** TCP bytes the hub sent to nats-server. */
  readonly natsWire: number | null;
  /** Payload bytes the hub published (nats-server's in_bytes for the hub's connection). */
  readonly natsPayload: number | null;
  readonly worker: WorkerStats;
  readonly metrics: readonly Sample[];
  readonly cloud: CloudStats;
  readonly nodeEvents: number;
  readonly nodeEventsInProcess: number;
}

export interface Delta {
  readonly ms: number;
  readonly hubCpu: number | null;
  readonly workerCpu: number | null;
  readonly agentCpu: number | null;
  readonly natsCpu: number | null;
  readonly selfCpu: number;
  readonly grpcWire: number | null;
  readonly grpcPayloadInProcess: number;
  readonly deltasInProcess: number;
  readonly natsWire: number | null;
  readonly natsPayload: number | null;
  readonly nodeEvents: number;
  readonly nodeEventsInProcess: number;
  readonly nodePatches: number;
  readonly servicePatches: number;
  readonly cloudCalls: number;
  readonly cloudByOperation: Record<string, number>;
  readonly cloudByOutcome: Record<string, number>;
  readonly metric: (name: string, ...labels: string[]) => number;
  /** Quantile (0–1) of a hub histogram over the window, in the histogram's unit (bucket upper bound). */
  readonly quantile: (name: string, q: number) => number | null;
}

function diff(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : b - a;
}

function diffRecord(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v - (a[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

export class BenchFleet {
  readonly names: string[];
  readonly tokens = new Map<string, string>();
  readonly natsPasswords = new Map<string, string>();
  readonly hubNatsPassword = randomBytes(18).toString("base64url");
  /** "cluster/name" → instance id. */
  readonly instances = new Map<string, string>();
  /** "cluster/name" → creation time (epoch ms) in the fleet worker. */
  readonly createdAt = new Map<string, number>();
  readonly observer = new FleetObserver();
  readonly timer = new CloudCallTimer();
  readonly dir: string;
  hub: HubProcess | undefined;
  agentProcess: ChildProcess | undefined;
  kube: Record<string, { url: string; kubeconfig: string }> = {};
  private nats: BenchNats | undefined;
  cloud: SimulatedCloud | undefined;
  private cloudKey = "";
  private readonly workers: WorkerClient<WorkerApi>[] = [];
  /** cluster → index of its worker in `workers`. */
  private readonly workerOf = new Map<string, number>();
  private readonly nextIndex = new Map<string, number>();
  private readonly separate: string | undefined;

  constructor(readonly opts: FleetOptions) {
    this.names = Array.from({ length: opts.clusters }, (_, i) => `cluster-${String(i + 1).padStart(3, "0")}`);
    for (const n of this.names) {
      this.tokens.set(n, randomBytes(24).toString("base64url"));
      this.natsPasswords.set(n, randomBytes(18).toString("base64url"));
    }
    this.separate = opts.separateAgent ? this.names[0] : undefined;
    this.dir = mkdtempSync(join(tmpdir(), "fleet-ccm-bench-"));
  }

  get separateCluster(): string | undefined {
    return this.separate;
  }

  get inProcessClusters(): string[] {
    return this.names.filter((n) => n !== this.separate);
  }

  get workerPids(): number[] {
    return this.workers.map((w) => w.child.pid ?? 0);
  }

  get natsUrl(): string {
    return this.nats?.url ?? "";
  }

  /** nats-server, the simulated cloud, the fleet worker with its API servers, and the watches on them. */
  async start(): Promise<void> {
    const { opts } = this;
    this.nats = await startBenchNats(
      natsUsers(
        this.hubNatsPassword,
        this.names.map((c) => ({ cluster: c, password: this.natsPasswords.get(c) ?? "" })),
      ),
      opts.jetstream === true,
    );
    this.cloud = await startSimulatedCloud({ regions: [REGION] });
    this.cloudKey = this.cloud.createAccount(ACCOUNT).apiKey;
    if (opts.cloudLatencyMs > 0) this.cloud.setFaults({ latencyMs: opts.cloudLatencyMs });
    const parts = Math.ceil(this.names.length / CLUSTERS_PER_WORKER);
    this.names.forEach((c, i) => {
      this.workerOf.set(c, i % parts);
    });
    for (let w = 0; w < parts; w++) {
      const fd = openSync(join(this.dir, parts === 1 ? "fleet-worker.log" : `fleet-worker-${w}.log`), "a");
      const child = fork(new URL("./fleet-worker.js", import.meta.url), [], {
        execArgv: [
          "--max-old-space-size=16384",
          "--max-semi-space-size=64",
          ...(opts.cpuProfDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", opts.cpuProfDir]),
        ],
        stdio: ["ignore", "ignore", fd, "ipc"],
      });
      closeSync(fd);
      const kill = () => child.kill("SIGKILL");
      process.once("exit", kill);
      child.once("exit", () => process.removeListener("exit", kill));
      this.workers.push(
        new WorkerClient<WorkerApi>(child, parts === 1 ? "fleet worker" : `fleet worker ${w}`),
      );
    }
    const kube: Record<string, { url: string; kubeconfig: string }> = {};
    for (const part of await this.split("init", this.names, (clusters) => ({
      clusters,
      watchHistory: opts.watchHistory,
    })))
      Object.assign(kube, part.kube);
    this.kube = kube;
    await this.observer.start(new Map(this.names.map((c) => [c, kube[c]?.url ?? ""])), opts.watchServices);
  }

  /** The same request to every worker, their answers in worker order. */
  private all<M extends Method>(method: M, params: WorkerApi[M]["req"]): Promise<WorkerApi[M]["res"][]> {
    if (this.workers.length === 0) throw new Error("fleet not started");
    return Promise.all(this.workers.map((w) => w.call(method, params)));
  }

  /** Per-cluster items split by the worker holding each cluster; one request per worker that has some. */
  private split<M extends Method, T>(
    method: M,
    items: readonly T[],
    request: (part: T[]) => WorkerApi[M]["req"],
    clusterOf: (item: T) => string = (item) => item as string,
  ): Promise<WorkerApi[M]["res"][]> {
    if (this.workers.length === 0) throw new Error("fleet not started");
    const parts: T[][] = this.workers.map(() => []);
    for (const item of items) parts[this.workerOf.get(clusterOf(item)) ?? 0]?.push(item);
    return Promise.all(
      parts.flatMap((part, w) => (part.length === 0 ? [] : [this.workers[w]?.call(method, request(part))])),
    ) as Promise<WorkerApi[M]["res"][]>;
  }

  private splitRefs<M extends Method, T extends { readonly cluster: string }>(
    method: M,
    items: readonly T[],
    request: (part: T[]) => WorkerApi[M]["req"],
  ): Promise<WorkerApi[M]["res"][]> {
    return this.split(method, items, request, (item) => item.cluster);
  }

  hubSettings(
    extra: Partial<HubSettings> & Pick<HubSettings, "workers" | "rateLimitPerSecond" | "logLevel">,
  ): HubSettings {
    return {
      natsUrl: this.natsUrl,
      natsPassword: this.hubNatsPassword,
      cloudUrl: this.cloud?.url ?? "",
      cloudKey: this.cloudKey,
      clusters: this.names.map((c) => ({ cluster: c, token: this.tokens.get(c) ?? "" })),
      convergeDeadlineMs: 15_000,
      pinPrefix: this.opts.pinning.hubPrefix,
      runtimeEnv: this.opts.hubEnv,
      nodeArgs: this.opts.hubNodeArgs ?? [],
      dir: this.dir,
      ...extra,
    };
  }

  async startHub(settings: HubSettings, label: string): Promise<HubProcess> {
    this.hub = await HubProcess.start(settings, label);
    return this.hub;
  }

  async stopHub(): Promise<void> {
    await this.hub?.stop();
  }

  /** Starts every agent (in the worker, and the separate one through the CLI), dialling `address`. */
  async startAgents(address = this.hub?.address): Promise<void> {
    if (address === undefined) throw new Error("start the hub first");
    if (this.separate !== undefined) this.spawnAgent(this.separate, address);
    const agents = this.inProcessClusters.map((c) => ({
      cluster: c,
      token: this.tokens.get(c) ?? "",
      natsPassword: this.natsPasswords.get(c) ?? "",
    }));
    await this.splitRefs("startAgents", agents, (part) => ({
      hubAddress: address,
      natsUrl: this.natsUrl,
      logLevel: this.opts.logLevel,
      agents: part,
    }));
  }

  private spawnAgent(cluster: string, hubAddress: string): void {
    const files = {
      kubeconfig: join(this.dir, `${cluster}.kubeconfig`),
      token: join(this.dir, `${cluster}.token`),
      nats: join(this.dir, `${cluster}.nats-password`),
    };
    writeFileSync(files.kubeconfig, this.kube[cluster]?.kubeconfig ?? "", { mode: 0o600 });
    writeFileSync(files.token, this.tokens.get(cluster) ?? "", { mode: 0o600 });
    writeFileSync(files.nats, this.natsPasswords.get(cluster) ?? "", { mode: 0o600 });
    const fd = openSync(join(this.dir, `agent-${cluster}.log`), "a");
    const child = spawn(
      process.execPath,
      [
        CLI_BIN,
        "agent",
        "--cluster",
        cluster,
        "--hub",
        hubAddress,
        "--insecure",
        "--token-file",
        files.token,
        "--nats",
        this.natsUrl,
        "--nats-user",
        `agent-${cluster}`,
        "--nats-password-file",
        files.nats,
        "--kubeconfig",
        files.kubeconfig,
        "--log-level",
        this.opts.logLevel,
      ],
      { stdio: ["ignore", "ignore", fd], env: { ...process.env, ...this.opts.agentEnv } },
    );
    closeSync(fd);
    const kill = () => child.kill("SIGKILL");
    process.once("exit", kill);
    child.once("exit", () => process.removeListener("exit", kill));
    this.agentProcess = child;
  }

  /** Waits until the hub reports every cluster connected and synced. */
  async waitSynced(timeoutMs: number): Promise<boolean> {
    const hub = this.hub;
    if (hub === undefined) return false;
    return until(
      async () => {
        try {
          return metricSum(await hub.metrics(), "fleet_ccm_hub_clusters_synced") >= this.names.length;
        } catch {
          return false;
        }
      },
      timeoutMs,
      250,
    );
  }

  /** Creates the cloud instances of `count` new nodes in `cluster` (what a node pool does first). */
  addMachines(cluster: string, count: number): NodeRef[] {
    const cloud = this.cloud;
    if (cloud === undefined) throw new Error("fleet not started");
    const refs: NodeRef[] = [];
    for (let i = 0; i < count; i++) {
      const index = this.nextIndex.get(cluster) ?? 0;
      this.nextIndex.set(cluster, index + 1);
      const name = nodeName(cluster, index);
      const inst = createMachine(cloud, { cluster, name, account: ACCOUNT, region: REGION, index });
      this.instances.set(`${cluster}/${name}`, inst.id);
      refs.push({ cluster, name });
    }
    return refs;
  }

  /** Registers the nodes in their API servers (as kubelet does) and records each creation time. */
  async createNodes(nodes: readonly NodeRef[], ready = true): Promise<void> {
    // Chunks keep each IPC message and each synchronous burst in the worker bounded.
    for (let i = 0; i < nodes.length; i += 2000) {
      const parts = await this.splitRefs("createNodes", nodes.slice(i, i + 2000), (part) => ({
        nodes: part,
        ready,
      }));
      for (const { createdAt } of parts) for (const [k, t] of createdAt) this.createdAt.set(k, t);
    }
  }

  async deleteNodes(nodes: readonly NodeRef[]): Promise<{ deleted: number }> {
    const parts = await this.splitRefs("deleteNodes", nodes, (part) => ({ nodes: part }));
    return { deleted: sum(parts.map((p) => p.deleted)) };
  }

  async setReady(nodes: readonly NodeRef[], ready: boolean): Promise<{ changed: number }> {
    const parts = await this.splitRefs("setReady", nodes, (part) => ({ nodes: part, ready }));
    return { changed: sum(parts.map((p) => p.changed)) };
  }

  async upsertServices(services: readonly ServiceSpecRef[]): Promise<{ createdAt: [string, number][] }> {
    // Each keeps its position in the whole list (its targetPort), whichever worker holds it.
    const indexed = services.map((s, i) => ({ ...s, index: s.index ?? i }));
    const parts = await this.splitRefs("upsertServices", indexed, (part) => ({ services: part }));
    return { createdAt: parts.flatMap((p) => p.createdAt) };
  }

  async deleteServices(services: readonly NodeRef[]): Promise<{ deleted: number }> {
    const parts = await this.splitRefs("deleteServices", services, (part) => ({ services: part }));
    return { deleted: sum(parts.map((p) => p.deleted)) };
  }

  async listNodes(): Promise<{ nodes: Record<string, string[]>; tainted: number }> {
    const parts = await this.all("listNodes", {});
    return {
      nodes: Object.assign({}, ...parts.map((p) => p.nodes)) as Record<string, string[]>,
      tainted: sum(parts.map((p) => p.tainted)),
    };
  }

  /** The workers' counters summed (`pid`: the first worker's). */
  async workerStats(): Promise<WorkerStats> {
    const parts = await this.all("stats", {});
    const total = (f: (s: WorkerStats) => number) => sum(parts.map(f));
    return {
      pid: parts[0]?.pid ?? 0,
      agents: total((s) => s.agents),
      agentHubBytes: total((s) => s.agentHubBytes),
      agentHubDeltas: total((s) => s.agentHubDeltas),
      agentNatsBytes: total((s) => s.agentNatsBytes),
      agentsConnected: total((s) => s.agentsConnected),
      kubeRequests: total((s) => s.kubeRequests),
    };
  }

  async snapshot(): Promise<Snapshot> {
    const hub = this.hub;
    const [worker, metrics, hubNats] = await Promise.all([
      this.workerStats(),
      hub === undefined ? Promise.resolve([]) : hub.metrics().catch(() => []),
      this.nats?.publishedBytes("fleet-ccm-hub") ?? Promise.resolve(null),
    ]);
    const cloud = this.cloud;
    if (cloud === undefined) throw new Error("fleet not started");
    const natsPort = this.nats?.port ?? 0;
    const usage = process.cpuUsage();
    return {
      t: Date.now(),
      hubCpu: hub === undefined ? null : hub.cpuSeconds(),
      workerCpu: sumOrNull(this.workerPids.map(cpuSeconds)),
      agentCpu: this.agentProcess?.pid === undefined ? null : cpuSeconds(this.agentProcess.pid),
      natsCpu: this.nats === undefined ? null : cpuSeconds(this.nats.pid),
      selfCpu: (usage.user + usage.system) / 1e6,
      grpcWire: hub === undefined ? null : tcpBytesAcked(`( dport = :${hub.grpcPort} )`),
      natsWire:
        hubNats === null
          ? null
          : tcpBytesAcked(`( sport = :${hubNats.clientPort} and dport = :${natsPort} )`),
      natsPayload: hubNats?.bytes ?? null,
      worker,
      metrics,
      cloud: cloud.stats(),
      nodeEvents: this.observer.nodeEvents(),
      nodeEventsInProcess: this.observer.nodeEvents(this.inProcessClusters),
    };
  }

  static delta(a: Snapshot, b: Snapshot): Delta {
    const metric = (name: string, ...labels: string[]) =>
      metricSum(b.metrics, name, ...labels) - metricSum(a.metrics, name, ...labels);
    return {
      ms: b.t - a.t,
      hubCpu: diff(a.hubCpu, b.hubCpu),
      workerCpu: diff(a.workerCpu, b.workerCpu),
      agentCpu: diff(a.agentCpu, b.agentCpu),
      natsCpu: diff(a.natsCpu, b.natsCpu),
      selfCpu: b.selfCpu - a.selfCpu,
      // A hub restart between the snapshots resets per-connection counters: then unknown.
      grpcWire: (() => {
        const d = diff(a.grpcWire, b.grpcWire);
        return d === null || d < 0 ? null : d;
      })(),
      grpcPayloadInProcess: b.worker.agentHubBytes - a.worker.agentHubBytes,
      deltasInProcess: b.worker.agentHubDeltas - a.worker.agentHubDeltas,
      natsWire: (() => {
        const d = diff(a.natsWire, b.natsWire);
        return d === null || d < 0 ? null : d;
      })(),
      natsPayload: (() => {
        const d = diff(a.natsPayload, b.natsPayload);
        return d === null || d < 0 ? null : d;
      })(),
      nodeEvents: b.nodeEvents - a.nodeEvents,
      nodeEventsInProcess: b.nodeEventsInProcess - a.nodeEventsInProcess,
      nodePatches: metric("fleet_ccm_desired_published_total", 'kind="node"'),
      servicePatches: metric("fleet_ccm_desired_published_total", 'kind="service"'),
      cloudCalls: b.cloud.totalCalls - a.cloud.totalCalls,
      cloudByOperation: diffRecord(a.cloud.byOperation, b.cloud.byOperation),
      cloudByOutcome: diffRecord(a.cloud.byOutcome, b.cloud.byOutcome),
      metric,
      quantile: (name: string, q: number) => histogramQuantile(a.metrics, b.metrics, name, q),
    };
  }

  hubPeakRssBytes(): number | null {
    return this.hub?.peakRssBytes() ?? null;
  }

  agentPeakRssBytes(): number | null {
    const pid = this.agentProcess?.pid;
    return pid === undefined ? null : peakRssBytes(pid);
  }

  /** The workers' peak RSS summed (an upper bound of their peak together). */
  workerPeakRssBytes(): number | null {
    return sumOrNull(this.workerPids.map(peakRssBytes));
  }

  async stop(keepDir: boolean): Promise<void> {
    this.observer.close();
    this.timer.close();
    // Agents first, so none of them reconnects to a hub that is shutting down.
    const agent = this.agentProcess;
    if (agent !== undefined && agent.exitCode === null) {
      agent.kill("SIGTERM");
      await Promise.race([new Promise((r) => agent.once("exit", r)), sleep(5000)]);
      if (agent.exitCode === null) agent.kill("SIGKILL");
    }
    try {
      await Promise.race([this.all("stopAgents", {}), sleep(15_000)]);
    } catch {
      // already gone
    }
    await this.stopHub();
    try {
      await Promise.race([this.all("stop", {}), sleep(15_000)]);
    } catch {
      // already gone
    }
    await Promise.all(
      this.workers.map(async ({ child }) => {
        if (child.exitCode !== null) return;
        // A normal exit (the worker leaves when the IPC channel closes) writes its CPU profile.
        const exited = new Promise((r) => child.once("exit", r));
        child.disconnect();
        await Promise.race([exited, sleep(10_000)]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }),
    );
    await this.cloud?.close();
    await this.nats?.stop();
    if (!keepDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

/** null when any is unknown. */
function sumOrNull(xs: readonly (number | null)[]): number | null {
  return xs.some((x) => x === null) ? null : sum(xs as number[]);
}
