import { describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { FakeClock } from "../util/clock.js";
import { InstanceNotFoundError } from "./errors.js";
import { InstanceCache } from "./instance-cache.js";
import { InstanceLookups } from "./instance-lookups.js";
import type { InstanceMetadata, Instances } from "./provider.js";

function meta(name: string): InstanceMetadata {
  return {
    providerID: `simulated://r/i-${name}`,
    instanceID: `i-${name}`,
    name,
    instanceType: "t",
    region: "r",
    zone: "z",
    addresses: [],
    state: "running",
    tags: {},
  };
}

function cloud(listed: InstanceMetadata[], all: InstanceMetadata[]) {
  const calls: string[] = [];
  const instances: Instances = {
    async findByName(name) {
      calls.push(`get ${name}`);
      return all.filter((i) => i.name === name);
    },
    async getByProviderID(id) {
      calls.push(`get ${id}`);
      const m = all.find((i) => i.providerID === id);
      if (!m) throw new InstanceNotFoundError(id);
      return m;
    },
    async listPage(token) {
      calls.push(`list ${token ?? ""}`);
      return token === undefined
        ? { instances: listed.slice(0, 10), nextPageToken: listed.length > 10 ? "p2" : undefined }
        : { instances: listed.slice(10) };
    },
    parseProviderID: (id) => id.split("/").pop(),
  };
  return { instances, calls };
}

async function settle(
  clock: FakeClock,
  promises: Promise<unknown>[],
): Promise<PromiseSettledResult<unknown>[]> {
  clock.advance(10);
  return Promise.allSettled(promises);
}

describe("coalesced instance lookups", () => {
  test("a join storm is answered by one paged list; misses go direct; not-found only from a direct lookup", async () => {
    const names = Array.from({ length: 20 }, (_, i) => `n${i}`);
    const listed = names.slice(0, 19).map(meta); // n19 is too new for the list
    const c = cloud(listed, names.map(meta));
    const clock = new FakeClock();
    const lookups = new InstanceLookups(
      c.instances,
      new InstanceCache(c.instances, clock, 60_000, pino({ level: "silent" })),
      clock,
    );
    const results = await settle(
      clock,
      [...names, "ghost"].map((n) => lookups.byName(n, () => true)),
    );
    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    // Not found only from a direct lookup: an empty answer to the name query.
    expect(results[20]).toEqual({ status: "fulfilled", value: [] });
    expect(c.calls).toEqual(["list ", "list p2", "get n19", "get ghost"]);
    expect(lookups.servedFromList).toBe(19);
  });

  test("a name the list shows for several clusters: served only when one is in the caller's scope", async () => {
    const twins = [
      { ...meta("w"), instanceID: "i-a", providerID: "simulated://r/i-a", tags: { c: "a" } },
      { ...meta("w"), instanceID: "i-b", providerID: "simulated://r/i-b", tags: { c: "b" } },
    ];
    const fill = Array.from({ length: 16 }, (_, i) => meta(`f${i}`));
    const c = cloud([...twins, ...fill], [...twins, ...fill]);
    const clock = new FakeClock();
    const lookups = new InstanceLookups(
      c.instances,
      new InstanceCache(c.instances, clock, 60_000, pino({ level: "silent" })),
      clock,
    );
    const results = await settle(clock, [
      lookups.byName("w", (m) => m.tags["c"] === "a"),
      lookups.byName("w", () => true),
      ...fill.map((m) => lookups.byName(m.name, () => true)),
    ]);
    expect(results[0]).toEqual({ status: "fulfilled", value: twins });
    // Both in scope: ambiguous, so asked directly (never a stale list's answer).
    expect(c.calls.filter((x) => x === "get w")).toHaveLength(1);
    expect(lookups.servedFromList).toBe(17);
  });

  test("a lone lookup goes straight to the cloud", async () => {
    const c = cloud([meta("a")], [meta("a")]);
    const clock = new FakeClock();
    const lookups = new InstanceLookups(
      c.instances,
      new InstanceCache(c.instances, clock, 60_000, pino({ level: "silent" })),
      clock,
    );
    const [r] = await settle(clock, [lookups.byProviderID("simulated://r/i-a")]);
    expect(r?.status).toBe("fulfilled");
    expect(c.calls).toEqual(["get simulated://r/i-a"]);
  });
});
