/**
 * ClusterLeases on an injected monotonic clock, over an in-memory compare-and-set store that
 * tells its watchers of every write at once (as the NATS KV watch does, a little later).
 */
import { waitFor } from "@fleet-ccm/sim";
import { afterEach, expect, test } from "@jest/globals";
import pino from "pino";
import { LeaseConflict, type LeaseStore, type LeaseValue, type StoredLease } from "./lease-store.js";
import { ClusterLeases, type LossReason } from "./leases.js";

const logger = pino({ level: "silent" });
const SETTINGS = {
  ttlMs: 2000,
  marginMs: 500,
  renewIntervalMs: 400,
  pollIntervalMs: 20,
  deletionWindowMs: 60_000,
};

class MemoryStore implements LeaseStore {
  private rev = 0;
  private readonly keys = new Map<string, StoredLease>();
  private readonly listeners: ((cluster: string, lease: StoredLease) => void)[] = [];
  async get(cluster: string): Promise<StoredLease> {
    return this.keys.get(cluster) ?? { revision: 0, value: null };
  }
  async create(cluster: string, value: LeaseValue): Promise<number> {
    if (this.keys.get(cluster)?.value != null) throw new LeaseConflict("key exists");
    return this.put(cluster, value);
  }
  async update(cluster: string, value: LeaseValue, revision: number): Promise<number> {
    if ((this.keys.get(cluster)?.revision ?? 0) !== revision) throw new LeaseConflict("wrong last sequence");
    return this.put(cluster, value);
  }
  async remove(cluster: string, revision: number): Promise<void> {
    if ((this.keys.get(cluster)?.revision ?? 0) !== revision) throw new LeaseConflict("wrong last sequence");
    this.put(cluster, null);
  }
  watch(listener: (cluster: string, lease: StoredLease) => void): void {
    this.listeners.push(listener);
    for (const [c, l] of this.keys) listener(c, l);
  }
  connected(): boolean {
    return true;
  }
  problem(): string | null {
    return null;
  }
  async close(): Promise<void> {}
  private put(cluster: string, value: LeaseValue | null): number {
    const lease = { revision: ++this.rev, value };
    this.keys.set(cluster, lease);
    for (const l of this.listeners) l(cluster, lease);
    return lease.revision;
  }
}

const all: ClusterLeases[] = [];
afterEach(() => {
  for (const l of all.splice(0)) l.stop();
});

function replica(id: string, store: LeaseStore, clock: { now: number }) {
  const lost: LossReason[] = [];
  const acquired: (string | undefined)[] = [];
  const leases = new ClusterLeases(
    { replicaId: id, ...SETTINGS },
    {
      store,
      logger,
      monotonic: () => clock.now,
      events: { onLost: (_c, reason) => lost.push(reason), onAcquired: (_c, from) => acquired.push(from) },
    },
  );
  all.push(leases);
  return { leases, lost, acquired };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("a replica that gets the agent late takes over a TTL after the holder's last renewal it watched, not a TTL after the agent came", async () => {
  const clock = { now: 0 };
  const store = new MemoryStore();
  const a = replica("a", store, clock);
  const c = replica("c", store, clock);
  a.leases.want("cl");
  expect(await waitFor(() => a.leases.holds("cl"), 2000, 5)).toBe(true);
  // The holder freezes: no renewal, no release (stop() writes nothing). c watched its last write at 0.
  a.leases.stop();
  clock.now = 1500;
  c.leases.want("cl");
  await pause(150);
  expect(c.leases.holds("cl")).toBe(false);
  clock.now = 1999;
  await pause(150);
  expect(c.leases.holds("cl")).toBe(false);
  clock.now = 2000;
  expect(await waitFor(() => c.leases.holds("cl"), 2000, 5)).toBe(true);
  expect(c.acquired).toEqual(["a"]);
});

test("a lease that ran out here while the process was frozen is recorded as lost (renew-failed), even when given up after", async () => {
  const clock = { now: 0 };
  const store = new MemoryStore();
  const a = replica("a", store, clock);
  a.leases.want("cl");
  expect(await waitFor(() => a.leases.holds("cl"), 2000, 5)).toBe(true);
  // Frozen past the fence (TTL − margin after the last renewal sent); thawed, the stream ends.
  clock.now = 5000;
  expect(a.leases.holds("cl")).toBe(false);
  await a.leases.unwant("cl");
  expect(a.lost).toEqual(["renew-failed"]);
});

test("a renewal due after a freeze stops acting first (renew-failed); finding another holder at a newer revision while held is taken", async () => {
  const clock = { now: 0 };
  const store = new MemoryStore();
  const a = replica("a", store, clock);
  a.leases.want("cl");
  expect(await waitFor(() => a.leases.holds("cl"), 2000, 5)).toBe(true);
  clock.now = 5000;
  // The renewal timer fires (real time): fenced first, then the write lands on our revision: ours again.
  expect(await waitFor(() => a.lost.length > 0, 2000, 5)).toBe(true);
  expect(a.lost).toEqual(["renew-failed"]);
  expect(await waitFor(() => a.leases.holds("cl"), 2000, 5)).toBe(true);
  // Another replica writes the key (as after a takeover a's clock did not see): taken.
  const cur = await store.get("cl");
  await store.update("cl", { ...(cur.value as LeaseValue), owner: "c", incarnation: "other" }, cur.revision);
  expect(await waitFor(() => a.lost.length > 1, 2000, 5)).toBe(true);
  expect(a.lost).toEqual(["renew-failed", "taken"]);
  expect(a.leases.holds("cl")).toBe(false);
});
