/** The wire reader the generated decoders take: a reader of its own decodes a message its own way. */
export { BinaryReader } from "@bufbuild/protobuf/wire";
export { AnnotationFilter, UNIFIED_ANNOTATION_PREFIXES } from "./annotations.js";
export { type BackoffOptions, backoffDelayMs, checkBackoff } from "./backoff.js";
export {
  ClusterEvent,
  DesiredBatch,
  NodeDesired,
  NodeSelectorRequirement,
  PersistentVolumeDesired,
  ServiceDesired,
} from "./gen/fleet/v1/desired.js";
export {
  LoadBalancerIngress,
  LoadBalancerIngressList,
  Node,
  NodeAddress,
  NodeAddressList,
  NodeCondition,
  ObjectKind,
  ObjectRef,
  PersistentVolume,
  Service,
  ServicePort,
  ServiceSecret,
  Taint,
} from "./gen/fleet/v1/objects.js";
export type { HubServer } from "./gen/fleet/v1/sync.js";
export {
  Ack,
  AgentMessage,
  ApplyOutcome,
  ApplyResult,
  Delta,
  Heartbeat,
  Hello,
  HubClient,
  HubMessage,
  HubService,
  Limits,
  ResyncRequest,
  SecretReference,
  SnapshotChunk,
  Welcome,
} from "./gen/fleet/v1/sync.js";
export { AGENT_PING_INTERVAL_MS, keepaliveOptions, pingTimeoutMs } from "./keepalive.js";
export {
  isValidSecretName,
  MAX_SECRET_VALUE_BYTES,
  MAX_SECRETS_PER_SERVICE,
  type NamedSecret,
  namedSecrets,
  sameReferences,
} from "./secrets.js";
export { StringCache, sharedStrings } from "./string-cache.js";
export {
  agentInboxPrefix,
  CLUSTER_NAME_PATTERN,
  clusterSubjectFilter,
  desiredSubject,
  isValidClusterName,
} from "./subjects.js";
export { agentVersionProblem, RELEASE_VERSION } from "./version.js";
