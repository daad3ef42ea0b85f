import { afterEach, describe, expect, test } from "@jest/globals";
import { FakeError } from "./errors.js";
import {
  type KeyedListing,
  type ListFaults,
  VendorFake,
  type VendorFakeConfig,
  type VendorMutation,
  type VendorRoute,
} from "./vendor-fake.js";

/** A fake of a made-up vendor with one table, to show the pipeline's steps on their own. */
class TinyFake extends VendorFake<KeyedListing> {
  readonly items: { id: number }[] = [{ id: 1 }, { id: 2 }];
  readonly mutations: VendorMutation[] = [];
  /** The account of each rateHeaders call, in order. */
  readonly metered: (string | undefined)[] = [];

  private constructor(rateHeadersOn: VendorFakeConfig["rateHeadersOn"]) {
    super({
      vendor: "Tiny",
      newToken: (name) => `tiny-${name}`,
      renderer: {
        render: (e) => ({
          status: e.status,
          ...(e.headers !== undefined && { headers: e.headers }),
          body: { error: e.code },
        }),
      },
      requestIdHeader: "x-tiny-id",
      refusals: {
        badBody: () => new FakeError(400, "bad_json", "not JSON"),
        unauthenticated: () => new FakeError(401, "who", "no such token", { kind: "auth" }),
        notFound: () => new FakeError(404, "no_path", "no such path"),
        methodNotAllowed: (allow) => new FakeError(405, "no_method", "not here", { headers: { allow } }),
      },
      ...(rateHeadersOn !== undefined && { rateHeadersOn }),
    });
  }

  static start(rateHeadersOn?: VendorFakeConfig["rateHeadersOn"]): Promise<TinyFake> {
    return new TinyFake(rateHeadersOn).listen();
  }

  protected routes(): VendorRoute<KeyedListing>[] {
    return [
      {
        method: "GET",
        pattern: /^\/items$/,
        op: "items.list",
        example: "/items",
        handle: () => ({ key: "items", list: this.items }),
      },
      {
        method: "POST",
        pattern: /^\/items$/,
        op: "items.create",
        example: "/items",
        handle: (c) => {
          const item = { id: Number(c.body["id"]) };
          this.items.push(item);
          return { status: 201, body: item };
        },
      },
      {
        method: "GET",
        pattern: /^\/items\/(\d+)$/,
        op: "items.get",
        example: "/items/1",
        handle: (c) => {
          const item = this.items.find((i) => i.id === Number(c.params[0]));
          if (item === undefined) throw new FakeError(404, "no_item", "no such item");
          return { body: item };
        },
      },
    ];
  }

  protected page(listing: KeyedListing, _c: unknown, faults: ListFaults): unknown {
    return { [listing.key]: faults.drop(faults.empty(listing.list)) };
  }

  protected override rateHeaders(account: string | undefined): Record<string, string> {
    this.metered.push(account);
    return { "x-rate-left": String(100 - this.metered.length) };
  }

  protected override recordMutation(m: VendorMutation): void {
    this.mutations.push(m);
  }
}

