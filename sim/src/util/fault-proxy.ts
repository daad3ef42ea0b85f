import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** What a fault rule matches; every field given must match. */
export interface FaultMatch {
  readonly method?: string;
  /** The path without the query: exact when a string. */
  readonly path?: string | RegExp;
  /** true: only watch requests (?watch=true); false: only others. */
  readonly watch?: boolean;
  /** Tested against the query string ("?limit=500&continue=…"). */
  readonly query?: RegExp;
}

export type FaultRule = FaultMatch &
  (
    | {
        /** The HTTP status answered instead of forwarding. */
        readonly status: number;
        /**
         * The body (default: a Kubernetes Status JSON naming the status; for 410 the `Expired`
         * Status kube-apiserver sends for a compacted resourceVersion).
         */
        readonly body?: string;
      }
    | {
        /**
         * A watch answered HTTP 200 with one `ERROR` event carrying a Status of this code, then
         * closed: what kube-apiserver sends for a watch from a compacted resourceVersion (410).
         * A running watch that starts matching gets the event too, and ends.
         */
        readonly watchError: number;
      }
  );

/** One request the proxy saw. */
export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly watch: boolean;
  /** The status answered: the fault's, or the target's. 0 if the target was unreachable. */
  status: number;
  readonly faulted: boolean;
  readonly atMs: number;
}

export interface FaultProxyOptions {
  /** Where requests go, e.g. the Kubernetes API simulator's URL (http only). */
  readonly target: string;
  /** 0 or absent: a free port. */
  readonly port?: number;
}

/**
 * An HTTP proxy in front of a server (the Kubernetes API simulator, the simulated cloud) that
 * answers matching requests with an injected status instead of forwarding them, and records
 * every request. Faults come from outside the process under test: it sees only a server that
 * misbehaves. Watches and other long responses are streamed through.
 */
export class FaultProxy {
  readonly requests: ProxiedRequest[] = [];
  private rules: FaultRule[] = [];
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly open = new Set<{
    method: string;
    path: string;
    watch: boolean;
    query: string;
    up: IncomingMessage;
    res: ServerResponse;
  }>();
  private readonly target: URL;
  port = 0;

  private constructor(opts: FaultProxyOptions) {
    this.target = new URL(opts.target);
  }

  static async start(opts: FaultProxyOptions): Promise<FaultProxy> {
    const p = new FaultProxy(opts);
    await p.listen(opts.port ?? 0);
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Replaces the rules. Open responses that now match (a running watch) are cut, or for a
   * `watchError` rule sent its `ERROR` event and ended.
   */
  setFaults(rules: readonly FaultRule[]): void {
    this.rules = [...rules];
    for (const o of this.open) {
      const rule = this.rules.find((r) => matches(r, o.method, o.path, o.watch, o.query));
      if (rule === undefined) continue;
      if ("watchError" in rule && o.watch) {
        // The upstream's bytes stop here: a partly written event stays partly written, as a
        // proxy's cut would leave it.
        o.up.unpipe(o.res);
        o.res.end(watchErrorEvent(rule.watchError, o.query));
      } else o.res.destroy();
    }
  }

  clearFaults(): void {
    this.rules = [];
  }

  /** Requests seen matching `m` (and, if given, since `sinceMs`). */
  count(m: FaultMatch = {}, sinceMs = 0): number {
    return this.requests.filter((r) => r.atMs >= sinceMs && matches(m, r.method, r.path, r.watch, r.query))
      .length;
  }

  /** Closes every open connection (running watches included); the proxy keeps listening. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  private listen(port: number): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        this.port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://proxy");
    const method = req.method ?? "GET";
    const watch = url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1";
    const rule = this.rules.find((r) => matches(r, method, url.pathname, watch, url.search));
    const record: ProxiedRequest = {
      method,
      path: url.pathname,
      query: url.search,
      watch,
      status: 0,
      faulted: rule !== undefined,
      atMs: Date.now(),
    };
    this.requests.push(record);
    if (rule !== undefined && "watchError" in rule && watch) {
      record.status = 200;
      req.resume();
      res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
      res.end(watchErrorEvent(rule.watchError, url.search));
      return;
    }
    if (rule !== undefined && "status" in rule) {
      record.status = rule.status;
      req.resume();
      const body = rule.body ?? statusBody(rule.status, url.search);
      res.writeHead(rule.status, {
        "Content-Type": "application/json",
        "Content-Length": Buffer.byteLength(body),
      });
      res.end(body);
      return;
    }
    const upstream = httpRequest(
      {
        host: this.target.hostname,
        port: this.target.port,
        method,
        path: url.pathname + url.search,
        headers: { ...req.headers, host: this.target.host },
      },
      (up) => {
        record.status = up.statusCode ?? 0;
        const entry = { method, path: url.pathname, watch, query: url.search, up, res };
        this.open.add(entry);
        res.writeHead(up.statusCode ?? 502, up.headers);
        // A watch's headers go out at once, not with its first event.
        res.flushHeaders();
        up.pipe(res);
        res.once("close", () => {
          this.open.delete(entry);
          up.destroy();
        });
      },
    );
    upstream.once("error", () => {
      if (!res.headersSent) {
        res.writeHead(502, { "Content-Type": "application/json" });
        res.end(statusBody(502));
      } else res.destroy();
    });
    req.pipe(upstream);
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    this.dropConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function matches(m: FaultMatch, method: string, path: string, watch: boolean, query: string): boolean {
  if (m.method !== undefined && m.method.toUpperCase() !== method.toUpperCase()) return false;
  if (m.watch !== undefined && m.watch !== watch) return false;
  if (m.query !== undefined && !m.query.test(query)) return false;
  if (m.path === undefined) return true;
  return typeof m.path === "string" ? m.path === path : m.path.test(path);
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  429: "TooManyRequests",
  500: "InternalError",
  502: "BadGateway",
  503: "ServiceUnavailable",
  504: "Timeout",
};

function status(code: number, query: string): Record<string, unknown> {
  if (code === 410) {
    // kube-apiserver's answer for a compacted resourceVersion: the requested one and the oldest
    // it still has (here: the next one).
    const given = new URLSearchParams(query).get("resourceVersion");
    const rv = given ? Number(given) : Number.NaN;
    const message = Number.isSafeInteger(rv)
      ? `too old resource version: ${rv} (${rv + 1})`
      : "injected fault: HTTP 410";
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason: "Expired",
      code,
    };
  }
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `injected fault: HTTP ${code}`,
    reason: REASONS[code] ?? "InternalError",
    code,
  };
}

function statusBody(code: number, query = ""): string {
  return JSON.stringify(status(code, query));
}

/** A watch's `ERROR` event line carrying the Status of `code`. */
function watchErrorEvent(code: number, query: string): string {
  return `${JSON.stringify({ type: "ERROR", object: status(code, query) })}\n`;
}

/** Starts a fault proxy in front of `target`. */
export function startFaultProxy(opts: FaultProxyOptions): Promise<FaultProxy> {
  return FaultProxy.start(opts);
}
