/**
 * How a RestClient puts one request on the wire. By default undici's dispatcher with a handler
 * of our own that gathers the answer's bytes: the global fetch builds WHATWG streams and abort
 * signals for every request and answer (in a storm of load-balancer calls, over half of the
 * hub's CPU per call), and undici's `request` still a Readable body stream and a request handler
 * per answer. A client given its own fetch (an account's private CA) sends through it. Neither
 * follows a redirect: a redirect is not an answer, and following one could carry the token
 * elsewhere.
 */
import type { IncomingHttpHeaders } from "node:http";
import { type Dispatcher, getGlobalDispatcher } from "undici";
import type { Fetch, HttpMethod } from "./rest-client.js";

export interface SendInit {
  readonly method: HttpMethod;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly cancel: Cancel;
}

/**
 * Cancels one request: the caller's timeout or signals call `cancel` once, the transport hooks its
 * abort with `onCancel`. Plain calls, no AbortController and no EventTarget per request: at a
 * storm's rate those were a visible share of each call's CPU.
 */
export class Cancel {
  private why: Error | undefined;
  private hook: ((reason: Error) => void) | undefined;

  get reason(): Error | undefined {
    return this.why;
  }

  /** The first reason wins; later calls do nothing. */
  cancel(reason: Error): void {
    if (this.why !== undefined) return;
    this.why = reason;
    this.hook?.(reason);
  }

  /** The transport's abort: called now if already cancelled, else on cancel. */
  onCancel(hook: (reason: Error) => void): void {
    this.hook = hook;
    if (this.why !== undefined) hook(this.why);
  }
}

/** What the client reads of an answer's headers (names lowercase). */
export interface AnswerHeaders {
  get(name: string): string | null;
}

/** A whole answer: its body read to the end. */
export interface Answer {
  readonly status: number;
  readonly headers: AnswerHeaders;
  readonly text: string;
}

export type Send = (url: string, init: SendInit) => Promise<Answer>;

const ORIGIN = /^(https?:\/\/[^/?#]+)(.*)$/;

/** undici's global dispatcher (kept-alive connections); no redirects followed. */
export const undiciSend: Send = (url, init) =>
  new Promise<Answer>((resolve, reject) => {
    const parts = ORIGIN.exec(url);
    if (parts === null) {
      reject(new TypeError(`not an http(s) URL: ${url}`));
      return;
    }
    const handler = new Gather(init.cancel, resolve, reject);
    if (init.cancel.reason !== undefined) {
      handler.onResponseError(undefined, init.cancel.reason);
      return;
    }
    getGlobalDispatcher().dispatch(
      {
        origin: parts[1] as string,
        path: parts[2] === "" || parts[2] === undefined ? "/" : parts[2],
        method: init.method,
        headers: init.headers,
        ...(init.body !== undefined && { body: init.body }),
      },
      handler,
    );
  });

/** An answer's headers as undici parsed them (names lowercase), read as Headers.get reads. */
class ParsedHeaders implements AnswerHeaders {
  constructor(private readonly parsed: IncomingHttpHeaders) {}

  get(name: string): string | null {
    const v = this.parsed[name.toLowerCase()];
    if (v === undefined) return null;
    return typeof v === "string" ? v : v.join(", ");
  }
}

const NO_HEADERS = new ParsedHeaders({});

/** One request's handler: the status, headers and every chunk of the body, then one answer. */
class Gather implements Dispatcher.DispatchHandler {
  private status = 0;
  private headers: AnswerHeaders = NO_HEADERS;
  private readonly chunks: Buffer[] = [];
  private settled = false;

  constructor(
    private readonly cancel: Cancel,
    private readonly resolve: (a: Answer) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.cancel.onCancel((reason) => {
      if (!this.settled) controller.abort(reason);
    });
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.status = statusCode;
    this.headers = new ParsedHeaders(headers);
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.settle()) return;
    const text =
      this.chunks.length === 1
        ? (this.chunks[0] as Buffer).toString("utf8")
        : Buffer.concat(this.chunks).toString("utf8");
    this.resolve({ status: this.status, headers: this.headers, text });
  }

  onResponseError(_c: Dispatcher.DispatchController | undefined, err: Error): void {
    if (this.settle()) return;
    this.reject(err);
  }

  /** True when already settled; otherwise settles. */
  private settle(): boolean {
    if (this.settled) return true;
    this.settled = true;
    return false;
  }
}

/** Through a fetch (redirect "manual"). */
export function fetchSend(f: Fetch): Send {
  return async (url, { cancel, ...init }) => {
    const abort = new AbortController();
    cancel.onCancel((reason) => abort.abort(reason));
    const res = await f(url, { ...init, signal: abort.signal, redirect: "manual" });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
}
