import {
  type ClusterEvent,
  DesiredBatch,
  desiredSubject,
  type NodeDesired,
  type ServiceDesired,
} from "@fleet-ccm/proto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";

export interface NatsOptions {
  readonly servers: readonly string[];
  readonly user?: string | undefined;
  readonly password?: string | undefined;
}

interface Pending {
  nodes: NodeDesired[];
  services: ServiceDesired[];
  events: ClusterEvent[];
}

/** Items per DesiredBatch: keeps each message far below NATS' default 1 MiB max_payload. */
const MAX_ITEMS_PER_BATCH = 500;

/**
 * Publishes desired state to `fleet.v1.<cluster>.desired`, coalescing what the
 * workers produce in one tick into one DesiredBatch per cluster. Losing a
 * message is fine by design: the hub republishes when reports do not converge.
 */
export class DesiredPublisher {
  private nc: NatsConnection | undefined;
  private readonly pending = new Map<string, Pending>();
  private flushScheduled = false;
  private closed = false;
  private isConnected = false;
  publishedBytes = 0;

  constructor(
    private readonly opts: NatsOptions,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.nc = await connect({
      servers: [...this.opts.servers],
      user: this.opts.user,
      pass: this.opts.password,
      name: "fleet-ccm-hub",
      inboxPrefix: "_INBOX_hub",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      waitOnFirstConnect: true,
      pingInterval: 10_000,
    });
    void this.watchStatus(this.nc);
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    this.isConnected = true;
    for await (const s of nc.status()) {
      if (s.type === "disconnect") this.isConnected = false;
      if (s.type === "reconnect") this.isConnected = true;
      if (s.type === "disconnect" || s.type === "reconnect")
        this.logger.warn({ nats: s.type }, "NATS connection status changed");
    }
    this.isConnected = false;
  }

  /** True while connected to a NATS server (readiness). */
  connected(): boolean {
    return this.isConnected && this.nc !== undefined && !this.nc.isClosed();
  }

  enqueue(
    cluster: string,
    items: {
      nodes?: readonly NodeDesired[];
      services?: readonly ServiceDesired[];
      events?: readonly ClusterEvent[];
    },
  ): void {
    if (this.closed) return;
    let p = this.pending.get(cluster);
    if (p === undefined) {
      p = { nodes: [], services: [], events: [] };
      this.pending.set(cluster, p);
    }
    if (items.nodes) p.nodes.push(...items.nodes);
    if (items.services) p.services.push(...items.services);
    if (items.events) p.events.push(...items.events);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const nc = this.nc;
    if (nc === undefined || nc.isClosed()) return;
    for (const [cluster, p] of this.pending) {
      const subject = desiredSubject(cluster);
      while (p.nodes.length + p.services.length + p.events.length > 0) {
        let room = MAX_ITEMS_PER_BATCH;
        const nodes = p.nodes.splice(0, room);
        room -= nodes.length;
        const services = p.services.splice(0, room);
        room -= services.length;
        const events = p.events.splice(0, room);
        const data = DesiredBatch.encode({ nodes, services, events }).finish();
        try {
          nc.publish(subject, data);
          this.publishedBytes += data.length;
        } catch (err) {
          // Closed or draining: drop; the convergence deadline republishes.
          this.logger.warn({ cluster, err: (err as Error).message }, "publish failed");
        }
      }
    }
    this.pending.clear();
  }

  async stop(): Promise<void> {
    this.closed = true;
    const nc = this.nc;
    this.nc = undefined;
    if (nc !== undefined && !nc.isClosed()) {
      this.flushScheduled = false;
      await nc.drain().catch(() => nc.close());
    }
  }
}
