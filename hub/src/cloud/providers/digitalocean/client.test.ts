// The DigitalOcean client's adapters on the REST kit: its error body, its pages, and which 404
// may say "gone".
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { DigitalOceanFake } from "../../../../../sim/src/digitalocean/index.js";
import { systemClock } from "../../../util/clock.js";
import { CloudError, ForbiddenError, SuspectAnswerError, ThrottledError } from "../../errors.js";
import { DigitalOceanClient } from "./client.js";
import { DigitalOceanApiError, isNotFound, toContractError } from "./errors.js";

let fake: DigitalOceanFake;
let token: string;
const calls: string[] = [];

beforeAll(async () => {
  fake = await DigitalOceanFake.start({ spec: true });
  token = fake.createAccount("acme").token;
  for (let i = 0; i < 5; i++) fake.createDroplet("acme", { name: `p-${i}`, region: "nyc3", tags: ["pool"] });
});
afterAll(() => fake.close());

const client = (tok = () => token) =>
  new DigitalOceanClient({
    endpoint: fake.url,
    token: tok,
    requestTimeoutMs: 2_000,
    clock: systemClock,
    pageSize: 2,
    call: (op, fn) => {
      calls.push(op);
      return fn(new AbortController().signal);
    },
  });

const answer = (status: number, text: string) => ({
  what: `x GET /v2/droplets/1: HTTP ${status}`,
  method: "GET",
  path: "/droplets/1",
  status,
  retryAfter: status === 429 ? "3" : undefined,
  text,
});

describe("errors", () => {
  test("DigitalOcean's body is read; only its own not_found 404 is one", () => {
    const own = toContractError(
      DigitalOceanApiError.from(answer(404, '{"id":"not_found","message":"gone"}')),
      0,
    );
    expect(own).toBeInstanceOf(SuspectAnswerError);
    expect(isNotFound(own)).toBe(true);
    expect(String(own)).toContain("not_found: gone");
    const proxy = toContractError(DigitalOceanApiError.from(answer(404, "<html>nope</html>")), 0);
    expect(isNotFound(proxy)).toBe(false);
    const throttled = toContractError(
      DigitalOceanApiError.from(answer(429, '{"id":"too_many_requests","message":"slow"}')),
      0,
    );
    expect(throttled).toMatchObject({ retryAfterMs: 3_000 });
    expect(throttled).toBeInstanceOf(ThrottledError);
    expect(
      toContractError(
        DigitalOceanApiError.from(answer(422, '{"id":"unprocessable_entity","message":"no"}')),
        0,
      ),
    ).toBeInstanceOf(CloudError);
  });

  test("a refused token is ForbiddenError that never quotes the token", async () => {
    const err = await client(() => "dop_v1_secret_wrong")
      .get("droplets.get", "/droplets/1")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(String(err)).not.toContain("dop_v1_secret_wrong");
  });
});

describe("pages", () => {
  test("a list follows links.pages.next, one call per page, and stops where it is absent", async () => {
    calls.length = 0;
    const all = await client().list<{ name: string }>("droplets.list", "/droplets", "droplets", {
      tag_name: "pool",
    });
    expect(all.map((d) => d.name)).toEqual(["p-0", "p-1", "p-2", "p-3", "p-4"]);
    expect(calls).toEqual(["droplets.list", "droplets.list", "droplets.list"]);
  });

  test("an answer without the list's key is suspect, naming the path", async () => {
    await expect(client().page("droplets.list", "/droplets", "load_balancers", 1)).rejects.toThrow(
      /GET \/droplets: not a page of load_balancers/,
    );
  });
});
