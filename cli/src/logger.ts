import { type Logger, pino } from "pino";

/** pino JSON logs on stderr (stdout stays free for --json output); secrets are redacted by path. */
export function makeLogger(level: string, base: Record<string, unknown> = {}): Logger {
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
