#!/usr/bin/env node
// Lays out an image's filesystem tree from a built checkout (`npm ci && npm run build`):
//
//   node scripts/image/stage.mjs hub|agent OUTDIR
//
// OUTDIR/opt/fleet-ccm holds the role's compiled files and its production node_modules,
// copied from the installed node_modules (no network); OUTDIR/usr/local/bin/fleet-ccm is the
// entrypoint. The Containerfiles copy OUTDIR over the Node base image; test/images.test.ts
// runs the same tree without a container engine.
//
// hub:   the CLI's hub command, @fleet-ccm/hub and @fleet-ccm/proto and their dependencies.
// agent: the CLI's entry and the agent bundle (cli/dist/agent.bundle.js, which already holds
//        every module the agent runs): no node_modules at all, so no simulator, no hub code,
//        no cloud SDK.
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const APP = "opt/fleet-ccm";

/**
 * Per role: the cli/dist modules it runs (the entry and its commands' modules; the modules they
 * import statically are added by cliClosure) and the workspace packages it imports.
 */
const ROLES = {
  hub: {
    cli: [
      "main.js",
      "run-command.js",
      "flags.js",
      "logger.js",
      "hub-command.js",
      "status-command.js",
      "register-command.js",
      "agent-manifest.js",
      "progress.js",
    ],
    packages: ["@fleet-ccm/hub", "@fleet-ccm/proto"],
    // `fleet-ccm register` prints the agent's manifests from these.
    files: ["deploy/agent"],
  },
  agent: {
    cli: ["main.js", "run-command.js", "flags.js", "agent.bundle.js"],
    packages: [],
  },
};
/** Workspace packages: source directory in the checkout. */
const WORKSPACES = {
  "@fleet-ccm/proto": "proto",
  "@fleet-ccm/hub": "hub",
  "@fleet-ccm/agent": "agent",
  "@fleet-ccm/sim": "sim",
};
/** Never loaded at run time: TypeScript sources and declarations, source maps, build state. */
const DROP = /(\.[cm]?ts|\.map|\.tsbuildinfo)$/;

function fail(message) {
  process.stderr.write(`stage: ${message}\n`);
  process.exit(2);
}

const [role, outArg] = process.argv.slice(2);
if (!(role in ROLES) || outArg === undefined) fail("usage: node scripts/image/stage.mjs hub|agent OUTDIR");
const spec = ROLES[role];
const out = resolve(outArg);
const app = join(out, APP);
const rootPkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

/** The modules and every cli/dist module they import statically (`from "./x.js"`), transitively. */
function cliClosure(entries) {
  const seen = new Set();
  const todo = [...entries];
  while (todo.length > 0) {
    const f = todo.pop();
    if (seen.has(f)) continue;
    const file = join(ROOT, "cli/dist", f);
    if (!existsSync(file)) fail(`cli/dist/${f} is missing: run \`npm run build\` first`);
    seen.add(f);
    for (const m of readFileSync(file, "utf8").matchAll(/\bfrom\s*["']\.\/([\w.-]+\.js)["']/g))
      todo.push(m[1]);
  }
  return [...seen].sort();
}
const cliFiles = cliClosure(spec.cli);

// OUTDIR is replaced: never the checkout or a directory holding it.
if (!relative(out, ROOT).startsWith("..")) fail(`refusing to replace ${out}: it holds the checkout`);
rmSync(out, { recursive: true, force: true });
mkdirSync(join(app, "cli/dist"), { recursive: true });

const copyFilter = (src) => !DROP.test(src) && !src.endsWith(".test.js");
cpSync(join(ROOT, "bin"), join(app, "bin"), { recursive: true });
for (const f of cliFiles) cpSync(join(ROOT, "cli/dist", f), join(app, "cli/dist", f));
for (const f of spec.files ?? []) cpSync(join(ROOT, f), join(app, f), { recursive: true });

/** Resolves a dependency the way Node does: node_modules of the requiring package and its ancestors. */
function resolvePackage(fromDir, name) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === ROOT || dirname(dir) === dir) return undefined;
  }
}

/** Where a package directory of the checkout goes in the image. */
function destination(src) {
  const rel = relative(ROOT, src);
  if (rel.startsWith(`node_modules${sep}`)) return join(app, rel);
  const [ws, ...rest] = rel.split(sep);
  const name = Object.entries(WORKSPACES).find(([, dir]) => dir === ws)?.[0];
  if (name === undefined) fail(`unexpected package location ${rel}`);
  return join(app, "node_modules", name, ...rest);
}

// Walk the production dependency graph from the role's packages; copy each package once.
const deps = {};
const seen = new Set();
const queue = spec.packages.map((name) => ({ from: ROOT, name, required: true }));
for (const name of spec.packages) deps[name] = rootPkg.dependencies[name];
while (queue.length > 0) {
  const { from, name, required } = queue.shift();
  const found = resolvePackage(from, name);
  if (found === undefined) {
    if (required)
      fail(`${name} (needed by ${relative(ROOT, from) || "the root"}) is not installed: run \`npm ci\``);
    continue;
  }
  const src = realpathSync(found);
  if (seen.has(src)) continue;
  seen.add(src);
  const pkg = JSON.parse(readFileSync(join(src, "package.json"), "utf8"));
  const dest = destination(src);
  if (name in WORKSPACES) {
    // A workspace package: its package.json and compiled dist/ only.
    mkdirSync(dest, { recursive: true });
    cpSync(join(src, "package.json"), join(dest, "package.json"));
    cpSync(join(src, "dist"), join(dest, "dist"), { recursive: true, filter: copyFilter });
    // The hub's fleet page (plain static files, served next to dist/).
    if (existsSync(join(src, "ui"))) cpSync(join(src, "ui"), join(dest, "ui"), { recursive: true });
  } else {
    cpSync(src, dest, {
      recursive: true,
      filter: (p) => copyFilter(p) && !p.slice(src.length).includes(`${sep}node_modules`),
    });
  }
  for (const dep of Object.keys(pkg.dependencies ?? {})) queue.push({ from: src, name: dep, required: true });
  for (const dep of Object.keys(pkg.optionalDependencies ?? {}))
    queue.push({ from: src, name: dep, required: false });
  for (const dep of Object.keys(pkg.peerDependencies ?? {}))
    queue.push({ from: src, name: dep, required: pkg.peerDependenciesMeta?.[dep]?.optional !== true });
}

writeFileSync(
  join(app, "package.json"),
  `${JSON.stringify(
    {
      name: `fleet-ccm-${role}`,
      version: rootPkg.version,
      private: true,
      description: rootPkg.description,
      license: rootPkg.license,
      type: "module",
      bin: { "fleet-ccm": "bin/fleet-ccm.js" },
      dependencies: deps,
    },
    null,
    2,
  )}\n`,
);
mkdirSync(join(out, "usr/local/bin"), { recursive: true });
symlinkSync(
  relative(join(out, "usr/local/bin"), join(app, "bin/fleet-ccm.js")),
  join(out, "usr/local/bin/fleet-ccm"),
);
