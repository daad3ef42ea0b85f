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
  /** Microseconds since the previous sample (the first: since startTime). */
  readonly timeDeltas?: readonly number[];
}

/**
 * Hit counts per node id of the samples taken between fromS and toS seconds after the
 * profile's start (a window of a long run, e.g. steady's idle window), and that span.
 */
function windowHits(
  profile: Profile,
  fromS: number,
  toS: number,
): { hits: Map<number, number>; seconds: number } {
  const hits = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let t = 0;
  for (let i = 0; i < samples.length; i++) {
    t += deltas[i] ?? 0;
    const s = t / 1e6;
    if (s < fromS || s > toS) continue;
    const id = samples[i] as number;
    hits.set(id, (hits.get(id) ?? 0) + 1);
  }
  return { hits, seconds: Math.min(toS, (profile.endTime - profile.startTime) / 1e6) - fromS };
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

export function topFrames(profile: Profile, n: number, window?: { fromS: number; toS: number }): string {
  const windowed = window === undefined ? undefined : windowHits(profile, window.fromS, window.toS);
  const hitsOf = (node: ProfileNode) =>
    windowed === undefined ? (node.hitCount ?? 0) : (windowed.hits.get(node.id) ?? 0);
  const total = profile.nodes.reduce((s, x) => s + hitsOf(x), 0);
  const seconds = windowed?.seconds ?? (profile.endTime - profile.startTime) / 1e6;
  const byFrame = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = hitsOf(node);
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

// FROM_S TO_S: only the samples of that window, in seconds after the profile's start.
const [file, count, fromS, toS] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write("usage: node bench/dist/profile-top.js FILE.cpuprofile [N [FROM_S TO_S]]\n");
  process.exit(2);
}
const window =
  fromS === undefined || toS === undefined ? undefined : { fromS: Number(fromS), toS: Number(toS) };
process.stdout.write(
  `${topFrames(JSON.parse(readFileSync(file, "utf8")) as Profile, Number(count ?? 25), window)}\n`,
);
