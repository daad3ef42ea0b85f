import { expect, test } from "@jest/globals";
import { KeyedLock } from "./keyed-lock.js";

/** A task that records when it runs and finishes when released. */
function gate(log: string[], name: string) {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return {
    run: async () => {
      log.push(`start ${name}`);
      await opened;
      log.push(`end ${name}`);
      return name;
    },
    open: () => open(),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

test("tasks of one key run one at a time in arrival order; other keys and no key run at once", async () => {
  const lock = new KeyedLock();
  const log: string[] = [];
  const a1 = gate(log, "a1");
  const a2 = gate(log, "a2");
  const b = gate(log, "b");
  const free = gate(log, "free");
  const done = [
    lock.run("a", a1.run),
    lock.run("a", a2.run),
    lock.run("b", b.run),
    lock.run(undefined, free.run),
  ];
  await tick();
  expect([...log].sort()).toEqual(["start a1", "start b", "start free"]);
  a2.open(); // a2 may not start before a1 ends, open or not
  await tick();
  expect(log).not.toContain("start a2");
  a1.open();
  b.open();
  free.open();
  expect(await Promise.all(done)).toEqual(["a1", "a2", "b", "free"]);
  expect(log.indexOf("start a2")).toBeGreaterThan(log.indexOf("end a1"));
  expect(lock.size).toBe(0);
});

test("a failing task releases its key", async () => {
  const lock = new KeyedLock();
  await expect(lock.run("k", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
  expect(await lock.run("k", async () => "next")).toBe("next");
  expect(lock.size).toBe(0);
});
