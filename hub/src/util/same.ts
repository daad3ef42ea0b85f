/** The same keys with the same values (labels, tags); both absent counts as the same. */
export function sameRecord(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** The same addresses in the same order (a node's status.addresses is an ordered list). */
export function sameAddresses(
  a: readonly { readonly type: string; readonly address: string }[],
  b: readonly { readonly type: string; readonly address: string }[],
): boolean {
  return a.length === b.length && a.every((x, i) => x.type === b[i]?.type && x.address === b[i]?.address);
}
