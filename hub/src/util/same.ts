/** The same keys with the same values (labels, tags); both absent counts as the same. */
export function sameRecord(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  // Counted, not listed: a refresh compares every instance's tags, and Object.keys made two
  // arrays each time.
  let n = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    if (!Object.hasOwn(b, k) || a[k] !== b[k]) return false;
    n++;
  }
  for (const k in b) if (Object.hasOwn(b, k)) n--;
  return n === 0;
}

/** The same addresses in the same order (a node's status.addresses is an ordered list). */
export function sameAddresses(
  a: readonly { readonly type: string; readonly address: string }[],
  b: readonly { readonly type: string; readonly address: string }[],
): boolean {
  return a.length === b.length && a.every((x, i) => x.type === b[i]?.type && x.address === b[i]?.address);
}
