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
  // Compared as bytes, decoded only when they changed: a Buffer's bytes are off the JS heap, so
  // a poll of an unchanged file leaves no text behind for the collector.
  const read = (): Buffer | undefined => {
    try {
      return readFileSync(path);
    } catch {
      return undefined;
    }
  };
  let last = read();
  const check = () => {
    const bytes = read();
    // Unreadable mid-update: keep what runs, look again next time.
    if (bytes === undefined || (last !== undefined && bytes.equals(last))) return;
    last = bytes;
    onChange(bytes.toString("utf8"));
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
