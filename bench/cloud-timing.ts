// How long the simulated cloud spent answering the lookups of each node.
//
// The simulated cloud is an http.Server inside the benchmark process. Node publishes every
// server request's start and its response's finish on the built-in diagnostics channels
// `http.server.request.start` / `http.server.response.finish`, so the benchmark times every
// cloud call from the cloud's side without a proxy and without touching sim/:
//
// - a direct lookup by name (`GET /v1/regions/R/instances?name=N`) is recorded under `name:N`,
//   one by id (`GET /v1/regions/R/instances/ID`) under `id:ID`;
// - an account-wide list (`GET /v1/regions/R/instances` without a name) is a chain of pages: a
//   page without `page_token` starts a chain, a page with one extends the latest chain. The hub
//   answers a join storm from one such list (coalesced lookups) and refreshes its instance
//   cache with them; one refresh is in flight per cache, so with one cache per account the
//   chains do not interleave.

import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { IncomingMessage, ServerResponse } from "node:http";

interface StartMessage {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
}

interface Totals {
  ms: number;
  calls: number;
  /** Epoch ms. */
  firstStart: number;
  firstEnd: number;
  lastEnd: number;
}

/** One paged list of the whole account, from its first page's arrival to its last page's answer (epoch ms). */
export interface ListChain {
  readonly start: number;
  end: number;
  pages: number;
}

const INSTANCES_PATH = /^\/v1\/regions\/[^/]+\/instances(?:\/([^/?]+))?(?:\?(.*))?$/;

const epochNow = (): number => performance.timeOrigin + performance.now();

export class CloudCallTimer {
  /** Lookups the cloud is answering now, and the most at once since the last reset. */
  inFlight = 0;
  maxInFlight = 0;
  readonly chains: ListChain[] = [];
  private readonly started = new WeakMap<ServerResponse, { key: string; t: number; chain?: ListChain }>();
  private readonly totals = new Map<string, Totals>();

  private readonly onStart = (msg: unknown) => {
    const { request, response } = msg as StartMessage;
    const m = INSTANCES_PATH.exec(request.url ?? "");
    if (m === null) return;
    const t = epochNow();
    let key: string;
    let chain: ListChain | undefined;
    if (m[1] !== undefined) key = `id:${decodeURIComponent(m[1])}`;
    else {
      const q = new URLSearchParams(m[2] ?? "");
      const name = q.get("name");
      if (name !== null) key = `name:${name}`;
      else {
        key = "list";
        chain = q.get("page_token") === null ? undefined : this.chains[this.chains.length - 1];
        if (chain === undefined) {
          chain = { start: t, end: t, pages: 0 };
          this.chains.push(chain);
        }
        chain.pages++;
      }
    }
    this.started.set(response, chain === undefined ? { key, t } : { key, t, chain });
    this.inFlight++;
    if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
  };

  private readonly onFinish = (msg: unknown) => {
    const { response } = msg as StartMessage;
    const s = this.started.get(response);
    if (s === undefined) return;
    this.started.delete(response);
    this.inFlight--;
    const now = epochNow();
    if (s.chain !== undefined) s.chain.end = Math.max(s.chain.end, now);
    const cur = this.totals.get(s.key);
    if (cur === undefined)
      this.totals.set(s.key, { ms: now - s.t, calls: 1, firstStart: s.t, firstEnd: now, lastEnd: now });
    else {
      cur.ms += now - s.t;
      cur.calls++;
      cur.lastEnd = now;
    }
  };

  constructor() {
    subscribe("http.server.request.start", this.onStart);
    subscribe("http.server.response.finish", this.onFinish);
  }

  /**
   * The cloud's time on one node's initialization, for a node created at `createdAt` whose
   * first patch landed at `patchedAt` (epoch ms): its direct lookups by name, plus, when an
   * account-wide list answered it (no direct lookup, or a direct one only after a list, for a
   * miss), the part of the latest list that ended before its patch during which it was waiting.
   */
  nodeCloudMs(name: string, createdAt: number, patchedAt: number | undefined): number {
    const direct = this.totals.get(`name:${name}`);
    let listWait = 0;
    if (patchedAt !== undefined) {
      const limit = direct === undefined ? patchedAt : direct.firstStart;
      const chain = this.latestChainEndingBy(limit);
      if (chain !== undefined && chain.end > createdAt)
        listWait = chain.end - Math.max(chain.start, createdAt);
    }
    return (direct?.ms ?? 0) + listWait;
  }

  private latestChainEndingBy(t: number): ListChain | undefined {
    for (let i = this.chains.length - 1; i >= 0; i--) {
      const c = this.chains[i];
      if (c !== undefined && c.end <= t) return c;
    }
    return undefined;
  }

  /** Epoch ms when the cloud received the first lookup of `key`, answered it, and answered the last one. */
  span(key: string): { firstStart: number; firstEnd: number; lastEnd: number } | undefined {
    return this.totals.get(key);
  }

  calls(key: string): number {
    return this.totals.get(key)?.calls ?? 0;
  }

  reset(): void {
    this.totals.clear();
    this.chains.length = 0;
    this.maxInFlight = this.inFlight;
  }

  close(): void {
    unsubscribe("http.server.request.start", this.onStart);
    unsubscribe("http.server.response.finish", this.onFinish);
  }
}
