import type { IncomingMessage, ServerResponse } from "node:http";
import { SimCloudError } from "./store.js";

/** Admin bodies can be big (batch creation of 25k instances); the public API has none. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  if (status === 204) {
    res.writeHead(204, headers).end();
    return;
  }
  const text = JSON.stringify(body);
  res
    .writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(text)),
      ...headers,
    })
    .end(text);
}

export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw new SimCloudError(413, "PayloadTooLarge", "request body too large");
    chunks.push(buf);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new SimCloudError(400, "InvalidJSON", "request body is not valid JSON");
  }
}

/**
 * Resolves true after `ms`, or false as soon as `signal` aborts. Timers are unref'd so a
 * forgotten cloud never holds a test process open.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    timer.unref();
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
