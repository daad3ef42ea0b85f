import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { LeaseConflict, type LeaseStore, type LeaseValue, type StoredLease } from "./lease-store.js";
import { expiresInMs, type LeaseSighting, LeaseSightings } from "./sightings.js";

export interface LeaseSettings {
  readonly replicaId: string;
  /** How long a lease lasts after its last renewal, for everyone else. */
  readonly ttlMs: number;
  /** The holder stops acting this long before the TTL ends (clock drift, in-flight calls). */
  readonly marginMs: number;
  readonly renewIntervalMs: number;
  /** How often a replica that wants a held lease looks at it again. */
  readonly pollIntervalMs: number;
  /** How long recorded node deletions are carried in the lease (the blast-radius window). */
  readonly deletionWindowMs: number;
}

/**
 * Why a held lease ended: given up (released, handover), or lost: not renewed in time here
 * (renew-failed: NATS unreachable, or the process frozen past its fence), or found written by
 * another replica (taken). A lease that had already run out here when it was given up was lost.
 */
export type LossReason = "released" | "handover" | "renew-failed" | "taken";

const LOSS_LOG: Record<LossReason, { level: "info" | "warn"; msg: string }> = {
  released: { level: "info", msg: "lease released" },
  handover: { level: "info", msg: "handing the lease over" },
  "renew-failed": { level: "warn", msg: "lease not renewed in time: stopped acting for the cluster" },
  taken: { level: "warn", msg: "lease taken by another replica: stopped acting for the cluster" },
};

export interface LeaseEvents {
  /** Now held; `from` is the previous holder when this is a takeover. */
  onAcquired?(cluster: string, from: string | undefined): void;
  /** Called at the fence, before anything else happens: stop acting for the cluster. */
  onLost?(cluster: string, reason: LossReason): void;
  onRenewFailure?(cluster: string, err: Error): void;
  /**
   * The lease could not even be read for a whole TTL while the cluster's stream is here: the
   * agent is better served by another replica.
   */
  onStalled?(cluster: string): void;
  /** Asked for a handover of a lease already fenced here: freed; the stream here is stale. */
  onYielded?(cluster: string): void;
}

export interface LeaseDeps {
  readonly store: LeaseStore;
  readonly logger: Logger;
  readonly events?: LeaseEvents;
  /** Monotonic milliseconds (never the wall clock: fencing must not move with NTP). */
  readonly monotonic?: () => number;
  readonly wall?: () => number;
}

interface ClusterLease {
  wanted: boolean;
  owned: boolean;
  revision: number;
  /** The holder's monotonic deadline to stop acting. */
  fenceAt: number;
  tenure: AbortController;
  /** Node deletions (wall ms) recorded in the lease. */
  deletions: number[];
  /** Since when acquisition attempts have failed outright (monotonic), or undefined. */
  failingSince: number | undefined;
  timer: NodeJS.Timeout | undefined;
  fenceTimer: NodeJS.Timeout | undefined;
  chain: Promise<void>;
}

/**
 * Per-cluster leases with compare-and-set on the KV revision. Nobody trusts another replica's
 * clock: a reader considers a lease expired once the same write has been unchanged for a whole
 * TTL since it first saw it, on its own monotonic clock (LeaseSightings: every replica watches
 * every lease all the time), and the holder stops acting at TTL − margin after it *sent* its
 * last successful renewal. Since a renewal is sent before anyone can see it, the holder always
 * stops before any reader may take over, whatever the wall clocks say.
 */
export class ClusterLeases {
  readonly incarnation = randomBytes(8).toString("hex");
  private readonly leases = new Map<string, ClusterLease>();
  private readonly mono: () => number;
  private readonly wall: () => number;
  private readonly sightings: LeaseSightings;
  private stopped = false;

  constructor(
    readonly settings: LeaseSettings,
    private readonly deps: LeaseDeps,
  ) {
    if (settings.marginMs <= 0 || settings.marginMs >= settings.ttlMs)
      throw new Error("replicas.marginMs must be positive and below replicas.leaseTtlMs");
    if (settings.renewIntervalMs >= settings.ttlMs - settings.marginMs)
      throw new Error("replicas.renewIntervalMs must be below leaseTtlMs - marginMs");
    this.mono = deps.monotonic ?? (() => performance.now());
    this.wall = deps.wall ?? Date.now;
    const sightings = new LeaseSightings(this.mono);
    this.sightings = sightings;
    deps.store.watch((cluster, lease) => {
      sightings.saw(cluster, lease);
      // Freed while our agent waits here: take it now rather than at the next poll.
      const l = this.leases.get(cluster);
      if (l?.wanted === true && !l.owned && !this.stopped && this.free(lease.value))
        this.schedule(cluster, l, 0);
    });
  }

