import { describe, expect, test } from "@jest/globals";
import { NetworkMemo, networkKey, parseNetwork } from "../../util/network.js";
import { type Claim, refuseOverlaps } from "./overlaps.js";

/** "node cidr" claims in order → "refused<keeper" per conflict, "=" when the same network. */
function refused(...claims: string[]): string[] {
  const parsed: Claim[] = claims.map((c) => {
    const [node = "", cidr = ""] = c.split(" ");
    return { node, cidr };
  });
  return refuseOverlaps(parsed).map(
    (c) => `${c.claim.node} ${c.claim.cidr} ${c.same ? "=" : "<"} ${c.keeper.node} ${c.keeper.cidr}`,
  );
}

describe("parseNetwork", () => {
  test("IPv4 and IPv6 prefixes as 32-bit words, host bits dropped, every IPv6 spelling the same", () => {
    expect(parseNetwork("10.0.1.0/24")).toEqual({
      family: 4,
      prefix: 24,
      words: [0x0a000100],
      key: `4/24/${0x0a000100}`,
    });
    expect(parseNetwork("10.0.1.77/24")).toEqual(parseNetwork("10.0.1.0/24"));
    expect(parseNetwork("255.255.255.255/32")?.words).toEqual([0xffffffff]);
    expect(parseNetwork("0.0.0.0/0")?.words).toEqual([0]);
    expect(parseNetwork("fd00::/16")?.words).toEqual([0xfd000000, 0, 0, 0]);
    expect(parseNetwork("fd00:0:0:1::/64")).toEqual(parseNetwork("FD00:0000:0000:0001:ffff:0:0:0/64"));
    expect(parseNetwork("::ffff:10.0.1.0/120")?.words).toEqual([0, 0, 0xffff, 0x0a000100]);
    expect(parseNetwork("::1/128")?.words).toEqual([0, 0, 0, 1]);
    expect(parseNetwork("fd00:10:244:1:8000::/65")?.words).toEqual([0xfd000010, 0x02440001, 0x80000000, 0]);
  });

  test("networkKey: a network's ancestor at a shorter length is the containing network", () => {
    const inner = parseNetwork("10.0.7.0/24");
    const outer = parseNetwork("10.0.0.0/16");
    if (inner === undefined || outer === undefined) throw new Error("unparsed");
    expect(networkKey(inner, 16)).toBe(networkKey(outer));
    expect(networkKey(inner, 0)).toBe(networkKey(parseNetwork("0.0.0.0/0") ?? outer));
    expect(networkKey(inner)).not.toBe(networkKey(outer));
    expect(networkKey(inner)).not.toBe(networkKey(parseNetwork("10.0.7.0/25") ?? outer));
  });

  test("not a CIDR: undefined", () => {
    for (const bad of ["10.0.1.0", "10.0.1.0/33", "fd00::/129", "10.0.1/24", "x/24", "10.0.1.0/-1", ""])
      expect(parseNetwork(bad)).toBeUndefined();
  });
});

describe("NetworkMemo", () => {
  test("parses as parseNetwork does, and forgets a CIDR a whole pass did not ask for", () => {
    const memo = new NetworkMemo();
    const first = memo.parse("10.0.1.0/24");
    expect(first).toEqual(parseNetwork("10.0.1.0/24"));
    expect(memo.parse("nonsense")).toBeUndefined();
    memo.endPass();
    expect(memo.parse("10.0.1.0/24")).toBe(first); // remembered from the last pass
    memo.endPass();
    memo.endPass(); // a pass without it
    const again = memo.parse("10.0.1.0/24");
    expect(again).toEqual(first);
    expect(again).not.toBe(first); // parsed anew
  });
});

describe("refuseOverlaps: the first claimant keeps the range", () => {
  test("the same network, however spelled, is refused to the second node", () => {
    expect(refused("a 10.0.1.0/24", "b 10.0.1.0/24")).toEqual(["b 10.0.1.0/24 = a 10.0.1.0/24"]);
    expect(refused("a fd00:0:0:1::/64", "b fd00::1:0:0:0:0/64")).toEqual([
      "b fd00::1:0:0:0:0/64 = a fd00:0:0:1::/64",
    ]);
  });

  test("a network inside a kept one is refused", () => {
    expect(refused("a 10.0.0.0/16", "b 10.0.7.0/24")).toEqual(["b 10.0.7.0/24 < a 10.0.0.0/16"]);
  });

  test("a network containing a kept one is refused", () => {
    expect(refused("a 10.0.7.0/24", "b 10.0.0.0/16")).toEqual(["b 10.0.0.0/16 < a 10.0.7.0/24"]);
    expect(refused("a 10.0.7.0/24", "b 0.0.0.0/0")).toEqual(["b 0.0.0.0/0 < a 10.0.7.0/24"]);
  });

  test("IPv6: equal, contained and containing; IPv4 and IPv6 never overlap each other", () => {
    expect(
      refused("a fd00:10:244:1::/64", "b fd00:10:244:1:8000::/65", "c fd00:10::/32", "d ::/0", "e 0.0.0.0/0"),
    ).toEqual([
      "b fd00:10:244:1:8000::/65 < a fd00:10:244:1::/64",
      "c fd00:10::/32 < a fd00:10:244:1::/64",
      "d ::/0 < a fd00:10:244:1::/64",
    ]);
  });

  test("disjoint networks, neighbours included, all kept", () => {
    expect(
      refused(
        "a 10.0.0.0/24",
        "b 10.0.1.0/24",
        "c 10.0.2.0/23",
        "d 10.0.4.0/22",
        "e fd00::/64",
        "f fd00:0:0:1::/64",
        "g 10.1.0.0/16",
      ),
    ).toEqual([]);
  });

  test("a refused claim keeps nothing: a later claim is judged against the kept ones only", () => {
    // b is refused (inside a); c overlaps b only, so c is kept; d equals b and is refused for a.
    expect(refused("a 10.0.1.0/24", "b 10.0.0.0/16", "c 10.0.2.0/24", "d 10.0.0.0/16")).toEqual([
      "b 10.0.0.0/16 < a 10.0.1.0/24",
      "d 10.0.0.0/16 < a 10.0.1.0/24",
    ]);
  });

  test("one node's own CIDRs (one per family) never conflict with each other", () => {
    expect(refused("a 10.0.1.0/24", "a fd00::/64", "a 10.0.1.0/24")).toEqual([]);
  });

  test("text that does not parse conflicts only with the same text", () => {
    expect(refused("a bogus", "b bogus", "c 10.0.0.0/8", "d other")).toEqual(["b bogus = a bogus"]);
  });

  test("thousands of nodes: one pass, each claim looked up at the lengths in use", () => {
    const claims: Claim[] = [];
    for (let i = 0; i < 20_000; i++) {
      const cidr = `10.${(i >> 8) & 255}.${i & 255}.0/24`;
      claims.push({ node: `n${i}`, cidr });
      claims.push({ node: `n${i}`, cidr: `fd00:0:0:${i.toString(16)}::/64` });
    }
    claims.push({ node: "late", cidr: "10.3.0.0/16" });
    const out = refuseOverlaps(claims);
    expect(out.map((c) => `${c.claim.node}<${c.keeper.node}`)).toEqual(["late<n768"]);
  });
});
