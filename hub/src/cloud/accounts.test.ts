import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { z } from "zod";
import { parseHubConfig } from "../config/load.js";
import { HubMetrics } from "../metrics.js";
import { FakeClock } from "../util/clock.js";
import { CloudAccounts } from "./accounts.js";
import type { CloudCallWrapper, ProviderContext, ProviderFactory } from "./provider.js";
import { type SimulatedOptions, simulatedProvider } from "./providers/simulated/index.js";
import { ProviderRegistry } from "./registry.js";

function config(accounts: unknown[], clusters?: unknown[]) {
  return parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts,
      clusters: clusters ?? [
        { name: "c1", account: "a1", token: { env: "T" } },
        { name: "c2", account: "a2", token: { env: "T" } },
        { name: "c3", account: "a1", token: { env: "T" } },
      ],
    }),
  );
}

const account = (name: string, over: Record<string, unknown> = {}) => ({
  name,
  provider: "fake",
  region: "r1",
  credentials: { env: "K" },
  ...over,
});

async function bind(
  accounts: unknown[],
  signal?: AbortSignal,
  factories: ProviderFactory[] = [],
  clusters?: unknown[],
) {
  const calls: CloudCallWrapper[] = [];
  const contexts: ProviderContext[] = [];
  const fake: ProviderFactory = {
    name: "fake",
    annotationPrefixes: [],
    options: z.unknown(),
    credentials: { required: [], bare: "" },
    endpoint: "optional",
    async create(ctx) {
      calls.push(ctx.call);
      contexts.push(ctx);
      return {
        name: "fake",
        instances: {
          getByProviderID: async () => {
            throw new Error("unused");
          },
          findByName: async () => [],
          listPage: async () => ({ instances: [] }),
          parseProviderID: () => undefined,
        },
      };
    },
  };
  const cfg = config(accounts, clusters);
  const clock = new FakeClock();
  const accountsRuntime = await CloudAccounts.create(cfg.accounts, cfg.clusters, {
    registry: new ProviderRegistry([fake, ...factories]),
    refresh: { periodMs: 60_000, cacheScope: "account" },
    maxConcurrentRouteWrites: 4,
    clock,
    logger: pino({ level: "silent" }),
    metrics: new HubMetrics(false),
    env: { K: "secret", T: "t" },
    ...(signal !== undefined && { signal }),
  });
  return { accounts: accountsRuntime, calls, contexts, clock };
}

