import { type Command, helpText, parseFlags, UsageError } from "./flags.js";

/**
 * Commands load on demand: the agent process must not pay for the hub's or the simulators'
 * modules (its memory is a figure we keep small).
 */
const commands: readonly { name: string; summary: string; load: () => Promise<Command> }[] = [
  {
    name: "hub",
    summary: "run the hub: cloud credentials and every CCM reconciler for the fleet",
    load: async () => (await import("./hub-command.js")).hubCommand,
  },
  {
    name: "agent",
    summary: "run the per-cluster agent: stream Nodes/Services to the hub, apply its results",
    load: async () => (await import("./agent-command.js")).agentCommand,
  },
  {
    name: "demo",
    summary: "run a whole fleet on this machine: nats-server, simulated cloud and clusters, hub, agents",
    load: async () => (await import("./demo-command.js")).demoCommand,
  },
];

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
  const entry = commands.find((c) => c.name === name);
  if (entry === undefined) {
    process.stderr.write(`fleet-ccm: unknown command "${name}"\n\n${topHelp()}`);
    return 2;
  }
  const cmd = await entry.load();
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
