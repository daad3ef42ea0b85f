// The simulated cloud: an in-memory cloud served over HTTP on loopback, with fault
// injection, a per-account rate limit and call counters. The hub reaches it only through
// the `endpoint` of a `simulated` account; see api.ts (public API) and admin.ts (admin API).
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./api.js";
export type { FaultsView } from "./cloud.js";
export { startSimulatedCloud } from "./cloud.js";
export type { SimDisk, SimDiskSpec, SimDiskState } from "./disks.js";
export { MAX_DISK_IDS, SIM_DISK_STATES } from "./disks.js";
export { NO_FAULTS } from "./faults.js";
export { DEFAULT_REGIONS, SimCloudError } from "./store.js";
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
  SimFirewallRule,
  SimFirewallRuleSpec,
  SimHealthCheck,
  SimHealthCheckProtocol,
  SimHealthCheckSpec,
  SimInstance,
  SimInstanceSpec,
  SimInstanceState,
  SimInstanceUpdate,
  SimLbAsyncSettings,
  SimLbAudit,
  SimLbAuditFilter,
  SimLbDuplicate,
  SimLbIngress,
  SimLbInventory,
  SimLbOrphan,
  SimLbProtocol,
  SimLbResourceBase,
  SimLbResourceKind,
  SimLbStatus,
  SimListener,
  SimListenerSpec,
  SimLoadBalancer,
  SimLoadBalancerSpec,
  SimNetwork,
  SimPool,
  SimPoolSpec,
  SimRoute,
  SimRouteSpec,
  SimSessionAffinity,
  SimulatedCloud,
  SimulatedCloudOptions,
} from "./types.js";
export {
  SIM_ADDRESS_TYPES,
  SIM_HEALTH_CHECK_PROTOCOLS,
  SIM_INSTANCE_STATES,
  SIM_LB_PROTOCOLS,
  SIM_LB_STATUSES,
  SIM_SESSION_AFFINITIES,
} from "./types.js";
export type {
  WireAddress,
  WireError,
  WireFirewallRule,
  WireFirewallRuleList,
  WireHealthCheck,
  WireHealthCheckList,
  WireInstance,
  WireInstanceList,
  WireListener,
  WireListenerList,
  WireLoadBalancer,
  WireLoadBalancerList,
  WireNetwork,
  WireNetworkList,
  WirePool,
  WirePoolList,
  WireRoute,
  WireRouteList,
} from "./wire.js";
