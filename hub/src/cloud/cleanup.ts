import { classifyRetry, cloudDelayMs } from "../reconcilers/retry-policy.js";
import { backoffDelayMs } from "../util/backoff.js";
import type { CloudProvider, CloudRoute, ClusterTarget, InProgress, OwnedLoadBalancer } from "./provider.js";

/** What `deleteClusterResources` deleted, and what it could not. */
export interface ClusterCleanupReport {
  readonly loadBalancers: readonly {
    readonly id: string;
    readonly name: string;
    readonly serviceUid: string;
  }[];
  readonly routes: readonly { readonly id: string; readonly destinationCIDR: string }[];
  /** One line per resource left behind, or per capability that could not be listed. */
  readonly problems: readonly string[];
}

export interface CleanupOptions {
  readonly signal?: AbortSignal;
  /** Gives up on a resource after this long (default 5 min). */
  readonly timeoutMs?: number;
  readonly onProgress?: (status: string) => void;
  readonly sleep?: (ms: number) => Promise<void>;
}

const BACKOFF = { initialMs: 250, maxMs: 10_000, factor: 2, jitter: 0.1 };
const MAX_PAGES = 10_000;

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Repeats an idempotent delete until it is done, on the one retry policy: in progress or
 * throttled waits as long as the cloud says, transient errors back off, anything else fails.
 */
async function untilDone(
  what: string,
  call: () => Promise<undefined | InProgress>,
  opts: CleanupOptions,
): Promise<void> {
  const sleep = opts.sleep ?? defaultSleep;
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  for (let attempt = 0; ; attempt++) {
    let cause: unknown;
    try {
      const answer = await call();
      if (answer === undefined) return;
      cause = answer;
    } catch (err) {
      cause = err;
    }
    const kind = classifyRetry(cause);
    if (kind === "failed" || kind === "not-found") throw cause;
    if (Date.now() > deadline || opts.signal?.aborted)
      throw new Error(`${what}: still not deleted after ${Math.round((opts.timeoutMs ?? 300_000) / 1000)} s`);
    await sleep(cloudDelayMs(cause) ?? backoffDelayMs(Math.min(attempt, 16), BACKOFF));
  }
}

async function ownedLoadBalancers(provider: CloudProvider, cluster: string, signal?: AbortSignal) {
  const lbs = provider.loadBalancers;
  if (lbs?.listOwned === undefined) return undefined;
  const mine: OwnedLoadBalancer[] = [];
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await lbs.listOwned(token, signal);
    mine.push(...answer.items.filter((lb) => lb.owner.cluster === cluster));
    token = answer.nextPageToken;
    if (token === undefined) return mine;
  }
  throw new Error(`the owned load-balancer listing still had pages after ${MAX_PAGES}`);
}

/**
 * Deletes every cloud resource the hub created for `cluster`: the load balancers its account
 * listing says the cluster owns, and the routes the route table says it owns. Never touches
 * another owner's. Repeats the listing until it shows nothing of the cluster's, so a resource
 * a still-running reconcile created meanwhile goes too.
 */
export async function deleteClusterResources(
  provider: CloudProvider,
  target: ClusterTarget,
  opts: CleanupOptions = {},
): Promise<ClusterCleanupReport> {
  const { cluster } = target;
  const deletedLbs = new Map<string, { id: string; name: string; serviceUid: string }>();
  const deletedRoutes = new Map<string, { id: string; destinationCIDR: string }>();
  const problems: string[] = [];
  const failed = new Set<string>();
  const lbs = provider.loadBalancers;
  if (lbs !== undefined && lbs.listOwned === undefined)
    problems.push(
      `provider ${provider.name} cannot list the load balancers it owns: delete the cluster's Services (type LoadBalancer) before unregistering, or remove its load balancers by hand`,
    );
  for (let round = 0; round < 5; round++) {
    let found = 0;
    const owned = lbs === undefined ? [] : ((await ownedLoadBalancers(provider, cluster, opts.signal)) ?? []);
    for (const lb of owned) {
      if (failed.has(lb.id)) continue;
      found++;
      opts.onProgress?.(`deleting load balancer ${lb.name} (${deletedLbs.size + 1}/${owned.length})`);
      try {
        await untilDone(
          `load balancer ${lb.name}`,
          () => lbs?.ensureDeleted({ ...target, ...lb.owner }, opts.signal) ?? Promise.resolve(undefined),
          opts,
        );
        deletedLbs.set(lb.id, { id: lb.id, name: lb.name, serviceUid: lb.owner.serviceUid });
      } catch (err) {
        failed.add(lb.id);
        problems.push(`load balancer ${lb.name} (${lb.id}): ${(err as Error).message}`);
      }
    }
    const routes: readonly CloudRoute[] =
      provider.routes === undefined
        ? []
        : (await provider.routes.list(target, opts.signal)).filter(
            (r) => r.ownerCluster === cluster && !failed.has(r.id),
          );
    for (const r of routes) {
      found++;
      opts.onProgress?.(`deleting route ${r.destinationCIDR}`);
      try {
        await untilDone(
          `route ${r.destinationCIDR}`,
          () => provider.routes?.delete(target, r, opts.signal) ?? Promise.resolve(undefined),
          opts,
        );
        deletedRoutes.set(r.id, { id: r.id, destinationCIDR: r.destinationCIDR });
      } catch (err) {
        failed.add(r.id);
        problems.push(`route ${r.destinationCIDR} (${r.id}): ${(err as Error).message}`);
      }
    }
    if (found === 0) break;
  }
  return { loadBalancers: [...deletedLbs.values()], routes: [...deletedRoutes.values()], problems };
}
