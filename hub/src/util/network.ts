import { isIP } from "node:net";

/**
 * A network: family, prefix length and the address as 32-bit words (one for IPv4, four for
 * IPv6), host bits dropped, so "10.0.1.5/24" is "10.0.1.0/24" and every IPv6 spelling is one.
 */
export interface Network {
  readonly family: 4 | 6;
  readonly prefix: number;
  readonly words: readonly number[];
  /** networkKey of the network itself. */
  readonly key: string;
}

/** "a.b.c.d/n" or an IPv6 "x:y::z/n" (dotted tail included); undefined when it is neither. */
export function parseNetwork(cidr: string): Network | undefined {
  const text = cidr.trim();
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const length = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(length)) return undefined;
  const prefix = Number(length);
  const family = isIP(address);
  if (family === 4 && prefix <= 32) return network(family, prefix, [ipv4Word(address)]);
  if (family === 6 && prefix <= 128 && !address.includes("%"))
    return network(family, prefix, ipv6Words(address));
  return undefined;
}

function network(family: 4 | 6, prefix: number, address: readonly number[]): Network {
  const words = mask(address, prefix);
  return { family, prefix, words, key: `${family}/${prefix}/${words.join(".")}` };
}

/**
 * parseNetwork remembered across passes: pod CIDRs rarely change, and parsing every one of a
 * large cluster's on every pass would be most of its conflict check. Holds what the last two
 * passes asked for.
 */
export class NetworkMemo {
  private cur = new Map<string, Network | undefined>();
  private prev = new Map<string, Network | undefined>();

  parse(cidr: string): Network | undefined {
    if (this.cur.has(cidr)) return this.cur.get(cidr);
    const n = this.prev.has(cidr) ? this.prev.get(cidr) : parseNetwork(cidr);
    this.cur.set(cidr, n);
    return n;
  }

  /** A pass is over: what the next one does not ask for again is forgotten after it. */
  endPass(): void {
    this.prev = this.cur;
    this.cur = new Map();
  }
}

/**
 * The text key of the network's ancestor of `length` bits (the network itself by default):
 * one network contains another exactly when the other's ancestor at its length has its key.
 */
export function networkKey(n: Network, length = n.prefix): string {
  return length === n.prefix ? n.key : `${n.family}/${length}/${mask(n.words, length).join(".")}`;
}

/** The first `length` bits of `words`, the rest zero. */
function mask(words: readonly number[], length: number): number[] {
  return words.map((w, i) => {
    const keep = Math.min(32, Math.max(0, length - 32 * i));
    return keep === 0 ? 0 : keep === 32 ? w : (w & (~0 << (32 - keep))) >>> 0;
  });
}

function ipv4Word(address: string): number {
  return address.split(".").reduce((acc, octet) => ((acc << 8) | Number(octet)) >>> 0, 0);
}

/** isIP has checked the syntax: at most one "::", at most 8 groups, a dotted tail only last. */
function ipv6Words(address: string): number[] {
  const groups = (part: string): number[] => {
    if (part === "") return [];
    const texts = part.split(":");
    const last = texts.at(-1) ?? "";
    const tail = last.includes(".") ? texts.pop() : undefined;
    const out = texts.map((g) => Number.parseInt(g, 16));
    if (tail !== undefined) {
      const v4 = ipv4Word(tail);
      out.push(v4 >>> 16, v4 & 0xffff);
    }
    return out;
  };
  const [head = "", tail] = address.split("::");
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const g = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  return [0, 1, 2, 3].map((i) => (((g[2 * i] ?? 0) << 16) | (g[2 * i + 1] ?? 0)) >>> 0);
}

/** Address bits of each family. */
export const FAMILY_BITS = { 4: 32, 6: 128 } as const;

/** The network's address as one number (host bits are zero). */
export function networkValue(n: Network): bigint {
  return n.words.reduce((acc, w) => (acc << 32n) | BigInt(w), 0n);
}

/** Whether two networks share an address: one contains the other (networks nest or are disjoint). */
export function overlaps(a: Network, b: Network): boolean {
  return (
    a.family === b.family &&
    networkKey(a, Math.min(a.prefix, b.prefix)) === networkKey(b, Math.min(a.prefix, b.prefix))
  );
}

/**
 * The text of the network at `value`/`prefix` as Go's net.IPNet prints it (what Kubernetes
 * writes in spec.podCIDRs): dotted IPv4; IPv6 in RFC 5952 form (lower case, the longest run of
 * two or more zero groups, the first of equals, as "::").
 */
export function formatNetwork(family: 4 | 6, value: bigint, prefix: number): string {
  if (family === 4)
    return `${[24n, 16n, 8n, 0n].map((s) => Number((value >> s) & 0xffn)).join(".")}/${prefix}`;
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(":");
  const text =
    best.at < 0 ? hex(groups) : `${hex(groups.slice(0, best.at))}::${hex(groups.slice(best.at + best.len))}`;
  return `${text}/${prefix}`;
}
