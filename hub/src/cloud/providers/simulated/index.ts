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
import { SimulatedVolumes } from "./volumes.js";

/**
 * `accounts[].options` of a simulated account: none. How asynchronous its load balancers are is
 * the simulated cloud's own setting per account (its admin API), read from each load
 * balancer's status like any cloud's.
 */
export const SimulatedOptionsSchema = z.object({}).strict();
export type SimulatedOptions = z.infer<typeof SimulatedOptionsSchema>;

export const simulatedProvider: ProviderFactory<SimulatedOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: [ANNOTATION_PREFIX],
  options: SimulatedOptionsSchema,
  // `credentials: {apiKey: <ref>}`, or just `<ref>`.
  credentials: { required: ["apiKey"], bare: "apiKey" },
  endpoint: "required",
  lbSettings: simulatedLbSettings,
  async create(ctx: ProviderContext, _options: SimulatedOptions): Promise<CloudProvider> {
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
      loadBalancers: new SimulatedLoadBalancers(ctx, client),
      routes: new SimulatedRoutes(ctx, client),
      volumes: new SimulatedVolumes(ctx, client),
    };
  },
};
