// Simulators for tests, benchmarks and the demo. Never imported by hub/src or agent/src.
export * from "./kube/index.js";
export * from "./cloud/index.js";
export { startNatsServer, findNatsServer, freePort, natsConfig } from "./nats/server.js";
export type { NatsServer, NatsServerOptions, NatsUser } from "./nats/server.js";
export {
  kubeletNode,
  createMachine,
  nodeName,
  CLUSTER_TAG,
  UNINITIALIZED_TAINT,
} from "./fleet/generator.js";
export type { KubeletNodeOptions, MachineSpec } from "./fleet/generator.js";
