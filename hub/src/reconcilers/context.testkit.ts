/**
 * Test-only: a ControllerContext for reconciler tests (real queue, tracker and verdict cache, a
 * silent logger), with the cloud as each test gives it. Not built into dist (hub/tsconfig.json).
 */
import { pino } from "pino";
import type { CloudAccounts } from "../cloud/accounts.js";
import { VerifiedInstances } from "../cloud/verified-instances.js";
import { parseHubConfig } from "../config/load.js";
import type { HubConfig } from "../config/schema.js";
import { HubMetrics } from "../metrics.js";
import { WorkQueue } from "../queue/index.js";
import { Semaphore } from "../util/semaphore.js";
import type { ControllerContext } from "./controller.js";
import { ConvergenceTracker } from "./convergence.js";

/** The smallest hub configuration: one simulated account, no clusters, defaults otherwise (`extra` added). */
export function testHubConfig(extra: Record<string, unknown> = {}): HubConfig {
  return parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [{ name: "a", provider: "simulated", region: "r1", credentials: { env: "K" } }],
      clusters: [],
      ...extra,
    }),
  );
}

export function testControllerContext(
  base: Pick<ControllerContext, "config" | "fleet" | "clock" | "cloudFor"> & Partial<ControllerContext>,
): ControllerContext {
  return {
    queue: new WorkQueue({ clock: base.clock }),
    tracker: new ConvergenceTracker(base.clock, 5000),
    verified: new VerifiedInstances(base.clock),
    metrics: new HubMetrics(false),
    logger: pino({ level: "silent" }),
    cacheFor: () => undefined,
    lookupsFor: () => undefined,
    routeWritesFor: () => new Semaphore(1),
    ...base,
  };
}

/** The cloud side of a context served by real CloudAccounts, as the hub wires it. */
export function accountsCloud(
  accounts: CloudAccounts,
): Pick<ControllerContext, "cloudFor" | "cacheFor" | "lookupsFor" | "routeWritesFor" | "loadBalancerOpsFor"> {
  return {
    cloudFor: (c) => accounts.cloudFor(c),
    cacheFor: (c) => accounts.cacheFor(c),
    lookupsFor: (c) => accounts.lookupsFor(c),
    routeWritesFor: (c) => accounts.routeWritesFor(c),
    loadBalancerOpsFor: (c) => accounts.loadBalancerOpsFor(c),
  };
}
