import { describe, expect, test } from "@jest/globals";
import { StringTable } from "./strings.js";

describe("StringTable", () => {
  test("returns equal values, keeps one entry per distinct string and starts over when full", () => {
    const t = new StringTable(3);
    for (const s of ["a", "b", "a", "c", "b"]) expect(t.intern(`${s}`)).toBe(s);
    expect(t.size).toBe(3);
    expect(t.intern("d")).toBe("d");
    expect(t.size).toBe(1);
    expect(t.intern(undefined)).toBeUndefined();
  });

  test("values() copies a string map with the same entries", () => {
    const t = new StringTable();
    const labels = { "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "z1" };
    const copy = t.values(labels);
    expect(copy).toEqual(labels);
    expect(copy).not.toBe(labels);
    expect(t.values(undefined)).toBeUndefined();
    expect(t.size).toBe(2);
  });
});
