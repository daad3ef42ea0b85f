import { type Network, networkKey, parseNetwork } from "../../util/network.js";

/** One node's claim of one pod CIDR (canonical text). */
export interface Claim {
  readonly node: string;
  readonly cidr: string;
}

/** A claim refused because it overlaps the range another node's earlier claim keeps. */
export interface Conflict {
  readonly claim: Claim;
  readonly keeper: Claim;
  /** The very same network, not only an overlapping one. */
  readonly same: boolean;
}

interface Kept {
  readonly claim: Claim;
  readonly net: Network | undefined;
}

/**
 * Takes the claims in the order given, the first claimant keeping the range: a claim whose
 * network equals, contains or lies inside one that an earlier claim of another node kept is
 * refused. A refused claim keeps nothing (it refuses nobody after it), so the kept claims never
 * overlap. Networks either nest or are disjoint, so a claim is looked up among the kept networks
 * at each prefix length the claims use up to its own (those that would contain it) and in an
 * index of the kept networks' ancestors at those lengths (those it would contain):
 * O(claims × distinct prefix lengths), one or two per family in a real cluster. A CIDR that does
 * not parse only conflicts with the same text.
 */
export function refuseOverlaps(
  claims: readonly Claim[],
  parse: (cidr: string) => Network | undefined = parseNetwork,
): Conflict[] {
  const nets = claims.map((c) => parse(c.cidr));
  const used = { 4: new Set<number>(), 6: new Set<number>() };
  for (const n of nets) if (n !== undefined) used[n.family].add(n.prefix);
  const lengths = { 4: [...used[4]].sort((a, b) => a - b), 6: [...used[6]].sort((a, b) => a - b) };
  const kept = new Map<string, Kept>(); // by network: the claim that keeps it
  const inside = new Map<string, Kept>(); // by ancestor network: one kept claim strictly inside
  const out: Conflict[] = [];
  claims.forEach((claim, i) => {
    const net = nets[i];
    const own = net === undefined ? `?${claim.cidr}` : net.key;
    const other = (k: Kept | undefined) => (k !== undefined && k.claim.node !== claim.node ? k : undefined);
    let keeper: Kept | undefined;
    if (net === undefined) keeper = other(kept.get(own));
    else {
      for (const len of lengths[net.family]) {
        if (len > net.prefix) break;
        keeper = other(kept.get(networkKey(net, len)));
        if (keeper !== undefined) break;
      }
      keeper ??= other(inside.get(own));
    }
    if (keeper !== undefined) {
      out.push({ claim, keeper: keeper.claim, same: keeper.net?.prefix === net?.prefix });
      return;
    }
    const k: Kept = { claim, net };
    kept.set(own, k);
    if (net !== undefined)
      for (const len of lengths[net.family]) {
        if (len >= net.prefix) break;
        const ancestor = networkKey(net, len);
        if (!inside.has(ancestor)) inside.set(ancestor, k);
      }
  });
  return out;
}
