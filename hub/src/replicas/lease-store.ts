import { jetstream } from "@nats-io/jetstream";
import { type KV, type KvEntry, Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { describeNatsError, type NatsOptions, natsAuthOptions, redactServer } from "../nats/publisher.js";
import { backoffDelayMs } from "../util/backoff.js";

/** A lease as stored: the value and the revision a compare-and-set must name. */
export interface StoredLease {
  readonly revision: number;
  /** null: the key was deleted (released) or never written. */
  readonly value: LeaseValue | null;
}

/** What a lease key holds (JSON). Expiry is judged by each reader on its own clock, see leases.ts. */
export interface LeaseValue {
  /** The replica id of the holder. */
  readonly owner: string;
  /** Random per process: a restarted replica with the same id is another holder. */
  readonly incarnation: string;
  readonly ttlMs: number;
  /** Holder's wall clock at the renewal, and when it stops acting (for operators; never trusted). */
  readonly renewedAt: number;
  readonly expiresAt: number;
  /** A replica holding the cluster's agent stream asks for the lease. */
  readonly handoverTo?: string;
  /** Node deletions in the cluster (wall ms), carried from owner to owner (blast-radius budget). */
  readonly deletions?: readonly number[];
}

/** Thrown by create/update/remove when the key is not at the expected revision. */
export class LeaseConflict extends Error {
  override name = "LeaseConflict";
}

/** Compare-and-set storage of per-cluster leases. */
export interface LeaseStore {
  get(cluster: string): Promise<StoredLease>;
  /** Writes where the key is absent or deleted; LeaseConflict otherwise. */
  create(cluster: string, value: LeaseValue): Promise<number>;
  update(cluster: string, value: LeaseValue, revision: number): Promise<number>;
  /** Deletes if still at `revision`. */
  remove(cluster: string, revision: number): Promise<void>;
  /**
   * Every lease's current value and each later write, for as long as the store is open (again
   * after a reconnect): each replica sees every renewal as it happens, not only when it reads.
   */
  watch(listener: (cluster: string, lease: StoredLease) => void): void;
  connected(): boolean;
  /** Why the store is unusable (readiness), or null. */
  problem(): string | null;
  close(): Promise<void>;
}

export interface KvLeaseStoreOptions {
  readonly nats: NatsOptions;
  readonly bucket: string;
  /** JetStream replicas of the bucket's stream (3 on a three-node NATS cluster). */
  readonly streamReplicas: number;
  /** Every KV request gives up after this (a renewal must fail well before the lease is fenced). */
  readonly requestTimeoutMs: number;
  readonly replicaId: string;
  readonly logger: Logger;
}

const CONNECT_BACKOFF = { initialMs: 250, maxMs: 5000, factor: 2, jitter: 0.2 };

/**
 * Leases in a NATS JetStream KV bucket (history 1), on a connection of their own: a replica cut
 * off from NATS fails its renewals, whatever the publisher's connection does.
 */
export class KvLeaseStore implements LeaseStore {
  private nc: NatsConnection | undefined;
  private kv: KV | undefined;
  private closed = false;
  private lastProblem: string | null = "connecting to NATS for leases";
  private opening: Promise<KV> | undefined;
  /** A request failed (timeout: NATS may be unreachable without the connection knowing yet). */
  private failing: string | null = null;
  private probe: NodeJS.Timeout | undefined;
  private listener: ((cluster: string, lease: StoredLease) => void) | undefined;

  constructor(private readonly opts: KvLeaseStoreOptions) {}

  /** Connects and opens (creating if needed) the bucket, retrying for ever in the background. */
  start(): void {
    void this.open().catch(() => undefined);
  }

  private open(): Promise<KV> {
    this.opening ??= this.openLoop().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async openLoop(): Promise<KV> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new Error("lease store closed");
      try {
        this.nc ??= await connect({
          servers: [...this.opts.nats.servers],
          ...natsAuthOptions(this.opts.nats),
          name: `fleet-ccm-hub-leases-${this.opts.replicaId}`,
          inboxPrefix: "_INBOX_hub",
          maxReconnectAttempts: -1,
          reconnectTimeWait: 250,
          waitOnFirstConnect: false,
          pingInterval: 2000,
          maxPingOut: 2,
          timeout: this.opts.requestTimeoutMs,
        });
        void this.watchStatus(this.nc);
        const js = jetstream(this.nc, { timeout: this.opts.requestTimeoutMs });
        this.kv = await new Kvm(js).create(this.opts.bucket, {
          history: 1,
          replicas: this.opts.streamReplicas,
          description: "fleet-ccm hub: one lease per cluster",
        });
        this.lastProblem = null;
        void this.follow(this.kv);
        this.opts.logger.info(
          { bucket: this.opts.bucket, servers: this.opts.nats.servers.map(redactServer).join(", ") },
          "lease bucket open",
        );
        return this.kv;
      } catch (err) {
        const problem = `lease bucket ${this.opts.bucket}: ${describeLeaseError(err, this.opts.bucket, this.opts.nats.servers)}`;
        if (problem !== this.lastProblem) this.opts.logger.warn({ attempt }, problem);
        this.lastProblem = problem;
        if (this.nc?.isClosed()) this.nc = undefined;
        await new Promise((r) =>
          setTimeout(r, backoffDelayMs(Math.min(attempt, 16), CONNECT_BACKOFF)).unref(),
        );
      }
    }
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === "disconnect")
        this.lastProblem = `lost the connection to NATS (${redactServer(s.server)})`;
      else if (s.type === "reconnect" && this.kv !== undefined) this.lastProblem = null;
    }
  }

  watch(listener: (cluster: string, lease: StoredLease) => void): void {
    this.listener = listener;
  }

  /** Follows the bucket for ever: the watch starts again (all last values first) whenever it ends. */
  private async follow(kv: KV): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const entries = await kv.watch();
        for await (const e of entries) {
          attempt = 0;
          this.listener?.(e.key, storedOf(e));
        }
      } catch (err) {
        this.opts.logger.debug({ err: (err as Error)?.message }, "lease watch ended");
      }
      if (this.closed) return;
      await new Promise((r) => setTimeout(r, backoffDelayMs(Math.min(attempt, 16), CONNECT_BACKOFF)).unref());
    }
  }

  private async bucket(): Promise<KV> {
    return this.kv ?? (await this.open());
  }

  connected(): boolean {
    return (
      this.kv !== undefined &&
      this.nc !== undefined &&
      !this.nc.isClosed() &&
      this.lastProblem === null &&
      this.failing === null
    );
  }

  problem(): string | null {
    return this.connected() ? null : (this.lastProblem ?? this.failing ?? "not connected");
  }

  /** Every request's outcome: a failure marks the store unusable until a request succeeds. */
  private async request<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const v = await fn();
      this.recovered();
      return v;
    } catch (err) {
      if (!/wrong last sequence|key exists/i.test(String((err as Error)?.message))) this.failed(err);
      else this.recovered();
      throw err;
    }
  }

  private failed(err: unknown): void {
    if (this.closed) return;
    if (this.failing === null)
      this.opts.logger.warn({ err: (err as Error)?.message }, "lease bucket requests failing");
    this.failing = `lease requests failing (${(err as Error)?.message ?? String(err)})`;
    // Nothing else may be asking: probe until NATS answers again.
    this.probe ??= setInterval(() => {
      void this.kv
        ?.get("probe")
        .then(() => this.recovered())
        .catch(() => undefined);
    }, 1000).unref();
  }

  private recovered(): void {
    if (this.failing !== null) this.opts.logger.info("lease bucket requests succeed again");
    this.failing = null;
    if (this.probe !== undefined) clearInterval(this.probe);
    this.probe = undefined;
  }

  async get(cluster: string): Promise<StoredLease> {
    const kv = await this.bucket();
    const e = await this.request(() => kv.get(cluster));
    return e === null ? { revision: 0, value: null } : storedOf(e);
  }

  async create(cluster: string, value: LeaseValue): Promise<number> {
    const kv = await this.bucket();
    try {
      return await this.request(() => kv.create(cluster, JSON.stringify(value)));
    } catch (err) {
      throw await this.disambiguate(cluster, err, -1);
    }
  }

  async update(cluster: string, value: LeaseValue, revision: number): Promise<number> {
    const kv = await this.bucket();
    try {
      return await this.request(() => kv.update(cluster, JSON.stringify(value), revision));
    } catch (err) {
      throw await this.disambiguate(cluster, err, revision);
    }
  }

  async remove(cluster: string, revision: number): Promise<void> {
    const kv = await this.bucket();
    try {
      await this.request(() => kv.delete(cluster, { previousSeq: revision }));
    } catch (err) {
      throw await this.disambiguate(cluster, err, revision);
    }
  }

  /**
   * A failed write is a conflict only if the key is now elsewhere than expected; a write that
   * timed out may also have landed, so the reader learns it by reading (revision changed).
   */
  private async disambiguate(cluster: string, err: unknown, expected: number): Promise<Error> {
    const msg = err instanceof Error ? err.message : String(err);
    if (/wrong last sequence|key exists/i.test(msg)) return new LeaseConflict(msg);
    try {
      const now = await this.get(cluster);
      if (expected >= 0 ? now.revision !== expected : now.value !== null)
        return new LeaseConflict(`lease ${cluster} is at revision ${now.revision}: ${msg}`);
    } catch {
      // Unreadable too: the original failure stands.
    }
    return err instanceof Error ? err : new Error(msg);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.probe !== undefined) clearInterval(this.probe);
    const nc = this.nc;
    this.nc = undefined;
    this.kv = undefined;
    if (nc !== undefined && !nc.isClosed()) await nc.close().catch(() => undefined);
  }
}