describe("cloud accounts", () => {
  test("an account's rate limit: its own, else its provider's published one, else the hub's default", async () => {
    const published: ProviderFactory<SimulatedOptions> = {
      ...simulatedProvider,
      name: "published",
      endpoint: "optional",
      defaultRateLimit: { perSecond: 1, burst: 5 },
      create: async (ctx, options) => ({
        ...(await simulatedProvider.create(ctx, options)),
        name: "published",
      }),
    };
    const { accounts } = await bind(
      [
        account("a1", { provider: "published" }),
        account("a2", { provider: "published", rateLimit: { perSecond: 3, burst: 6 } }),
        account("a3"),
      ],
      undefined,
      [published as ProviderFactory],
      [{ name: "c1", account: "a1", token: { env: "T" } }],
    );
    expect(accounts.summaries().map((a) => [a.name, a.rateLimit])).toEqual([
      ["a1", { perSecond: 1, burst: 5 }],
      ["a2", { perSecond: 3, burst: 6 }],
      ["a3", { perSecond: 20, burst: 40 }],
    ]);
  });

  test("the vendor's rate-limit answer holds the account's calls until its next free call", async () => {
    const { contexts, calls, clock } = await bind(
      [account("a1")],
      undefined,
      [],
      [{ name: "c1", account: "a1", token: { env: "T" } }],
    );
    const ctx = contexts[0];
    const call = calls[0];
    if (ctx?.rateBudget === undefined || call === undefined) throw new Error("no context");
    await call("first", async () => "ok");
    ctx.rateBudget({ remaining: 0, nextFreeAtMs: clock.now() + 5_000 });
    let done = false;
    const next = call("second", async () => {
      done = true;
    });
    clock.advance(4_999);
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    clock.advance(100);
    await next;
    expect(done).toBe(true);
  });

  test("load-balancer concurrency is bounded per account, shared by the account's clusters", async () => {
    const { accounts } = await bind([account("a1", { maxConcurrentLoadBalancerOps: 3 }), account("a2")]);
    const c1 = accounts.loadBalancerOpsFor("c1");
    expect(c1).toBeDefined();
    expect(accounts.loadBalancerOpsFor("c3")).toBe(c1);
    expect(accounts.loadBalancerOpsFor("c2")).not.toBe(c1);
    expect(config([account("a1"), account("a2")]).accounts[0]?.maxConcurrentLoadBalancerOps).toBe(64);
  });

  test("every cloud call gets the hub's shutdown signal (no second, wall-clock timeout)", async () => {
    const shutdown = new AbortController();
    const { calls } = await bind([account("a1"), account("a2")], shutdown.signal);
    const signal = await calls[0]?.("op", async (s) => s);
    expect(signal?.aborted).toBe(false);
    // Shared by every call in flight: no listener limit, or Node logs a leak warning past 10 calls.
    // Read where setMaxListeners writes it: getMaxListeners cannot return 0 (no limit) on Node 20,
    // and the warning goes to the real process, which jest's sandbox does not show.
    const limit = Object.getOwnPropertySymbols(shutdown.signal).find(
      (k) => k.description === "events.maxEventTargetListeners",
    );
    expect(
      limit === undefined ? "not set" : (shutdown.signal as unknown as Record<symbol, unknown>)[limit],
    ).toBe(0);
    shutdown.abort();
    expect(signal?.aborted).toBe(true);
  });

  test("a provider's own account settings are validated by it, errors naming the field", async () => {
    await expect(
      bind(
        [
          account("a1"),
          account("a2", {
            provider: "simulated",
            endpoint: "http://127.0.0.1:1",
            options: { pollMs: 5 },
          }),
        ],
        undefined,
        [simulatedProvider],
      ),
    ).rejects.toThrow(/^accounts\[1\]\.options: Unrecognized key: "pollMs"/);
  });

  test("the provider checks its credential names; a single reference stays valid", async () => {
    const sim = (credentials: unknown) =>
      bind(
        [
          account("a1"),
          account("a2", { provider: "simulated", endpoint: "http://127.0.0.1:1", credentials }),
        ],
        undefined,
        [simulatedProvider],
      );
    await expect(sim({ env: "K" })).resolves.toBeDefined();
    await expect(sim({ apiKey: { env: "K" } })).resolves.toBeDefined();
    await expect(sim({ apiKey: { env: "K" }, roleArn: { env: "K" } })).rejects.toThrow(
      /^accounts\[1\]\.credentials\.roleArn: /,
    );
    await expect(sim({ token: { env: "K" } })).rejects.toThrow(/^accounts\[1\]\.credentials\.token: /);
    await expect(bind([account("a1", { credentials: { a: { env: "K" } } }), account("a2")])).rejects.toThrow(
      /^accounts\[0\]\.credentials\.a: not a credential of this provider/,
    );
  });

  test("an account serves several regions: a cluster names its region; one client and cache per region", async () => {
    const multi = [account("a1", { region: undefined, regions: ["r1", "r2"] }), account("a2")];
    const cluster = (name: string, over: Record<string, unknown> = {}) => ({
      name,
      account: "a1",
      token: { env: "T" },
      ...over,
    });
    const { accounts, calls, contexts } = await bind(
      multi,
      undefined,
      [],
      [
        cluster("c1", { region: "r1" }),
        cluster("c2", { region: "r2", network: "vpc-2" }),
        cluster("c3", { region: "r1", adoptFrom: { vendorCcmClusterName: "lke7" } }),
      ],
    );
    expect(calls).toHaveLength(3); // a1 in r1 and r2, a2
    expect(accounts.cloudFor("c1")?.account.region).toBe("r1");
    expect(accounts.cloudFor("c2")?.account.region).toBe("r2");
    expect(accounts.cloudFor("c2")?.target.scope.network).toBe("vpc-2");
    // Every load-balancer and route call names the cluster and its own network.
    expect(accounts.cloudFor("c2")?.target).toMatchObject({ cluster: "c2", network: "vpc-2" });
    expect(accounts.cloudFor("c1")?.target.cluster).toBe("c1");
    // The provider of the account lists for every cluster's network.
    expect(contexts[0]?.clusterNetworks?.()).toEqual([undefined, "vpc-2", undefined]);
    // One lock table per account: its clusters' writes of one shared object never overlap.
    expect(accounts.cloudFor("c1")?.writeLocks).toBe(accounts.cloudFor("c2")?.writeLocks);
    expect(accounts.cloudFor("c1")?.target.scope.adoptFrom).toBeUndefined();
    expect(accounts.cloudFor("c3")?.target.scope.adoptFrom).toEqual({ vendorCcmClusterName: "lke7" });
    expect(accounts.cacheFor("c1")).toBe(accounts.cacheFor("c3"));
    expect(accounts.cacheFor("c1")).not.toBe(accounts.cacheFor("c2"));
    expect(accounts.loadBalancerOpsFor("c1")).toBe(accounts.loadBalancerOpsFor("c2"));
    await expect(bind(multi, undefined, [], [cluster("c1")])).rejects.toThrow(
      /^clusters\[0\]\.region: required: account "a1" serves several regions \(r1, r2\)/,
    );
    await expect(bind(multi, undefined, [], [cluster("c1", { region: "r9" })])).rejects.toThrow(
      /^clusters\[0\]\.region: account "a1" does not serve region "r9"/,
    );
    expect(() => config([account("a1", { region: undefined }), account("a2")])).toThrow(
      /accounts\[0\]\.region/,
    );
    expect(config([account("a1", { region: "r1" }), account("a2")]).accounts[0]?.regions).toEqual(["r1"]);
  });
});
