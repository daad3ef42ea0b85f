import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { FakeClock } from "../util/clock.js";
import { InstanceCache, sameInstance } from "./instance-cache.js";
import type { InstanceMetadata, Instances } from "./provider.js";

function meta(name: string, over: Partial<InstanceMetadata> = {}): InstanceMetadata {
  return {
    providerID: `simulated://r/i-${name}`,
    instanceID: `i-${name}`,
    name,
    instanceType: "t",
    region: "r",
    zone: "z",
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    state: "running",
    tags: { cluster: "a" },
    ...over,
  };
}

/** A cloud whose listing is whatever `listed` holds when asked, freshly parsed each time, two per page. */
function cloud() {
  let listed: InstanceMetadata[] = [];
  let failNext = false;
  const instances: Instances = {
    async findByName() {
      return [];
    },
    async getByProviderID(id) {
      throw new Error(`unexpected lookup of ${id}`);
    },
    async listPage(token) {
      if (failNext) {
        failNext = false;
        throw new Error("throttled");
      }
      const from = token === undefined ? 0 : Number(token);
      const page = structuredClone(listed.slice(from, from + 2));
      return { instances: page, nextPageToken: from + 2 < listed.length ? String(from + 2) : undefined };
    },
    parseProviderID: (id) => id.split("/").pop(),
  };
  return {
    instances,
    list(next: InstanceMetadata[]) {
      listed = next;
    },
    failOnce() {
      failNext = true;
    },
  };
}

describe("instance view refresh", () => {
  const clock = new FakeClock();
  const c = cloud();
  const cache = new InstanceCache(c.instances, clock, 60_000, pino({ level: "silent" }));
  const id = (name: string) => `simulated://r/i-${name}`;

  test("a refresh that lists the same instances keeps the objects the view already holds", async () => {
    c.list([meta("a"), meta("b"), meta("c")]);
    await cache.fresh();
    const held = ["a", "b", "c"].map((n) => cache.get(id(n)));
    expect(held.every((m) => m !== undefined)).toBe(true);

    clock.advance(60_000);
    await cache.fresh();
    expect(cache.lists).toBe(2);
    expect(["a", "b", "c"].map((n) => cache.get(id(n)))).toEqual(held);
    for (const [i, n] of ["a", "b", "c"].entries()) {
      expect(cache.get(id(n))).toBe(held[i]);
      expect(cache.getByInstanceID(`i-${n}`)).toBe(held[i]);
      expect(cache.getByName(n)[0]).toBe(held[i]);
    }
    expect(cache.listedAtMs()).toBe(clock.now());
  });

  test("a changed, a vanished and a new instance are all seen; the unchanged keep their objects", async () => {
    const b = cache.get(id("b"));
    c.list([meta("a", { addresses: [{ type: "InternalIP", address: "10.0.0.9" }] }), meta("b"), meta("d")]);
    clock.advance(60_000);
    await cache.fresh();
    expect(cache.get(id("a"))?.addresses).toEqual([{ type: "InternalIP", address: "10.0.0.9" }]);
    expect(cache.get(id("b"))).toBe(b);
    expect(cache.get(id("c"))).toBeUndefined();
    expect(cache.getByName("c")).toEqual([]);
    expect(cache.getByInstanceID("i-c")).toBeUndefined();
    expect(cache.getByName("d")).toEqual([meta("d")]);
    expect(cache.getByInstanceID("i-a")?.addresses[0]?.address).toBe("10.0.0.9");
    expect(cache.size()).toBe(3);
  });

  test("an instance that only vanished is gone from every index", async () => {
    c.list([meta("a", { addresses: [{ type: "InternalIP", address: "10.0.0.9" }] }), meta("b")]);
    clock.advance(60_000);
    await cache.fresh();
    expect(cache.size()).toBe(2);
    expect(cache.get(id("d"))).toBeUndefined();
    expect(cache.getByName("d")).toEqual([]);
    expect(cache.getByInstanceID("i-d")).toBeUndefined();
  });

  test("a terminated instance stays in the view but not among the live names", async () => {
    c.list([
      meta("a", { addresses: [{ type: "InternalIP", address: "10.0.0.9" }] }),
      meta("b", { state: "terminated" }),
    ]);
    clock.advance(60_000);
    await cache.fresh();
    expect(cache.get(id("b"))?.state).toBe("terminated");
    expect(cache.getByName("b")).toEqual([]);
  });

  test("a failed list keeps the previous view whole", async () => {
    const before = cache.get(id("a"));
    c.list([]);
    c.failOnce();
    clock.advance(60_000);
    await cache.fresh();
    expect(cache.get(id("a"))).toBe(before);
    expect(cache.size()).toBe(2);
  });

  test("every field counts as a change", () => {
    const base = meta("x", { network: "vpc-1", additionalLabels: { k: "v" } });
    expect(sameInstance(base, structuredClone(base))).toBe(true);
    const changes: Partial<InstanceMetadata>[] = [
      { instanceID: "i-y" },
      { name: "y" },
      { instanceType: "u" },
      { region: "q" },
      { zone: "w" },
      { state: "stopped" },
      { network: "vpc-2" },
      { network: undefined },
      { addresses: [] },
      { addresses: [{ type: "ExternalIP", address: "10.0.0.1" }] },
      { tags: {} },
      { tags: { cluster: "b" } },
      { tags: { cluster: "a", extra: "1" } },
      { additionalLabels: undefined },
      { additionalLabels: { k: "w" } },
    ];
    for (const change of changes) expect(sameInstance(base, { ...base, ...change })).toBe(false);
  });
});

