import { readFileSync } from "node:fs";
import { z } from "zod";

export const SECRET_FORMS =
  "a secret is given by reference, never inline: {file: /path} (a mounted Secret) or {env: NAME} (an environment variable)";

/**
 * A reference to a secret: a file (Kubernetes Secret volume, Vault agent) or an
 * environment variable. Secrets are never inlined in the config, so the config
 * itself can be logged, diffed and committed.
 */
export const SecretRefSchema = z.union(
  [z.object({ file: z.string().min(1) }).strict(), z.object({ env: z.string().min(1) }).strict()],
  // Never the value: it may be a secret someone pasted inline.
  { error: () => SECRET_FORMS },
);
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

/**
 * Resolves every secret a configuration references and returns one line per one that fails
 * (`field: why`), so --check-config reports them all at once. Values are never returned.
 */
export function secretProblems(
  refs: readonly (readonly [field: string, ref: SecretRef | undefined])[],
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const problems: string[] = [];
  for (const [field, ref] of refs) {
    if (ref === undefined) continue;
    try {
      resolveSecret(ref, field, env);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems;
}
