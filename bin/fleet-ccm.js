#!/usr/bin/env node
// The fleet-ccm CLI. The TypeScript is compiled by `npm run build` (tsc -b) into cli/dist.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const entry = new URL("../cli/dist/main.js", import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    "fleet-ccm: not built yet; run `npm run build` (or `npm run setup && npm run build`)\n",
  );
  process.exit(2);
}
const { main } = await import(entry.href);
main(process.argv.slice(2)).then(
  // Exit explicitly: a stopped hub or agent may leave an idle socket behind. Writes to
  // stdout pipes and files are synchronous on Linux, so nothing printed is lost.
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`fleet-ccm: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
