/** `accounts[].options` of an AWS account (no SDK here: the hub loads it only for AWS accounts). */
import { z } from "zod";

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
