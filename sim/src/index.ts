// Simulators for tests, benchmarks and the demo. Never imported by hub/src or agent/src.
export * from "./kube/index.js";
export * from "./cloud/index.js";
