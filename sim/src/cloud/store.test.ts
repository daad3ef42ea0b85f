import { describe, expect, test } from "@jest/globals";
import { validateFaults } from "./faults.js";
import { seededRandom } from "./random.js";
import { TokenBucket } from "./rate-limit.js";
import { CloudStore } from "./store.js";

function store(opts: { seed?: number; lingerMs?: number; now?: () => number } = {}): CloudStore {
  return new CloudStore(seededRandom(opts.seed ?? 1), opts.now ?? (() => 1_000), opts.lingerMs ?? 0, [
    "r1",
    "r2",
  ]);
}

const live = { nowMs: 1_000, staleReadMs: 0 };

describe("cloud store", () => {
  test("store - ids, keys and addresses are deterministic for a seed", () => {
    const make = () => {
      const s = store({ seed: 7 });
      const key = s.createAccount("a").apiKey;
      return { key, instances: [1, 2, 3].map((n) => s.createInstance("a", { name: `n${n}`, region: "r1" })) };
    };
    const a = make();
    const b = make();
    expect(a).toEqual(b);
    expect(a.instances[0]!.id).toMatch(/^i-[0-9a-f]{12}$/);
    expect(a.key).toMatch(/^sk-sim-[0-9a-f]{32}$/);
  });

  test("store - addresses are unique across 30k instances", () => {
    const s = store();
    s.createAccount("a");
    const internal = new Set<string>();
    const external = new Set<string>();
    for (let n = 0; n < 30_000; n++) {
      const i = s.createInstance("a", { name: `n${n}`, region: "r1" });
      const get = (t: string) => i.addresses.find((a) => a.type === t)?.address ?? "";
      internal.add(get("InternalIP"));
      external.add(get("ExternalIP"));
      if (n === 0) {
        expect(get("InternalIP")).toBe("10.0.0.1");
        expect(get("ExternalIP")).toBe("100.64.0.1");
        expect(get("Hostname")).toBe("n0");
      }
    }
    expect(internal.size).toBe(30_000);
    expect(external.size).toBe(30_000);
    for (const ip of [...internal].slice(0, 1000))
      expect(ip).toMatch(/^10\.\d+\.\d+\.([1-9]\d?|1\d\d|2[0-4]\d|25[0-4])$/);
  });

  test("store - defaults: running, zone <region>a, account network", () => {
    const s = store();
    const { defaultNetwork } = s.createAccount("a");
    const i = s.createInstance("a", { name: "n", region: "r1" });
    expect(i).toMatchObject({
      state: "running",
      zone: "r1a",
      instanceType: "sim.small",
      network: defaultNetwork,
    });
    expect(defaultNetwork).toMatch(/^vpc-[0-9a-f]{8}$/);
    expect(
      s.createInstance("a", { name: "m", region: "r1", externalIP: false }).addresses.map((a) => a.type),
    ).toEqual(["InternalIP", "Hostname", "InternalDNS"]);
  });

  test("store - reads are scoped to account and region", () => {
    const s = store();
    s.createAccount("a");
    s.createAccount("b");
    const i = s.createInstance("a", { name: "n", region: "r1" });
    expect(s.read("a", "r1", i.id, live)).toEqual(i);
    expect(s.read("b", "r1", i.id, live)).toBeUndefined();
    expect(s.read("a", "r2", i.id, live)).toBeUndefined();
  });

  test("store - pages walk every visible instance once, in creation order", () => {
    const s = store();
    s.createAccount("a");
    const ids = Array.from(
      { length: 25 },
      (_, n) => s.createInstance("a", { name: `n${n}`, region: "r1" }).id,
    );
    s.createInstance("a", { name: "other-region", region: "r2" });
    s.updateInstance(ids[3]!, { state: "terminated" });
    const seen: string[] = [];
    let after: number | undefined;
    for (;;) {
      const page = s.page(
        { account: "a", region: "r1", pageSize: 10, ...(after !== undefined && { afterSeq: after }) },
        live,
      );
      seen.push(...page.instances.map((i) => i.id));
      if (page.nextAfterSeq === undefined) break;
      after = page.nextAfterSeq;
    }
    expect(seen).toEqual(ids.filter((_, n) => n !== 3));
  });

  test("store - terminated instances linger, then vanish", () => {
    let now = 1_000;
    const s = store({ lingerMs: 500, now: () => now });
    s.createAccount("a");
    const i = s.createInstance("a", { name: "n", region: "r1" });
    s.updateInstance(i.id, { state: "terminated" });
    expect(s.read("a", "r1", i.id, { nowMs: now + 499, staleReadMs: 0 })?.state).toBe("terminated");
    expect(s.read("a", "r1", i.id, { nowMs: now + 500, staleReadMs: 0 })).toBeUndefined();
    now += 10;
    expect(() => s.updateInstance(i.id, { state: "running" })).toThrow(/terminated/);
  });

  test("store - stale reads see the version before the last change", () => {
    let now = 1_000;
    const s = store({ now: () => now });
    s.createAccount("a");
    const i = s.createInstance("a", { name: "n", region: "r1" });
    const stale = (at: number) => ({ nowMs: at, staleReadMs: 100 });
    expect(s.read("a", "r1", i.id, stale(1_050))).toBeUndefined(); // just created: not there yet
    expect(s.read("a", "r1", i.id, stale(1_100))?.state).toBe("running");
    now = 2_000;
    s.updateInstance(i.id, { state: "stopped" });
    expect(s.read("a", "r1", i.id, stale(2_010))?.state).toBe("running");
    expect(s.read("a", "r1", i.id, stale(2_100))?.state).toBe("stopped");
    expect(s.get(i.id)?.state).toBe("stopped");
  });

  test("store - bad specs are refused with 400", () => {
    const s = store();
    s.createAccount("a");
    expect(() => s.createInstance("a", { name: "", region: "r1" })).toThrow(/name/);
    expect(() => s.createInstance("a", { name: "n", region: "Bad Region" })).toThrow(/region/);
    expect(() => s.createInstance("nobody", { name: "n", region: "r1" })).toThrow(/account/);
    expect(() => s.createAccount("a")).toThrow(/exists/);
  });
});

describe("rate limit and fault config", () => {
  test("token bucket - burst, then one token per 1/rate seconds", () => {
    const b = new TokenBucket(2, 2, 0);
    expect(b.take(0)).toBe(0);
    expect(b.take(0)).toBe(0);
    expect(b.take(0)).toBe(500);
    expect(b.take(499)).toBe(1);
    expect(b.take(500)).toBe(0);
  });

  test("token bucket - rate 0 is unlimited", () => {
    const b = new TokenBucket(0, 1, 0);
    for (let n = 0; n < 100; n++) expect(b.take(0)).toBe(0);
  });

  test("faults - validation names the bad field", () => {
    expect(validateFaults({ errorRate: 0.5, latencyMs: 10 })).toEqual({ errorRate: 0.5, latencyMs: 10 });
    expect(() => validateFaults({ errorRate: 2 })).toThrow(/errorRate/);
    expect(() => validateFaults({ latencyMs: -1 })).toThrow(/latencyMs/);
    expect(() => validateFaults({ nope: 1 })).toThrow(/nope/);
  });
});
