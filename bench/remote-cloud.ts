// The benchmark's side of the vendor cloud worker (bench/cloud-worker.ts): a LocalCloud for
// LocalFleet whose fake runs in the forked process. LocalFleet asks its cloud synchronously
// (its config, a node's machine), so the configuration is fetched once at start and machines are
// created ahead with `prepareMachines`, the clusters' scopes with `addClusters`; counters are read with `stats()`.

import { fork } from "node:child_process";
import type { LocalCloud } from "../cli/dist/local-fleet.js";
import { WorkerClient } from "./ipc.js";
import type { CloudStats, CloudWorkerApi } from "./protocol.js";
import type { BenchCloudOptions, Vendor } from "./vendor-clouds.js";

type Init = CloudWorkerApi["init"]["res"];
type ClusterConfigs = CloudWorkerApi["clusterConfigs"]["res"];

export class RemoteBenchCloud implements LocalCloud {
  /** Node names of the machines created ahead, by `cluster/index`. */
  private readonly names = new Map<string, string>();
  private clusters: ClusterConfigs = {};
  private last: CloudStats = { byOperation: {}, instances: 0, lbBackendCounts: [] };

  private constructor(
    private readonly worker: WorkerClient<CloudWorkerApi>,
    private readonly init: Init,
  ) {}

  /** Forks the worker (it inherits this process's CPU affinity) and starts the vendor's fake in it. */
  static async start(vendor: Vendor, timeScale: number, opts: BenchCloudOptions): Promise<RemoteBenchCloud> {
    const child = fork(new URL("./cloud-worker.js", import.meta.url), [], {
      execArgv: ["--max-old-space-size=8192"],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    const kill = () => child.kill("SIGKILL");
    process.once("exit", kill);
    child.once("exit", () => process.removeListener("exit", kill));
    const worker = new WorkerClient<CloudWorkerApi>(child, "cloud worker");
    const init = await worker.call("init", { vendor, timeScale, ...opts });
    return new RemoteBenchCloud(worker, init);
  }

  get provider(): string {
    return this.init.provider;
  }

  get changesSlackMs(): number | undefined {
    return this.init.changesSlackMs;
  }

  get pid(): number | undefined {
    return this.worker.child.pid;
  }

  accountsConfig() {
    return { accounts: this.init.accounts, env: this.init.env };
  }

  /** Fetches the clusters' entries of the hub configuration (before the hub's config is written). */
  async addClusters(clusters: readonly string[]): Promise<void> {
    this.clusters = { ...this.clusters, ...(await this.worker.call("clusterConfigs", { clusters })) };
  }

  clusterConfig(cluster: string) {
    const c = this.clusters[cluster];
    if (c === undefined) throw new Error(`cloud worker: no cluster ${cluster}`);
    return c;
  }

  /** Creates the machines of the next `count` nodes of each cluster, from `from` on. */
  async prepareMachines(clusters: readonly string[], from: number, count: number): Promise<void> {
    const machines = clusters.flatMap((cluster) =>
      Array.from({ length: count }, (_, i) => ({ cluster, index: from + i })),
    );
    const { names } = await this.worker.call("addMachines", { machines });
    machines.forEach((m, i) => {
      this.names.set(`${m.cluster}/${m.index}`, names[i] ?? "");
    });
  }

  /** The node name of a machine made by `prepareMachines` (LocalFleet.addNodes asks it). */
  addMachine(cluster: string, index: number): string {
    const name = this.names.get(`${cluster}/${index}`);
    if (name === undefined) throw new Error(`cloud worker: machine ${cluster}/${index} was not prepared`);
    return name;
  }

  async stats(): Promise<CloudStats> {
    this.last = await this.worker.call("stats", {});
    return this.last;
  }

  /** As of the last `stats()`. */
  totalCalls(): number {
    let n = 0;
    for (const v of Object.values(this.last.byOperation)) n += v;
    return n;
  }

  async close(): Promise<void> {
    const child = this.worker.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    await this.worker.call("stop", {}).catch(() => undefined);
    child.disconnect();
    await exited;
  }
}