let fake: TinyFake | undefined;
/** Started, and closed after the test. */
async function started(rateHeadersOn?: VendorFakeConfig["rateHeadersOn"]): Promise<TinyFake> {
  fake = await TinyFake.start(rateHeadersOn);
  return fake;
}
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function call(
  f: TinyFake,
  method: string,
  path: string,
  opts: { token?: string; body?: string } = {},
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const res = await fetch(`${f.url}${path}`, {
    method,
    headers: {
      ...(opts.token !== undefined && { authorization: `Bearer ${opts.token}` }),
      ...(opts.body !== undefined && { "content-type": "application/json" }),
    },
    ...(opts.body !== undefined && { body: opts.body }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? undefined : JSON.parse(text) };
}

describe("VendorFake, the kit's JSON REST pipeline", () => {
  test("refusals in the vendor's words, then the handler; every call logged under its account", async () => {
    const f = await started();
    const { token } = f.createAccount("acme");
    expect(token).toBe("tiny-acme");
    expect((await call(f, "GET", "/items")).body).toEqual({ error: "who" });
    expect((await call(f, "POST", "/items", { token, body: "{nope" })).body).toEqual({ error: "bad_json" });
    expect((await call(f, "GET", "/nowhere", { token })).body).toEqual({ error: "no_path" });
    const wrongMethod = await call(f, "DELETE", "/items", { token });
    expect([wrongMethod.status, wrongMethod.headers.get("allow")]).toEqual([405, "GET, POST"]);
    expect((await call(f, "GET", "/items/9", { token })).body).toEqual({ error: "no_item" });
    const created = await call(f, "POST", "/items", { token, body: '{"id": 3}' });
    expect([created.status, created.body, created.headers.get("x-tiny-id")]).toEqual([
      201,
      { id: 3 },
      "req-6",
    ]);
    expect((await call(f, "GET", "/items", { token })).body).toEqual({
      items: [{ id: 1 }, { id: 2 }, { id: 3 }],
    });
    expect(f.mutations).toEqual([
      { account: "acme", operation: "items.create", method: "POST", path: "/items", body: { id: 3 } },
    ]);
    expect(f.log.requests().map((r) => [r.account, r.operation, r.outcome])).toEqual([
      ["(unauthenticated)", "items.list", "401"],
      ["(unauthenticated)", "items.create", "400"],
      ["acme", "unknown", "404"],
      ["acme", "items.list", "405"],
      ["acme", "items.get", "404"],
      ["acme", "items.create", "201"],
      ["acme", "items.list", "200"],
    ]);
    f.rotateToken("acme", "tiny-new");
    expect((await call(f, "GET", "/items", { token })).status).toBe(401);
    expect((await call(f, "GET", "/items", { token: "tiny-new" })).status).toBe(200);
    expect(() => f.rotateToken("nobody", "x")).toThrow("no account nobody");
  });

  test("rate headers on every answer, or only on the handled calls' own answers", async () => {
    const every = await started("every-answer");
    const a = every.createAccount("acme").token;
    expect((await call(every, "GET", "/items")).headers.get("x-rate-left")).toBe("99");
    expect((await call(every, "GET", "/items/9", { token: a })).headers.get("x-rate-left")).toBe("98");
    expect(every.metered).toEqual([undefined, "acme"]);
    await every.close();

    const handled = await started("handled-calls");
    const b = handled.createAccount("acme").token;
    expect((await call(handled, "GET", "/items")).headers.get("x-rate-left")).toBeNull();
    expect((await call(handled, "GET", "/items/9", { token: b })).headers.get("x-rate-left")).toBe("99");
    expect((await call(handled, "GET", "/items", { token: b })).headers.get("x-rate-left")).toBe("98");
    handled.setFaults({ throttleRate: 1 });
    const throttled = await call(handled, "GET", "/items", { token: b });
    expect([throttled.status, throttled.headers.get("x-rate-left")]).toEqual([429, null]);
    expect(handled.metered).toEqual(["acme", "acme"]);
  });

  test("list faults where the vendor's page applies them; a lost answer after the change is made", async () => {
    const f = await started();
    const token = f.createAccount("acme").token;
    f.setFaults({ dropFromListRate: 1 });
    expect((await call(f, "GET", "/items", { token })).body).toEqual({ items: [] });
    f.resetFaults();
    f.setFaults({ lostResponseRate: 1 }, "acme");
    expect((await call(f, "POST", "/items", { token, body: '{"id": 7}' })).status).toBe(504);
    expect(f.items.at(-1)).toEqual({ id: 7 });
    expect(f.mutations).toHaveLength(1);
    expect(f.log.requests().map((r) => r.fault)).toEqual(["dropped-items", "lost-response"]);
  });
});
