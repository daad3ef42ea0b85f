import { readFileSync } from "node:fs";
import type {
  AccountJson,
  ClusterAnswerJson,
  ClusterSummaryJson,
  FleetJson,
  Health,
  HubHealthJson,
} from "@fleet-ccm/hub";
import type { Command } from "./flags.js";
import { bool, int, str, UsageError } from "./flags.js";

/** Exit statuses: scripts and checks tell "unhealthy" from "could not tell". */
export const EXIT_HEALTHY = 0;
export const EXIT_UNHEALTHY = 1;
export const EXIT_UNREACHABLE = 3;

const DEFAULT_HUB = "http://127.0.0.1:9091";
const TOKEN_ENV = "FLEET_CCM_API_TOKEN";

export const statusCommand: Command = {
  name: "status",
  summary: "show the fleet as the hub sees it: agents, nodes waiting, load balancers, accounts",
  usage: "fleet-ccm status [--hub URL] [--token-file FILE] [--cluster NAME] [--json] [--watch]",
  flags: {
    hub: {
      type: "string",
      placeholder: "URL",
      default: DEFAULT_HUB,
      description: "The hub's fleet API (api.listen).",
    },
    "token-file": {
      type: "string",
      placeholder: "FILE",
      description: `File holding the fleet API's token (api.token); else the ${TOKEN_ENV} environment variable.`,
    },
    cluster: {
      type: "string",
      placeholder: "NAME",
      description: "One cluster: its nodes and load balancers.",
    },
    json: { type: "boolean", description: "Print the API's JSON (one document per line with --watch)." },
    watch: { type: "boolean", description: "Refresh in place until interrupted." },
    interval: {
      type: "string",
      placeholder: "SECONDS",
      default: "2",
      description: "Refresh period with --watch.",
    },
    color: {
      type: "string",
      placeholder: "WHEN",
      default: "auto",
      description: "auto (on a terminal, unless NO_COLOR is set), always or never.",
    },
  },
  async run(v) {
    const hub = (str(v, "hub") ?? DEFAULT_HUB).replace(/\/+$/, "");
    const token = readToken(str(v, "token-file"));
    const cluster = str(v, "cluster");
    const asJson = bool(v, "json");
    const watch = bool(v, "watch");
    const intervalMs = int(v, "interval", 1) * 1000;
    const when = str(v, "color") ?? "auto";
    if (!["auto", "always", "never"].includes(when))
      throw new UsageError(`--color must be auto, always or never, got "${when}"`);
    const tty = process.stdout.isTTY === true;
    const color = when === "always" || (when === "auto" && tty && process.env["NO_COLOR"] === undefined);
    const path = cluster === undefined ? "/api/v1/fleet" : `/api/v1/clusters/${encodeURIComponent(cluster)}`;

    const once = async (): Promise<{ text: string; code: number }> => {
      const got = await fetchJson(hub + path, token);
      if (!got.ok) return { text: `fleet-ccm status: ${got.error}\n`, code: EXIT_UNREACHABLE };
      const doc = got.body as FleetJson | ClusterAnswerJson;
      const code =
        doc.health === "unhealthy" || doc.hub.health === "unhealthy" ? EXIT_UNHEALTHY : EXIT_HEALTHY;
      if (asJson) return { text: `${JSON.stringify(doc, null, watch ? undefined : 2)}\n`, code };
      const paint = painter(color);
      const text =
        cluster === undefined
          ? renderFleet(doc as FleetJson, paint)
          : renderCluster(doc as ClusterAnswerJson, paint);
      return { text, code };
    };

    if (!watch) {
      const r = await once();
      (r.code === EXIT_UNREACHABLE ? process.stderr : process.stdout).write(r.text);
      return r.code;
    }
    let last = EXIT_HEALTHY;
    let stop = false;
    const stopped = new Promise<void>((resolve) => {
      const done = () => {
        stop = true;
        resolve();
      };
      process.once("SIGINT", done);
      process.once("SIGTERM", done);
    });
    while (!stop) {
      const r = await once();
      last = r.code;
      // In place on a terminal; frames one after another when piped.
      if (tty && !asJson) process.stdout.write(`\x1b[H\x1b[2J${r.text}`);
      else process.stdout.write(asJson ? r.text : `${r.text}\n`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([stopped, new Promise((res) => (timer = setTimeout(res, intervalMs)))]);
      clearTimeout(timer);
    }
    return last;
  },
};

function readToken(file: string | undefined): string {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new UsageError(
        `--token-file: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
    const t = text.trim();
    if (t === "") throw new UsageError(`--token-file: ${file} is empty`);
    return t;
  }
  const t = process.env[TOKEN_ENV]?.trim();
  if (t === undefined || t === "")
    throw new UsageError(`the fleet API needs its token: --token-file FILE or ${TOKEN_ENV}`);
  return t;
}

export async function fetchJson(
  url: string,
  token: string,
): Promise<{ ok: true; body: unknown } | { ok: false; error: string }> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return {
      ok: false,
      error: `cannot reach the hub's fleet API at ${url}: ${cause ?? (err as Error).message}`,
    };
  }
  const text = await res.text();
  if (res.status === 401) return { ok: false, error: `the hub refused the token (401) at ${url}` };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, error: `${url} answered ${res.status} with no JSON` };
  }
  if (!res.ok)
    return { ok: false, error: `${url}: ${res.status} ${(body as { error?: string }).error ?? ""}`.trim() };
  return { ok: true, body };
}

