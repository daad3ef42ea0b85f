/** The azure provider itself, with the SDKs: loaded by index.ts when an Azure account is bound. */
import type { CloudProvider, ProviderContext } from "../../provider.js";
import { AzureApi } from "./api.js";
import { AzureInstances } from "./instances.js";
import { AzureLoadBalancers } from "./load-balancers.js";
import { PROVIDER_NAME } from "./names.js";
import type { AzureOptions } from "./options.js";
import { AzureRoutes } from "./routes.js";
import { AzureVolumes } from "./volumes.js";

export async function createAzureProvider(
  ctx: ProviderContext,
  options: AzureOptions,
): Promise<CloudProvider> {
  const api = new AzureApi(ctx, options);
  await api.sdk();
  const instances = new AzureInstances(api);
  ctx.logger.debug(
    {
      account: ctx.account.name,
      subscription: api.subscription,
      region: api.region,
      endpoint: ctx.account.endpoint,
    },
    "azure provider bound",
  );
  return {
    name: PROVIDER_NAME,
    instances,
    loadBalancers: new AzureLoadBalancers(ctx, api, instances, options),
    routes: new AzureRoutes(api, instances, options),
    volumes: new AzureVolumes(ctx, api),
  };
}
