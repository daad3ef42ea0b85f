/**
 * HTTP plumbing for vendor fakes: a loopback server whose close() ends every pending call,
 * a router of (method, path pattern, operation), body readers for JSON and form (AWS query)
 * bodies, and one Exchange per call that answers once, logs the call and runs the spec hook.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { type ErrorRenderer, errorFields, FakeError, type WireAnswer } from "./errors.js";
import type { RequestLog } from "./request-log.js";
import type { SpecHook, SpecResponse } from "./spec.js";

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (status === 204) {
    sendText(res, 204, "", "", headers);
    return;
  }
  if (body === undefined) {
    // An answer with no body at all (ARM's 202 Accepted): no content type, length 0.
    if (!res.headersSent && !res.destroyed)
      res.writeHead(status, { "content-length": "0", ...headers }).end();
    return;
  }
  sendText(res, status, JSON.stringify(body), "application/json; charset=utf-8", headers);
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  contentType: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  if (status === 204) {
    res.writeHead(204, headers).end();
    return;
  }
  res
    .writeHead(status, {
      "content-type": contentType,
      "content-length": String(Buffer.byteLength(text)),
      ...headers,
    })
    .end(text);
}

/** The raw body; 413 PayloadTooLarge past `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > maxBytes) throw new FakeError(413, "PayloadTooLarge", "request body too large");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > maxBytes) throw new FakeError(413, "PayloadTooLarge", "request body too large");
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** The JSON body ({} when empty); 400 InvalidJSON when it does not parse. */
export async function readJsonBody(
  req: IncomingMessage,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
): Promise<unknown> {
  const raw = await readBody(req, maxBytes);
  if (raw.length === 0) return {};
  try {
    return JSON.parse(raw.toString("utf8")) as unknown;
  } catch {
    throw new FakeError(400, "InvalidJSON", "request body is not valid JSON");
  }
}

/**
 * An AWS query request's parameters: the form body of a POST merged over the query string
 * (`Action=DescribeInstances&Filter.1.Name=...`), as the vendor reads them.
 */
export async function readQueryParams(
  req: IncomingMessage,
  url: URL,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
): Promise<URLSearchParams> {
  const params = new URLSearchParams(url.searchParams);
  if (req.method === "POST") {
    const form = new URLSearchParams((await readBody(req, maxBytes)).toString("utf8"));
    for (const [k, v] of form) params.set(k, v);
  }
  return params;
}

/**
 * Resolves true after `ms`, or false as soon as `signal` aborts. Timers are unref'd so a
 * forgotten fake never holds a test process open.
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

// --- routing -------------------------------------------------------------------------------

/** A route: the method, a path pattern whose groups are the path parameters, an operation name. */
export interface RouteLike {
  readonly method: string;
  readonly pattern: RegExp;
  readonly op: string;
}

export type RouteMatch<R extends RouteLike> =
  | { readonly kind: "found"; readonly route: R; readonly params: readonly string[] }
  /** The path exists with other methods: answer 405 with `allow`. */
  | { readonly kind: "method"; readonly op: string; readonly allow: string }
  | { readonly kind: "unknown" };

/** Routes tried in order; path parameters are URI-decoded (a bad encoding is no match). */
export class Router<R extends RouteLike> {
  constructor(readonly routes: readonly R[]) {}

  match(method: string, pathname: string): RouteMatch<R> {
    let pathOp: string | undefined;
    const allow: string[] = [];
    for (const route of this.routes) {
      const m = route.pattern.exec(pathname);
      if (m === null) continue;
      const decoded = m.slice(1).map((p) => safeDecode(p ?? ""));
      if (decoded.some((p) => p === undefined)) return { kind: "unknown" };
      pathOp ??= route.op;
      allow.push(route.method);
      if (route.method === method) return { kind: "found", route, params: decoded as string[] };
    }
    return pathOp === undefined
      ? { kind: "unknown" }
      : { kind: "method", op: pathOp, allow: allow.join(", ") };
  }
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

// --- one call -------------------------------------------------------------------------------

export interface ExchangeOptions {
  readonly log: RequestLog;
  readonly renderer: ErrorRenderer;
  /** Calls in flight; FakeHttpServer.close() aborts them. */
  readonly inFlight: Set<AbortController>;
  readonly operation: string;
  readonly requestId: string;
  /** Header carrying the request id in every answer (e.g. "x-request-id", "x-amzn-requestid"). */
  readonly requestIdHeader?: string;
  /** Checks each answer against the vendor's spec (see spec.ts). */
  readonly spec?: SpecHook;
}

/** One answer per call: logs the outcome exactly once and writes unless the client left. */
export class Exchange {
  private done = false;
  /** Aborts when the client leaves or the fake closes. */
  readonly clientGone: AbortSignal;
  account: string;
  /** The fault injected into this call, for the log. */
  fault: string | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly opts: ExchangeOptions,
    account = "(unauthenticated)",
  ) {
    this.account = account;
    const gone = new AbortController();
    opts.inFlight.add(gone);
    res.on("close", () => {
      opts.inFlight.delete(gone);
      if (!res.writableFinished) gone.abort();
      if (!this.done) {
        this.done = true;
        this.logAs("aborted");
      }
    });
    this.clientGone = gone.signal;
  }

