import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@jest/globals";
import { namedRefs, RotatingSecret } from "./secret.js";

test("a file secret is read again when the file changes (rotation without restart)", () => {
  const dir = mkdtempSync(join(tmpdir(), "fccm-secret-"));
  try {
    const file = join(dir, "key");
    writeFileSync(file, "first\n");
    const s = new RotatingSecret({ file }, "accounts[0].credentials");
    expect(s.current()).toBe("first");
    writeFileSync(file, "second-key\n");
    expect(s.current()).toBe("second-key");
    // Mid-rotation (empty or missing file): the last good value stays.
    writeFileSync(file, "");
    expect(s.current()).toBe("second-key");
    rmSync(file);
    expect(s.current()).toBe("second-key");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a bad reference names its field, never a value", () => {
  expect(() => new RotatingSecret({ env: "NOPE_NOT_SET" }, "accounts[2].credentials.apiKey", {})).toThrow(
    /^accounts\[2\]\.credentials\.apiKey: environment variable NOPE_NOT_SET is not set$/,
  );
});

test("credentials are one reference or named ones", () => {
  expect(namedRefs({ env: "K" })).toEqual([["", { env: "K" }]]);
  expect(namedRefs({ apiKey: { file: "/k" } })).toEqual([["apiKey", { file: "/k" }]]);
});
