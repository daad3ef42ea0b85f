import { z } from "zod";
import { MAX_NODE_MASK_DIFF } from "../reconcilers/node-ipam/cidr-set.js";
import {
  FAMILY_BITS,
  formatNetwork,
  type Network,
  networkValue,
  overlaps,
  parseNetwork,
} from "../util/network.js";

const FAMILY_NAME = { 4: "IPv4", 6: "IPv6" } as const;

/**
 * CIDRs of one network: one, or a dual-stack pair (one IPv4, one IPv6, the first being the
 * primary family, as upstream --cluster-cidr). Written back in canonical form.
 */
const cidrList = z
  .array(z.string())
  .min(1)
  .max(2)
  .superRefine((cidrs, ctx) => {
    const families = new Set<number>();
    cidrs.forEach((c, i) => {
      const n = parseNetwork(c);
      if (n === undefined) ctx.addIssue({ code: "custom", path: [i], message: `"${c}" is not a CIDR` });
      else if (families.has(n.family))
        ctx.addIssue({
          code: "custom",
          path: [i],
          message: "at most one IPv4 and one IPv6 CIDR (dual-stack)",
        });
      else families.add(n.family);
    });
  })
  .transform((cidrs) => cidrs.map(canonicalCidr));

function canonicalCidr(cidr: string): string {
  const n = parseNetwork(cidr);
  return n === undefined ? cidr : formatNetwork(n.family, networkValue(n), n.prefix);
}

/** Per family: the mask of the blocks cut from each CIDR must fit it (checked, then read). */
function checkMasks(
  cidrs: readonly string[],
  masks: Readonly<Record<4 | 6, number>>,
  field: Readonly<Record<4 | 6, string>>,
  ctx: z.RefinementCtx,
  maxDiff: number,
): void {
  for (const c of cidrs) {
    const n = parseNetwork(c);
    if (n === undefined) continue;
    const mask = masks[n.family];
    if (mask < n.prefix || mask > FAMILY_BITS[n.family])
      ctx.addIssue({
        code: "custom",
        path: [field[n.family]],
        message: `/${mask} cannot be cut from ${c}`,
      });
    else if (mask - n.prefix > maxDiff)
      ctx.addIssue({
        code: "custom",
        path: [field[n.family]],
        message: `/${mask} is more than ${maxDiff} bits beyond ${c}'s /${n.prefix}`,
      });
  }
}

/**
 * A cluster's pod network (node IPAM, upstream --allocate-node-cidrs): nodes without
 * spec.podCIDRs get one range of each CIDR, /nodeMaskSizeIPv4 and /nodeMaskSizeIPv6 (upstream's
 * defaults /24 and /64).
 */
export const PodNetworkSchema = z
  .object({
    cidrs: cidrList,
    nodeMaskSizeIPv4: z.number().int().min(1).max(32).default(24),
    nodeMaskSizeIPv6: z.number().int().min(1).max(128).default(64),
    /** This cluster's pod network may overlap other clusters' (isolated clusters, on purpose). */
    overlapAllowed: z.boolean().default(false),
  })
  .strict()
  .superRefine((p, ctx) =>
    checkMasks(
      p.cidrs,
      { 4: p.nodeMaskSizeIPv4, 6: p.nodeMaskSizeIPv6 },
      { 4: "nodeMaskSizeIPv4", 6: "nodeMaskSizeIPv6" },
      ctx,
      MAX_NODE_MASK_DIFF,
    ),
  );

export type PodNetwork = z.infer<typeof PodNetworkSchema>;

/** Blocks of a pool a search visits at most (a /8 pool of /24 cluster networks is 65536). */
const MAX_POOL_BLOCKS = 2 ** 20;

/** Where `fleet-ccm register --pod-network auto` takes each new cluster's pod network from. */
export const PodNetworkPoolSchema = z
  .object({
    cidrs: cidrList,
    clusterMaskSizeIPv4: z.number().int().min(1).max(32).default(16),
    clusterMaskSizeIPv6: z.number().int().min(1).max(128).default(48),
  })
  .strict()
  .superRefine((p, ctx) =>
    checkMasks(
      p.cidrs,
      { 4: p.clusterMaskSizeIPv4, 6: p.clusterMaskSizeIPv6 },
      { 4: "clusterMaskSizeIPv4", 6: "clusterMaskSizeIPv6" },
      ctx,
      Math.log2(MAX_POOL_BLOCKS),
    ),
  );

export type PodNetworkPool = z.infer<typeof PodNetworkPoolSchema>;

interface Named {
  readonly name: string;
  readonly podNetwork?: { readonly cidrs: readonly string[]; readonly overlapAllowed?: boolean } | undefined;
}

/** One overlap between two clusters' pod networks that neither allows. */
export interface PodNetworkOverlap {
  /** Index of the later cluster, and of its CIDR. */
  readonly index: number;
  readonly cidrIndex: number;
  readonly message: string;
}

/**
 * Pairs of clusters whose pod networks share addresses, unless one of them allows it: one
 * fleet, one address plan (multi-cluster networking needs it). Each names both clusters.
 */
export function podNetworkOverlaps(clusters: readonly Named[]): PodNetworkOverlap[] {
  const seen: { name: string; index: number; cidr: string; net: Network; allowed: boolean }[] = [];
  const out: PodNetworkOverlap[] = [];
  clusters.forEach((c, index) => {
    const allowed = c.podNetwork?.overlapAllowed === true;
    (c.podNetwork?.cidrs ?? []).forEach((cidr, cidrIndex) => {
      const net = parseNetwork(cidr);
      if (net === undefined) return;
      const other = allowed ? undefined : seen.find((s) => !s.allowed && overlaps(s.net, net));
      if (other !== undefined)
        out.push({
          index,
          cidrIndex,
          message: `pod network ${cidr} of cluster "${c.name}" overlaps ${other.cidr} of cluster "${other.name}" (clusters[${other.index}]); give one of them another range, or set podNetwork.overlapAllowed`,
        });
      seen.push({ name: c.name, index, cidr, net, allowed });
    });
  });
  return out;
}

/**
 * The first block of each pool CIDR (in address order) that no cluster's pod network overlaps
 * (overlapAllowed ones included: they are in use all the same); an error naming the family
 * when a pool CIDR has none left.
 */
export function nextFreePodNetwork(pool: PodNetworkPool, clusters: readonly Named[]): string[] {
  const used = clusters.flatMap((c) =>
    (c.podNetwork?.cidrs ?? []).flatMap((cidr) => {
      const n = parseNetwork(cidr);
      return n === undefined ? [] : [n];
    }),
  );
  return pool.cidrs.map((cidr) => {
    const p = parseNetwork(cidr);
    if (p === undefined) throw new Error(`podNetworkPool: "${cidr}" is not a CIDR`);
    const mask = p.family === 4 ? pool.clusterMaskSizeIPv4 : pool.clusterMaskSizeIPv6;
    const step = 1n << BigInt(FAMILY_BITS[p.family] - mask);
    const blocks = 1n << BigInt(mask - p.prefix);
    for (let i = 0n; i < blocks; i++) {
      const text = formatNetwork(p.family, networkValue(p) + i * step, mask);
      const block = parseNetwork(text);
      if (block !== undefined && !used.some((u) => overlaps(u, block))) return text;
    }
    throw new Error(
      `podNetworkPool ${cidr} has no free /${mask} left for a new cluster's ${FAMILY_NAME[p.family]} pod network`,
    );
  });
}
