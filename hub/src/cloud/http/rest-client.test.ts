// The REST kit against a real HTTP server on loopback: what it sends, what it makes of each
// kind of answer, and its one timeout on the injected (fake) clock.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { FakeClock } from "../../util/clock.js";
import { TransientCloudError } from "../errors.js";
import { HttpBodyError, HttpStatusError, HttpTransportError, type StatusAnswer } from "./failures.js";
import { json, type LocalServer, startServer } from "./local-server.testkit.js";
import { RestClient, type RestClientConfig } from "./rest-client.js";
import { toContractError } from "./status-errors.js";

let server: LocalServer;
let clock: FakeClock;

beforeAll(async () => {
  server = await startServer();
});

afterAll(() => server.close());

function client(over: Partial<RestClientConfig> = {}): RestClient {
  clock = new FakeClock();
  return new RestClient({
    baseUrl: `${server.url}/v4/`,
    label: "Test API",
    token: () => "t0",
    userAgent: "fleet-ccm",
    timeoutMs: 5_000,
    clock,
    ...over,
  });
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected a failure");
    },
    (e: unknown) => e,
  );

describe("requests", () => {
  test("JSON in and out: method, path under the base, query after the path's own, headers", async () => {
    server.answer((_req, res) => json(res, 200, { ok: true }));
    const before = server.seen.length;
    const answer = await client().request({
      method: "POST",
      path: "/things?a=1",
      query: { tag: ["k=v", "x=y"], page: 2, skip: undefined },
      body: { name: "n" },
      headers: { "x-filter": '{"label":"n"}' },
    });
    expect(answer).toEqual({ ok: true });
    const req = server.seen[before];
    expect(req?.method).toBe("POST");
    expect(req?.url).toBe("/v4/things?a=1&tag=k%3Dv&tag=x%3Dy&page=2");
    expect(JSON.parse(req?.body ?? "")).toEqual({ name: "n" });
    expect(req?.headers).toMatchObject({
      authorization: "Bearer t0",
      accept: "application/json",
      "content-type": "application/json",
      "user-agent": "fleet-ccm",
      "x-filter": '{"label":"n"}',
    });
  });

  test("the bearer token is read per request: a rotation takes effect on the next one", async () => {
    server.answer((_req, res) => json(res, 200, {}));
    let token = "old";
    const c = client({ token: () => token });
    const before = server.seen.length;
    await c.request({ method: "GET", path: "/a" });
    token = "new";
    await c.request({ method: "GET", path: "/a" });
    expect(server.seen.slice(before).map((r) => r.headers.authorization)).toEqual([
      "Bearer old",
      "Bearer new",
    ]);
  });

  test("204 and an empty body are no body; a 2xx that is not JSON is an HttpBodyError", async () => {
    server.answer((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    expect(await client().request({ method: "DELETE", path: "/a/1" })).toBeUndefined();
    server.answer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>proxy</html>");
    });
    const err = await failure(client().request({ method: "GET", path: "/a/1?secret=no" }));
    expect(err).toBeInstanceOf(HttpBodyError);
    expect((err as Error).message).toBe("Test API GET /a/1: HTTP 200 with a body that is not JSON");
  });
});

describe("status answers", () => {
  test("a non-2xx is the vendor's status error, built from what it answered", async () => {
    server.answer((_req, res) =>
      json(res, 429, { errors: [{ reason: "slow down" }] }, { "retry-after": "9" }),
    );
    const answers: StatusAnswer[] = [];
    const c = client({
      statusError: (a) => {
        answers.push(a);
        return new HttpStatusError(a.status, a.retryAfter, `vendor: ${a.text}`);
      },
    });
    const err = await failure(c.request({ method: "GET", path: "/things?page=3" }));
    expect((err as Error).message).toBe('vendor: {"errors":[{"reason":"slow down"}]}');
    expect(answers).toEqual([
      {
        what: "Test API GET /things: HTTP 429",
        method: "GET",
        path: "/things",
        status: 429,
        retryAfter: "9",
        text: '{"errors":[{"reason":"slow down"}]}',
      },
    ]);
    expect((toContractError(err, clock.now()) as { retryAfterMs?: number }).retryAfterMs).toBe(9_000);
  });

  test("without a factory: a plain HttpStatusError; a redirect is never followed", async () => {
    server.answer((_req, res) => {
      res.writeHead(302, { location: `${server.url}/elsewhere` });
      res.end();
    });
    const before = server.seen.length;
    const err = await failure(client().request({ method: "GET", path: "/a" }));
    expect(err).toBeInstanceOf(HttpStatusError);
    expect((err as HttpStatusError).status).toBe(302);
    expect(server.seen.length).toBe(before + 1);
  });

  test("a client given its own fetch (an account's private CA) sends through it, redirects not followed", async () => {
    server.answer((req, res) => {
      if (req.url === "/v4/a") {
        res.writeHead(302, { location: `${server.url}/v4/b` });
        res.end();
      } else json(res, 200, { ok: true });
    });
    const sent: Array<{ url: string; init: RequestInit }> = [];
    const own = client({
      fetch: (url, init) => {
        sent.push({ url, init });
        return fetch(url, init);
      },
    });
    expect(await own.request({ method: "GET", path: "/b" })).toEqual({ ok: true });
    const err = await failure(own.request({ method: "GET", path: "/a" }));
    expect((err as HttpStatusError).status).toBe(302);
    expect(sent.map((s) => [s.url, s.init.redirect])).toEqual([
      [`${server.url}/v4/b`, "manual"],
      [`${server.url}/v4/a`, "manual"],
    ]);
  });
});

