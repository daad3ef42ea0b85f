/**
 * The aws provider itself, with the SDK: loaded by index.ts on an AWS account's first cloud
 * call, so a hub without AWS accounts never loads the SDK.
 */
import type { CloudProvider, ProviderContext } from "../../provider.js";
import { type AssumeRoleSettings, AwsApi } from "./api.js";
import { AwsInstances } from "./instances.js";
import { AwsLoadBalancers } from "./load-balancers.js";
import type { AwsOptions } from "./options.js";
import { PROVIDER_NAME } from "./provider-id.js";
import { AwsRoutes } from "./routes.js";
import { AwsVolumes } from "./volumes.js";

export function createAwsProvider(
  ctx: ProviderContext,
  options: AwsOptions,
  names: readonly string[],
): CloudProvider {
  const { account } = ctx;
  const secret = (name: string) => account.secret?.(name) ?? account.credential;
  const keys = () => ({
    accessKeyId: secret("accessKeyId"),
    secretAccessKey: secret("secretAccessKey"),
    ...(names.includes("sessionToken") && { sessionToken: secret("sessionToken") }),
  });
  const role: AssumeRoleSettings | undefined = names.includes("roleArn")
    ? {
        roleArn: () => secret("roleArn"),
        externalId: names.includes("externalId") ? () => secret("externalId") : undefined,
        sessionName: options.sessionName,
        durationSeconds: options.durationSeconds,
      }
    : undefined;
  const api = new AwsApi(ctx, keys, role);
  ctx.logger.debug(
    {
      account: account.name,
      region: account.region,
      endpoint: account.endpoint,
      assumeRole: role !== undefined,
    },
    "aws provider bound",
  );
  return {
    name: PROVIDER_NAME,
    instances: new AwsInstances(ctx, api, options.instancePageSize),
    loadBalancers: new AwsLoadBalancers(ctx, api, options),
    routes: new AwsRoutes(ctx, api),
    volumes: new AwsVolumes(ctx, api),
  };
}
