import { readFileSync, statSync } from "node:fs";
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

/**
 * Credentials of an account: one reference, or named references (`{apiKey: {file: ...}}`)
 * whose names the account's provider defines and checks.
 */
export const CredentialRefsSchema = z.union([SecretRefSchema, z.record(z.string(), SecretRefSchema)], {
  error: () => `${SECRET_FORMS}; or named references, e.g. {apiKey: {file: /path}}, as the provider asks`,
});
export type CredentialRefs = z.infer<typeof CredentialRefsSchema>;

/** Named references of `refs`: a single reference is named "". */
export function namedRefs(refs: CredentialRefs): [name: string, ref: SecretRef][] {
  if ("file" in refs && typeof refs.file === "string") return [["", { file: refs.file }]];
  if ("env" in refs && typeof refs.env === "string") return [["", { env: refs.env }]];
  return Object.entries(refs as Record<string, SecretRef>);
}

/**
 * A secret read again whenever its file changes (a rotated Kubernetes Secret), so credentials
 * rotate without a restart. A file that cannot be read or is empty mid-rotation keeps the last
 * good value. Never logged.
 */
export class RotatingSecret {
  private value: string;
  private stamp: string;

  constructor(
    private readonly ref: SecretRef,
    private readonly field: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.stamp = this.fileStamp();
    this.value = resolveSecret(ref, field, env);
  }

  current(): string {
    if (!("file" in this.ref)) return this.value;
    const stamp = this.fileStamp();
    if (stamp === this.stamp) return this.value;
    try {
      this.value = resolveSecret(this.ref, this.field, this.env);
      this.stamp = stamp;
    } catch {
      // Keep the last good value; the next call looks again.
    }
    return this.value;
  }

  private fileStamp(): string {
    if (!("file" in this.ref)) return "";
    try {
      const st = statSync(this.ref.file);
      return `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      return "";
    }
  }
}
