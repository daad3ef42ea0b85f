import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
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
  /** The module the command loads, next to this file. */
  module: string;
  run: (argv: readonly string[]) => Promise<number>;
}[] = [
  {
    name: "hub",
    module: "./hub-command.js",
    summary: "run the hub: cloud credentials and every CCM reconciler for the fleet",
    run: async (argv) => runCommand((await import("./hub-command.js")).hubCommand, argv),
  },
  {
    name: "agent",
    module: AGENT_BUNDLE,
    summary: "run the per-cluster agent: stream Nodes/Services to the hub, apply its results",
    run: async (argv) => ((await import(AGENT_BUNDLE)) as typeof import("./agent-main.js")).runAgent(argv),
  },
  {
    name: "status",
    module: "./status-command.js",
    summary: "show the fleet as the hub sees it; exit status 1 when something is unhealthy",
    run: async (argv) => runCommand((await import("./status-command.js")).statusCommand, argv),
  },
  {
    name: "register",
    module: "./register-command.js",
    summary: "add a cluster to the hub: its credentials, and the manifest that installs its agent",
    run: async (argv) => runCommand((await import("./register-command.js")).registerCommand, argv),
  },
  {
    name: "unregister",
    module: "./register-command.js",
    summary: "remove a cluster: revoke its credentials, optionally delete its cloud resources",
    run: async (argv) => runCommand((await import("./register-command.js")).unregisterCommand, argv),
  },
  {
    name: "nats-init",
    module: "./register-command.js",
    summary: "create the fleet's NATS operator, accounts and hub credentials (decentralized auth)",
    run: async (argv) => runCommand((await import("./register-command.js")).natsInitCommand, argv),
  },
  {
    name: "demo",
    module: "./demo-command.js",
    summary: "run a whole fleet on this machine: nats-server, simulated cloud and clusters, hub, agents",
    run: async (argv) => runCommand((await import("./demo-command.js")).demoCommand, argv),
  },
];

/** Where a command's module is, next to this file. */
const modulePath = (c: { module: string }) => fileURLToPath(new URL(c.module, import.meta.url));

/**
 * The commands this installation holds: an image ships one role's modules only (deploy/README.md,
 * "Images"), so its help lists what it can run and nothing that would answer "not part of this
 * installation".
 */
function installed() {
  return commands.filter((c) => existsSync(modulePath(c)));
}

function topHelp(): string {
  return [
    "fleet-ccm: one cloud controller manager for a whole fleet of Kubernetes clusters",
    "",
    "Usage: fleet-ccm <command> [flags]",
    "",
    "Commands:",
    ...installed().map((c) => `  ${c.name.padEnd(12)}${c.summary}`),
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
  try {
    return await entry.run(rest);
  } catch (err) {
    // Each image ships one role's modules only (deploy/README.md, "Images").
    const missing = modulePath(entry);
    const e = err as NodeJS.ErrnoException;
    if (e.code === "ERR_MODULE_NOT_FOUND" && e.message.includes(`'${missing}'`)) {
      process.stderr.write(`fleet-ccm: the ${name} command is not part of this installation\n`);
      return 2;
    }
    throw err;
  }
}