type Paint = (health: Health | "dim" | "bold", text: string) => string;

const SGR: Record<Health | "dim" | "bold", string> = {
  ok: "32",
  warning: "33",
  unhealthy: "31;1",
  dim: "2",
  bold: "1",
};

function painter(color: boolean): Paint {
  return color ? (h, text) => `\x1b[${SGR[h]}m${text}\x1b[0m` : (_h, text) => text;
}

interface Cell {
  readonly text: string;
  readonly style?: Health | "dim" | "bold";
}

/** Columns sized on the plain text, so colour never shifts them. */
function table(header: readonly string[], rows: readonly (readonly Cell[])[], paint: Paint): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.text.length ?? 0)));
  const line = (cells: readonly Cell[]) =>
    cells
      .map((c, i) => {
        const padded = i === cells.length - 1 ? c.text : c.text.padEnd(widths[i] ?? 0);
        return c.style === undefined ? padded : paint(c.style, padded);
      })
      .join("  ")
      .trimEnd();
  const body = rows.length === 0 ? [paint("dim", "(none)")] : rows.map(line);
  return [line(header.map((h) => ({ text: h, style: "bold" as const }))), ...body].join("\n");
}

const cell = (text: string | number, style?: Health | "dim" | "bold"): Cell =>
  style === undefined ? { text: String(text) } : { text: String(text), style };

