export { Agent, AGENT_VERSION } from "./agent.js";
export type { AgentOptions } from "./agent.js";
export { toWireNode, toWireService } from "./convert.js";
export { statusPatch, specPatch, applyNodeDesired } from "./apply/node.js";
