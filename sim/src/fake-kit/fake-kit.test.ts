import { afterEach, describe, expect, test } from "@jest/globals";
import type { ErrorRenderer } from "./errors.js";
import { FakeError } from "./errors.js";
import { FaultInjector, NO_FAULTS } from "./faults.js";
import { Exchange, FakeHttpServer, readQueryParams, sendText, startFake } from "./http.js";
import { decodeSeqToken, encodeSeqToken, numberedPage, parsePageSize, parseSeqToken } from "./pagination.js";
import { seededRandom } from "./random.js";
import { RequestLog } from "./request-log.js";
import { freshId, ResourceTable } from "./table.js";

interface Item {
  readonly id: string;
  readonly account: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly name: string;
  readonly version: number;
}

function table(): ResourceTable<Item> {
  let seq = 0;
  return new ResourceTable<Item>(
    () => ++seq,
    (i) => i.account,
    { name: (i) => `${i.account}/${i.name}` },
  );
}

const item = (id: string, name = id, version = 1): Item => ({ id, account: "a", tags: {}, name, version });
const all = (): boolean => true;

describe("ResourceTable", () => {
  test("pages continue after a seq: items created or deleted between pages shift nothing", () => {
    const t = table();
    for (const id of ["x1", "x2", "x3", "x4"]) t.insert(item(id), 0);
    const first = t.page("a", all, 2);
    expect(first.items.map((i) => i.id)).toEqual(["x1", "x2"]);
    t.remove("x1", 1);
    t.insert(item("x5"), 1);
    const second = t.page("a", all, 2, first.nextAfterSeq);
    expect(second.items.map((i) => i.id)).toEqual(["x3", "x4"]);
    expect(t.page("a", all, 2, second.nextAfterSeq)).toEqual({ items: [item("x5")] });
  });

  test("lists lag only with listStaleMs; gets lag with staleReadMs and still see a deleted item", () => {
    const t = table();
    t.insert(item("old"), 0);
    t.insert(item("new"), 1_000);
    const view = { nowMs: 1_500, staleReadMs: 1_000 };
    expect(t.page("a", all, 10, undefined, view).items.map((i) => i.id)).toEqual(["old", "new"]);
    expect(t.page("a", all, 10, undefined, { ...view, listStaleMs: 1_000 }).items.map((i) => i.id)).toEqual([
      "old",
    ]);
    expect(t.read("new", view)).toBeUndefined();
    t.replace(item("old", "old", 2), 1_400);
    expect(t.read("old", view)?.version).toBe(1);
    expect(t.page("a", all, 10, undefined, { ...view, listStaleMs: 1_000 }).items).toEqual([
      item("old", "old", 1),
    ]);
    t.remove("old", 1_450);
    expect(t.read("old", view)?.version).toBe(2);
    expect(t.read("old", { nowMs: 3_000, staleReadMs: 1_000 })).toBeUndefined();
  });

  test("a secondary index pages in creation order and follows renames", () => {
    const t = table();
    t.insert(item("i1", "web"), 0);
    t.insert(item("i2", "db"), 0);
    t.insert(item("i3", "web"), 0);
    expect(t.pageIndex("name", "a/web", all, 10).items.map((i) => i.id)).toEqual(["i1", "i3"]);
    t.replace(item("i2", "web", 2), 1);
    expect(t.pageIndex("name", "a/web", all, 10).items.map((i) => i.id)).toEqual(["i1", "i2", "i3"]);
    expect(t.pageIndex("name", "a/db", all, 10).items).toEqual([]);
    t.remove("i1", 2);
    expect(t.pageIndex("name", "a/web", all, 1)).toEqual({ items: [item("i2", "web", 2)], nextAfterSeq: 2 });
  });

  test("ids are never reused, deleted ones included", () => {
    const t = table();
    t.insert(item("id-1"), 0);
    t.remove("id-1", 0);
    const made = ["id-1", "id-1", "id-2"];
    expect(freshId(t, () => made.shift()!)).toBe("id-2");
  });
});

