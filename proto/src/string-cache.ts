/** Strings longer than this are neither looked up nor kept: names and label values fit, blobs do not. */
const MAX_LENGTH = 128;
/** Slots of the cache (a power of two): 16,384 references, 128 KiB. */
const SLOTS = 1 << 14;
const MASK = SLOTS - 1;

/**
 * One copy of each short ASCII string a process keeps many of. Every Node carries the same label
 * values, taint keys, condition reasons and messages and address types ("sim-east-1", "linux",
 * "KubeletReady", "InternalIP"), and every decoded message or parsed JSON object makes a new copy
 * of each: at 25,000 nodes, 30 of the 48 MiB of strings in the hub's heap were such copies, and
 * 4.6 of the agent's 32 MiB of live heap at 5,000 Nodes + 5,000 Services. Each copy is an object
 * for every major collection to mark. A direct-mapped cache, not a table: bounded (a slot is
 * overwritten by the next string that hashes to it), no growth or clearing, so unique values
 * (names, uids, addresses) cost a slot write and nothing more. In the hub, sharing a copy across
 * clusters tells nobody anything: a string is immutable and equal to what the other cluster sent.
 */
export class StringCache {
  private readonly slots: (string | undefined)[] = new Array<string | undefined>(SLOTS).fill(undefined);

  /**
   * The string of bytes[from, end) when they are all ASCII (the cached copy if there is one, else
   * a new one, then cached); undefined otherwise, for the caller's own UTF-8 decoding.
   */
  ascii(bytes: Buffer, from: number, end: number): string | undefined {
    const len = end - from;
    if (len === 0) return "";
    if (len > MAX_LENGTH) return undefined;
    let h = 0x811c9dc5;
    for (let i = from; i < end; i++) {
      const b = bytes[i] as number;
      if (b > 0x7f) return undefined;
      h = Math.imul(h ^ b, 0x01000193);
    }
    const slot = h & MASK;
    const held = this.slots[slot];
    if (held !== undefined && held.length === len && sameBytes(held, bytes, from)) return held;
    const s = bytes.toString("latin1", from, end);
    this.slots[slot] = s;
    return s;
  }

  /** The cached copy of `s` (ASCII and short), after caching `s` when there was none. */
  intern(s: string): string {
    const len = s.length;
    if (len > MAX_LENGTH || len === 0) return s;
    let h = 0x811c9dc5;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) return s;
      h = Math.imul(h ^ c, 0x01000193);
    }
    const slot = h & MASK;
    const held = this.slots[slot];
    if (held === s) return held;
    this.slots[slot] = s;
    return s;
  }

  /**
   * A copy of a string map with its values interned (JSON.parse and the protobuf decoder share
   * keys already). Own properties only, defined as such: a key called __proto__ stays a key.
   */
  internValues(r: Readonly<Record<string, string>>): Record<string, string> {
    return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, this.intern(v)]));
  }
}

function sameBytes(s: string, bytes: Buffer, from: number): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== bytes[from + i]) return false;
  return true;
}

/**
 * The process's one cache. In the hub, agents' messages and the clouds' instance lists share
 * their copies; in the agent, the objects its informers keep.
 */
export const sharedStrings = new StringCache();
