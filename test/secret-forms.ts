/**
 * The forms in which a secret would show if something printed it carelessly: whole, its first
 * characters, base64 and hex; for a PEM key, pieces of its base64 body, of its base64 and hex
 * encodings (a Secret's data, a hex dump) and the bytes of a serialized Buffer. The secret-scan tests look for every form of every secret everywhere.
 */
export function secretForms(secret: string): string[] {
  if (!secret.startsWith("-----BEGIN"))
    return [
      secret,
      secret.slice(0, 12),
      Buffer.from(secret).toString("base64"),
      Buffer.from(secret).toString("hex"),
    ];
  // A PEM key's header and DER prefix are the same for every key of its kind: its middle is its own.
  const body = secret
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("-----"))
    .join("");
  const mid = Math.floor(body.length / 2);
  const bytes = Buffer.from(secret);
  const at = Math.floor(bytes.length / 2);
  const b64 = bytes.toString("base64");
  return [
    secret,
    JSON.stringify(secret),
    body.slice(mid, mid + 24),
    b64.slice(Math.floor(b64.length / 2), Math.floor(b64.length / 2) + 40),
    bytes.toString("hex").slice(at * 2, at * 2 + 40),
    [...bytes.subarray(at, at + 16)].join(","),
  ];
}

/** Where each secret (by index) shows in which text, in any of its forms. */
export function scanForSecrets(secrets: readonly string[], texts: Record<string, string>): string[] {
  const leaks: string[] = [];
  for (const [where, text] of Object.entries(texts))
    secrets.forEach((secret, i) => {
      for (const form of secretForms(secret)) if (text.includes(form)) leaks.push(`secret #${i} in ${where}`);
    });
  return [...new Set(leaks)];
}
