import { parseArgs } from "node:util";

export interface FlagSpec {
  readonly type: "string" | "boolean";
  readonly description: string;
  /** Shown in help and used when the flag is absent. */
  readonly default?: string | boolean;
  readonly placeholder?: string;
  readonly multiple?: boolean;
  /** One-letter alias (`-o`). */
  readonly short?: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly flags: FlagSpecs;
  /** The name of the command's one positional argument (`register <cluster>`), if it has one. */
  readonly positional?: string;
  run(values: FlagValues): Promise<number>;
}

export type FlagValues = Readonly<Record<string, string | boolean | string[] | undefined>>;

export class UsageError extends Error {
  override name = "UsageError";
}

/** --help text listing every flag with its default. */
export function helpText(cmd: Command): string {
  const rows = Object.entries({
    ...cmd.flags,
    help: { type: "boolean", description: "Show this help." } as FlagSpec,
  }).map(([name, f]) => {
    const alias = f.short === undefined ? "" : `-${f.short}, `;
    const left = `  ${alias}--${name}${f.type === "string" ? ` ${f.placeholder ?? "VALUE"}` : ""}`;
    const def = f.default === undefined || f.default === false ? "" : ` (default: ${String(f.default)})`;
    return [left, `${f.description}${def}${f.multiple ? " Repeatable." : ""}`] as const;
  });
  const width = Math.max(...rows.map(([l]) => l.length)) + 2;
  return [
    `fleet-ccm ${cmd.name}: ${cmd.summary}`,
    "",
    `Usage: ${cmd.usage}`,
    "",
    "Flags:",
    ...rows.map(([l, r]) => l.padEnd(width) + r),
    "",
  ].join("\n");
}

/** Parses argv for a command; unknown flags and missing values are usage errors. */
export function parseFlags(cmd: Command, argv: readonly string[]): FlagValues | "help" {
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }> = {
    help: { type: "boolean" },
  };
  for (const [name, f] of Object.entries(cmd.flags))
    options[name] = {
      type: f.type,
      multiple: f.multiple ?? false,
      ...(f.short === undefined ? {} : { short: f.short }),
    };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: cmd.positional !== undefined,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.values["help"] === true) return "help";
  const out: Record<string, string | boolean | string[] | undefined> = {};
  if (cmd.positional !== undefined) {
    if (parsed.positionals.length !== 1)
      throw new UsageError(`expected one <${cmd.positional}>, got ${parsed.positionals.length}`);
    out[cmd.positional] = parsed.positionals[0];
  }
  for (const [name, f] of Object.entries(cmd.flags)) {
    const v = parsed.values[name];
    out[name] = v === undefined ? f.default : (v as string | boolean | string[]);
  }
  return out;
}

export function str(v: FlagValues, name: string): string | undefined {
  const x = v[name];
  return typeof x === "string" && x !== "" ? x : undefined;
}

export function requiredStr(v: FlagValues, name: string): string {
  const x = str(v, name);
  if (x === undefined) throw new UsageError(`--${name} is required`);
  return x;
}

export function int(v: FlagValues, name: string, min = 0): number {
  const raw = str(v, name);
  const n = raw === undefined ? Number.NaN : Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${name} must be an integer >= ${min}, got "${raw ?? ""}"`);
  return n;
}

export function bool(v: FlagValues, name: string): boolean {
  return v[name] === true;
}
