// Entry of the agent bundle (cli/dist/agent.bundle.js, built by scripts/build.sh with esbuild):
// `fleet-ccm agent` loads only this one file. Bundling drops the parts of @kubernetes/client-node
// the agent never runs (its generated API and models), which the plain module graph loads whole.
import "./agent-v8-flags.js";
import { agentCommand } from "./agent-command.js";
import { runCommand } from "./run-command.js";

export function runAgent(argv: readonly string[]): Promise<number> {
  return runCommand(agentCommand, argv);
}
