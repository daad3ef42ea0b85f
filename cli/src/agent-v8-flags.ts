// Imported first by the agent's entry, so it runs before the rest of the agent is loaded.
// V8's --optimize-for-size (grow the heap less eagerly, compile for size) is one of the flags
// NODE_OPTIONS refuses, so the agent sets it itself: at 5,000 nodes + 5,000 Services in one
// cluster it lowers the agent's peak RSS by ~10 MiB for ~10% more CPU (bench/README.md).
// FLEET_CCM_AGENT_V8_FLAGS replaces it (an empty value keeps V8's defaults).
import { setFlagsFromString } from "node:v8";

setFlagsFromString(process.env["FLEET_CCM_AGENT_V8_FLAGS"] ?? "--optimize-for-size");
