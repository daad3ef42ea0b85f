/**
 * The `aws` provider: EC2 instances, classic ELB and NLB load balancers and VPC routes
 * through the official AWS SDK v3, one set of clients per account and region. The SDK (tens
 * of MB) is loaded when an AWS account is bound (impl.ts), not with the hub.
 */
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { AWS_ANNOTATION_PREFIX } from "./annotations.js";
import { type AwsOptions, AwsOptionsSchema } from "./options.js";
import { PROVIDER_NAME } from "./provider-id.js";
import { awsLbSettings } from "./unified-settings.js";

export type { AwsOptions } from "./options.js";
export { AwsOptionsSchema } from "./options.js";
export { AWS_ANNOTATION_PREFIX };

export const awsProvider: ProviderFactory<AwsOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: [AWS_ANNOTATION_PREFIX],
  rateLimitScope: "region",
  options: AwsOptionsSchema,
  credentials: {
    required: ["accessKeyId", "secretAccessKey"],
    optional: ["sessionToken", "roleArn", "externalId"],
    onlyWith: { externalId: "roleArn" },
  },
  endpoint: "optional",
  lbSettings: awsLbSettings,
  async create(ctx: ProviderContext, options: AwsOptions): Promise<CloudProvider> {
    const { createAwsProvider } = await import("./impl.js");
    return createAwsProvider(ctx, options, ctx.account.credentialNames ?? []);
  },
};
