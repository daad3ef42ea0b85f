import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { type HubConfig, HubConfigSchema } from "./schema.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? String(p) : `.${String(p)}`;
  return out === "" ? "(root)" : out;
}

/** One line per problem, each naming the field: `clusters[2].token: Invalid input`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join("\n");
}

export function parseHubConfig(text: string, source = "config"): HubConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${source}: not valid YAML: ${(err as Error).message}`);
  }
  const result = HubConfigSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(`${source} is invalid:\n${formatIssues(result.error.issues)}`);
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
