import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Registry } from "prom-client";

export interface HealthSources {
  /** Liveness: the process can serve (answered from start-up, whatever NATS does). */
  healthy(): boolean;
  /** Readiness: gRPC is listening and NATS is connected; returns what is missing, or null. */
  notReady(): string | null;
  readonly registry: Registry;
}

/** /healthz, /readyz and /metrics on their own port, apart from the agents' gRPC port. */
export async function startHttpServer(listen: string, sources: HealthSources): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405).end();
      return;
    }
    if (path === "/healthz") {
      const ok = sources.healthy();
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ok\n" : "unhealthy\n");
    } else if (path === "/readyz") {
      const why = sources.notReady();
      res
        .writeHead(why === null ? 200 : 503, { "content-type": "text/plain" })
        .end(why === null ? "ok\n" : `not ready: ${why}\n`);
    } else if (path === "/metrics") {
      sources.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": sources.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  return listenHttp(listen, server);
}

/** A server for the fleet API and page, on its own listener. */
export async function startApiServer(
  listen: string,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<Server> {
  const server = createServer((req, res) => {
    handler(req, res).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`${err.message}\n`);
    });
  });
  return listenHttp(listen, server);
}

async function listenHttp(listen: string, server: Server): Promise<Server> {
  const idx = listen.lastIndexOf(":");
  const host = listen.slice(0, idx).replace(/^\[|\]$/g, "");
  const port = Number(listen.slice(idx + 1));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