/** A failure to open the bucket as the operator can act on it (the JetStream-specific causes first). */
export function describeLeaseError(err: unknown, bucket: string, servers: readonly string[]): string {
  const e = err as { name?: string; message?: string };
  const text = `${e?.name ?? ""} ${e?.message ?? String(err)}`;
  if (/jetstream.*not enabled|JetStreamNotEnabled/i.test(text))
    return "JetStream is not enabled on NATS: hub replicas keep their leases in it (a jetstream block in nats.conf)";
  if (/permission/i.test(text))
    return `NATS denied a permission (${e?.message ?? text}): the hub's NATS user must also be allowed to publish $JS.API.> and $KV.${bucket}.>`;
  if (/insufficient resources|replicas > 1 not supported|no suitable peers/i.test(text))
    return `JetStream cannot place the bucket (${e?.message ?? text}): check replicas.streamReplicas against the NATS cluster's size`;
  return describeNatsError(err, servers);
}

const UNREADABLE: LeaseValue = {
  owner: "(unreadable)",
  incarnation: "",
  ttlMs: 0,
  renewedAt: 0,
  expiresAt: 0,
};

function storedOf(e: KvEntry): StoredLease {
  if (e.operation !== "PUT") return { revision: e.revision, value: null };
  // An unreadable value is somebody's lease all the same: it is waited out, never overwritten at once.
  return { revision: e.revision, value: parseLease(e.string()) ?? UNREADABLE };
}

function parseLease(text: string): LeaseValue | null {
  try {
    const v = JSON.parse(text) as Partial<LeaseValue>;
    if (typeof v.owner !== "string" || typeof v.incarnation !== "string" || typeof v.ttlMs !== "number")
      return null;
    return v as LeaseValue;
  } catch {
    return null;
  }
}
