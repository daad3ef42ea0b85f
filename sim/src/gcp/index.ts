export type { DiscoveryDocument, DiscoverySchema } from "./discovery.js";
export { DiscoveryChecker } from "./discovery.js";
export type { CreateInstanceSpec, GcpFakeOptions, OperationFailure } from "./fake.js";
export { computeFilter, GCE_BASE, GCP_SPEC, GcpComputeFake, gcpSpecChecker, LB_COLLECTIONS } from "./fake.js";
export type { ExternalAccountFileOptions, TokenStore } from "./sts.js";
export { GcpStsFake, JWT_TOKEN_TYPE } from "./sts.js";
export {
  putUpstreamExternalLb,
  putUpstreamInternalLb,
  type UpstreamExternalLb,
  type UpstreamInternalLb,
} from "./upstream.js";
