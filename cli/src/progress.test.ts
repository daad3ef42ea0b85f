import { describe, expect, test } from "@jest/globals";
import { Progress } from "./progress.js";

/** A fake terminal: keeps what was written and renders it as a terminal shows it. */
class FakeTerminal {
  readonly isTTY: boolean;
  readonly columns: number | undefined;
  readonly chunks: string[] = [];
  constructor(tty: boolean, columns?: number) {
    this.isTTY = tty;
    this.columns = columns;
  }
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return true;
  }
  /** The screen's lines: \r returns to the line's start, ESC[2K clears it, \n ends it. */
  screen(): string[] {
    const lines = [""];
    const clear = "\x1b[2K";
    for (const part of this.chunks.join("").split(new RegExp(`(\r|${clear.replace("[", "\\[")}|\n)`))) {
      if (part === "\r" || part === "") continue;
      if (part === clear) lines[lines.length - 1] = "";
      else if (part === "\n") lines.push("");
      else lines[lines.length - 1] += part;
    }
    return lines;
  }
}

describe("Progress", () => {
  test("on a terminal: one status line, rewritten in place, with the time elapsed", () => {
    const term = new FakeTerminal(true);
    let now = 1000;
    const p = new Progress({ stream: term, now: () => now });
    p.update("starting 3 clusters");
    now += 1500;
    p.update("initialized 4/15 nodes");
    expect(term.screen()).toEqual(["initialized 4/15 nodes (1.5 s)"]);
    expect(term.chunks.join("")).not.toContain("\n");
    p.done();
    expect(term.screen()).toEqual([""]);
  });

  test("output of another stream goes above the status line, which is drawn again", () => {
    const term = new FakeTerminal(true);
    const p = new Progress({ stream: term, now: () => 0 });
    p.update("initialized 0/5 nodes");
    p.around(() => term.write("hub listening on 127.0.0.1:1234\n"));
    expect(term.screen()).toEqual(["hub listening on 127.0.0.1:1234", "initialized 0/5 nodes (0.0 s)"]);
    p.done("done");
    expect(term.screen()).toEqual(["hub listening on 127.0.0.1:1234", ""]);
  });

  test("a status wider than the terminal is cut to fit (a wrapped line could not be rewritten)", () => {
    const term = new FakeTerminal(true, 20);
    const p = new Progress({ stream: term, now: () => 0 });
    p.update("initialized 12345/25000 nodes, 10/5000 Services");
    const [line] = term.screen();
    expect(line).toBe("initialized 12345/…");
    expect(line?.length).toBe(19);
  });

  test("not a terminal: writes nothing at all", () => {
    const pipe = new FakeTerminal(false);
    const p = new Progress({ stream: pipe });
    expect(p.active).toBe(false);
    p.update("initialized 1/5 nodes");
    let wrote = false;
    p.around(() => {
      wrote = true;
    });
    p.done("all done");
    expect(wrote).toBe(true);
    expect(pipe.chunks).toEqual([]);
  });

  test("not a terminal, verbose: one plain line per new status, no control characters", () => {
    const pipe = new FakeTerminal(false);
    const p = new Progress({ stream: pipe, verbose: true });
    p.update("initialized 1/5 nodes");
    p.update("initialized 1/5 nodes");
    p.update("initialized 5/5 nodes");
    p.done("converged");
    expect(pipe.chunks.join("")).toBe("initialized 1/5 nodes\ninitialized 5/5 nodes\nconverged\n");
  });
});
