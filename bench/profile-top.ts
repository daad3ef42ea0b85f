// Top frames of a V8 CPU profile (node --cpu-prof), by self time and by package, without DevTools:
//   node bench/dist/profile-top.js FILE.cpuprofile [N]

import { readFileSync } from "node:fs";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly hitCount?: number;
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
}

/** Where a frame comes from: a package under node_modules, one of ours, node internals or V8. */
function origin(url: string): string {
  if (url === "") return "(v8/native)";
  if (url.startsWith("node:")) return "node:internals";
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const m = /\/(hub|agent|proto|sim|cli|bench)\/(?:dist|src)\//.exec(url);
  return m?.[1] === undefined ? url : `fleet-ccm/${m[1]}`;
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) return url.slice(nm + "/node_modules/".length);
  const m = /\/(hub|agent|proto|sim|cli|bench)\/(dist|src)\/(.*)$/.exec(url);
  return m === null ? url.replace(/^file:\/\//, "") : `${m[1]}/${m[3]}`;
}

export function topFrames(profile: Profile, n: number): string {
  const total = profile.nodes.reduce((s, x) => s + (x.hitCount ?? 0), 0);
  const seconds = (profile.endTime - profile.startTime) / 1e6;
  const byFrame = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const f = node.callFrame;
    const key = `${f.functionName || "(anonymous)"}  ${shortUrl(f.url)}${f.url ? `:${f.lineNumber + 1}` : ""}`;
    byFrame.set(key, (byFrame.get(key) ?? 0) + hits);
    const o = f.functionName === "(idle)" ? "(idle)" : origin(f.url);
    byOrigin.set(o, (byOrigin.get(o) ?? 0) + hits);
  }
  const idle = byOrigin.get("(idle)") ?? 0;
  const busy = Math.max(1, total - idle);
  // Share of all samples, then share of the samples where the thread was not idle.
  const pct = (h: number, isIdle = false) =>
    `${((100 * h) / Math.max(1, total)).toFixed(1).padStart(5)} %  ${isIdle ? "      " : `${((100 * h) / busy).toFixed(1).padStart(5)} %`}`;
  const lines = [
    `${total} samples over ${seconds.toFixed(1)} s, ${((100 * idle) / Math.max(1, total)).toFixed(1)} % idle`,
    "columns: share of all samples, share of busy samples",
    "",
    "self time by function:",
  ];
  for (const [k, h] of [...byFrame].sort((a, b) => b[1] - a[1]).slice(0, n))
    lines.push(`  ${pct(h, k.startsWith("(idle)"))}  ${k}`);
  lines.push("", "self time by origin:");
  for (const [k, h] of [...byOrigin].sort((a, b) => b[1] - a[1]).slice(0, n))
    lines.push(`  ${pct(h, k === "(idle)")}  ${k}`);
  return lines.join("\n");
}

const [file, count] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write("usage: node bench/dist/profile-top.js FILE.cpuprofile [N]\n");
  process.exit(2);
}
process.stdout.write(
  `${topFrames(JSON.parse(readFileSync(file, "utf8")) as Profile, Number(count ?? 25))}\n`,
);
