import {
  type ClusterEvent,
  DesiredBatch,
  desiredSubject,
  type NodeDesired,
  type PersistentVolumeDesired,
  type ServiceDesired,
} from "@fleet-ccm/proto";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { backoffDelayMs } from "../util/backoff.js";

export interface NatsOptions {
  readonly servers: readonly string[];
  readonly user?: string | undefined;
  readonly password?: string | undefined;
  /** A .creds file's content (decentralized auth), instead of user and password. */
  readonly creds?: string | undefined;
}

/** The connect options that authenticate as `opts` says: a .creds file, or user and password. */
export function natsAuthOptions(opts: NatsOptions) {
  return opts.creds === undefined
    ? { user: opts.user, pass: opts.password }
    : { authenticator: credsAuthenticator(new TextEncoder().encode(`${opts.creds}\n`)) };
}

interface Pending {
  nodes: NodeDesired[];
  services: ServiceDesired[];
  persistentVolumes: PersistentVolumeDesired[];
  events: ClusterEvent[];
}

function pendingCount(p: Pending): number {
  return p.nodes.length + p.services.length + p.persistentVolumes.length + p.events.length;
}

/** Items per DesiredBatch: keeps each message far below NATS' default 1 MiB max_payload. */
const MAX_ITEMS_PER_BATCH = 500;
/** Items kept while NATS is unreachable; beyond, the oldest go (reconcilers republish desired state). */
const MAX_PENDING_ITEMS = 200_000;
/** First-connection retries: 500 ms doubling to 30 s, jittered. */
const CONNECT_BACKOFF = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.2 };
/** Reconnection after a loss: 250 ms growing to 5 s, jittered. */
const RECONNECT_BACKOFF = { initialMs: 250, maxMs: 5000, factor: 2, jitter: 0.2 };
/** A cluster's publications refused this recently count as undeliverable (the hub republishes sooner). */
const REFUSED_FRESH_MS = 60_000;
/** While NATS stays unreachable, one summary line this often (not a line per try). */
const SUMMARY_EVERY_MS = 60_000;

/** The cluster of a `fleet.v1.<cluster>.desired` subject, or undefined. */
export function clusterOfDesiredSubject(subject: string): string | undefined {
  const m = /^fleet\.v1\.(.+)\.desired$/.exec(subject);
  return m?.[1] !== undefined && desiredSubject(m[1]) === subject ? m[1] : undefined;
}

/** nats://user:pass@host:4222 → nats://host:4222: a server URL may carry credentials. */
export function redactServer(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^@/]*@/i, "$1");
}

/**
 * A NATS failure as a user can act on it: which server, what happened, which setting to
 * check. Never a stack trace, never the password.
 */
export function describeNatsError(err: unknown, servers: readonly string[]): string {
  const where = servers.map(redactServer).join(", ");
  const e = err as { name?: string; message?: string; code?: string };
  const name = e?.name ?? "";
  const msg = (e?.message ?? String(err)).split("\n")[0] ?? "";
  if (/authori[sz]ation|authentication/i.test(`${name} ${msg}`))
    return `NATS at ${where} refused the hub's credentials (${msg}): check nats.credentials (or nats.user and nats.password)`;
  if (/permission/i.test(`${name} ${msg}`))
    return `NATS at ${where} denied a permission (${msg}): the hub's NATS user must be allowed to publish fleet.v1.>`;
  return `cannot connect to NATS at ${where} (${msg || name}): check nats.servers and that NATS is running`;
}

export interface PublisherStatus {
  readonly connected: boolean;
  /** Why not connected; null when connected. */
  readonly problem: string | null;
  /** Connected since, or down since (epoch ms). */
  readonly sinceMs: number | undefined;
  /** Items kept for the reconnection, in all and by cluster (only clusters with some). */
  readonly kept: number;
  readonly keptBy: ReadonlyMap<string, number>;
  /** Oldest items dropped over the bound while down (reconcilers republish them). */
  readonly dropped: number;
  /**
   * Clusters whose results NATS took no more, connected or not: a refused publish (the hub's
   * user may not publish there) or a publish that failed, in the last minute; why.
   */
  readonly refusedBy: ReadonlyMap<string, string>;
}

type NatsState = "connecting" | "connected" | "reconnecting" | "closed";

/**
 * Publishes desired state to `fleet.v1.<cluster>.desired`, coalescing what the
 * workers produce in one tick into one DesiredBatch per cluster. The connection is made in
 * the background and retried for ever: the hub serves agents while NATS is down, keeps what
 * it would publish, and sends it once NATS is back (`onConnected` lets the hub republish what
 * was in flight). Losing a message is fine by design: the hub republishes when reports do
 * not converge.
 */
