/**
 * The `simulated` provider: an adapter for the simulated cloud that sim/ serves over HTTP.
 * It reaches the cloud only through the account's `endpoint`, like any real provider.
 */
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { SimulatedClient } from "./client.js";
import { ANNOTATION_PREFIX, PROVIDER_NAME } from "./convert.js";
import { SimulatedInstances } from "./instances.js";
import { SimulatedLoadBalancers } from "./load-balancers.js";
import { SimulatedRoutes } from "./routes.js";

export const simulatedProvider: ProviderFactory = {
  name: PROVIDER_NAME,
  annotationPrefixes: [ANNOTATION_PREFIX],
  create(ctx: ProviderContext): CloudProvider {
    const { account } = ctx;
    if (account.provider !== PROVIDER_NAME) {
      throw new Error(`account ${account.name} is for provider ${account.provider}, not ${PROVIDER_NAME}`);
    }
    const endpoint = checkEndpoint(account.name, account.endpoint);
    if (!(account.requestTimeoutMs > 0)) {
      throw new Error(`account ${account.name}: requestTimeoutMs must be > 0`);
    }
    const client = new SimulatedClient({
      endpoint,
      credential: account.credential,
      region: account.region,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
    });
    ctx.logger.debug({ account: account.name, region: account.region, endpoint }, "simulated provider bound");
    return {
      name: PROVIDER_NAME,
      instances: new SimulatedInstances(ctx, client),
      loadBalancers: new SimulatedLoadBalancers(ctx, client),
      routes: new SimulatedRoutes(ctx, client),
    };
  },
};

/** The simulated cloud has no public address: an account must name its endpoint. */
function checkEndpoint(accountName: string, endpoint: string | undefined): string {
  if (endpoint === undefined || endpoint === "") {
    throw new Error(`account ${accountName}: the simulated provider needs an endpoint`);
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`account ${accountName}: endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`account ${accountName}: endpoint must be http(s), got ${url.protocol}`);
  }
  return endpoint;
}
