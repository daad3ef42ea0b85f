import { expect, test } from "@jest/globals";
import type { LeaseValue, StoredLease } from "./lease-store.js";
import { expiresInMs, LeaseSightings } from "./sightings.js";

const held = (revision: number, renewedAt: number, owner = "a"): StoredLease => ({
  revision,
  value: {
    owner,
    incarnation: "i1",
    ttlMs: 2000,
    renewedAt,
    expiresAt: renewedAt + 1500,
  } satisfies LeaseValue,
});

test("a write counts from its first sighting here: seen again later (a read after the watch) it keeps that time", () => {
  let now = 1000;
  const s = new LeaseSightings(() => now);
  expect(s.saw("cl", held(5, 1)).atMs).toBe(1000);
  now = 2500;
  const again = s.saw("cl", held(5, 1));
  expect(again.atMs).toBe(1000);
  expect(expiresInMs(again, 2000, now)).toBe(500);
  now = 3000;
  expect(expiresInMs(again, 2000, now)).toBe(0);
});

test("a renewal (new revision), the same revision with another stamp (bucket created again) or an older read start again", () => {
  let now = 0;
  const s = new LeaseSightings(() => now);
  s.saw("cl", held(5, 1));
  now = 100;
  expect(s.saw("cl", held(6, 2)).atMs).toBe(100);
  now = 200;
  expect(s.saw("cl", held(6, 9)).atMs).toBe(200);
  now = 300;
  // A read that raced the watch returns an older write: counted from now, the newer one kept.
  expect(s.saw("cl", held(4, 0)).atMs).toBe(300);
  now = 400;
  expect(s.saw("cl", held(6, 9)).atMs).toBe(200);
  // Deleted: forgotten; written again, counted afresh.
  s.saw("cl", { revision: 7, value: null });
  now = 500;
  expect(s.saw("cl", held(6, 9)).atMs).toBe(500);
});

test("our handover request over a write counts from that write's sighting (the holder renewed no later)", () => {
  let now = 0;
  const s = new LeaseSightings(() => now);
  const seen = s.saw("cl", held(5, 1));
  now = 1800;
  const asked = s.inherit(
    "cl",
    { revision: 6, value: { ...(held(5, 1).value as LeaseValue), handoverTo: "c" } },
    seen,
  );
  expect(asked.atMs).toBe(0);
  now = 1900;
  expect(
    s.saw("cl", { revision: 6, value: { ...(held(5, 1).value as LeaseValue), handoverTo: "c" } }).atMs,
  ).toBe(0);
  expect(expiresInMs(asked, 2000, now)).toBe(100);
});