  /** Whether this replica may act for the cluster now (checked before every mutation and publish). */
  holds(cluster: string): boolean {
    const l = this.leases.get(cluster);
    return l?.owned === true && this.mono() < l.fenceAt;
  }

  /** Aborted when the current tenure ends (undefined when not held). */
  signal(cluster: string): AbortSignal | undefined {
    const l = this.leases.get(cluster);
    return l?.owned ? l.tenure.signal : undefined;
  }

  owned(): string[] {
    return [...this.leases].filter(([c]) => this.holds(c)).map(([c]) => c);
  }

  /** Node deletions recorded in the cluster's lease within the window (wall ms), any owner's. */
  recordedDeletions(cluster: string): readonly number[] {
    const l = this.leases.get(cluster);
    return l === undefined ? [] : this.prune(l.deletions);
  }

  /** Start acquiring (idempotent): the cluster's agent stream is here. */
  want(cluster: string): void {
    if (this.stopped) return;
    const l = this.lease(cluster);
    if (l.wanted) return;
    l.wanted = true;
    if (!l.owned) this.schedule(cluster, l, 0);
  }

  /** Stop acting and release (the agent's stream left, or the hub stops). */
  unwant(cluster: string): Promise<void> {
    const l = this.leases.get(cluster);
    if (l === undefined) return Promise.resolve();
    l.wanted = false;
    if (!l.owned) {
      this.clearTimer(l);
      return Promise.resolve();
    }
    this.fence(cluster, l, "released");
    return this.serial(l, () => this.release(cluster, l));
  }

  /**
   * Records node deletions in the lease before they are published, so a takeover inherits the
   * blast-radius budget spent. False: not recorded (not held, or the write failed): don't delete.
   */
  recordDeletions(cluster: string, count: number): Promise<boolean> {
    const l = this.leases.get(cluster);
    if (l === undefined || !this.holds(cluster)) return Promise.resolve(false);
    let ok = false;
    return this.serial(l, async () => {
      if (!this.holds(cluster)) return;
      const at = this.wall();
      const deletions = this.prune([...l.deletions, ...Array.from({ length: count }, () => at)]);
      ok = await this.write(cluster, l, deletions);
    }).then(() => ok);
  }

