// Builds the agent bundle, cli/dist/agent.bundle.js (scripts/build.sh): one file holding only
// the code `fleet-ccm agent` runs (cli/src/agent-main.ts), which keeps its memory within budget.
// Whitespace and syntax are minified, names are not: stack traces stay readable.
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = (file) => fileURLToPath(new URL(file, import.meta.url));

/**
 * Modules of client-node that the agent's imports reach through one import each, for code the
 * agent never runs, replaced by stand-ins: together they pulled in every generated API and
 * model (~430 KB of the bundle, evaluated at start). A client-node release whose module wants
 * more from them fails this build (esbuild: no matching export), it cannot pass unnoticed.
 */
const STAND_INS = [
  // KubeConfig uses the generated index only in makeApiClient.
  { importer: "@kubernetes/client-node/dist/config.js", path: "./gen/index.js", by: "kube-gen.mjs" },
  // ListWatch serializes its selector strings with ObjectSerializer.
  { importer: "@kubernetes/client-node/dist/cache.js", path: "./serializer.js", by: "kube-serializer.mjs" },
];

/** The stand-ins' import paths as esbuild's filter, so only those imports reach the callback. */
const standInPaths = new RegExp(
  `^(${STAND_INS.map((x) => x.path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|")})$`,
);

const standIns = {
  name: "client-node stand-ins",
  setup(b) {
    b.onResolve({ filter: standInPaths }, (args) => {
      const s = STAND_INS.find(
        (x) =>
          x.path === args.path && args.importer.replaceAll("\\", "/").endsWith(`node_modules/${x.importer}`),
      );
      return s === undefined ? undefined : { path: here(s.by) };
    });
  },
};

await build({
  entryPoints: [here("../../cli/dist/agent-main.js")],
  outfile: here("../../cli/dist/agent.bundle.js"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
  alias: { "whatwg-url": here("whatwg-url.mjs"), url: here("url.mjs") },
  banner: {
    js: "import { createRequire as __fleetRequire } from 'node:module'; const require = __fleetRequire(import.meta.url);",
  },
  plugins: [standIns],
});
