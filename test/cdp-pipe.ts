/**
 * A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (fd 3 to the browser,
 * fd 4 from it, NUL-separated JSON): enough for a test to drive a page, with no dependency.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

interface Pending {
  resolve(v: Record<string, unknown>): void;
  reject(e: Error): void;
}

export class HeadlessChromium {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private buffer = "";
  private session = "";

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const from = child.stdio[4] as Readable;
    from.on("data", (d: Buffer) => {
      this.buffer += d.toString();
      let nul = this.buffer.indexOf("\0");
      while (nul >= 0) {
        const msg = JSON.parse(this.buffer.slice(0, nul)) as {
          id?: number;
          result?: Record<string, unknown>;
          error?: { message: string };
        };
        this.buffer = this.buffer.slice(nul + 1);
        const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
        if (p !== undefined && msg.id !== undefined) {
          this.pending.delete(msg.id);
          if (msg.error) p.reject(new Error(msg.error.message));
          else p.resolve(msg.result ?? {});
        }
        nul = this.buffer.indexOf("\0");
      }
    });
  }

  static async launch(binary: string, size = "1280,1100"): Promise<HeadlessChromium> {
    const profile = mkdtempSync(join(tmpdir(), "fleet-page-cdp-"));
    const child = spawn(
      binary,
      [
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--remote-debugging-pipe",
        `--user-data-dir=${profile}`,
        `--window-size=${size}`,
        "about:blank",
      ],
      { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
    );
    const b = new HeadlessChromium(child, profile);
    const { targetInfos } = (await b.send("Target.getTargets")) as {
      targetInfos: { targetId: string; type: string }[];
    };
    const page = targetInfos.find((t) => t.type === "page");
    if (page === undefined) throw new Error("chromium opened no page");
    const { sessionId } = (await b.send("Target.attachToTarget", {
      targetId: page.targetId,
      flatten: true,
    })) as {
      sessionId: string;
    };
    b.session = sessionId;
    await b.send("Page.enable", {}, true);
    return b;
  }

  send(
    method: string,
    params: Record<string, unknown> = {},
    inPage = false,
  ): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const msg = { id, method, params, ...(inPage ? { sessionId: this.session } : {}) };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      (this.child.stdio[3] as Writable).write(`${JSON.stringify(msg)}\0`);
    });
  }

  async navigate(url: string): Promise<void> {
    await this.send("Page.navigate", { url }, true);
  }

  /** Evaluates an expression in the page and returns its value. */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.send(
      "Runtime.evaluate",
      { expression, returnByValue: true, awaitPromise: true },
      true,
    )) as {
      result: { value: T };
      exceptionDetails?: { text: string };
    };
    if (r.exceptionDetails) throw new Error(`${expression}: ${r.exceptionDetails.text}`);
    return r.result.value;
  }

  async screenshot(): Promise<Buffer> {
    const r = (await this.send("Page.captureScreenshot", { format: "png" }, true)) as { data: string };
    return Buffer.from(r.data, "base64");
  }

  async close(): Promise<void> {
    const exited = new Promise((r) => this.child.once("exit", r));
    await this.send("Browser.close").catch(() => undefined);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
    rmSync(this.profile, { recursive: true, force: true });
  }
}
