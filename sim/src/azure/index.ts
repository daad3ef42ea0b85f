export type { IssuedToken } from "./entra.js";
export { EntraFake, JWT_BEARER } from "./entra.js";
export type { ArmResource, ArmType, AzureFakeOptions, CreateDiskSpec, CreateVmSpec } from "./fake.js";
export {
  ARM_BUCKETS,
  AzureFake,
  COMPUTE_API_VERSION,
  DISK_API_VERSION,
  NETWORK_API_VERSION,
} from "./fake.js";
export { AZURE_SPEC, azureOpenApiDocument, azureSpecChecker } from "./swagger.js";
