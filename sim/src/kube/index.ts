// Kubernetes API server simulator: a plain-HTTP kube-apiserver look-alike for @kubernetes/client-node,
// kubectl (server-side Tables, /openapi/v3, fieldValidation) and the Python client.
// Names are Kube-prefixed because sim/src/index.ts re-exports this module next to the cloud simulator.

export type { DeleteOptionsInput as KubeDeleteOptions } from "./delete-options.js";
export {
  KubeApiError,
  type Status as KubeStatus,
  type StatusCause as KubeStatusCause,
  type StatusDetails as KubeStatusDetails,
} from "./errors.js";
export type { PolicyRule as KubePolicyRule, RbacOptions as KubeRbacOptions } from "./rbac.js";
export type { KindName as KubeKind, NodePortRange as KubeNodePortRange } from "./resources.js";
export {
  type KubeApiServer,
  type KubeApiServerOptions,
  type KubeConfigCluster,
  type KubeConfigContext,
  type KubeConfigOptions,
  type KubeConfigUser,
  type KubeObject,
  type KubeObjectMeta,
  type KubePatchType,
  startKubeApiServer,
} from "./server.js";
