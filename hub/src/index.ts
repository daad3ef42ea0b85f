export { CloudAccounts, clusterRegionProblem } from "./cloud/accounts.js";
export { createProvider } from "./cloud/bind-provider.js";
export { builtinProviders } from "./cloud/builtin.js";
export { type ClusterCleanupReport, deleteClusterResources } from "./cloud/cleanup.js";
export { InstanceCache } from "./cloud/instance-cache.js";
export { InstanceLookups } from "./cloud/instance-lookups.js";
export { backendsDigest, loadBalancerSpecDigest } from "./cloud/naming.js";
export { type CloudProvider, isInProgress } from "./cloud/provider.js";
export { awsProvider } from "./cloud/providers/aws/index.js";
export { simulatedProvider } from "./cloud/providers/simulated/index.js";
export { ProviderRegistry } from "./cloud/registry.js";
export {
  addClusterEntry,
  markClusterDecommissioned,
  removeClusterEntry,
  setNatsSection,
} from "./config/edit.js";
export { ConfigError, configSecretProblems, loadHubConfig, parseHubConfig } from "./config/load.js";
export { nextFreePodNetwork } from "./config/pod-network.js";
export type { AccountConfig, ClusterConfig, HubConfig } from "./config/schema.js";
export { DEFAULT_RECONCILE_WORKERS } from "./config/schema.js";
export { resolveSecret } from "./config/secret.js";
export { watchFile } from "./config/watch.js";
export { checkHubConfig, hubConfigProblems } from "./config-check.js";
export { CONTROLLERS, isControllerEnabled, parseControllerList } from "./controllers.js";
export type * from "./fleet-api/views.js";
export { tokenHash } from "./grpc/auth.js";
export { tlsFileProblems } from "./grpc/tls.js";
export type { HubOptions, ReloadOutcome } from "./hub.js";
export { Hub } from "./hub.js";
export { HubMetrics } from "./metrics.js";
export * from "./nats/decentralized.js";
export { systemClock } from "./util/clock.js";
