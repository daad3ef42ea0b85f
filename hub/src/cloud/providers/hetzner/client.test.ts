// The Hetzner client on a local server: its error body and codes mapped to the contract, and
// its paging (meta.pagination), an answer that is not a page being suspect.
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { FakeClock } from "../../../util/clock.js";
import {
  CloudError,
  ConflictError,
  ForbiddenError,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { json, type LocalServer, startServer } from "../../http/local-server.testkit.js";
import { HetznerClient } from "./client.js";
import { HetznerApiError, isNotFound } from "./errors.js";

let server: LocalServer;
let client: HetznerClient;

beforeAll(async () => {
  server = await startServer();
  client = new HetznerClient({
    endpoint: `${server.url}/v1`,
    token: () => "t",
    requestTimeoutMs: 5_000,
    clock: new FakeClock(),
    call: (_op, fn) => fn(new AbortController().signal),
    pageSize: 2,
  });
});
afterAll(() => server.close());

const failure = (p: Promise<unknown>) =>
  p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
const hetznerError = (status: number, code: string, headers: Record<string, string> = {}) =>
  server.answer((_req, res) =>
    json(res, status, { error: { code, message: `it is ${code}`, details: null } }, headers),
  );

describe("errors", () => {
  test.each([
    [423, "locked", ConflictError],
    [409, "conflict", ConflictError],
    [403, "resource_limit_exceeded", CloudError],
    [403, "forbidden", ForbiddenError],
    [401, "unauthorized", ForbiddenError],
    [404, "not_found", SuspectAnswerError],
    [503, "unavailable", TransientCloudError],
  ])("HTTP %d %s is %p, naming the code and message", async (status, code, cls) => {
    hetznerError(status, code);
    const err = await failure(client.get("x.get", "/things/1"));
    expect((err as Error).constructor).toBe(cls);
    expect((err as Error).message).toBe(
      `Hetzner Cloud API GET /things/1: HTTP ${status} ${code}: it is ${code}`,
    );
    expect(isNotFound(err)).toBe(code === "not_found");
  });

  test("429 waits as long as Retry-After says", async () => {
    hetznerError(429, "rate_limit_exceeded", { "retry-after": "3", "ratelimit-remaining": "0" });
    const err = await failure(client.get("x.get", "/things"));
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as ThrottledError).retryAfterMs).toBe(3_000);
  });

  test("a 404 without Hetzner's body (a proxy) is no not_found", async () => {
    server.answer((_req, res) => {
      res.writeHead(404, { "content-type": "text/html" });
      res.end("<html>nope</html>");
    });
    const err = await failure(client.get("x.get", "/servers/1"));
    expect(isNotFound(err)).toBe(false);
    expect((err as Error).cause).toBeInstanceOf(HetznerApiError);
  });
});

describe("pages", () => {
  test("follows meta.pagination.next_page to the end, one request a page", async () => {
    server.answer((req, res) => {
      const page = Number(new URL(req.url, server.url).searchParams.get("page"));
      json(res, 200, {
        things: [page * 10, page * 10 + 1],
        meta: {
          pagination: {
            page,
            per_page: 2,
            previous_page: null,
            next_page: page < 3 ? page + 1 : null,
            last_page: 3,
            total_entries: 6,
          },
        },
      });
    });
    const before = server.seen.length;
    expect(await client.list("x.list", "/things", "things")).toEqual([10, 11, 20, 21, 30, 31]);
    expect(server.seen.slice(before).map((r) => r.url)).toEqual([
      "/v1/things?page=1&per_page=2",
      "/v1/things?page=2&per_page=2",
      "/v1/things?page=3&per_page=2",
    ]);
  });

  test.each([
    ["no meta", { things: [] }],
    ["another page than asked", { things: [], meta: { pagination: { page: 2, next_page: null } } }],
    ["a next page that goes back", { things: [], meta: { pagination: { page: 1, next_page: 1 } } }],
    ["items that are not a list", { things: {}, meta: { pagination: { page: 1, next_page: null } } }],
  ])("an answer with %s is suspect", async (_what, body) => {
    server.answer((_req, res) => json(res, 200, body));
    await expect(client.list("x.list", "/things", "things")).rejects.toBeInstanceOf(SuspectAnswerError);
  });
});

describe("rate-limit headers", () => {
  test("each answer's RateLimit-* headers reach the account's budget, Reset read as Hetzner's (full at Reset)", async () => {
    const budgets: unknown[] = [];
    const clock = new FakeClock();
    const budgeted = new HetznerClient({
      endpoint: `${server.url}/v1`,
      token: () => "t",
      requestTimeoutMs: 5_000,
      clock,
      call: (_op, fn) => fn(new AbortController().signal),
      pageSize: 2,
      rateBudget: (b) => budgets.push(b),
    });
    const reset = String(clock.now() / 1000 + 3_600);
    hetznerError(429, "rate_limit_exceeded", {
      "ratelimit-limit": "3600",
      "ratelimit-remaining": "0",
      "ratelimit-reset": reset,
    });
    expect(await failure(budgeted.get("x.get", "/things/1"))).toBeInstanceOf(ThrottledError);
    expect(budgets).toEqual([{ remaining: 0, nextFreeAtMs: clock.now() + 1_000 }]);
  });
});
