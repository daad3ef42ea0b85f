/**
 * Where the vendors' spec files the fakes check against are: `sim/fixtures/`, inside the
 * repository (its README lists each file's source). Nothing outside the repository is read.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The path of `relative` under sim/fixtures/ (e.g. "aws/sts-2011-06-15/service-2.json"); throws naming the file and how to make it. */
export function fixtureSpecPath(relative: string): string {
  // sim/src/fake-kit/ and sim/dist/fake-kit/ are both two folders below sim/.
  const file = fileURLToPath(new URL(`../../fixtures/${relative}`, import.meta.url));
  if (!existsSync(file))
    throw new Error(
      `vendor spec fixture ${file} is missing: it is part of the repository (sim/fixtures/README.md); ` +
        "restore it from git, or cut the subsets again with `node scripts/vendor-specs.mjs <path to shared/specs>`",
    );
  return file;
}
