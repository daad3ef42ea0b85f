export { Hub } from "./hub.js";
export type { HubOptions } from "./hub.js";
export { loadHubConfig, parseHubConfig, ConfigError } from "./config/load.js";
export type { HubConfig, AccountConfig, ClusterConfig } from "./config/schema.js";
export { CONTROLLERS, parseControllerList, isControllerEnabled } from "./controllers.js";
export { simulatedProvider } from "./cloud/providers/simulated/index.js";
export { builtinProviders } from "./cloud/builtin.js";
