/**
 * Where the vendors' spec files are: `shared/specs/` beside the repository (see its README),
 * or the folder named by FLEET_CCM_SPECS.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The path of `relative` (e.g. "linode/linode-openapi-v4.189.0.yaml"); throws naming where it looked. */
export function vendorSpecPath(relative: string): string {
  const tried: string[] = [];
  const env = process.env["FLEET_CCM_SPECS"];
  const roots = env === undefined || env === "" ? [] : [resolve(env)];
  for (const start of [process.cwd(), dirname(fileURLToPath(import.meta.url))]) {
    let dir = resolve(start);
    for (let i = 0; i < 8; i++) {
      roots.push(join(dir, "shared", "specs"), join(dir, "..", "shared", "specs"));
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  for (const root of roots) {
    const file = join(root, relative);
    if (existsSync(file)) return file;
    tried.push(root);
  }
  throw new Error(
    `vendor spec ${relative} not found (set FLEET_CCM_SPECS; looked in ${[...new Set(tried)].slice(0, 6).join(", ")} ...)`,
  );
}
