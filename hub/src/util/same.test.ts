import { describe, expect, test } from "@jest/globals";
import { sameAddresses, sameRecord } from "./same.js";

describe("sameRecord", () => {
  test("the same own keys with the same values, in any order; both absent is the same", () => {
    expect(sameRecord(undefined, undefined)).toBe(true);
    expect(sameRecord({}, {})).toBe(true);
    expect(sameRecord({ a: "1", b: "2" }, { b: "2", a: "1" })).toBe(true);
    expect(sameRecord({ a: "1" }, undefined)).toBe(false);
    expect(sameRecord(undefined, {})).toBe(false);
  });

  test("a key more or less, a value changed, or a key only inherited is a difference", () => {
    expect(sameRecord({ a: "1" }, { a: "1", b: "2" })).toBe(false);
    expect(sameRecord({ a: "1", b: "2" }, { a: "1" })).toBe(false);
    expect(sameRecord({ a: "1" }, { a: "2" })).toBe(false);
    expect(sameRecord({ a: "1" }, { b: "1" })).toBe(false);
    expect(sameRecord({ a: "" }, {})).toBe(false);
    const inherits = Object.create({ a: "1" }) as Record<string, string>;
    expect(sameRecord({ a: "1" }, inherits)).toBe(false);
    expect(sameRecord(inherits, {})).toBe(true);
  });

  test("keys that name Object.prototype's members and __proto__ are compared as keys", () => {
    const parsed = JSON.parse('{"__proto__": "x", "toString": "y"}') as Record<string, string>;
    expect(
      sameRecord(parsed, JSON.parse('{"toString": "y", "__proto__": "x"}') as Record<string, string>),
    ).toBe(true);
    expect(sameRecord(parsed, { toString: "y" })).toBe(false);
    expect(sameRecord({ toString: "y" }, {})).toBe(false);
  });
});

describe("sameAddresses", () => {
  test("the same addresses in the same order", () => {
    const a = [
      { type: "InternalIP", address: "10.0.0.1" },
      { type: "ExternalIP", address: "203.0.113.1" },
    ];
    expect(sameAddresses(a, structuredClone(a))).toBe(true);
    expect(sameAddresses(a, [...a].reverse())).toBe(false);
    expect(sameAddresses(a, a.slice(0, 1))).toBe(false);
  });
});
