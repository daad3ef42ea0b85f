// A real HTTP server on 127.0.0.1:0 for the REST kit's tests: each test sets how it answers,
// and can wait until a request has arrived (so a fake clock is advanced only once it is in flight).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

export type Handler = (req: SeenRequest, res: ServerResponse) => void;

export interface LocalServer {
  readonly url: string;
  readonly seen: SeenRequest[];
  answer(handler: Handler): void;
  /** Resolves once `n` requests in all have arrived. */
  arrived(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startServer(): Promise<LocalServer> {
  let handler: Handler = (_req, res) => res.end();
  const seen: SeenRequest[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      const r = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      seen.push(r);
      for (const w of waiters.filter((w) => seen.length >= w.n)) w.resolve();
      handler(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    answer(h) {
      handler = h;
    },
    arrived(n) {
      return seen.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers JSON with `status`. */
export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
