export type { AgentOptions } from "./agent.js";
export { AGENT_VERSION, Agent } from "./agent.js";
export { applyNodeDesired, specPatch, statusPatch } from "./apply/node.js";
export { toWireNode, toWireService } from "./convert.js";
export { type ClientTlsFiles, HubTlsCredentials, type HubTrust } from "./hub-credentials.js";
export { NatsAuthError } from "./nats.js";
