/**
 * Test-only: a ControllerContext for reconciler tests (real queue, tracker and verdict cache, a
 * silent logger), with the cloud as each test gives it. Not built into dist (hub/tsconfig.json).
 */
import { pino } from "pino";
import type { CloudAccounts } from "../cloud/accounts.js";
import { VerifiedInstances } from "../cloud/verified-instances.js";
import { HubMetrics } from "../metrics.js";
import { WorkQueue } from "../queue/index.js";
import { Semaphore } from "../util/semaphore.js";
import type { ControllerContext } from "./controller.js";
import { ConvergenceTracker } from "./convergence.js";

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
