// The simulated cloud: an in-memory cloud served over HTTP on loopback, with fault
// injection, a per-account rate limit and call counters. The hub reaches it only through
// the `endpoint` of a `simulated` account; see api.ts (public API) and admin.ts (admin API).
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./api.js";
export type { FaultsView } from "./cloud.js";
export { startSimulatedCloud } from "./cloud.js";
export { NO_FAULTS } from "./faults.js";
export { DEFAULT_REGIONS } from "./store.js";
export type {
  CloudCallCount,
  CloudFaultConfig,
  CloudStats,
  CloudStatsGroup,
  SimAccountDetail,
  SimAccountInfo,
  SimAccountOptions,
  SimAddress,
  SimAddressType,
  SimInstance,
  SimInstanceSpec,
  SimInstanceState,
  SimInstanceUpdate,
  SimulatedCloud,
  SimulatedCloudOptions,
} from "./types.js";
export { SIM_ADDRESS_TYPES, SIM_INSTANCE_STATES } from "./types.js";
export type { WireAddress, WireError, WireInstance, WireInstanceList } from "./wire.js";
