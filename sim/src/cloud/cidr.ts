import { isIP } from "node:net";

/** A parsed CIDR: family, prefix length and the address as a big integer. */
export interface Cidr {
  readonly family: 4 | 6;
  readonly prefix: number;
  readonly value: bigint;
}

/** Parses "a.b.c.d/n" or "x:y::z/n"; undefined when it is not a CIDR. */
export function parseCidr(text: string): Cidr | undefined {
  if (typeof text !== "string") return undefined;
  const slash = text.indexOf("/");
  if (slash < 0 || slash !== text.lastIndexOf("/")) return undefined;
  const address = text.slice(0, slash);
  const bits = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = Number(bits);
  const family = isIP(address);
  if (family === 4 && prefix <= 32) return { family: 4, prefix, value: ipv4Value(address) };
  if (family === 6 && prefix <= 128 && !address.includes(".") && !address.includes("%")) {
    return { family: 6, prefix, value: ipv6Value(address) };
  }
  return undefined;
}

/** True when every bit after the prefix is zero ("10.0.1.0/24", not "10.0.1.5/24"). */
export function isNetworkAddress(c: Cidr): boolean {
  const width = c.family === 4 ? 32n : 128n;
  const hostBits = width - BigInt(c.prefix);
  return (c.value & ((1n << hostBits) - 1n)) === 0n;
}

/** The same key for every spelling of one network ("fd00::/64" and "fd00:0::/64"). */
export function cidrKey(c: Cidr): string {
  return `${c.family}/${c.value.toString(16)}/${c.prefix}`;
}

function ipv4Value(address: string): bigint {
  return address.split(".").reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6Value(address: string): bigint {
  const [head = "", tail] = address.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const zeros = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(zeros).fill("0"), ...tailGroups];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}
