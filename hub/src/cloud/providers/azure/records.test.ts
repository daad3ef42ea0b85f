// The Services' records in a load balancer's tags stay within ARM's tag limits.
import { describe, expect, test } from "@jest/globals";
import { MAX_TAG_VALUE, MAX_TAGS, readServices, withServices } from "./records.js";

const uid = (i: number) => `${String(i).padStart(8, "0")}-aaaa-bbbb-cccc-dddddddddddd`;

describe("records in load-balancer tags", () => {
  test("round trip, the user's tags kept", () => {
    const services = new Map<string, string | undefined>([
      [uid(1), "0123456789abcdef"],
      [uid(2), undefined],
    ]);
    const tags = withServices({ team: "web" }, services);
    expect(tags["team"]).toBe("web");
    expect(readServices(tags)).toEqual(services);
  });

  test("many Services: within 50 tags of at most 256 characters, digests dropped before uids", () => {
    // Ten of the user's tags beside the owner and backends tags.
    const user = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`user-${i}`, "x"]));
    const fits = new Map(Array.from({ length: 150 }, (_, i) => [uid(i), "0123456789abcdef"] as const));
    const packed = withServices(user, fits);
    expect(Object.keys(packed).length).toBeLessThanOrEqual(MAX_TAGS);
    expect(readServices(packed)).toEqual(fits);
    const many = new Map(Array.from({ length: 228 }, (_, i) => [uid(i), "0123456789abcdef"] as const));
    const crowded = withServices(user, many);
    expect(Object.keys(crowded).length).toBeLessThanOrEqual(MAX_TAGS);
    expect(Object.values(crowded).every((v) => v.length <= MAX_TAG_VALUE)).toBe(true);
    const read = readServices(crowded);
    expect([...read.keys()].sort()).toEqual([...many.keys()].sort());
    expect([...read.values()].every((v) => v === undefined)).toBe(true);
  });
});
