/** A seeded random source (mulberry32): the same seed gives the same ids, keys and fault draws. */
export interface RandomSource {
  /** Uniform in [0, 1). */
  next(): number;
  /** `digits` lowercase hex digits. */
  hex(digits: number): string;
}

export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  const nextUint32 = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return {
    next: () => nextUint32() / 4294967296,
    hex(digits) {
      let out = "";
      while (out.length < digits) out += nextUint32().toString(16).padStart(8, "0");
      return out.slice(0, digits);
    },
  };
}
