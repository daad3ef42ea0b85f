import http, { STATUS_CODES } from "node:http";
import https from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

// biome-ignore lint/suspicious/noExplicitAny: client-node's Watch callback signature
type WatchCallback = (phase: string, apiObj: any, watchObj?: any) => void;

/**
 * A watch request as client-node's `Watch.watch` makes it (the same URL, credentials, keep-alive
 * agent and TCP keep-alive of 30 s; one JSON event per line; a line that does not parse is
 * skipped; `done` once, with the HTTP status as `statusCode` when the answer is not 200, with
 * null when the stream ends), over node:http(s) instead of node-fetch, a PassThrough and
 * readline: those were most of the agents' watch cost in the bench's fleet.
 */
export async function watchOverHttp(
  kc: KubeConfig,
  path: string,
  queryParams: Record<string, string | number | boolean | undefined>,
  callback: WatchCallback,
  // biome-ignore lint/suspicious/noExplicitAny: client-node's Watch done signature
  done: (err: any) => void,
): Promise<AbortController> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("No currently active cluster");
  const url = new URL(cluster.server + path);
  url.searchParams.set("watch", "true");
  for (const [k, v] of Object.entries(queryParams)) if (v !== undefined) url.searchParams.set(k, String(v));
  const options: https.RequestOptions = { method: "GET", headers: { Accept: "application/json" } };
  await kc.applyToHTTPSOptions(options);
  const controller = new AbortController();
  options.signal = controller.signal;
  let doneCalled = false;
  const doneOnce = (err: unknown): void => {
    if (doneCalled) return;
    doneCalled = true;
    controller.abort();
    done(err);
  };
  const deliver = (line: string): void => {
    if (line === "") return;
    try {
      const data = JSON.parse(line) as { type: string; object: unknown };
      callback(data.type, data.object, data);
    } catch {
      // As client-node: a line that does not parse is skipped.
    }
  };
  const req = (url.protocol === "https:" ? https : http).request(url, options, (res) => {
    res.socket.setKeepAlive(true, 30_000);
    res.on("error", doneOnce);
    if (res.statusCode !== 200) {
      const status = res.statusCode ?? 500;
      const error = new Error(res.statusMessage || STATUS_CODES[status] || "Internal Server Error");
      (error as Error & { statusCode: number }).statusCode = status;
      res.resume();
      doneOnce(error);
      return;
    }
    res.setEncoding("utf8");
    let rest = "";
    res.on("data", (chunk: string) => {
      let from = 0;
      let nl = chunk.indexOf("\n");
      if (nl === -1) {
        rest += chunk;
        return;
      }
      deliver(rest + chunk.slice(0, nl));
      from = nl + 1;
      for (nl = chunk.indexOf("\n", from); nl !== -1; nl = chunk.indexOf("\n", from)) {
        deliver(chunk.slice(from, nl));
        from = nl + 1;
      }
      rest = chunk.slice(from);
    });
    res.on("end", () => {
      deliver(rest);
      doneOnce(null);
    });
    res.on("close", () => doneOnce(null));
  });
  req.on("error", doneOnce);
  req.end();
  return controller;
}
