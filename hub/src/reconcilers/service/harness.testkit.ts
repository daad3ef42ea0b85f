// The service controller as the hub runs it, for tests: real CloudAccounts, work queue and
// workers; each published Service patch is applied to the fleet view as an agent would.
import { Service } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import { CloudAccounts } from "../../cloud/accounts.js";
import type { ProviderFactory } from "../../cloud/provider.js";
import { simulatedProvider } from "../../cloud/providers/simulated/index.js";
import { ProviderRegistry } from "../../cloud/registry.js";
import type { parseHubConfig } from "../../config/load.js";
import { FleetState } from "../../fleet/state.js";
import { HubMetrics } from "../../metrics.js";
import { runWorkers, type WorkKey } from "../../queue/index.js";
import { systemClock } from "../../util/clock.js";
import { accountsCloud, testControllerContext } from "../context.testkit.js";
import type { Outcome } from "../outcome.js";
import { serviceController } from "./index.js";

export interface ServiceHarnessOptions {
  readonly config: ReturnType<typeof parseHubConfig>;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  /** Workers (default 4). */
  readonly concurrency?: number;
  /** Every reconcile's outcome, before its patches are applied. */
  readonly onOutcome?: (key: WorkKey, outcome: Outcome) => void;
  /** Every Service as a patch left it. */
  readonly onApplied?: (cluster: string, svc: Service) => void;
  /** The providers the hub knows (default: simulated). */
  readonly providers?: readonly ProviderFactory[];
}

/** A fresh hub's service controller (its own accounts, caches and memory: a restart is a new harness). */
export function startServiceHarness(o: ServiceHarnessOptions) {
  const metrics = new HubMetrics(false);
  const accounts = new CloudAccounts(o.config.accounts, o.config.clusters, {
    registry: new ProviderRegistry([...(o.providers ?? [simulatedProvider])]),
    refresh: { periodMs: 60_000, cacheScope: "account" },
    maxConcurrentRouteWrites: 4,
    clock: systemClock,
    logger: o.logger,
    metrics,
    env: o.env,
  });
  const fleet = new FleetState();
  const ctx = testControllerContext({
    config: o.config,
    fleet,
    clock: systemClock,
    metrics,
    logger: o.logger,
    ...accountsCloud(accounts),
  });
  const queue = ctx.queue;
  const controller = serviceController(ctx);
  fleet.subscribe(controller.triggers);
  const workers = runWorkers(queue, {
    concurrency: o.concurrency ?? 4,
    handler: async (key) => {
      const out = await controller.reconcile(key);
      o.onOutcome?.(key, out);
      for (const d of out.services ?? []) {
        const svc = fleet.view(key.cluster)?.services.get(`${d.namespace}/${d.name}`);
        if (svc === undefined) continue;
        const next = Service.fromPartial({
          ...svc,
          resourceVersion: String(Number(svc.resourceVersion) + 1),
          finalizers: [...svc.finalizers.filter((f) => !d.removeFinalizers.includes(f)), ...d.addFinalizers],
          ingress: d.ingress === undefined ? svc.ingress : d.ingress.items,
        });
        fleet.upsertService(key.cluster, next);
        o.onApplied?.(key.cluster, next);
      }
      return out.requeue;
    },
  });
  return {
    fleet,
    queue,
    accounts,
    /** Cloud calls of this hub with this op, from its metrics. */
    calls: async (op: string) =>
      (await metrics.cloudCalls.get()).values
        .filter((v) => v.labels.op === op)
        .reduce((n, v) => n + v.value, 0),
    /** Every cloud call of this hub, by op. */
    allCalls: async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const v of (await metrics.cloudCalls.get()).values) {
        const op = String(v.labels.op);
        out[op] = (out[op] ?? 0) + v.value;
      }
      return out;
    },
    drained: () => queue.len() === 0 && queue.processingLen() === 0,
    async stop() {
      queue.shutDown();
      await workers.stop();
    },
  };
}
