import { readFileSync } from "node:fs";

/**
 * Calls `onChange` with the file's new text whenever its content changes. Polls (a Kubernetes
 * ConfigMap volume swaps a symlink, which fs.watch misses); `check()` looks at once (SIGHUP).
 */
export function watchFile(
  path: string,
  onChange: (text: string) => void,
  intervalMs = 1000,
): { check(): void; stop(): void } {
  const read = (): string | undefined => {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  };
  let last = read();
  const check = () => {
    const text = read();
    // Unreadable mid-update: keep what runs, look again next time.
    if (text === undefined || text === last) return;
    last = text;
    onChange(text);
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
