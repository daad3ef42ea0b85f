/**
 * The `aws` provider: EC2 instances, classic ELB and NLB load balancers and VPC routes
 * through the official AWS SDK v3, one set of clients per account and region.
 */
import { z } from "zod";
import {
  AccountConfigError,
  type CloudProvider,
  type ProviderContext,
  type ProviderFactory,
} from "../../provider.js";
import { AWS_ANNOTATION_PREFIX } from "./annotations.js";
import { type AssumeRoleSettings, AwsApi } from "./api.js";
import { AwsInstances, PROVIDER_NAME } from "./instances.js";
import { AwsLoadBalancers } from "./load-balancers.js";
import { AwsRoutes } from "./routes.js";

/** `accounts[].options` of an AWS account. */
export const AwsOptionsSchema = z
  .object({
    /** RoleSessionName of the assumed role (CloudTrail shows it). */
    sessionName: z
      .string()
      .regex(/^[\w+=,.@-]{2,64}$/)
      .default("fleet-ccm"),
    /** Lifetime asked of AssumeRole; refreshed before it ends. */
    durationSeconds: z.number().int().min(900).max(43_200).default(3600),
    /** DescribeInstances page size (MaxResults). */
    instancePageSize: z.number().int().min(5).max(1000).default(1000),
    /** The load balancer of a Service without aws-load-balancer-type (upstream: classic). */
    defaultLoadBalancerType: z.enum(["classic", "nlb"]).default("classic"),
    /** How long to wait before looking again while AWS releases a deleted load balancer's interfaces. */
    dependencyRetryMs: z.number().int().positive().default(10_000),
  })
  .strict();
export type AwsOptions = z.infer<typeof AwsOptionsSchema>;

export function parseAwsOptions(options: unknown): AwsOptions {
  const parsed = AwsOptionsSchema.safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = ["options", ...(issue?.path ?? []).map(String)].join(".");
  throw new AccountConfigError(where, issue?.message ?? "invalid");
}

const REQUIRED = ["accessKeyId", "secretAccessKey"] as const;
const OPTIONAL = ["sessionToken", "roleArn", "externalId"] as const;
const KNOWN: readonly string[] = [...REQUIRED, ...OPTIONAL];

export { AWS_ANNOTATION_PREFIX };

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
    const options = parseAwsOptions(account.options);
    const names = account.credentialNames ?? [...REQUIRED];
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
    const instances = new AwsInstances(ctx, api, options.instancePageSize);
    return {
      name: PROVIDER_NAME,
      instances,
      loadBalancers: new AwsLoadBalancers(ctx, api, options),
      routes: new AwsRoutes(ctx, api),
    };
  },
};
