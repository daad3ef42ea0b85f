import { runCommand } from "./run-command.js";

/** Built next to this file by scripts/build.sh; see agent-main.ts. */
const AGENT_BUNDLE = "./agent.bundle.js";

/**
 * Commands load on demand: the agent process must not pay for the hub's or the simulators'
 * modules (its memory is a figure we keep small), and it runs from its bundle.
 */
const commands: readonly {
  name: string;
  summary: string;
  run: (argv: readonly string[]) => Promise<number>;
}[] = [
  {
    name: "hub",
    summary: "run the hub: cloud credentials and every CCM reconciler for the fleet",
    run: async (argv) => runCommand((await import("./hub-command.js")).hubCommand, argv),
  },
  {
    name: "agent",
    summary: "run the per-cluster agent: stream Nodes/Services to the hub, apply its results",
    run: async (argv) => ((await import(AGENT_BUNDLE)) as typeof import("./agent-main.js")).runAgent(argv),
  },
  {
    name: "demo",
    summary: "run a whole fleet on this machine: nats-server, simulated cloud and clusters, hub, agents",
    run: async (argv) => runCommand((await import("./demo-command.js")).demoCommand, argv),
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
  return entry.run(rest);
}