describe("no answer", () => {
  test("the one timeout fires on the injected clock, not on real time", async () => {
    server.answer(() => {
      // Never answers.
    });
    const c = client({ timeoutMs: 30_000 });
    const before = server.seen.length;
    let settled = false;
    const pending = failure(c.request({ method: "GET", path: "/slow" })).finally(() => {
      settled = true;
    });
    await server.arrived(before + 1);
    clock.advance(29_999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    clock.advance(1);
    const err = await pending;
    expect(err).toBeInstanceOf(HttpTransportError);
    expect((err as HttpTransportError).failure).toBe("timeout");
    expect((err as Error).message).toBe("Test API GET /slow: no answer within 30000 ms");
    expect(toContractError(err, clock.now())).toBeInstanceOf(TransientCloudError);
    expect(clock.pendingTimers()).toBe(0);
  });

  test("any caller's signal aborts the request; the timer is cleared", async () => {
    server.answer(() => {
      // Never answers.
    });
    const c = client();
    const caller = new AbortController();
    const before = server.seen.length;
    const pending = failure(
      c.request({
        method: "GET",
        path: "/slow",
        signals: [undefined, new AbortController().signal, caller.signal],
      }),
    );
    await server.arrived(before + 1);
    caller.abort();
    const err = await pending;
    expect((err as HttpTransportError).failure).toBe("aborted");
    expect(clock.pendingTimers()).toBe(0);
    const already = AbortSignal.abort();
    expect(
      ((await failure(c.request({ method: "GET", path: "/a", signals: [already] }))) as HttpTransportError)
        .failure,
    ).toBe("aborted");
  });

  test("a refused connection and a dropped one are network failures, transient", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await failure(
      client({ baseUrl: `http://127.0.0.1:${port}` }).request({ method: "GET", path: "/a" }),
    );
    expect(refused).toBeInstanceOf(HttpTransportError);
    expect((refused as HttpTransportError).failure).toBe("network");
    expect((refused as HttpTransportError).code).toBe("ECONNREFUSED");
    expect(toContractError(refused, 0)).toBeInstanceOf(TransientCloudError);

    server.answer((_req, res) => res.socket?.destroy());
    const dropped = await failure(client().request({ method: "GET", path: "/a" }));
    expect((dropped as HttpTransportError).failure).toBe("network");
    expect((dropped as Error).message).toMatch(/^Test API GET \/a: request failed: /);
    expect(toContractError(dropped, 0)).toBeInstanceOf(TransientCloudError);
  });
});

describe("rate-limit headers", () => {
  test("every answer's budget goes to the account, a refusal's too", async () => {
    const budgets: unknown[] = [];
    const c = client({ rateHeaders: { reset: "next-free", report: (b) => budgets.push(b) } });
    const reset = String(Math.ceil(clock.now() / 1000) + 10);
    server.answer((_req, res) => {
      res.setHeader("ratelimit-limit", "5000");
      res.setHeader("ratelimit-remaining", "7");
      res.setHeader("ratelimit-reset", reset);
      json(res, 200, {});
    });
    await c.request({ method: "GET", path: "/a" });
    server.answer((_req, res) => {
      res.setHeader("ratelimit-limit", "5000");
      res.setHeader("ratelimit-remaining", "0");
      res.setHeader("ratelimit-reset", reset);
      json(res, 429, { id: "too_many_requests", message: "slow down" });
    });
    await failure(c.request({ method: "GET", path: "/a" }));
    expect(budgets).toEqual([
      { remaining: 7, nextFreeAtMs: clock.now() },
      { remaining: 0, nextFreeAtMs: Number(reset) * 1000 },
    ]);
  });

  test("answers without the headers report nothing", async () => {
    const budgets: unknown[] = [];
    const c = client({ rateHeaders: { reset: "full", report: (b) => budgets.push(b) } });
    server.answer((_req, res) => json(res, 200, {}));
    await c.request({ method: "GET", path: "/a" });
    expect(budgets).toEqual([]);
  });
});
