// Every built-in provider has its page, docs/providers/<name>.md, and all pages have the same
// `## ` sections in the same order, so a reader finds the same answer in the same place for every
// cloud. The README's provider table links to each page, and every relative link of the pages and
// of the README reaches a file and, where it names one, a heading that exists.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "@jest/globals";
import { builtinProviders } from "../hub/src/cloud/builtin.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PAGES = join(ROOT, "docs", "providers");
const NAMES = builtinProviders.map((p) => p.name);

const read = (path: string): string => readFileSync(path, "utf8");

/** Markdown outside fenced code blocks (a `## ` or a link inside a YAML or shell block is not one). */
function prose(markdown: string): string {
  return markdown
    .split(/^```.*$/m)
    .filter((_, i) => i % 2 === 0)
    .join("\n");
}

function headings(markdown: string, level: number): string[] {
  const marker = `${"#".repeat(level)} `;
  return prose(markdown)
    .split("\n")
    .filter((l) => l.startsWith(marker))
    .map((l) => l.slice(marker.length).trim());
}

/** GitHub's anchors of a document's headings (lowercased, punctuation dropped, `-n` for repeats). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(markdown).split("\n")) {
    const m = /^#{1,6} (.+)$/.exec(line);
    if (m === null) continue;
    const base = (m[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative link targets of a document's prose: `[text](target)`, web addresses left out. */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? "")
    .filter((t) => !/^[a-z]+:/i.test(t));
}

function providersSection(readme: string): string {
  const start = readme.indexOf("\n## Providers\n");
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

describe("provider pages", () => {
  test("the hub ships at least the three providers the docs describe", () => {
    expect(NAMES).toEqual(expect.arrayContaining(["simulated", "linode", "aws"]));
  });

  test.each(NAMES)("%s has docs/providers/<name>.md", (name) => {
    expect(existsSync(join(PAGES, `${name}.md`))).toBe(true);
  });

  test("every page has the same `## ` sections in the same order", () => {
    const [first, ...rest] = NAMES.map((name) => ({
      name,
      sections: headings(read(join(PAGES, `${name}.md`)), 2),
    }));
    expect(first).toBeDefined();
    if (first === undefined) return;
    expect(first.sections.length).toBeGreaterThanOrEqual(10);
    expect(new Set(first.sections).size).toBe(first.sections.length);
    for (const page of rest)
      expect({ name: page.name, sections: page.sections }).toEqual({ ...first, name: page.name });
  });

  test("no section is left empty", () => {
    for (const name of NAMES) {
      const parts = prose(read(join(PAGES, `${name}.md`)))
        .split(/^## .*$/m)
        .slice(1);
      for (const part of parts) expect({ name, empty: part.trim() === "" }).toEqual({ name, empty: false });
    }
  });

  test("the README's provider table has a row per provider that links to its page", () => {
    const section = providersSection(read(join(ROOT, "README.md")));
    for (const name of NAMES) {
      const row = section.split("\n").find((l) => l.startsWith(`| \`${name}\` |`));
      expect({ name, row: row !== undefined }).toEqual({ name, row: true });
      expect(row).toContain(`](docs/providers/${name}.md)`);
    }
  });
});

describe("relative links of the README and the provider pages", () => {
  const docs = [
    join(ROOT, "README.md"),
    ...NAMES.map((n) => join(PAGES, `${n}.md`)),
    join(PAGES, "README.md"),
  ];
  test.each(docs.map((d) => [d.slice(ROOT.length), d]))(
    "%s: every relative link reaches its file and heading",
    (_, doc) => {
      const broken: string[] = [];
      for (const link of relativeLinks(read(doc))) {
        const [path = "", anchor] = link.split("#");
        const target = path === "" ? doc : resolve(dirname(doc), path);
        if (!existsSync(target)) {
          broken.push(`${link}: no such file`);
          continue;
        }
        if (anchor !== undefined && target.endsWith(".md") && !anchors(read(target)).has(anchor))
          broken.push(`${link}: no such heading`);
      }
      expect(broken).toEqual([]);
    },
  );
});
