/**
 * The `simulated` provider: an adapter for the simulated cloud that sim/ serves over HTTP.
 * It reaches the cloud only through the account's `endpoint`, like any real provider.
 */
import { z } from "zod";
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { simulatedLbSettings } from "./annotations.js";
import { SimulatedClient } from "./client.js";
import { ANNOTATION_PREFIX, PROVIDER_NAME } from "./convert.js";
import { SimulatedInstances } from "./instances.js";
import { SimulatedLoadBalancers } from "./load-balancers.js";
import { SimulatedRoutes } from "./routes.js";

/** `accounts[].options` of a simulated account. */
export const SimulatedOptionsSchema = z
  .object({
    /** Load-balancer creates and deletes answer "in progress" this many polls before done. */
    asyncPolls: z.number().int().min(0).max(1000).default(0),
    /** The delay each "in progress" answer asks for. */
    asyncPollMs: z.number().int().positive().default(1000),
  })
  .strict();
export type SimulatedOptions = z.infer<typeof SimulatedOptionsSchema>;

export const simulatedProvider: ProviderFactory<SimulatedOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: [ANNOTATION_PREFIX],
  options: SimulatedOptionsSchema,
  // `credentials: {apiKey: <ref>}`, or just `<ref>`.
  credentials: { required: ["apiKey"], bare: "apiKey" },
  endpoint: "required",
  lbSettings: simulatedLbSettings,
  async create(ctx: ProviderContext, options: SimulatedOptions): Promise<CloudProvider> {
    const { account } = ctx;
    const client = new SimulatedClient({
      endpoint: account.endpoint ?? "",
      credential: () => account.secret?.("apiKey") ?? account.credential,
      region: account.region,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
      ...(account.userAgent !== undefined && { userAgent: account.userAgent }),
    });
    ctx.logger.debug(
      { account: account.name, region: account.region, endpoint: account.endpoint },
      "simulated provider bound",
    );
    return {
      name: PROVIDER_NAME,
      instances: new SimulatedInstances(ctx, client),
      loadBalancers: new SimulatedLoadBalancers(ctx, client, {
        asyncPolls: options.asyncPolls,
        asyncPollMs: options.asyncPollMs,
      }),
      routes: new SimulatedRoutes(ctx, client),
    };
  },
};
