import { type Command, helpText, parseFlags, UsageError } from "./flags.js";

/** Parses a command's flags and runs it: --help prints its usage, a usage error exits 2. */
export async function runCommand(cmd: Command, argv: readonly string[]): Promise<number> {
  try {
    const values = parseFlags(cmd, argv);
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
