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
  readonly signal: AbortSignal;
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
    const handler = new Gather(init.signal, resolve, reject);
    if (init.signal.aborted) {
      handler.onResponseError(undefined, abortReason(init.signal));
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

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError");
}

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
  private controller: Dispatcher.DispatchController | undefined;
  private settled = false;
  private readonly onAbort = (): void => this.controller?.abort(abortReason(this.signal));

  constructor(
    private readonly signal: AbortSignal,
    private readonly resolve: (a: Answer) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(abortReason(this.signal));
    else this.signal.addEventListener("abort", this.onAbort, { once: true });
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

  /** True when already settled; otherwise settles and stops listening to the signal. */
  private settle(): boolean {
    if (this.settled) return true;
    this.settled = true;
    this.signal.removeEventListener("abort", this.onAbort);
    return false;
  }
}

/** Through a fetch (redirect "manual"). */
export function fetchSend(f: Fetch): Send {
  return async (url, init) => {
    const res = await f(url, { ...init, redirect: "manual" });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
}
