/**
 * Hub replicas as separate processes (`fleet-ccm hub`), each named by HOSTNAME as a pod would
 * be, behind a TCP proxy that plays the Kubernetes Service the agents dial.
 */
import type { ChildProcess } from "node:child_process";
import { startTcpProxy, type TcpProxy } from "@fleet-ccm/sim";
import type { LocalFleet } from "../cli/src/local-fleet.js";
import { waitFor } from "../cli/src/local-fleet.js";
import { metricSum } from "./hub-metrics.js";

export interface ReplicaProcess {
  readonly id: string;
  readonly child: ChildProcess;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly output: () => string;
  /** The proxy in front of NATS for this replica, when asked for. */
  readonly natsProxy: TcpProxy | undefined;
}

/** The `replicas` section for the test fleets: short TTL so the tests stay short. */
export const TEST_REPLICAS = {
  leaseTtlMs: 5000,
  marginMs: 1000,
  renewIntervalMs: 1000,
  pollIntervalMs: 250,
};

export class ReplicaSet {
  readonly replicas = new Map<string, ReplicaProcess>();

  private constructor(
    private readonly fleet: LocalFleet,
    /** The agents' address: round-robin over live replicas. */
    readonly service: TcpProxy,
  ) {}

  static async start(fleet: LocalFleet): Promise<ReplicaSet> {
    return new ReplicaSet(fleet, await startTcpProxy({ targets: [] }));
  }

  /** Starts a replica; `natsProxy`: its NATS traffic goes through a proxy the test controls. */
  async add(id: string, opts: { natsProxy?: boolean } = {}): Promise<ReplicaProcess> {
    const natsProxy = opts.natsProxy
      ? await startTcpProxy({ targets: [`127.0.0.1:${this.fleet.nats.port}`] })
      : undefined;
    const p = await this.fleet.spawnHubProcess(undefined, {
      captureOutput: true,
      logLevel: process.env["E2E_HUB_LOG_LEVEL"] ?? "warn",
      env: { HOSTNAME: id },
      ...(natsProxy !== undefined && { natsServers: [`nats://${natsProxy.address}`] }),
    });
    const r: ReplicaProcess = { id, ...p, natsProxy };
    this.replicas.set(id, r);
    r.child.once("exit", () => {
      if (this.replicas.get(id) === r) this.replicas.delete(id);
      this.retarget();
      void natsProxy?.close();
    });
    const ready = await waitFor(async () => {
      try {
        return (await fetch(`http://127.0.0.1:${r.httpPort}/readyz`)).ok;
      } catch {
        return false;
      }
    }, 30_000);
    if (!ready) throw new Error(`replica ${id} not ready:\n${r.output()}`);
    this.retarget();
    return r;
  }

  private retarget(): void {
    this.service.setTargets([...this.replicas.values()].map((r) => `127.0.0.1:${r.grpcPort}`));
  }

  /** Clusters each live replica (or each of `ids`) holds, by its /metrics (one that does not answer: -1). */
  async owned(ids?: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    await Promise.all(
      [...this.replicas.values()]
        .filter((r) => ids === undefined || ids.includes(r.id))
        .map(async (r) => {
          try {
            out.set(r.id, await metricSum(r, "fleet_ccm_hub_owned_clusters"));
          } catch {
            out.set(r.id, -1);
          }
        }),
    );
    return out;
  }

  async totalOwned(): Promise<number> {
    let n = 0;
    for (const v of (await this.owned()).values()) if (v > 0) n += v;
    return n;
  }

  async kill(id: string, signal: NodeJS.Signals): Promise<void> {
    const r = this.replicas.get(id);
    if (r === undefined) return;
    const exited = new Promise((resolve) => r.child.once("exit", resolve));
    r.child.kill(signal);
    await exited;
  }

  /** Clusters the named replicas hold together (a replica that does not answer counts 0). */
  async ownedBy(ids: readonly string[]): Promise<number> {
    const owned = await this.owned(ids);
    return [...owned.values()].reduce((n, v) => n + Math.max(0, v), 0);
  }

  /** Freezes (SIGSTOP) or thaws (SIGCONT) a replica: its connections stay open, it answers nothing. */
  freeze(id: string, frozen: boolean): void {
    this.replicas.get(id)?.child.kill(frozen ? "SIGSTOP" : "SIGCONT");
  }

  /** What each replica logged (warnings and up by default), for a failing test's message. */
  outputs(): string {
    return [...this.replicas.values()].map((r) => `--- ${r.id}\n${r.output().slice(-6000)}`).join("\n");
  }

  async stop(): Promise<void> {
    await Promise.all([...this.replicas.keys()].map((id) => this.kill(id, "SIGKILL")));
    await this.service.close();
  }
}

/**
 * Cloud mutations (anything but GET) a replica made, by the simulated cloud's request log,
 * logged after `afterMs`. The log's time is the answer's: with `answeredOnly`, calls the caller
 * abandoned (sent earlier, aborted at its fence or by its death) are left out.
 */
export function mutationsBy(fleet: LocalFleet, id: string, afterMs = 0, answeredOnly = false) {
  return fleet.cloud
    .requests({ userAgent: `replica/${id}` })
    .filter((r) => r.method !== "GET" && r.atMs > afterMs && !(answeredOnly && r.outcome === "aborted"));
}