describe("RequestLog", () => {
  const entry = (operation: string, outcome: string, fault?: string) => ({
    account: "acct",
    operation,
    method: "GET",
    path: "/p",
    query: "",
    requestId: "r",
    outcome,
    ...(fault !== undefined && { fault }),
  });

  test("filters, marks, a bounded history and counts that outlive it", () => {
    const log = new RequestLog(() => 42, 3);
    log.record(entry("a.get", "200"));
    const mark = log.mark();
    log.record(entry("a.list", "503", "unavailable"));
    log.record(entry("a.get", "429", "throttled"));
    log.record(entry("a.get", "200"));
    expect(log.requests({ afterSeq: mark, operation: /^a\.get$/ }).map((r) => r.outcome)).toEqual([
      "429",
      "200",
    ]);
    expect(log.count({ fault: "throttled" })).toBe(1);
    expect(log.requests()).toHaveLength(3);
    expect(log.requests()[0]).toMatchObject({ seq: 2, atMs: 42 });
    expect(log.stats()).toMatchObject({ totalCalls: 4, byOperation: { "a.get": 3, "a.list": 1 } });
    log.reset();
    expect(log.stats().totalCalls).toBe(0);
    expect(log.requests()).toEqual([]);
  });
});

describe("FaultInjector", () => {
  const signal = new AbortController().signal;

  test("one seed, one sequence of faults; per-scope overrides win field by field", async () => {
    const run = async (): Promise<string[]> => {
      const f = new FaultInjector(seededRandom(3));
      f.set({ errorRate: 0.5, throttleRate: 0.2 });
      f.set({ throttleRate: 0 }, "calm");
      expect(f.config("calm")).toEqual({ ...NO_FAULTS, errorRate: 0.5, throttleRate: 0 });
      const out: string[] = [];
      for (let i = 0; i < 20; i++) {
        const d = await f.beforeCall(f.config(i % 2 === 0 ? "calm" : undefined), signal);
        out.push(d.kind === "error" ? d.fault : d.kind);
      }
      return out;
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(a).toEqual(expect.arrayContaining(["none", "internal", "unavailable", "throttled"]));
    expect(a.filter((_, i) => i % 2 === 0)).not.toContain("throttled");
  });

  test("bad configs are refused naming the field", () => {
    const f = new FaultInjector(seededRandom(1));
    expect(() => f.set({ errorRate: 2 })).toThrow('fault field "errorRate" is a fraction and must be <= 1');
    expect(() => f.set({ nope: 1 } as never)).toThrow('unknown fault field "nope"');
  });

  test("a hang ends when the client leaves", async () => {
    const f = new FaultInjector(seededRandom(1));
    const gone = new AbortController();
    const pending = f.beforeCall({ ...NO_FAULTS, timeoutRate: 1, timeoutHangMs: 60_000 }, gone.signal);
    gone.abort();
    expect(await pending).toEqual({ kind: "abandoned" });
  });
});

describe("pagination helpers", () => {
  test("seq tokens are opaque and checked", () => {
    expect(decodeSeqToken(encodeSeqToken(17))).toBe(17);
    expect(decodeSeqToken("garbage")).toBeUndefined();
    expect(parseSeqToken(null, "NextToken")).toBeUndefined();
    expect(() => parseSeqToken("garbage", "NextToken", "InvalidNextToken")).toThrow(
      expect.objectContaining({ status: 400, code: "InvalidNextToken", message: "NextToken is not valid" }),
    );
  });

  test("page sizes: default, clamp or refuse, minimum", () => {
    const rule = { param: "MaxResults", defaultSize: 1000, min: 5, max: 1000 };
    expect(parsePageSize(null, rule)).toBe(1000);
    expect(parsePageSize("5000", rule)).toBe(1000);
    expect(() => parsePageSize("5000", { ...rule, overMax: "refuse" })).toThrow(
      "MaxResults must be at most 1000",
    );
    expect(() => parsePageSize("2", rule)).toThrow("MaxResults must be at least 5");
    expect(() => parsePageSize("x", rule)).toThrow("MaxResults must be a positive integer");
  });

  test("numbered pages", () => {
    const items = Array.from({ length: 7 }, (_, i) => i);
    expect(numberedPage(items, 2, 5)).toEqual({ data: [5, 6], page: 2, pages: 2, results: 7 });
    expect(numberedPage([], 1, 5)).toEqual({ data: [], page: 1, pages: 1, results: 0 });
    expect(numberedPage(items, 3, 5).data).toEqual([]);
  });
});

/** The query/XML seam (AWS): form parameters in, an XML error envelope out, the same kit. */
describe("a query/XML fake on the kit", () => {
  let server: FakeHttpServer | undefined;
  afterEach(() => server?.close());

  const ec2Errors: ErrorRenderer = {
    render(error, call) {
      // EC2 throttles with 503 RequestLimitExceeded, not 429.
      const [status, code] =
        error.kind === "throttled" ? [503, "RequestLimitExceeded"] : [error.status, error.code];
      return {
        status,
        contentType: "text/xml;charset=UTF-8",
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${error.message}</Message></Error></Errors><RequestID>${call.requestId}</RequestID></Response>`,
      };
    },
  };

  test("form parameters are read, a NextToken is checked, errors come back as the vendor's XML", async () => {
    const log = new RequestLog();
    const faults = new FaultInjector(seededRandom(1));
    server = new FakeHttpServer(async (req, res) => {
      const url = new URL(req.url ?? "/", "http://fake.invalid");
      const params = await readQueryParams(req, url);
      const ex = new Exchange(req, res, {
        log,
        renderer: ec2Errors,
        inFlight: server!.inFlight,
        operation: params.get("Action") ?? "unknown",
        requestId: "59dbff89-35bd-4eac-99ed-be587EXAMPLE",
      });
      const injected = await faults.beforeCall(faults.config(), ex.clientGone);
      if (injected.kind === "error") {
        ex.fault = injected.fault;
        ex.fail(injected.error);
        return;
      }
      try {
        parseSeqToken(params.get("NextToken"), "NextToken", "InvalidParameterValue");
        ex.send({ status: 200, contentType: "text/xml", body: "<DescribeInstancesResponse/>" });
      } catch (err) {
        if (!(err instanceof FakeError)) throw err;
        ex.fail(err);
      }
    });
    await server.listen();
    const call = (body: string) =>
      fetch(server!.url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
      });
    const ok = await call(`Action=DescribeInstances&Version=2016-11-15&NextToken=${encodeSeqToken(3)}`);
    expect([ok.status, await ok.text()]).toEqual([200, "<DescribeInstancesResponse/>"]);
    const bad = await call("Action=DescribeInstances&NextToken=nope");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain(
      "<Code>InvalidParameterValue</Code><Message>NextToken is not valid</Message>",
    );
    faults.set({ throttleRate: 1 });
    const throttled = await call("Action=DescribeInstances");
    expect(throttled.status).toBe(503);
    expect(throttled.headers.get("content-type")).toBe("text/xml;charset=UTF-8");
    expect(await throttled.text()).toContain("<Code>RequestLimitExceeded</Code>");
    expect(log.requests().map((r) => [r.operation, r.outcome, r.fault])).toEqual([
      ["DescribeInstances", "200", undefined],
      ["DescribeInstances", "400", undefined],
      ["DescribeInstances", "503", "throttled"],
    ]);
  });
});

describe("startFake", () => {
  test("hands back the fake listening on loopback; a taken port closes the server and names the address", async () => {
    const fake = { name: "f" };
    const server = new FakeHttpServer((_req, res) => sendText(res, 200, "up", "text/plain"));
    expect(await startFake(fake, server)).toBe(fake);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await fetch(server.url)).text()).toBe("up");
    const port = Number(new URL(server.url).port);
    const second = new FakeHttpServer((_req, res) => sendText(res, 200, "two", "text/plain"));
    await expect(startFake(fake, second, { port })).rejects.toThrow(
      `the fake cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`,
    );
    await second.close();
    await server.close();
  });
});
