/**
 * The `gcp` provider: Compute Engine instances, the target-pool external and the internal
 * passthrough network load balancers cloud-provider-gcp builds, and VPC routes, through the
 * official `@google-cloud/compute` (REST transport), one set of clients per account with its
 * service-account key or external-account (workload identity federation) file. The SDK is
 * loaded when a GCP account is bound (impl.ts), not with the hub.
 */
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { gcpLbSettings } from "./annotations.js";
import { GCP_ANNOTATION_PREFIXES, PROVIDER_NAME } from "./names.js";
import { type GcpOptions, GcpOptionsSchema } from "./options.js";
import { COMPUTE_RATE_LIMIT } from "./quotas.js";

export type { GcpOptions } from "./options.js";
export { GcpOptionsSchema } from "./options.js";

export const gcpProvider: ProviderFactory<GcpOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: GCP_ANNOTATION_PREFIXES,
  // Compute Engine's API rate quotas are per project (one account = one project).
  rateLimitScope: "account",
  defaultRateLimit: COMPUTE_RATE_LIMIT,
  options: GcpOptionsSchema,
  // A service-account key or an external-account file, never both (credentials.ts).
  credentials: {
    required: [],
    optional: ["serviceAccountKey", "externalAccount"],
    oneOf: ["serviceAccountKey", "externalAccount"],
    bare: "serviceAccountKey",
  },
  endpoint: "optional",
  // networking.gke.io/load-balancer-type: Internal is the unified `internal` setting.
  lbSettings: gcpLbSettings,
  async create(ctx: ProviderContext, options: GcpOptions): Promise<CloudProvider> {
    const { createGcpProvider } = await import("./impl.js");
    return createGcpProvider(ctx, options);
  },
};