export class DesiredPublisher {
  private nc: NatsConnection | undefined;
  private readonly pending = new Map<string, Pending>();
  private pendingItems = 0;
  private flushScheduled = false;
  private closed = false;
  private state: NatsState = "connecting";
  private problem: string | undefined;
  private downSinceMs = Date.now();
  private connectedSinceMs: number | undefined;
  private summaryTimer: NodeJS.Timeout | undefined;
  private retryTimer: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  private droppedWhileDown = 0;
  private reconnectTries = 0;
  /** Clusters whose last publication NATS refused or could not take: why, and when. */
  private readonly refused = new Map<string, { reason: string; atMs: number }>();
  publishedBytes = 0;
  /** Called on every (re)connection, after what was kept meanwhile is flushed. */
  onConnected: (() => void) | undefined;
  /** Checked at enqueue and again at flush (hub replicas: the cluster's lease); absent: always. */
  mayPublish: ((cluster: string) => boolean) | undefined;

  constructor(
    private readonly opts: NatsOptions,
    private readonly logger: Logger,
  ) {}

  /** Starts connecting in the background; never waits for NATS. */
  start(): void {
    this.downSinceMs = Date.now();
    void this.connectLoop();
  }

  private get where(): string {
    return this.opts.servers.map(redactServer).join(", ");
  }

  private async connectLoop(): Promise<void> {
    let attempt = 0;
    let lastSummary = Date.now();
    while (!this.closed) {
      try {
        const nc = await connect({
          servers: [...this.opts.servers],
          ...natsAuthOptions(this.opts),
          name: "fleet-ccm-hub",
          inboxPrefix: "_INBOX_hub",
          maxReconnectAttempts: -1,
          // Reconnection after a loss: nats.js retries for ever, with this growing delay.
          reconnectDelayHandler: () => backoffDelayMs(Math.min(this.reconnectTries++, 16), RECONNECT_BACKOFF),
          waitOnFirstConnect: false,
          pingInterval: 10_000,
          timeout: 5000,
        });
        if (this.closed) {
          await nc.close().catch(() => undefined);
          return;
        }
        this.nc = nc;
        this.becameConnected(nc.getServer(), attempt);
        void this.watchStatus(nc);
        return;
      } catch (err) {
        attempt++;
        const problem = describeNatsError(err, this.opts.servers);
        const now = Date.now();
        if (problem !== this.problem) {
          this.logger.warn(
            { servers: this.where, attempt },
            `${problem}; retrying with backoff (up to ${CONNECT_BACKOFF.maxMs / 1000} s)`,
          );
          lastSummary = now;
        } else if (now - lastSummary >= SUMMARY_EVERY_MS) {
          this.logger.warn(
            { servers: this.where, attempts: attempt, downForS: Math.round((now - this.downSinceMs) / 1000) },
            `still not connected to NATS: ${problem}`,
          );
          lastSummary = now;
        }
        this.problem = problem;
        await this.sleep(backoffDelayMs(Math.min(attempt - 1, 16), CONNECT_BACKOFF));
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.retryTimer = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.retryTimer = { timer, resolve };
    });
  }

