import { agentCommand } from "./agent-command.js";
import { demoCommand } from "./demo-command.js";
import { type Command, helpText, parseFlags, UsageError } from "./flags.js";
import { hubCommand } from "./hub-command.js";

const commands: readonly Command[] = [hubCommand, agentCommand, demoCommand];

function topHelp(): string {
  return [
    "fleet-ccm: one cloud controller manager for a whole fleet of Kubernetes clusters",
    "",
    "Usage: fleet-ccm <command> [flags]",
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(8)}${c.summary}`),
    "",
    "Run 'fleet-ccm <command> --help' for the flags of a command.",
    "",
  ].join("\n");
}

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(topHelp());
    return name === undefined ? 2 : 0;
  }
  const cmd = commands.find((c) => c.name === name);
  if (cmd === undefined) {
    process.stderr.write(`fleet-ccm: unknown command "${name}"\n\n${topHelp()}`);
    return 2;
  }
  try {
    const values = parseFlags(cmd, rest);
    if (values === "help") {
      process.stdout.write(helpText(cmd));
      return 0;
    }
    return await cmd.run(values);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `fleet-ccm ${cmd.name}: ${err.message}\nRun 'fleet-ccm ${cmd.name} --help' for usage.\n`,
      );
      return 2;
    }
    throw err;
  }
}
