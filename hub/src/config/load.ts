import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { type ConfigIssue, crossFieldIssues, type HubConfig, HubConfigSchema } from "./schema.js";
import { namedRefs, secretProblems } from "./secret.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? String(p) : `.${String(p)}`;
  return out === "" ? "(root)" : out;
}

/** One line per problem, each naming the field: `clusters[2].account: unknown account "main"`. */
export function formatIssues(issues: readonly (z.core.$ZodIssue | ConfigIssue)[]): string {
  const lines = issues.map((i) => `${formatPath(i.path)}: ${i.message}`);
  return [...new Set(lines)].join("\n");
}

export function parseHubConfig(text: string, source = "config"): HubConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${source}: not valid YAML: ${(err as Error).message}`);
  }
  const result = HubConfigSchema.safeParse(raw ?? {});
  // Zod stops at a field of the wrong type; the cross-field checks run regardless.
  const issues = [...(result.success ? [] : result.error.issues), ...crossFieldIssues(raw ?? {})];
  if (issues.length > 0) throw new ConfigError(`${source} is invalid:\n${formatIssues(issues)}`);
  if (!result.success) throw new ConfigError(`${source} is invalid`);
  return result.data;
}

export function loadHubConfig(path: string): HubConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
  return parseHubConfig(text, path);
}

/** Every secret of a valid configuration that cannot be resolved, one line each. */
export function configSecretProblems(cfg: HubConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  return secretProblems(
    [
      ["nats.password", cfg.nats.password],
      ["nats.credentials", cfg.nats.credentials],
      ["nats.operator.signingKey", cfg.nats.operator?.signingKey],
      ["nats.operator.systemCredentials", cfg.nats.operator?.systemCredentials],
      ["api.token", cfg.api?.token],
      ...cfg.accounts.flatMap((a, i) =>
        namedRefs(a.credentials).map(
          ([name, ref]) => [`accounts[${i}].credentials${name === "" ? "" : `.${name}`}`, ref] as const,
        ),
      ),
      ...cfg.clusters.map((c, i) => [`clusters[${i}].token`, c.token] as const),
    ],
    env,
  );
}
