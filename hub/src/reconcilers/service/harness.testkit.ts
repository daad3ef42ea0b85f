// The service controller as the hub runs it, for tests: real CloudAccounts, work queue and
// workers; each published Service patch is applied to the fleet view as an agent would.
import { type Node, Service } from "@fleet-ccm/proto";
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
  /** The providers its registry serves (default: the simulated one). */
  readonly providers?: readonly ProviderFactory[];
  /** Services ("namespace/name") whose patches are published but never applied: an agent yet to apply them. */
  readonly unapplied?: ReadonlySet<string>;
}

/** A fresh hub's service controller (its own accounts, caches and memory: a restart is a new harness). */
export async function startServiceHarness(o: ServiceHarnessOptions) {
  const metrics = new HubMetrics(false);
  const accounts = await CloudAccounts.create(o.config.accounts, o.config.clusters, {
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
  const passes = new Map<string, number>();
  const workers = runWorkers(queue, {
    concurrency: o.concurrency ?? 4,
    handler: async (key) => {
      passes.set(key.kind, (passes.get(key.kind) ?? 0) + 1);
      const out = await controller.reconcile(key);
      o.onOutcome?.(key, out);
      for (const d of out.services ?? []) {
        const svc = fleet.view(key.cluster)?.services.get(`${d.namespace}/${d.name}`);
        if (svc === undefined || o.unapplied?.has(`${d.namespace}/${d.name}`)) continue;
        const next = Service.fromPartial({
          ...svc,
          resourceVersion: String(Number(svc.resourceVersion) + 1),
          finalizers: [...svc.finalizers.filter((f) => !d.removeFinalizers.includes(f)), ...d.addFinalizers],
          ingress: d.ingress === undefined ? svc.ingress : d.ingress.items,
          annotations: { ...svc.annotations, ...d.setAnnotations },
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
    callsByOp: async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const v of (await metrics.cloudCalls.get()).values) {
        const op = String(v.labels.op);
        out[op] = (out[op] ?? 0) + v.value;
      }
      return out;
    },
    drained: () => queue.len() === 0 && queue.processingLen() === 0,
    /** Reconciles of keys of this kind so far. */
    passes: (kind: string) => passes.get(kind) ?? 0,
    async stop() {
      queue.shutDown();
      await workers.stop();
    },
  };
}

/** A LoadBalancer Service on port 80 (nodePort 30080), as the restart tests build them. */
export function lbService(name: string, uid: string, over: Partial<Service> = {}): Service {
  return Service.fromPartial({
    namespace: "default",
    name,
    uid,
    resourceVersion: "1",
    type: "LoadBalancer",
    ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
    externalTrafficPolicy: "Cluster",
    ipFamilies: ["IPv4"],
    sessionAffinity: "None",
    ...over,
  });
}

/** Polls `cond` every 20 ms; throws naming `what` after `timeoutMs`. */
export async function waitUntil(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs a first hub until every Service of `cluster` has its ingress and its queue drained, then stops it: the Services as it left them. */
export async function convergeAndStop(
  hub: Awaited<ReturnType<typeof startServiceHarness>>,
  cluster: string,
  nodes: Node[],
  services: Service[],
): Promise<Service[]> {
  try {
    hub.fleet.setConnected(cluster, true);
    hub.fleet.replace(cluster, nodes, services);
    const all = () => [...(hub.fleet.view(cluster)?.services.values() ?? [])];
    await waitUntil("every Service to have its ingress", () => all().every((s) => s.ingress.length > 0));
    await waitUntil("the queue to drain", () => hub.drained());
    return all();
  } finally {
    await hub.stop();
  }
}
