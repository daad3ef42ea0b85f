// Median and spread of repeated benchmark runs, as a Markdown table:
//   node bench/dist/summarize.js results/*.jsonl
// Each input line is one JSON object printed by `npm run bench -- ... --json`.

import { readFileSync } from "node:fs";

type Row = Record<string, unknown>;

const FIELDS = [
  "allInitializedMs",
  "nodeInitP50Ms",
  "nodeInitP99Ms",
  "hubOverheadP99Ms",
  "hubCpuSeconds",
  "hubPeakRssBytes",
  "agentPeakRssBytes",
  "grpcBytesPerNodeUpdate",
  "natsBytesPerNodeUpdate",
  "cloudCallsPerNodeHour",
  "cloudCallsPerNodeHourIsolated",
  "cloudCallsRatio",
  "cloudCallsPerNodeHourAtDefaultPeriod",
  "hubIdleCpuPercent",
  "hubCpuPercent",
  "checks",
  "wrongDeletions",
  "correctDeletions",
  "allServicesReadyMs",
  "servicesWithIngress",
  "hubSawAllInitializedMs",
  "directLookupsPerNode",
  "nodePatchesPublished",
] as const;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

function fmt(field: string, v: number): string {
  if (field.endsWith("Bytes")) return `${(v / 2 ** 20).toFixed(0)} MiB`;
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(2);
}

export function summarize(rows: readonly Row[]): string {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = `${r["scenario"]} ${r["clusters"]}×${r["nodesPerCluster"]}${
      Number(r["servicesPerCluster"] ?? 0) > 0 ? ` +${r["servicesPerCluster"]} svc/cluster` : ""
    }${r["hubWorkers"] !== 4096 ? ` (workers ${r["hubWorkers"]})` : ""}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const out: string[] = [];
  for (const [key, rs] of groups) {
    out.push(
      `### ${key} — ${rs.length} run${rs.length === 1 ? "" : "s"}`,
      "",
      "| figure | median | min – max |",
      "|---|---|---|",
    );
    for (const f of FIELDS) {
      const xs = rs.map((r) => r[f]).filter((v): v is number => typeof v === "number");
      if (xs.length === 0) continue;
      out.push(`| ${f} | ${fmt(f, median(xs))} | ${fmt(f, Math.min(...xs))} – ${fmt(f, Math.max(...xs))} |`);
    }
    out.push("");
  }
  return out.join("\n");
}

const rows: Row[] = [];
for (const file of process.argv.slice(2))
  for (const line of readFileSync(file, "utf8").split("\n"))
    if (line.trim().startsWith("{")) rows.push(JSON.parse(line) as Row);
process.stdout.write(`${summarize(rows)}\n`);
