export { builtinProviders } from "./cloud/builtin.js";
export { simulatedProvider } from "./cloud/providers/simulated/index.js";
export { ConfigError, configSecretProblems, loadHubConfig, parseHubConfig } from "./config/load.js";
export type { AccountConfig, ClusterConfig, HubConfig } from "./config/schema.js";
export { CONTROLLERS, isControllerEnabled, parseControllerList } from "./controllers.js";
export type * from "./fleet-api/views.js";
export { tlsFileProblems } from "./grpc/tls.js";
export type { HubOptions } from "./hub.js";
export { Hub } from "./hub.js";
