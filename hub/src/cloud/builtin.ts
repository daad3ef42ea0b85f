import type { ProviderFactory } from "./provider.js";
import { awsProvider } from "./providers/aws/index.js";
import { azureProvider } from "./providers/azure/index.js";
import { digitalOceanProvider } from "./providers/digitalocean/index.js";
import { gcpProvider } from "./providers/gcp/index.js";
import { hetznerProvider } from "./providers/hetzner/index.js";
import { linodeProvider } from "./providers/linode/index.js";
import { openstackProvider } from "./providers/openstack/index.js";
import { simulatedProvider } from "./providers/simulated/index.js";

/** Every provider this hub build ships. */
export const builtinProviders: readonly ProviderFactory[] = [
  simulatedProvider,
  linodeProvider,
  awsProvider,
  digitalOceanProvider,
  hetznerProvider,
  gcpProvider,
  openstackProvider,
  azureProvider,
];