  /** Graceful shutdown: every lease released so the agents' next replica takes over at once. */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.leases.keys()].map((c) => this.unwant(c)));
  }

  stop(): void {
    this.stopped = true;
    for (const [c, l] of this.leases) {
      this.clearTimer(l);
      if (l.fenceTimer !== undefined) clearTimeout(l.fenceTimer);
      if (l.owned) this.fence(c, l, "released");
    }
  }

  private lease(cluster: string): ClusterLease {
    let l = this.leases.get(cluster);
    if (l === undefined) {
      l = {
        wanted: false,
        owned: false,
        revision: 0,
        fenceAt: 0,
        tenure: new AbortController(),
        deletions: [],
        failingSince: undefined,
        timer: undefined,
        fenceTimer: undefined,
        chain: Promise.resolve(),
      };
      this.leases.set(cluster, l);
    }
    return l;
  }

  private serial(l: ClusterLease, fn: () => Promise<void>): Promise<void> {
    const next = l.chain.then(fn).catch((err: Error) => {
      this.deps.logger.warn({ err: err.message }, "lease operation failed");
    });
    l.chain = next;
    return next;
  }

  private schedule(cluster: string, l: ClusterLease, ms: number): void {
    this.clearTimer(l);
    if (this.stopped) return;
    l.timer = setTimeout(() => {
      l.timer = undefined;
      void this.serial(l, () => this.tick(cluster, l));
    }, ms);
    l.timer.unref();
  }

  private clearTimer(l: ClusterLease): void {
    if (l.timer !== undefined) clearTimeout(l.timer);
    l.timer = undefined;
  }

  private async tick(cluster: string, l: ClusterLease): Promise<void> {
    if (this.stopped) return;
    if (l.owned) return this.renew(cluster, l);
    if (l.wanted) return this.acquire(cluster, l);
  }

  private value(l: ClusterLease, deletions = l.deletions): LeaseValue {
    const now = this.wall();
    const s = this.settings;
    return {
      owner: s.replicaId,
      incarnation: this.incarnation,
      ttlMs: s.ttlMs,
      renewedAt: now,
      expiresAt: now + s.ttlMs - s.marginMs,
      ...(deletions.length > 0 && { deletions }),
    };
  }

  private mine(v: LeaseValue | null): boolean {
    return v !== null && v.owner === this.settings.replicaId && v.incarnation === this.incarnation;
  }

  private free(v: LeaseValue | null): boolean {
    return v === null || v.owner === "";
  }

  private prune(list: readonly number[]): number[] {
    const since = this.wall() - this.settings.deletionWindowMs;
    return list.filter((t) => t > since);
  }

  /** A held lease's CAS write (renewal or deletion record); false on conflict or failure. */
  private async write(cluster: string, l: ClusterLease, deletions: number[]): Promise<boolean> {
    // Too late (the process was frozen, or timers ran late): stop acting before trying again.
    if (l.owned && !this.holds(cluster)) this.fence(cluster, l, "renew-failed");
    const sentAt = this.mono();
    try {
      l.revision = await this.deps.store.update(cluster, this.value(l, deletions), l.revision);
      l.deletions = deletions;
      if (!l.owned) {
        // Fenced while the write was in flight, yet it landed on our revision: still ours.
        if (l.wanted) this.own(cluster, l, sentAt, undefined);
        else await this.release(cluster, l);
        return false;
      }
      this.extend(cluster, l, sentAt);
      return true;
    } catch (err) {
      if (err instanceof LeaseConflict) await this.onConflict(cluster, l);
      else {
        this.deps.events?.onRenewFailure?.(cluster, err as Error);
        this.deps.logger.warn(
          { cluster, err: (err as Error).message, fenceInMs: Math.round(l.fenceAt - this.mono()) },
          "lease renewal failed",
        );
      }
      return false;
    }
  }

  private async renew(cluster: string, l: ClusterLease): Promise<void> {
    const ok = await this.write(cluster, l, this.prune(l.deletions));
    if (l.owned) this.schedule(cluster, l, ok ? this.settings.renewIntervalMs : this.retryMs());
    else if (l.wanted) this.schedule(cluster, l, this.settings.pollIntervalMs);
  }

  private retryMs(): number {
    return Math.max(100, Math.min(this.settings.renewIntervalMs / 2, 1000));
  }

  /** Our revision moved: our own timed-out write landed, or somebody asked for a handover. */
  private async onConflict(cluster: string, l: ClusterLease): Promise<void> {
    let cur: StoredLease;
    try {
      cur = await this.deps.store.get(cluster);
    } catch {
      return;
    }
    const v = cur.value;
    if (this.mine(v) && v?.handoverTo === undefined) {
      l.revision = cur.revision;
      return;
    }
    if (!l.owned) return;
    if (this.mine(v) && v?.handoverTo !== undefined) {
      this.fence(cluster, l, "handover", { to: v.handoverTo });
      l.revision = cur.revision;
      l.wanted = false;
      await this.release(cluster, l);
      return;
    }
    this.fence(cluster, l, "taken", { holder: v?.owner });
  }

  /** Writes the lease free (keeping the deletions record); a failed write leaves it to expire. */
  private async release(cluster: string, l: ClusterLease): Promise<void> {
    if (l.owned || l.wanted) return;
    this.clearTimer(l);
    const now = this.wall();
    const free: LeaseValue = {
      owner: "",
      incarnation: "",
      ttlMs: 0,
      renewedAt: now,
      expiresAt: now,
      ...(l.deletions.length > 0 && { deletions: this.prune(l.deletions) }),
    };
    for (let attempt = 0; ; attempt++) {
      try {
        l.revision = await this.deps.store.update(cluster, free, l.revision);
        return;
      } catch (err) {
        // A handover request moved the revision: still ours to free.
        if (err instanceof LeaseConflict && attempt < 2) {
          const cur = await this.deps.store.get(cluster).catch(() => undefined);
          if (cur !== undefined && this.mine(cur.value)) {
            l.revision = cur.revision;
            continue;
          }
        }
        this.deps.logger.info(
          { cluster, err: (err as Error).message },
          "lease not released: it expires instead",
        );
        return;
      }
    }
  }

  private async acquire(cluster: string, l: ClusterLease): Promise<void> {
    const s = this.settings;
    let next = s.pollIntervalMs;
    try {
      const cur = await this.deps.store.get(cluster);
      const seen = this.sightings.saw(cluster, cur);
      if (!l.wanted || l.owned) return;
      const v = cur.value;
      if (this.mine(v) && v?.handoverTo !== undefined) {
        // Fenced before we saw the request: honour it.
        l.revision = cur.revision;
        l.wanted = false;
        await this.release(cluster, l);
        this.deps.events?.onYielded?.(cluster);
        return;
      }
      if (this.free(v) || this.mine(v)) {
        await this.take(cluster, l, cur, undefined);
      } else if (v !== null) {
        const ttl = Math.max(v.ttlMs, s.ttlMs);
        const left = expiresInMs(seen, ttl, this.mono());
        if (left <= 0) {
          this.deps.logger.warn(
            { cluster, holder: v.owner, unchangedForMs: Math.round(ttl - left) },
            "lease not renewed for a whole TTL: taking the cluster over",
          );
          await this.take(cluster, l, cur, v.owner);
        } else {
          const asked = v.handoverTo === undefined ? await this.requestHandover(cluster, cur, v, seen) : seen;
          next = Math.max(10, Math.min(s.pollIntervalMs, expiresInMs(asked, ttl, this.mono())));
        }
      }
      l.failingSince = undefined;
    } catch (err) {
      this.deps.logger.debug({ cluster, err: (err as Error).message }, "lease acquisition failed");
      const now = this.mono();
      l.failingSince ??= now;
      if (now - l.failingSince >= s.ttlMs) {
        l.failingSince = undefined;
        this.deps.events?.onStalled?.(cluster);
      }
    }
    if (l.wanted && !l.owned) this.schedule(cluster, l, next);
  }

  private async take(
    cluster: string,
    l: ClusterLease,
    cur: StoredLease,
    from: string | undefined,
  ): Promise<void> {
    const inherited = this.prune([...(cur.value?.deletions ?? []), ...l.deletions]);
    const sentAt = this.mono();
    try {
      l.revision =
        cur.revision === 0 || cur.value === null
          ? await this.deps.store.create(cluster, this.value(l, inherited))
          : await this.deps.store.update(cluster, this.value(l, inherited), cur.revision);
    } catch (err) {
      if (err instanceof LeaseConflict) return;
      throw err;
    }
    l.deletions = inherited;
    this.own(cluster, l, sentAt, from);
  }

  /** Returns the sighting the lease's expiry now counts from. */
  private async requestHandover(
    cluster: string,
    cur: StoredLease,
    v: LeaseValue,
    seen: LeaseSighting,
  ): Promise<LeaseSighting> {
    try {
      const asked: LeaseValue = { ...v, handoverTo: this.settings.replicaId };
      const revision = await this.deps.store.update(cluster, asked, cur.revision);
      this.deps.logger.info({ cluster, holder: v.owner }, "asked the lease holder for a handover");
      // No renewal: the holder's last one is still the write seen at `seen`, and it can renew
      // no more (its compare-and-set fails), so the TTL still runs from there.
      return this.sightings.inherit(cluster, { revision, value: asked }, seen);
    } catch (err) {
      if (!(err instanceof LeaseConflict)) throw err;
      return seen;
    }
  }

  private own(cluster: string, l: ClusterLease, sentAt: number, from: string | undefined): void {
    l.owned = true;
    l.tenure = new AbortController();
    this.extend(cluster, l, sentAt);
    this.schedule(cluster, l, this.settings.renewIntervalMs);
    this.deps.logger.info({ cluster, from }, from === undefined ? "lease acquired" : "lease taken over");
    this.deps.events?.onAcquired?.(cluster, from);
  }

  private extend(cluster: string, l: ClusterLease, sentAt: number): void {
    l.fenceAt = sentAt + this.settings.ttlMs - this.settings.marginMs;
    this.armFence(cluster, l);
  }

  /** holds() already says no past fenceAt; the timer tells the hub (streams, metrics) at once. */
  private armFence(cluster: string, l: ClusterLease): void {
    if (l.fenceTimer !== undefined) clearTimeout(l.fenceTimer);
    l.fenceTimer = setTimeout(
      () => {
        l.fenceTimer = undefined;
        if (!l.owned) return;
        // Timers may fire a hair early against the monotonic clock.
        if (this.mono() < l.fenceAt) return this.armFence(cluster, l);
        this.fence(cluster, l, "renew-failed");
        if (l.wanted) this.schedule(cluster, l, 0);
      },
      Math.max(1, Math.ceil(l.fenceAt - this.mono())),
    );
    l.fenceTimer.unref();
  }

  /** Ends the tenure (once) and says why, in the log and to the hub. */
  private fence(
    cluster: string,
    l: ClusterLease,
    given: LossReason,
    fields: Record<string, unknown> = {},
  ): void {
    if (!l.owned) return;
    // Given up after it had already run out here (e.g. the process was frozen): it was lost.
    const lapsed = (given === "released" || given === "handover") && this.mono() >= l.fenceAt;
    const reason: LossReason = lapsed ? "renew-failed" : given;
    const log = LOSS_LOG[reason];
    this.deps.logger[log.level]({ cluster, reason, ...fields }, log.msg);
    l.owned = false;
    l.fenceAt = 0;
    if (l.fenceTimer !== undefined) clearTimeout(l.fenceTimer);
    l.fenceTimer = undefined;
    l.tenure.abort(new Error(`lease of ${cluster} ended (${reason})`));
    this.deps.events?.onLost?.(cluster, reason);
  }
}