  private becameConnected(server: string, attempts: number): void {
    const downForS = Math.round((Date.now() - this.downSinceMs) / 1000);
    this.state = "connected";
    this.connectedSinceMs = Date.now();
    this.problem = undefined;
    this.reconnectTries = 0;
    this.stopSummary();
    this.logger.info(
      { server: redactServer(server), attempts, downForS, kept: this.pendingItems },
      "connected to NATS",
    );
    if (this.droppedWhileDown > 0)
      this.logger.warn(
        { dropped: this.droppedWhileDown },
        "NATS was down long enough that the oldest publications were dropped; desired state is republished",
      );
    this.droppedWhileDown = 0;
    this.flush();
    this.onConnected?.();
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") {
        this.state = "reconnecting";
        this.downSinceMs = Date.now();
        this.problem = `lost the connection to NATS at ${redactServer(s.server)}`;
        this.logger.warn(
          { server: redactServer(s.server) },
          "NATS connection lost; reconnecting (publications are kept until it is back)",
        );
        this.startSummary();
      } else if (s.type === "reconnect") {
        this.becameConnected(s.server, 0);
      } else if (s.type === "error") {
        this.noteRefusal(s.error);
        const problem = describeNatsError(s.error, this.opts.servers);
        if (problem !== this.problem) this.logger.warn({ servers: this.where }, problem);
        this.problem = problem;
      }
    }
    // The client gave up (closed): start over unless the hub is stopping.
    if (this.closed) return;
    this.state = "connecting";
    this.nc = undefined;
    this.downSinceMs = Date.now();
    this.logger.warn({ servers: this.where }, "NATS connection closed; connecting again");
    void this.connectLoop();
  }

  /** A publish the server refused (asynchronously: -ERR Permissions Violation) names its subject. */
  private noteRefusal(err: unknown): void {
    const e = err as { name?: string; operation?: string; subject?: string };
    if (e?.name !== "PermissionViolationError" || e.operation !== "publish" || e.subject === undefined)
      return;
    const cluster = clusterOfDesiredSubject(e.subject);
    if (cluster === undefined) return;
    this.refused.set(cluster, {
      reason: `the hub's publish to ${e.subject} was refused (permissions violation): its NATS user must be allowed to publish fleet.v1.>`,
      atMs: Date.now(),
    });
  }

  private startSummary(): void {
    this.stopSummary();
    this.summaryTimer = setInterval(() => {
      this.logger.warn(
        {
          servers: this.where,
          downForS: Math.round((Date.now() - this.downSinceMs) / 1000),
          kept: this.pendingItems,
        },
        `still not connected to NATS: ${this.problem ?? "reconnecting"}`,
      );
    }, SUMMARY_EVERY_MS);
    this.summaryTimer.unref();
  }

  private stopSummary(): void {
    if (this.summaryTimer !== undefined) clearInterval(this.summaryTimer);
    this.summaryTimer = undefined;
  }

  /** True while connected to a NATS server (readiness). */
  connected(): boolean {
    return this.state === "connected" && this.nc !== undefined && !this.nc.isClosed();
  }

  /**
   * What the hub can deliver now (the fleet API's hub section): connected or not since when,
   * why not, and what is kept for the reconnection (in all and for each cluster).
   */
  status(): PublisherStatus {
    const connected = this.connected();
    const keptBy = new Map<string, number>();
    for (const [cluster, p] of this.pending) {
      const n = pendingCount(p);
      if (n > 0) keptBy.set(cluster, n);
    }
    const now = Date.now();
    const refusedBy = new Map<string, string>();
    for (const [cluster, r] of this.refused) {
      if (now - r.atMs < REFUSED_FRESH_MS) refusedBy.set(cluster, r.reason);
      else this.refused.delete(cluster);
    }
    return {
      connected,
      problem: this.notConnectedReason(),
      sinceMs: connected ? this.connectedSinceMs : this.downSinceMs,
      kept: this.pendingItems,
      keptBy,
      dropped: this.droppedWhileDown,
      refusedBy,
    };
  }

  /** Why the hub is not connected to NATS, for /readyz; null when it is. */
  notConnectedReason(): string | null {
    if (this.connected()) return null;
    return this.problem ?? `connecting to NATS at ${this.where}`;
  }

  enqueue(
    cluster: string,
    items: {
      nodes?: readonly NodeDesired[];
      services?: readonly ServiceDesired[];
      persistentVolumes?: readonly PersistentVolumeDesired[];
      events?: readonly ClusterEvent[];
    },
  ): void {
    if (this.closed || this.mayPublish?.(cluster) === false) return;
    let p = this.pending.get(cluster);
    if (p === undefined) {
      p = { nodes: [], services: [], persistentVolumes: [], events: [] };
      this.pending.set(cluster, p);
    }
    if (items.nodes) p.nodes.push(...items.nodes);
    if (items.services) p.services.push(...items.services);
    if (items.persistentVolumes) p.persistentVolumes.push(...items.persistentVolumes);
    if (items.events) p.events.push(...items.events);
    this.pendingItems +=
      (items.nodes?.length ?? 0) +
      (items.services?.length ?? 0) +
      (items.persistentVolumes?.length ?? 0) +
      (items.events?.length ?? 0);
    if (this.pendingItems > MAX_PENDING_ITEMS) this.dropOldest(p);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Over the bound while NATS is down: drop the oldest items of this cluster first. */
  private dropOldest(p: Pending): void {
    const excess = this.pendingItems - MAX_PENDING_ITEMS;
    let left = excess;
    for (const list of [p.nodes, p.services, p.persistentVolumes, p.events] as unknown[][]) {
      const n = Math.min(left, list.length);
      list.splice(0, n);
      left -= n;
    }
    const dropped = excess - left;
    this.pendingItems -= dropped;
    this.droppedWhileDown += dropped;
  }

  private flush(): void {
    this.flushScheduled = false;
    const nc = this.nc;
    // Not connected: keep everything for the reconnection.
    if (nc === undefined || nc.isClosed() || !this.connected()) return;
    for (const [cluster, p] of this.pending) {
      if (this.mayPublish?.(cluster) === false) continue;
      const subject = desiredSubject(cluster);
      while (pendingCount(p) > 0) {
        let room = MAX_ITEMS_PER_BATCH;
        const nodes = p.nodes.splice(0, room);
        room -= nodes.length;
        const services = p.services.splice(0, room);
        room -= services.length;
        const persistentVolumes = p.persistentVolumes.splice(0, room);
        room -= persistentVolumes.length;
        const events = p.events.splice(0, room);
        const data = DesiredBatch.encode({ nodes, services, persistentVolumes, events }).finish();
        try {
          nc.publish(subject, data);
          this.publishedBytes += data.length;
        } catch (err) {
          // Closed or draining: drop; the convergence deadline republishes.
          this.logger.warn({ cluster, err: (err as Error).message }, "publish failed");
          this.refused.set(cluster, {
            reason: `a publish failed (${(err as Error).message.split("\n")[0]})`,
            atMs: Date.now(),
          });
        }
      }
    }
    this.pending.clear();
    this.pendingItems = 0;
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.state = "closed";
    this.stopSummary();
    if (this.retryTimer !== undefined) {
      clearTimeout(this.retryTimer.timer);
      this.retryTimer.resolve();
    }
    const nc = this.nc;
    this.nc = undefined;
    if (nc !== undefined && !nc.isClosed()) {
      this.flushScheduled = false;
      await nc.drain().catch(() => nc.close());
    }
  }
}
