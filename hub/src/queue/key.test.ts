import { describe, expect, test } from "@jest/globals";
import { clusterKeyPrefix, keyOf, parseKey, type WorkKey } from "./key.js";

describe("key - keyOf", () => {
  test("is cluster/kind/name, keeping the name's namespace slash", () => {
    expect(keyOf({ cluster: "prod-eu-1", kind: "service-lb", name: "default/web" })).toBe(
      "prod-eu-1/service-lb/default/web",
    );
    expect(keyOf({ cluster: "c", kind: "node-init", name: "node-a" })).toBe("c/node-init/node-a");
  });

  test("never gives two different keys the same string", () => {
    const keys: WorkKey[] = [
      { cluster: "a/b", kind: "c", name: "d" },
      { cluster: "a", kind: "b/c", name: "d" },
      { cluster: "a", kind: "b", name: "c/d" },
      { cluster: "a%2Fb", kind: "c", name: "d" },
      { cluster: "a%", kind: "2Fb", name: "d" },
    ];
    expect(new Set(keys.map(keyOf)).size).toBe(keys.length);
  });

  test.each<WorkKey>([
    { cluster: "c1", kind: "node-init", name: "n1" },
    { cluster: "a/b%c", kind: "k/%2F", name: "ns/name/with/slashes" },
    { cluster: "%25", kind: "", name: "" },
  ])("parseKey inverts keyOf for %j", (key) => {
    expect(parseKey(keyOf(key))).toEqual(key);
  });

  test("parseKey rejects strings without cluster and kind", () => {
    expect(parseKey("just-a-name")).toBeUndefined();
    expect(parseKey("cluster/kind-without-name")).toBeUndefined();
  });

  test("clusterKeyPrefix matches exactly that cluster's keys", () => {
    const prefix = clusterKeyPrefix("c1");
    expect(keyOf({ cluster: "c1", kind: "k", name: "n" }).startsWith(prefix)).toBe(true);
    expect(keyOf({ cluster: "c10", kind: "k", name: "n" }).startsWith(prefix)).toBe(false);
    expect(keyOf({ cluster: "c1/x", kind: "k", name: "n" }).startsWith(prefix)).toBe(false);
  });
});
