/**
 * The `aws` provider: EC2 instances, classic ELB and NLB load balancers and VPC routes
 * through the official AWS SDK v3, one set of clients per account and region. The SDK (tens
 * of MB) is loaded on an AWS account's first cloud call (impl.ts), not with the hub.
 */
import {
  AccountConfigError,
  type CloudProvider,
  type ProviderContext,
  type ProviderFactory,
} from "../../provider.js";
import { AWS_ANNOTATION_PREFIX, awsLbCapabilities, parseAwsLbAnnotations } from "./annotations.js";
import { type AwsOptions, parseAwsOptions } from "./options.js";
import { PROVIDER_NAME, parseAwsProviderID } from "./provider-id.js";

export type { AwsOptions } from "./options.js";
export { AwsOptionsSchema, parseAwsOptions } from "./options.js";
export { AWS_ANNOTATION_PREFIX };

const REQUIRED = ["accessKeyId", "secretAccessKey"] as const;
const OPTIONAL = ["sessionToken", "roleArn", "externalId"] as const;
const KNOWN: readonly string[] = [...REQUIRED, ...OPTIONAL];

/** The provider, its methods loading the implementation (and the SDK) on first use. */
function lazyProvider(ctx: ProviderContext, options: AwsOptions, names: readonly string[]): CloudProvider {
  let real: Promise<CloudProvider> | undefined;
  const impl = (): Promise<CloudProvider> =>
    (real ??= import("./impl.js").then((m) => m.createAwsProvider(ctx, options, names)));
  const lbs = async () => {
    const p = await impl();
    if (p.loadBalancers === undefined) throw new Error("aws provider without load balancers");
    return p.loadBalancers;
  };
  const routes = async () => {
    const p = await impl();
    if (p.routes === undefined) throw new Error("aws provider without routes");
    return p.routes;
  };
  return {
    name: PROVIDER_NAME,
    instances: {
      parseProviderID: (providerID) => parseAwsProviderID(providerID, ctx.account.region),
      getByProviderID: async (providerID, signal) =>
        (await impl()).instances.getByProviderID(providerID, signal),
      findByName: async (name, signal) => (await impl()).instances.findByName(name, signal),
      listPage: async (token, signal) => (await impl()).instances.listPage(token, signal),
    },
    loadBalancers: {
      capabilities: awsLbCapabilities(options.defaultLoadBalancerType),
      // Pure: no SDK needed.
      checkAnnotations: (annotations) => parseAwsLbAnnotations(annotations, options.defaultLoadBalancerType),
      get: async (owner, signal) => (await lbs()).get(owner, signal),
      ensure: async (owner, spec, signal, hints) => (await lbs()).ensure(owner, spec, signal, hints),
      updateBackends: async (owner, backends, signal, backendAnnotations) =>
        (await lbs()).updateBackends(owner, backends, signal, backendAnnotations),
      ensureDeleted: async (owner, signal, hints) => (await lbs()).ensureDeleted(owner, signal, hints),
      listOwned: async (token, signal) => {
        const real = await lbs();
        if (real.listOwned === undefined) throw new Error("aws provider without a load-balancer listing");
        return real.listOwned(token, signal);
      },
    },
    routes: {
      list: async (signal) => (await routes()).list(signal),
      create: async (route, owner, signal) => (await routes()).create(route, owner, signal),
      delete: async (route, signal) => (await routes()).delete(route, signal),
    },
  };
}

export const awsProvider: ProviderFactory = {
  name: PROVIDER_NAME,
  annotationPrefixes: [AWS_ANNOTATION_PREFIX],
  rateLimitScope: "region",
  checkCredentials(names) {
    for (const n of names)
      if (!KNOWN.includes(n))
        throw new AccountConfigError(
          n === "" ? "credentials" : `credentials.${n}`,
          `not a credential of the aws provider (${KNOWN.join(", ")})`,
        );
    for (const n of REQUIRED)
      if (!names.includes(n)) throw new AccountConfigError(`credentials.${n}`, "required");
    if (names.includes("externalId") && !names.includes("roleArn"))
      throw new AccountConfigError("credentials.externalId", "only with credentials.roleArn");
  },
  create(ctx: ProviderContext): CloudProvider {
    const { account } = ctx;
    if (account.provider !== PROVIDER_NAME)
      throw new Error(`account ${account.name} is for provider ${account.provider}, not ${PROVIDER_NAME}`);
    return lazyProvider(ctx, parseAwsOptions(account.options), account.credentialNames ?? [...REQUIRED]);
  },
};
