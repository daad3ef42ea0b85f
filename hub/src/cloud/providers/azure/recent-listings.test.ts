import { expect, test } from "@jest/globals";
import { LISTING_REUSE_MS, RecentListings } from "./recent-listings.js";

/** A listing the test ends when it likes, and the count of listings started. */
function lister() {
  let started = 0;
  let end: (v: string[]) => void = () => undefined;
  let fail: (e: Error) => void = () => undefined;
  const list = () => {
    started++;
    return new Promise<string[]>((resolve, reject) => {
      end = resolve;
      fail = reject;
    });
  };
  return { list, started: () => started, end: (v: string[]) => end(v), fail: (e: Error) => fail(e) };
}

const all = () => true;

test("a reader joins a listing in flight however long it has run, and a finished one for the reuse window", async () => {
  let now = 0;
  const listings = new RecentListings<string[]>(() => now);
  const l = lister();
  const first = listings.recent("rg", all, l.list);
  now += 3 * LISTING_REUSE_MS; // a slow listing, still in flight
  const second = listings.recent("rg", all, l.list);
  l.end(["nic-a"]);
  expect(await first).toEqual(["nic-a"]);
  expect(await second).toEqual(["nic-a"]);
  expect(l.started()).toBe(1);

  now += LISTING_REUSE_MS; // counted from when it finished
  expect(await listings.recent("rg", all, l.list)).toEqual(["nic-a"]);
  expect(l.started()).toBe(1);

  now += 1;
  const fresh = listings.recent("rg", all, l.list);
  await Promise.resolve();
  expect(l.started()).toBe(2);
  l.end(["nic-b"]);
  expect(await fresh).toEqual(["nic-b"]);
});

test("a listing that does not cover the reader, or failed, is not taken: the reader lists anew", async () => {
  const listings = new RecentListings<string[]>(() => 0);
  const l = lister();
  const first = listings.recent("rg", all, l.list);
  const needsB = listings.recent("rg", (v) => v.includes("nic-b"), l.list);
  l.end(["nic-a"]);
  expect(await first).toEqual(["nic-a"]);
  await new Promise((r) => setImmediate(r));
  expect(l.started()).toBe(2);
  l.end(["nic-a", "nic-b"]);
  expect(await needsB).toEqual(["nic-a", "nic-b"]);

  const failing = listings.fresh("rg", l.list);
  l.fail(new Error("page 2 failed"));
  await expect(failing).rejects.toThrow("page 2 failed");
  const after = listings.recent("rg", all, l.list);
  await new Promise((r) => setImmediate(r));
  expect(l.started()).toBe(4);
  l.end(["nic-c"]);
  expect(await after).toEqual(["nic-c"]);
});
