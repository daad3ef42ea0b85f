import { accessSync, constants, realpathSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** This installation's entrypoint (bin/fleet-ccm.js, next to cli/dist/). */
const BIN = fileURLToPath(new URL("../../bin/fleet-ccm.js", import.meta.url));

const realpath = (p: string): string | undefined => {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
};

/** A path as one shell word: quoted when it holds anything but safe characters. */
export function shellWord(s: string): string {
  return /^[\w./+:@%=-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/**
 * How a user runs this CLI again from a shell: `fleet-ccm` when that name on PATH is this very
 * installation, else `node <path of its bin>` (a clone's `bin/` is on no PATH, and `npx
 * fleet-ccm` outside the clone would fetch whatever the registry holds under that name).
 */
export function cliCommand(env: NodeJS.ProcessEnv = process.env): {
  command: string;
  onPath: boolean;
  howToPath: string;
} {
  const mine = realpath(BIN);
  for (const dir of (env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "fleet-ccm");
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    // The first one on PATH is what the shell runs.
    if (mine !== undefined && realpath(candidate) === mine)
      return { command: "fleet-ccm", onPath: true, howToPath: "" };
    break;
  }
  return {
    command: `node ${shellWord(BIN)}`,
    onPath: false,
    howToPath: `to type "fleet-ccm" instead: sudo ln -s ${shellWord(BIN)} /usr/local/bin/fleet-ccm`,
  };
}
