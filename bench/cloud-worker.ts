// The vendor cloud worker: one vendor's fake API (bench/vendor-clouds.ts) in a process of its own,
// forked by the vendor benchmarks (bench/vendors.ts) and driven over the IPC channel. The hub
// reaches it only over HTTPS, as it reaches the real cloud; a fake answering thousands of
// machines in pages then never waits behind the hub or the agents for CPU.

import { type IpcHandlers, serveIpc } from "./ipc.js";
import type { CloudWorkerApi } from "./protocol.js";
import { type BenchCloud, startBenchCloud, VENDORS, type Vendor } from "./vendor-clouds.js";

let cloud: BenchCloud | undefined;

function started(): BenchCloud {
  if (cloud === undefined) throw new Error("cloud worker: not initialized");
  return cloud;
}

const handlers: IpcHandlers<CloudWorkerApi> = {
  async init({ vendor, timeScale, rateLimitPerSecond, requestTimeoutMs }) {
    if (!(VENDORS as readonly string[]).includes(vendor)) throw new Error(`unknown vendor ${vendor}`);
    const c = await startBenchCloud(vendor as Vendor, { rateLimitPerSecond, requestTimeoutMs }, timeScale);
    cloud = c;
    const { accounts, env } = c.accountsConfig();
    return {
      provider: c.provider,
      accounts,
      env,
      ...(c.changesSlackMs !== undefined && { changesSlackMs: c.changesSlackMs }),
    };
  },

  async clusterConfigs({ clusters }) {
    const c = started();
    return Object.fromEntries(clusters.map((n) => [n, c.clusterConfig(n)]));
  },

  async addMachines({ machines }) {
    const c = started();
    return { names: machines.map((m) => c.addMachine(m.cluster, m.index)) };
  },

  async stats() {
    const c = started();
    const ports = c.lbFrontendPorts?.();
    return {
      byOperation: c.callsByOperation(),
      instances: c.instancesInAccount(),
      lbBackendCounts: c.lbBackendCounts(),
      ...(ports !== undefined && { lbFrontendPorts: ports }),
    };
  },

  async stop() {
    await cloud?.close();
    cloud = undefined;
    return { ok: true };
  },
};

serveIpc(handlers);
