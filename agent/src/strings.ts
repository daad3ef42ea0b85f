/**
 * One shared copy of the strings that repeat across a cluster's objects: label values, taint
 * keys, condition reasons, address types, the timestamps of a join storm. JSON.parse makes a
 * new string for every value, so 5,000 cached nodes held 5,000 copies of
 * "node.cloudprovider.kubernetes.io/uninitialized" (4.6 of the agent's 32 MiB of live heap at
 * 5,000 nodes + 5,000 Services were such copies). Only fields that repeat go through it; names,
 * uids and resource versions do not. Bounded: when full it starts over, so a value that stops
 * recurring is not kept for long.
 */
export class StringTable {
  private readonly table = new Map<string, string>();

  constructor(private readonly max = 8192) {}

  get size(): number {
    return this.table.size;
  }

  intern<T extends string | undefined>(s: T): T {
    if (s === undefined) return s;
    const shared = this.table.get(s);
    if (shared !== undefined) return shared as T;
    if (this.table.size >= this.max) this.table.clear();
    this.table.set(s, s);
    return s;
  }

  /** A copy of a string map with its values interned (keys are shared by JSON.parse already). */
  values(m: Record<string, string> | undefined): Record<string, string> | undefined {
    if (m === undefined) return undefined;
    const out: Record<string, string> = {};
    for (const k in m) out[k] = this.intern(m[k] as string);
    return out;
  }
}
