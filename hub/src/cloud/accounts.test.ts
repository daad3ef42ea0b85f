import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseHubConfig } from "../config/load.js";
import { HubMetrics } from "../metrics.js";
import { FakeClock } from "../util/clock.js";
import { CloudAccounts } from "./accounts.js";
import type { CloudCallWrapper, ProviderFactory } from "./provider.js";
import { simulatedProvider } from "./providers/simulated/index.js";
import { ProviderRegistry } from "./registry.js";

function config(accounts: unknown[]) {
  return parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts,
      clusters: [
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

function bind(accounts: unknown[], signal?: AbortSignal, factories: ProviderFactory[] = []) {
  const calls: CloudCallWrapper[] = [];
  const fake: ProviderFactory = {
    name: "fake",
    create(ctx) {
      calls.push(ctx.call);
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
  const cfg = config(accounts);
  const accountsRuntime = new CloudAccounts(cfg.accounts, cfg.clusters, {
    registry: new ProviderRegistry([fake, ...factories]),
    refresh: { periodMs: 60_000, cacheScope: "account" },
    maxConcurrentRouteWrites: 4,
    clock: new FakeClock(),
    logger: pino({ level: "silent" }),
    metrics: new HubMetrics(false),
    env: { K: "secret", T: "t" },
    ...(signal !== undefined && { signal }),
  });
  return { accounts: accountsRuntime, calls };
}

describe("cloud accounts", () => {
  test("load-balancer concurrency is bounded per account, shared by the account's clusters", () => {
    const { accounts } = bind([account("a1", { maxConcurrentLoadBalancerOps: 3 }), account("a2")]);
    const c1 = accounts.loadBalancerOpsFor("c1");
    expect(c1).toBeDefined();
    expect(accounts.loadBalancerOpsFor("c3")).toBe(c1);
    expect(accounts.loadBalancerOpsFor("c2")).not.toBe(c1);
    expect(config([account("a1"), account("a2")]).accounts[0]?.maxConcurrentLoadBalancerOps).toBe(64);
  });

  test("every cloud call gets the hub's shutdown signal (no second, wall-clock timeout)", async () => {
    const shutdown = new AbortController();
    const { calls } = bind([account("a1"), account("a2")], shutdown.signal);
    const signal = await calls[0]?.("op", async (s) => s);
    expect(signal?.aborted).toBe(false);
    shutdown.abort();
    expect(signal?.aborted).toBe(true);
  });

  test("a provider's own account settings are validated by it, errors naming the field", () => {
    expect(() =>
      bind(
        [
          account("a1"),
          account("a2", {
            provider: "simulated",
            endpoint: "http://127.0.0.1:1",
            options: { asyncPolls: -2 },
          }),
        ],
        undefined,
        [simulatedProvider],
      ),
    ).toThrow(/^accounts\[1\]\.options\.asyncPolls: /);
  });

  test("the provider checks its credential names; a single reference stays valid", () => {
    const sim = (credentials: unknown) => () =>
      bind(
        [
          account("a1"),
          account("a2", { provider: "simulated", endpoint: "http://127.0.0.1:1", credentials }),
        ],
        undefined,
        [simulatedProvider],
      );
    expect(sim({ env: "K" })).not.toThrow();
    expect(sim({ apiKey: { env: "K" } })).not.toThrow();
    expect(sim({ apiKey: { env: "K" }, roleArn: { env: "K" } })).toThrow(
      /^accounts\[1\]\.credentials\.roleArn: /,
    );
    expect(sim({ token: { env: "K" } })).toThrow(/^accounts\[1\]\.credentials\.token: /);
    expect(() => bind([account("a1", { credentials: { a: { env: "K" } } }), account("a2")])).toThrow(
      /^accounts\[0\]\.credentials: provider fake takes one secret reference/,
    );
  });
});