  get operation(): string {
    return this.opts.operation;
  }

  get requestId(): string {
    return this.opts.requestId;
  }

  get answered(): boolean {
    return this.done;
  }

  /** A JSON answer (204: no body). */
  answer(status: number, body: unknown, headers: Record<string, string> = {}): void {
    this.send({ status, body, headers });
  }

  /** An error in the vendor's shape. */
  fail(error: FakeError): void {
    this.send(this.opts.renderer.render(errorFields(error), this.opts));
  }

  send(answer: WireAnswer): void {
    if (this.done) return;
    this.done = true;
    this.logAs(String(answer.status));
    const headers: Record<string, string> = { ...answer.headers };
    if (this.opts.requestIdHeader !== undefined) headers[this.opts.requestIdHeader] = this.opts.requestId;
    const response: SpecResponse = {
      status: answer.status,
      headers,
      body: answer.body,
      ...(answer.contentType !== undefined && { contentType: answer.contentType }),
    };
    this.opts.spec?.checkResponse(this.opts.operation, response, this.requestInfo());
    if (typeof answer.body === "string") {
      sendText(
        this.res,
        answer.status,
        answer.body,
        answer.contentType ?? "text/plain; charset=utf-8",
        headers,
      );
    } else {
      sendJson(this.res, answer.status, answer.body, headers);
    }
  }

  private requestInfo(): { method: string; path: string } {
    return { method: this.req.method ?? "GET", path: this.req.url ?? "/" };
  }

  private logAs(outcome: string): void {
    const url = this.req.url ?? "/";
    const q = url.indexOf("?");
    this.opts.log.record({
      account: this.account,
      operation: this.opts.operation,
      method: this.req.method ?? "GET",
      path: q < 0 ? url : url.slice(0, q),
      query: q < 0 ? "" : url.slice(q + 1),
      requestId: this.opts.requestId,
      outcome,
      ...(this.fault !== undefined && { fault: this.fault }),
      ...(this.userAgent !== undefined && { userAgent: this.userAgent }),
    });
  }

  /** The caller's User-Agent (test doubles of a request may carry no headers at all). */
  private get userAgent(): string | undefined {
    const headers = this.req.headers as IncomingMessage["headers"] | undefined;
    return headers?.["user-agent"];
  }
}

// --- the server ------------------------------------------------------------------------------

/**
 * A loopback HTTP server for a fake. `handle` may be async; an error it throws is answered
 * by `onError` (default: a bare 500). close() aborts every call in flight (pending latency,
 * hangs) and drops keep-alive connections, so tests end at once.
 */
export class FakeHttpServer {
  readonly inFlight = new Set<AbortController>();
  private readonly server: Server;
  private baseUrl = "";

  private readonly scheme: "http" | "https";

  /**
   * `tls`: serve HTTPS with this certificate and key (PEM), for vendors whose SDK refuses plain
   * HTTP (Azure's bearer-token policy); the client trusts the certificate, nothing turns checks off.
   */
  constructor(
    handle: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void,
    onError: (err: unknown, res: ServerResponse) => void = (_err, res) => sendJson(res, 500, {}),
    tls?: { readonly cert: string; readonly key: string },
  ) {
    const listener = (req: IncomingMessage, res: ServerResponse) => {
      try {
        const work = handle(req, res);
        if (work instanceof Promise) work.catch((err: unknown) => onError(err, res));
      } catch (err) {
        onError(err, res);
      }
    };
    this.scheme = tls === undefined ? "http" : "https";
    this.server =
      tls === undefined
        ? createServer({ keepAlive: true }, listener)
        : createTlsServer({ keepAlive: true, cert: tls.cert, key: tls.key }, listener);
    // Hanging calls are part of the job; the defaults would cut them at 5 min anyway.
    this.server.requestTimeout = 0;
  }

  get url(): string {
    return this.baseUrl;
  }

  listen(port = 0, host = "127.0.0.1"): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        const address = this.server.address() as AddressInfo;
        const printable = address.family === "IPv6" ? `[${address.address}]` : address.address;
        this.baseUrl = `${this.scheme}://${printable}:${address.port}`;
        resolve();
      });
    });
  }

  close(): Promise<void> {
    for (const call of this.inFlight) call.abort();
    this.inFlight.clear();
    return new Promise((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/**
 * A fake's `start`: `fake` once `server` (the fake's own) listens, on an ephemeral loopback
 * port unless told. If it cannot listen (the port taken), the server is closed and the error
 * names the address, so a failed start leaves nothing open.
 */
export async function startFake<F>(
  fake: F,
  server: FakeHttpServer,
  at: { readonly port?: number; readonly host?: string } = {},
): Promise<F> {
  const host = at.host ?? "127.0.0.1";
  try {
    await server.listen(at.port ?? 0, host);
  } catch (err) {
    await server.close();
    throw new Error(`the fake cannot listen on ${host}:${at.port ?? 0}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return fake;
}
