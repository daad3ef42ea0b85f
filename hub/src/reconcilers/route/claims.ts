import type { Node } from "@fleet-ccm/proto";
import type { CloudRoute } from "../../cloud/provider.js";
import { type Network, parseNetwork } from "../../util/network.js";
import { type Conflict, refuseOverlaps } from "./overlaps.js";

/** CIDRs compare by canonical text. */
export function canonical(cidr: string): string {
  return cidr.trim().toLowerCase();
}

/**
 * Which live nodes' pod CIDRs overlap another live node's, and who keeps the range (by node
 * name: the refused claims). Two nodes claiming one range is conflicting evidence, so the route
 * there stays where it is: a node that already has a route for the CIDR, to its instance, ranks
 * first; then the earlier creationTimestamp (a node without one last); then the name. The rule
 * is stable: the keeper's route, once made, keeps it first. The refused node gets no route for
 * the CIDR until the other node goes or its podCIDRs change.
 */
export function contestedClaims(
  nodes: Iterable<Readonly<Node>>,
  routes: readonly CloudRoute[],
  instanceOf: (providerID: string) => string | undefined,
  parse: (cidr: string) => Network | undefined = parseNetwork,
): Map<string, Conflict[]> {
  const routed = new Set(routes.map((r) => `${canonical(r.destinationCIDR)}\u0000${r.targetInstanceID}`));
  const ranked = [];
  for (const node of nodes) {
    if (node.deletionTimestamp !== undefined) continue;
    const instance = node.providerId === "" ? undefined : instanceOf(node.providerId);
    for (const c of node.podCidrs) {
      const cidr = canonical(c);
      const holds = instance !== undefined && routed.has(`${cidr}\u0000${instance}`);
      ranked.push({
        claim: { node: node.name, cidr },
        holds,
        created: node.creationTimestamp?.getTime() ?? Number.POSITIVE_INFINITY,
      });
    }
  }
  ranked.sort(
    (a, b) =>
      Number(b.holds) - Number(a.holds) ||
      a.created - b.created ||
      (a.claim.node < b.claim.node ? -1 : a.claim.node > b.claim.node ? 1 : 0),
  );
  const out = new Map<string, Conflict[]>();
  for (const c of refuseOverlaps(
    ranked.map((r) => r.claim),
    parse,
  )) {
    const list = out.get(c.claim.node);
    if (list === undefined) out.set(c.claim.node, [c]);
    else list.push(c);
  }
  return out;
}
