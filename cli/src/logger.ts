import { type Logger, pino } from "pino";
import { UsageError } from "./flags.js";

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** pino JSON logs on stderr (stdout stays free for --json output); secrets are redacted by path. */
export function makeLogger(level: string, base: Record<string, unknown> = {}): Logger {
  if (!LEVELS.includes(level))
    throw new UsageError(`--log-level must be one of ${LEVELS.join(", ")}, got "${level}"`);
  return pino(
    {
      level,
      base: { ...base },
      redact: {
        paths: ["token", "password", "credential", "*.token", "*.password", "*.credential"],
        censor: "[redacted]",
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    pino.destination(2),
  );
}
