/** The gcp provider itself, with the SDK: loaded by index.ts when a GCP account is bound. */
import type { CloudProvider, ProviderContext } from "../../provider.js";
import { GcpApi } from "./api.js";
import { GcpInstances } from "./instances.js";
import { GcpLoadBalancers } from "./load-balancers.js";
import { PROVIDER_NAME } from "./names.js";
import type { GcpOptions } from "./options.js";
import { GcpRoutes } from "./routes.js";
import { GcpVolumes } from "./volumes.js";

export async function createGcpProvider(ctx: ProviderContext, options: GcpOptions): Promise<CloudProvider> {
  const api = new GcpApi(ctx, options.project);
  // The SDK's load and client setup block the event loop for seconds: pay it while the account
  // is bound (before the hub serves agents), not on the first call, when every cluster waits.
  await api.sdk();
  const instances = new GcpInstances(ctx, api, options.instancePageSize);
  ctx.logger.debug(
    { account: ctx.account.name, project: api.project, region: api.region, endpoint: ctx.account.endpoint },
    "gcp provider bound",
  );
  return {
    name: PROVIDER_NAME,
    instances,
    loadBalancers: new GcpLoadBalancers(ctx, api, instances, options),
    routes: new GcpRoutes(ctx, api, options),
    volumes: new GcpVolumes(ctx, api),
  };
}
