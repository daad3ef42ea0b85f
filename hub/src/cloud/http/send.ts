/**
 * How a RestClient puts one request on the wire. By default undici's `request`: a plain Node
 * stream per answer, where the global fetch builds WHATWG streams and abort signals for every
 * request and answer (in a storm of load-balancer calls, over half of the hub's CPU per call).
 * A client given its own fetch (an account's private CA) sends through it. Neither follows a
 * redirect: a redirect is not an answer, and following one could carry the token elsewhere.
 */
import { request } from "undici";
import type { Fetch, HttpMethod } from "./rest-client.js";

export interface SendInit {
  readonly method: HttpMethod;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly signal: AbortSignal;
}

/** A whole answer: its body read to the end. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

export type Send = (url: string, init: SendInit) => Promise<Answer>;

/** undici's request on its global dispatcher (kept-alive connections); no redirects followed. */
export const undiciSend: Send = async (url, init) => {
  const res = await request(url, {
    method: init.method,
    headers: init.headers,
    ...(init.body !== undefined && { body: init.body }),
    signal: init.signal,
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: toHeaders(res.headers), text };
};

/** Through a fetch (redirect "manual"). */
export function fetchSend(f: Fetch): Send {
  return async (url, init) => {
    const res = await f(url, { ...init, redirect: "manual" });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
}

function toHeaders(raw: Readonly<Record<string, string | string[] | undefined>>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (typeof value === "string") headers.append(name, value);
    else for (const v of value) headers.append(name, v);
  }
  return headers;
}
