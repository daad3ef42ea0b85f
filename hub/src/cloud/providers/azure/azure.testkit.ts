// An azure provider bound to a subscription of the fake ARM, as the provider tests bind it.
import type { AzureFake } from "@fleet-ccm/sim";
import type { AccountBinding, CloudProvider } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { azureProvider } from "./index.js";

export function bindToFake(
  fake: AzureFake,
  where: { readonly subscription: string; readonly resourceGroup: string; readonly tenant?: string },
  account: Partial<AccountBinding> = {},
  options: Record<string, unknown> = {},
): Promise<{ readonly provider: CloudProvider; readonly ops: string[] }> {
  return bindRecorded(
    azureProvider,
    {
      name: "azure",
      provider: "azure",
      region: "eastus",
      endpoint: fake.url,
      credential: "secret",
      requestTimeoutMs: 5_000,
      ...account,
    },
    {
      tenantId: where.tenant ?? "t",
      clientId: "app",
      subscriptionId: where.subscription,
      resourceGroup: where.resourceGroup,
      authorityHost: fake.entra.url,
      caCertificates: fake.certificate.cert,
      ...options,
    },
  );
}
