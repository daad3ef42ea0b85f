/**
 * The `azure` provider: virtual machines and scale-set VMs, the cluster's shared Standard Load
 * Balancer with public IPs and NSG rules as cloud-provider-azure builds them, and the cluster's
 * route table, through the official `@azure/arm-network` and `@azure/arm-compute` with an
 * `@azure/identity` credential (client secret, client certificate or a federated token file),
 * one set of clients per account (tenant, subscription). The SDKs are loaded when an Azure
 * account is bound (impl.ts), not with the hub.
 */
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { azureLbSettings } from "./annotations.js";
import { AZURE_ANNOTATION_PREFIXES, PROVIDER_NAME } from "./names.js";
import { type AzureOptions, AzureOptionsSchema } from "./options.js";
import { ARM_RATE_LIMIT } from "./quotas.js";

export type { AzureOptions } from "./options.js";
export { AzureOptionsSchema } from "./options.js";

export const azureProvider: ProviderFactory<AzureOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: AZURE_ANNOTATION_PREFIXES,
  // ARM throttles per subscription (one account = one subscription).
  rateLimitScope: "account",
  defaultRateLimit: ARM_RATE_LIMIT,
  options: AzureOptionsSchema,
  credentials: {
    required: [],
    optional: ["clientSecret", "clientCertificate", "federatedToken"],
    oneOf: ["clientSecret", "clientCertificate", "federatedToken"],
    bare: "clientSecret",
  },
  // The SDK knows ARM's public address; sovereign clouds and the fake set it.
  endpoint: "optional",
  lbSettings: azureLbSettings,
  async create(ctx: ProviderContext, options: AzureOptions): Promise<CloudProvider> {
    const { createAzureProvider } = await import("./impl.js");
    return createAzureProvider(ctx, options);
  },
};
