// Simulators for tests, benchmarks and the demo. Never imported by hub/src or agent/src.

export * from "./aws/index.js";
export * from "./azure/index.js";
export * from "./cloud/index.js";
export * from "./digitalocean/index.js";
export * from "./fake-kit/index.js";
export type { KubeletNodeOptions, MachineSpec } from "./fleet/generator.js";
export {
  CLUSTER_TAG,
  createMachine,
  kubeletNode,
  nodeName,
  UNINITIALIZED_TAINT,
} from "./fleet/generator.js";
export * from "./gcp/index.js";
export * from "./hetzner/index.js";
export * from "./kube/index.js";
export * from "./linode/index.js";
export type {
  FleetNatsIdentity,
  NatsCluster,
  NatsServer,
  NatsServerOptions,
  NatsUser,
} from "./nats/server.js";
export {
  findNatsServer,
  fleetNatsUsers,
  freePort,
  natsConfig,
  startNatsCluster,
  startNatsServer,
} from "./nats/server.js";
export * from "./openstack/index.js";
export { selfSignedCertificate, type TestCertificate } from "./util/certificate.js";
export type { FaultMatch, FaultProxyOptions, FaultRule, ProxiedRequest } from "./util/fault-proxy.js";
export { FaultProxy, startFaultProxy } from "./util/fault-proxy.js";
export { NatsMessageDropper } from "./util/nats-drop.js";
export type { TcpProxyMode, TcpProxyOptions } from "./util/tcp-proxy.js";
export { startTcpProxy, TcpProxy } from "./util/tcp-proxy.js";
export { waitFor } from "./util/wait.js";
