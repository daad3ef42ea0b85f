#!/usr/bin/env node
// Validates Kubernetes manifests against the Kubernetes OpenAPI schema (kubernetes-models):
// types, formats, enums and required fields with its JSON-schema validators, and unknown fields
// (a misspelt key the API server would drop or refuse under --validate=strict) by type-checking
// each object against its TypeScript interface, whose excess-property check is exact.
//
//   node scripts/validate-manifests.mjs                 every manifest under deploy/ (each
//                                                       kustomization rendered by kubectl kustomize)
//   node scripts/validate-manifests.mjs FILE... | -     these files (- is stdin), e.g. register's output
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** [source, YAML text] pairs to validate. */
function inputs(args) {
  if (args.length > 0)
    return args.map((a) => [a === "-" ? "stdin" : a, readFileSync(a === "-" ? 0 : a, "utf8")]);
  const deploy = join(ROOT, "deploy");
  const out = [];
  const inKustomization = new Set();
  const walk = (dir) => {
    for (const e of readdirSync(dir)) {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
    }
    if (existsSync(join(dir, "kustomization.yaml"))) {
      out.push([
        `kubectl kustomize ${relative(ROOT, dir)}`,
        execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" }),
      ]);
      for (const doc of parseAllDocuments(readFileSync(join(dir, "kustomization.yaml"), "utf8")))
        for (const r of doc.toJS()?.resources ?? []) inKustomization.add(join(dir, r));
    }
  };
  walk(deploy);
  // Manifests outside every kustomization are validated on their own.
  const loose = (dir) => {
    for (const e of readdirSync(dir)) {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) loose(p);
      else if (/\.ya?ml$/.test(e) && !inKustomization.has(p) && e !== "kustomization.yaml") {
        const text = readFileSync(p, "utf8");
        const docs = parseAllDocuments(text).map((d) => d.toJS());
        if (docs.some((d) => d?.apiVersion !== undefined && d?.kind !== undefined))
          out.push([relative(ROOT, p), text]);
      }
    }
  };
  loose(deploy);
  return out;
}

function modulePath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  return group === ""
    ? `kubernetes-models/${version}/${kind}`
    : `kubernetes-models/${group}/${version}/${kind}`;
}

const errors = [];
const objects = [];
for (const [source, text] of inputs(process.argv.slice(2))) {
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) {
      errors.push(`${source}: YAML: ${doc.errors[0].message}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    const where = `${source}: ${obj.kind ?? "?"} ${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ""}${obj.metadata?.name ?? "?"}`;
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      errors.push(`${where}: no apiVersion or kind`);
      continue;
    }
    const path = modulePath(obj.apiVersion, obj.kind);
    let mod;
    try {
      mod = await import(path);
    } catch {
      errors.push(`${where}: no schema for ${obj.apiVersion} ${obj.kind}`);
      continue;
    }
    try {
      new mod[obj.kind](obj).validate();
    } catch (err) {
      errors.push(`${where}: ${String(err.message ?? err).split("\n")[0]}`);
    }
    objects.push({ where, path, kind: obj.kind, obj });
  }
}

// Unknown fields: one typed constant per object, checked by tsc (excess-property checks).
if (objects.length > 0) {
  const dir = join(ROOT, "node_modules", ".cache", `validate-manifests-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const lines = objects.map(
    (o, i) => `export const o${i}: import("${o.path}").I${o.kind} = ${JSON.stringify(o.obj)};`,
  );
  writeFileSync(join(dir, "objects.ts"), `${lines.join("\n")}\n`);
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        skipLibCheck: true,
        types: [],
      },
      files: ["objects.ts"],
    }),
  );
  try {
    execFileSync(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", join(dir, "tsconfig.json")], {
      encoding: "utf8",
    });
  } catch (err) {
    for (const line of String(err.stdout).split("\n")) {
      const m = /objects\.ts\((\d+),\d+\): error TS\d+: (.*)$/.exec(line);
      if (m !== null) errors.push(`${objects[Number(m[1]) - 1]?.where}: ${m[2]}`);
      else if (line.trim() !== "" && !/^\s/.test(line)) errors.push(`tsc: ${line}`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

if (errors.length > 0) {
  for (const e of errors) console.error(e);
  console.error(`${errors.length} problem(s) in ${objects.length} objects`);
  process.exit(1);
}
console.log(`${objects.length} objects valid against the Kubernetes schema`);
