import { FAMILY_BITS, formatNetwork, type Network, networkValue } from "../../util/network.js";

/** Upstream cidrset's bound: a cluster CIDR is cut into at most 2^16 node ranges. */
export const MAX_NODE_MASK_DIFF = 16;

/**
 * The node ranges of one cluster CIDR (upstream's cidrset): blocks of `nodeMask` bits, each
 * counted by how many ranges the nodes hold in it, so a range two nodes claim is free only when
 * both have let go. Allocation takes the lowest free block: the choice depends only on what is
 * occupied, so two hubs with the same view choose alike.
 */
export class CidrSet {
  private readonly held: Uint32Array;
  private readonly base: bigint;
  private readonly shift: bigint;
  private free: number;
  /** No free block below this one (allocations scan on from it: a pass is linear, not quadratic). */
  private cursor = 0;

  constructor(
    readonly cluster: Network,
    readonly nodeMask: number,
  ) {
    const diff = nodeMask - cluster.prefix;
    if (diff < 0 || diff > MAX_NODE_MASK_DIFF || nodeMask > FAMILY_BITS[cluster.family])
      throw new Error(`node mask /${nodeMask} does not fit cluster CIDR /${cluster.prefix}`);
    this.held = new Uint32Array(2 ** diff);
    this.free = this.held.length;
    this.base = networkValue(cluster);
    this.shift = BigInt(FAMILY_BITS[cluster.family] - nodeMask);
  }

  get size(): number {
    return this.held.length;
  }

  get freeCount(): number {
    return this.free;
  }

  /** The blocks [first, last] a network covers; undefined when it is not inside the cluster CIDR. */
  private span(n: Network): readonly [number, number] | undefined {
    if (n.family !== this.cluster.family || n.prefix < this.cluster.prefix) return undefined;
    const offset = networkValue(n) - this.base;
    const end = offset + (1n << BigInt(FAMILY_BITS[n.family] - n.prefix)) - 1n;
    if (offset < 0n || end >> this.shift >= BigInt(this.held.length)) return undefined;
    return [Number(offset >> this.shift), Number(end >> this.shift)];
  }

  /** Whether the network lies inside this cluster CIDR. */
  contains(n: Network): boolean {
    return this.span(n) !== undefined;
  }

  /** Whether any block the network covers is held. */
  taken(n: Network): boolean {
    const s = this.span(n);
    if (s === undefined) return false;
    for (let i = s[0]; i <= s[1]; i++) if ((this.held[i] ?? 0) > 0) return true;
    return false;
  }

  /** Counts one more holder of every block the network covers; false when it is outside. */
  occupy(n: Network): boolean {
    const s = this.span(n);
    if (s === undefined) return false;
    for (let i = s[0]; i <= s[1]; i++) {
      if (this.held[i] === 0) this.free--;
      this.held[i] = (this.held[i] ?? 0) + 1;
    }
    return true;
  }

  /** The lowest free block, now held; undefined when every block is held. */
  allocate(): string | undefined {
    if (this.free === 0) return undefined;
    const i = this.held.indexOf(0, this.cursor);
    this.cursor = i + 1;
    this.held[i] = 1;
    this.free--;
    return formatNetwork(this.cluster.family, this.base + (BigInt(i) << this.shift), this.nodeMask);
  }

  /** Gives back a block `allocate` returned in this pass (a dual-stack pair could not be completed). */
  release(n: Network): void {
    const s = this.span(n);
    if (s === undefined) return;
    for (let i = s[0]; i <= s[1]; i++) {
      const n = this.held[i] ?? 0;
      if (n === 0) continue;
      this.held[i] = n - 1;
      if (n === 1) {
        this.free++;
        this.cursor = Math.min(this.cursor, i);
      }
    }
  }
}