describe("instance view refresh, the list in the view's order or not", () => {
  const id = (name: string) => `simulated://r/i-${name}`;

  /** A small deterministic generator, so a failure names its seed. */
  function random(seed: number): () => number {
    let s = seed;
    return () => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s / 2 ** 32;
    };
  }

  test("whatever the list does (reorders, drops, adds, changes, repeats), the view is the list's, unchanged instances keep their objects", async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rnd = random(seed);
      const clock = new FakeClock();
      const c = cloud();
      const cache = new InstanceCache(c.instances, clock, 60_000, pino({ level: "silent" }));
      let listing = Array.from({ length: 1 + Math.floor(rnd() * 8) }, (_, i) => meta(`n${i}`));
      c.list(listing);
      await cache.fresh();
      for (let round = 0; round < 4; round++) {
        const before = new Map(listing.map((m) => [m.providerID, cache.get(m.providerID)]));
        const next = listing.map((m) => (rnd() < 0.15 ? meta(m.name, { zone: `z${round}` }) : m));
        if (rnd() < 0.3 && next.length > 0) next.splice(Math.floor(rnd() * next.length), 1);
        if (rnd() < 0.3) next.splice(Math.floor(rnd() * (next.length + 1)), 0, meta(`s${seed}r${round}`));
        if (rnd() < 0.2 && next.length > 1) next.reverse();
        if (rnd() < 0.1 && next.length > 0) next.push(next[0] as InstanceMetadata);
        c.list(next);
        clock.advance(60_000);
        await cache.fresh();
        // The view: each listed instance once, as listed last.
        const want = new Map(next.map((m) => [m.providerID, m]));
        expect({ seed, round, size: cache.size() }).toEqual({ seed, round, size: want.size });
        for (const [pid, m] of want) {
          const got = cache.get(pid);
          expect(got).toEqual(m);
          const held = before.get(pid);
          if (held !== undefined && sameInstance(held, m)) expect(got).toBe(held);
          expect(cache.getByInstanceID(m.instanceID)).toBe(got);
          expect(cache.getByName(m.name)).toEqual([got]);
        }
        for (const m of listing)
          if (!want.has(m.providerID)) {
            expect(cache.get(m.providerID)).toBeUndefined();
            expect(cache.getByName(m.name)).toEqual([]);
          }
        listing = [...want.values()];
      }
    }
  });

  test("an unchanged list in order leaves the view as it was; one gone from the end is gone", async () => {
    const clock = new FakeClock();
    const c = cloud();
    const cache = new InstanceCache(c.instances, clock, 60_000, pino({ level: "silent" }));
    c.list([meta("a"), meta("b"), meta("c")]);
    await cache.fresh();
    const held = ["a", "b", "c"].map((n) => cache.get(id(n)));
    clock.advance(60_000);
    await cache.fresh();
    expect(["a", "b", "c"].map((n) => cache.get(id(n)))).toEqual(held);
    expect(cache.getByName("c")).toEqual([held[2]]);
    c.list([meta("a"), meta("b")]);
    clock.advance(60_000);
    await cache.fresh();
    expect(cache.size()).toBe(2);
    expect(cache.get(id("a"))).toBe(held[0]);
    expect(cache.get(id("c"))).toBeUndefined();
    expect(cache.getByName("c")).toEqual([]);
    expect(cache.getByInstanceID("i-c")).toBeUndefined();
  });
});
