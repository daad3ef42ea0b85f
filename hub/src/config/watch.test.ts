import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, test } from "@jest/globals";
import { watchFile } from "./watch.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-watch-"));
  dirs.push(dir);
  const path = join(dir, "hub.yaml");
  writeFileSync(path, text);
  return path;
}

test("reports each new content once, not a rewrite of the same bytes nor an unreadable moment", () => {
  const path = tempFile("clusters: []\n");
  const seen: string[] = [];
  // A long interval: the test drives the polls with check().
  const w = watchFile(path, (t) => seen.push(t), 60_000);
  try {
    w.check();
    writeFileSync(path, "clusters: []\n");
    w.check();
    expect(seen).toEqual([]);
    writeFileSync(path, "clusters: [{name: a}] # zürich\n");
    w.check();
    w.check();
    expect(seen).toEqual(["clusters: [{name: a}] # zürich\n"]);
    rmSync(path);
    w.check();
    expect(seen).toHaveLength(1);
    // A ConfigMap update: the new file swapped in whole.
    writeFileSync(`${path}.new`, "clusters: [{name: b}]\n");
    renameSync(`${path}.new`, path);
    w.check();
    expect(seen).toEqual(["clusters: [{name: a}] # zürich\n", "clusters: [{name: b}]\n"]);
  } finally {
    w.stop();
  }
});
