import { describe, expect, it } from "@jest/globals";
import { StringCache } from "./string-cache.js";

function ascii(cache: StringCache, s: string): string | undefined {
  const bytes = Buffer.from(`<${s}>`, "utf8");
  return cache.ascii(bytes, 1, bytes.length - 1);
}

describe("StringCache", () => {
  it("reads ASCII bytes as the string they spell, the same again when repeated", () => {
    const cache = new StringCache();
    for (const s of ["", "a", "sim-east-1", "kubelet is posting ready status", "x".repeat(128)]) {
      expect(ascii(cache, s)).toBe(s);
      expect(ascii(cache, s)).toBe(s);
    }
  });

  it("leaves non-ASCII and long strings to the caller", () => {
    const cache = new StringCache();
    expect(ascii(cache, "zürich")).toBeUndefined();
    expect(ascii(cache, "🚀")).toBeUndefined();
    expect(ascii(cache, "x".repeat(129))).toBeUndefined();
  });

  it("never answers with another string that shares its slot", () => {
    // Far more distinct strings than slots, twice over, interleaved with repeated ones.
    const cache = new StringCache();
    const wrong: string[] = [];
    for (let round = 0; round < 2; round++)
      for (let i = 0; i < 40_000; i++) {
        const s = `node-${i}`;
        if (ascii(cache, s) !== s) wrong.push(s);
        if (ascii(cache, "linux") !== "linux") wrong.push("linux");
        if (cache.intern(`zone-${i % 7}`) !== `zone-${i % 7}`) wrong.push(`zone-${i % 7}`);
      }
    expect(wrong).toEqual([]);
  });

  it("interns strings the same way, non-ASCII and long ones passed through", () => {
    const cache = new StringCache();
    expect(cache.intern("InternalIP")).toBe("InternalIP");
    expect(ascii(cache, "InternalIP")).toBe("InternalIP");
    expect(cache.intern("zürich")).toBe("zürich");
    expect(cache.intern("y".repeat(200))).toBe("y".repeat(200));
    expect(cache.intern("")).toBe("");
  });
});

describe("StringCache.internValues", () => {
  it("copies a string map with the same own entries, a __proto__ key kept as a key", () => {
    const cache = new StringCache();
    const labels = { "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "z1" };
    const copy = cache.internValues(labels);
    expect(copy).toEqual(labels);
    expect(copy).not.toBe(labels);
    const tags = JSON.parse('{"__proto__": "x", "team": "a"}') as Record<string, string>;
    const kept = cache.internValues(tags);
    expect(Object.getPrototypeOf(kept)).toBe(Object.prototype);
    expect(Object.keys(kept)).toEqual(["__proto__", "team"]);
    expect(Object.getOwnPropertyDescriptor(kept, "__proto__")?.value).toBe("x");
  });
});
