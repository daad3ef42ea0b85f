// Page iteration through the REST kit against a real server: numbered pages with a count
// (an envelope the vendor checks, naming the path when it is not one) and next-page tokens.
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { FakeClock } from "../../util/clock.js";
import { SuspectAnswerError } from "../errors.js";
import { json, type LocalServer, startServer } from "./local-server.testkit.js";
import { collectPages, malformedPage } from "./pages.js";
import { RestClient } from "./rest-client.js";

let server: LocalServer;
let rest: RestClient;

beforeAll(async () => {
  server = await startServer();
  rest = new RestClient({
    baseUrl: server.url,
    label: "Test API",
    token: () => "t",
    timeoutMs: 5_000,
    clock: new FakeClock(),
  });
});

afterAll(() => server.close());

const ITEMS = Array.from({ length: 7 }, (_, i) => i + 1);

interface Envelope {
  readonly data: readonly number[];
  readonly page: number;
  readonly pages: number;
}

/** A vendor's check of its numbered envelope. */
function envelope(answer: unknown, asked: number, path: string): Envelope {
  const p = answer as Partial<Envelope> | null;
  if (
    typeof p !== "object" ||
    p === null ||
    !Array.isArray(p.data) ||
    !Number.isSafeInteger(p.pages) ||
    p.page !== asked
  )
    throw malformedPage("Test API", path, `not a page ${asked} envelope`);
  return p as Envelope;
}

function numbered(path: string) {
  return collectPages({
    first: 1,
    fetch: async (n: number) =>
      envelope(await rest.request({ method: "GET", path, query: { page: n, page_size: 3 } }), n, path),
    items: (p: Envelope) => p.data,
    next: (p: Envelope, n: number) => (n < p.pages ? n + 1 : undefined),
  });
}

describe("pages", () => {
  test("numbered pages: every page in order, one request each", async () => {
    server.answer((req, res) => {
      const q = new URL(req.url, server.url).searchParams;
      const page = Number(q.get("page"));
      const size = Number(q.get("page_size"));
      json(res, 200, { data: ITEMS.slice((page - 1) * size, page * size), page, pages: 3, results: 7 });
    });
    const before = server.seen.length;
    expect(await numbered("/things")).toEqual(ITEMS);
    expect(server.seen.slice(before).map((r) => r.url)).toEqual([
      "/things?page=1&page_size=3",
      "/things?page=2&page_size=3",
      "/things?page=3&page_size=3",
    ]);
  });

  test.each([
    ["a list", [1, 2]],
    ["an object without data", { page: 1, pages: 1 }],
    ["another page than asked", { data: [], page: 2, pages: 2 }],
  ])("an answer that is %s is suspect, naming the path", async (_what, body) => {
    server.answer((_req, res) => json(res, 200, body));
    const err = await numbered("/things?kind=a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SuspectAnswerError);
    expect((err as Error).message).toBe("Test API GET /things: not a page 1 envelope");
  });

  test("next-page tokens: follows them until there is none", async () => {
    server.answer((req, res) => {
      const token = new URL(req.url, server.url).searchParams.get("page_token");
      const at = token === null ? 0 : Number(token);
      const next = at + 3 < ITEMS.length ? String(at + 3) : undefined;
      json(res, 200, {
        items: ITEMS.slice(at, at + 3),
        ...(next !== undefined && { next_page_token: next }),
      });
    });
    interface TokenPage {
      readonly items: readonly number[];
      readonly next_page_token?: string;
    }
    const all = await collectPages<string | null, TokenPage, number>({
      first: null,
      fetch: async (token) =>
        (await rest.request({
          method: "GET",
          path: "/tokens",
          query: { page_token: token ?? undefined },
        })) as TokenPage,
      items: (p) => p.items,
      next: (p) => p.next_page_token,
    });
    expect(all).toEqual(ITEMS);
  });
});
