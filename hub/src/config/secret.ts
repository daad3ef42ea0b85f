import { readFileSync } from "node:fs";
import { z } from "zod";

/**
 * A reference to a secret: a file (Kubernetes Secret volume, Vault agent) or an
 * environment variable. Secrets are never inlined in the config, so the config
 * itself can be logged, diffed and committed.
 */
export const SecretRefSchema = z.union([
  z.object({ file: z.string().min(1) }).strict(),
  z.object({ env: z.string().min(1) }).strict(),
]);
export type SecretRef = z.infer<typeof SecretRefSchema>;

export class SecretError extends Error {
  override name = "SecretError";
}

/** Reads the secret; `field` names the config field in errors (never the value). */
export function resolveSecret(ref: SecretRef, field: string, env: NodeJS.ProcessEnv = process.env): string {
  let value: string | undefined;
  if ("file" in ref) {
    try {
      value = readFileSync(ref.file, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      throw new SecretError(`${field}: cannot read secret file ${ref.file} (${code})`);
    }
  } else {
    value = env[ref.env];
    if (value === undefined) throw new SecretError(`${field}: environment variable ${ref.env} is not set`);
  }
  const trimmed = value.trim();
  if (trimmed === "") throw new SecretError(`${field}: the secret is empty`);
  return trimmed;
}
