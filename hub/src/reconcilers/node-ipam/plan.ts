import type { Node } from "@fleet-ccm/proto";
import type { PodNetwork } from "../../config/pod-network.js";
import { type Network, parseNetwork } from "../../util/network.js";
import { CidrSet } from "./cidr-set.js";

/** A node that gets ranges now (new ones, or the ones reserved for it in an earlier pass). */
export interface Assignment {
  readonly node: Readonly<Node>;
  readonly cidrs: readonly string[];
  readonly fresh: boolean;
}

/** What one pass decided for a cluster's nodes without ranges. */
export interface Plan {
  readonly assigned: readonly Assignment[];
  /** Nodes that get nothing: the cluster CIDR named has no free range. */
  readonly waiting: readonly { readonly node: Readonly<Node>; readonly exhausted: string }[];
  /** Ranges published for a node (by uid) that another node now holds: dropped, chosen again. */
  readonly lost: readonly { readonly node: Readonly<Node>; readonly cidrs: readonly string[] }[];
  /** Free ranges left per cluster CIDR. */
  readonly free: ReadonlyMap<string, number>;
}

function byCreation(a: Readonly<Node>, b: Readonly<Node>): number {
  const at = a.creationTimestamp?.getTime() ?? Number.POSITIVE_INFINITY;
  const bt = b.creationTimestamp?.getTime() ?? Number.POSITIVE_INFINITY;
  return at - bt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/**
 * The range allocator's decision for one cluster, from its nodes alone (the truth: ranges are
 * immutable once set) and the ranges this hub published and has not yet seen land (`reserved`,
 * by node uid). Every range a node holds is occupied, whoever set it; a node being deleted keeps
 * its ranges until it is gone. Nodes without ranges, oldest first, keep their reservation or
 * get the lowest free range of each cluster CIDR (dual-stack: one of each, in the order the
 * CIDRs are configured, the first being spec.podCIDR); when one CIDR is exhausted the node
 * waits and gets none.
 */
export function planAllocation(
  network: PodNetwork,
  nodes: Iterable<Readonly<Node>>,
  reserved: ReadonlyMap<string, readonly string[]>,
  parse: (cidr: string) => Network | undefined = parseNetwork,
): Plan {
  const sets = network.cidrs.map((cidr) => {
    const net = parseNetwork(cidr) as Network;
    return new CidrSet(net, net.family === 4 ? network.nodeMaskSizeIPv4 : network.nodeMaskSizeIPv6);
  });
  const setOf = (n: Network) => sets.find((s) => s.contains(n));
  const waitingNodes: Readonly<Node>[] = [];
  for (const node of nodes) {
    if (node.podCidrs.length === 0) {
      if (node.deletionTimestamp === undefined) waitingNodes.push(node);
      continue;
    }
    for (const cidr of node.podCidrs) {
      const n = parse(cidr);
      if (n !== undefined) setOf(n)?.occupy(n);
    }
  }
  waitingNodes.sort(byCreation);
  const assigned: Assignment[] = [];
  const lost: { node: Readonly<Node>; cidrs: readonly string[] }[] = [];
  const fresh: Readonly<Node>[] = [];
  // Reservations first: they may be landing now, so nobody else may get them.
  for (const node of waitingNodes) {
    const cidrs = reserved.get(node.uid);
    if (cidrs === undefined) {
      fresh.push(node);
      continue;
    }
    const nets = cidrs.map(parse);
    if (nets.some((n) => n === undefined || setOf(n) === undefined || setOf(n)?.taken(n))) {
      lost.push({ node, cidrs });
      fresh.push(node);
      continue;
    }
    for (const n of nets) if (n !== undefined) setOf(n)?.occupy(n);
    assigned.push({ node, cidrs, fresh: false });
  }
  const waiting: { node: Readonly<Node>; exhausted: string }[] = [];
  for (const node of fresh) {
    const got: string[] = [];
    const empty = sets.find((s) => {
      const cidr = s.allocate();
      if (cidr !== undefined) got.push(cidr);
      return cidr === undefined;
    });
    if (empty === undefined) {
      assigned.push({ node, cidrs: got, fresh: true });
      continue;
    }
    for (const cidr of got) {
      const n = parseNetwork(cidr);
      if (n !== undefined) setOf(n)?.release(n);
    }
    waiting.push({ node, exhausted: network.cidrs[sets.indexOf(empty)] ?? "" });
  }
  return {
    assigned,
    waiting,
    lost,
    free: new Map(sets.map((s, i) => [network.cidrs[i] ?? "", s.freeCount])),
  };
}