function age(iso: string | null | undefined, nowMs: number): string {
  if (iso === null || iso === undefined) return "-";
  const s = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

function agentCell(c: ClusterSummaryJson, nowMs: number): Cell {
  return c.agent.connected
    ? cell(`up ${age(c.agent.since, nowMs)}`)
    : cell(c.agent.since === null ? "never" : `down ${age(c.agent.since, nowMs)}`, "unhealthy");
}

function clusterRow(c: ClusterSummaryJson, nowMs: number): Cell[] {
  const n = c.nodes;
  const s = c.services;
  const reasons = Object.entries(n.waitingReasons)
    .map(([r, k]) => `${r}:${k}`)
    .join(",");
  return [
    cell(c.name),
    cell(c.health, c.health),
    agentCell(c, nowMs),
    cell(`${n.initialized}/${n.total}`),
    cell(n.waiting === 0 ? "0" : `${n.waiting} (${reasons})`, n.waiting === 0 ? undefined : "warning"),
    cell(`${s.ready}/${s.loadBalancers}`),
    cell(s.failing, s.failing === 0 ? undefined : "unhealthy"),
    cell(c.problems.map((p) => p.message).join("; ") || "-", c.problems.length === 0 ? "dim" : undefined),
  ];
}

function accountRows(accounts: readonly AccountJson[], nowMs: number): Cell[][] {
  return accounts.map((a) => [
    cell(a.name),
    cell(a.health, a.health),
    cell(a.callsPerSecond.toFixed(1)),
    cell(a.rateLimit.perSecond),
    cell(`${Math.round(a.utilization * 100)}%`, a.utilization >= 0.9 ? "warning" : undefined),
    cell(a.throttled.recent, a.throttled.recent > 0 ? "unhealthy" : undefined),
    cell(age(a.cache.listedAt, nowMs)),
  ]);
}

const ACCOUNT_HEADER = ["ACCOUNT", "HEALTH", "CALLS/S", "LIMIT/S", "USE", "THROTTLED/1m", "CACHE AGE"];

/** The hub's own health, first: NATS, the agents' gRPC listener, the lease store of replicas. */
export function renderHub(h: HubHealthJson, nowMs: number, paint: Paint): string {
  const nats = h.nats.connected
    ? `NATS connected ${age(h.nats.since, nowMs)}`
    : paint("unhealthy", `NATS down ${age(h.nats.since, nowMs)} (${h.nats.kept} results kept)`);
  const grpc = h.grpc.listening
    ? `gRPC listening on ${h.grpc.listen}`
    : paint("unhealthy", `gRPC not listening (${h.grpc.listen})`);
  const leases =
    h.leases === null ? "no replicas" : h.leases.ok ? "leases ok" : paint("unhealthy", "leases failing");
  return [
    `${paint("bold", "HUB")} ${paint(h.health, h.health)}  ${nats} · ${grpc} · ${leases}`,
    ...h.problems.map((p) => `${paint(p.health, "!")} ${p.message}`),
  ].join("\n");
}

export function renderFleet(f: FleetJson, paint: Paint): string {
  const nowMs = Date.parse(f.generatedAt);
  const hub = renderHub(f.hub, nowMs, paint);
  const head = `${paint("bold", "FLEET")} ${paint(f.health, f.health)}  ${f.counts.clusters} clusters: ${f.counts.unhealthy} unhealthy, ${f.counts.warning} warning  ${paint("dim", `(at ${f.generatedAt})`)}`;
  const clusters = table(
    ["CLUSTER", "HEALTH", "AGENT", "NODES", "WAITING", "LBS", "FAILING", "PROBLEMS"],
    f.clusters.map((c) => clusterRow(c, nowMs)),
    paint,
  );
  const disks =
    f.unclaimedDisks === undefined ? "" : `\n${renderUnclaimed(f.unclaimedDisks, nowMs, paint)}\n`;
  return `${hub}\n\n${head}\n\n${clusters}\n\n${table(ACCOUNT_HEADER, accountRows(f.accounts, nowMs), paint)}\n${disks}`;
}

/** Disks tagged for a cluster that back none of its PVs: what they cost, never deleted by fleet-ccm. */
function renderUnclaimed(u: NonNullable<FleetJson["unclaimedDisks"]>, nowMs: number, paint: Paint): string {
  const rows = u.disks.map((d) => [
    cell(d.cluster),
    cell(d.account),
    cell(d.name === undefined || d.name === d.id ? d.id : `${d.id} (${d.name})`),
    cell(`${d.sizeGiB} GiB`),
    cell(age(d.createdAt, nowMs)),
    cell(d.state),
    cell(d.zones.join(",") || d.region),
  ]);
  const note = u.unknown.map((x) => paint("warning", `! ${x.cluster}: not checked, ${x.reason}`));
  return [
    table(["UNCLAIMED DISK OF", "ACCOUNT", "DISK", "SIZE", "AGE", "STATE", "WHERE"], rows, paint),
    ...note,
  ].join("\n");
}

export function renderCluster(c: ClusterAnswerJson, paint: Paint): string {
  const nowMs = Date.parse(c.generatedAt);
  const a = c.agent;
  const lines = [
    renderHub(c.hub, nowMs, paint),
    "",
    `${paint("bold", "CLUSTER")} ${c.name} ${paint(c.health, c.health)}  account ${c.account}`,
    `agent: ${a.connected ? `connected ${age(a.since, nowMs)}` : a.since === null ? "never connected" : `disconnected ${age(a.since, nowMs)}`}` +
      (a.agentVersion === "" ? "" : `, agent ${a.agentVersion}, Kubernetes ${a.kubernetesVersion}`) +
      `, last snapshot ${age(a.lastSnapshot, nowMs)} ago`,
    `nodes: ${c.nodes.initialized}/${c.nodes.total} initialized, ${c.nodes.waiting} waiting, ${c.nodes.shutdown} shut down, ${c.nodes.deletedByLifecycle} deleted by lifecycle, ${c.nodes.deletionsHeld} deletions held`,
    `load balancers: ${c.services.ready}/${c.services.loadBalancers} ready, ${c.services.inProgress} in progress, ${c.services.failing} failing`,
    `routes: ${c.routes.enabled ? `${c.routes.routed}/${c.routes.nodesWithPodCidrs} nodes routed` : "off"}; patches in flight ${c.patches.inflight} (republished ${c.patches.republished}, failed ${c.patches.failedApply}); objects refused ${c.objects.refused}, held ${c.objects.held}`,
    ...c.problems.map((p) => `${paint(p.health, p.health === "unhealthy" ? "!" : "~")} ${p.message}`),
    "",
  ];
  const stateStyle = (s: string): Health | undefined =>
    s === "initialized" || s === "ready" ? "ok" : s === "failing" ? "unhealthy" : "warning";
  // Trouble first in the node and load-balancer lists too.
  const nodes = [...c.nodeList].sort(
    (x, y) => Number(x.state === "initialized") - Number(y.state === "initialized"),
  );
  lines.push(
    table(
      ["NODE", "STATE", "READY", "REASON", "SINCE"],
      nodes.map((n) => [
        cell(n.name),
        cell(n.state, stateStyle(n.state)),
        cell(n.ready),
        cell(n.reason ?? "-"),
        cell(n.since === undefined ? "-" : age(n.since, nowMs)),
      ]),
      paint,
    ),
    "",
  );
  const lbs = [...c.loadBalancerList].sort(
    (x, y) => Number(x.state === "ready") - Number(y.state === "ready"),
  );
  lines.push(
    table(
      ["SERVICE", "STATE", "INGRESS", "REASON"],
      lbs.map((l) => [
        cell(`${l.namespace}/${l.name}`),
        cell(l.state, stateStyle(l.state)),
        cell(l.ingress.join(",") || "-"),
        cell(
          l.state !== "ready" && l.message !== undefined ? `${l.reason}: ${l.message}` : (l.reason ?? "-"),
        ),
      ]),
      paint,
    ),
    "",
  );
  return lines.join("\n");
}
