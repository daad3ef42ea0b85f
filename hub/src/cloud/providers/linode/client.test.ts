// The client and the answer checks against an API that answers what Linode never would: a list
// that is no page envelope, ids that are not positive integers, addresses that are not addresses.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { systemClock } from "../../../util/clock.js";
import { SuspectAnswerError } from "../../errors.js";
import { LinodeClient } from "./client.js";
import { checkLinode } from "./instances.js";
import { checkId, checkNodeBalancer } from "./load-balancers.js";

let server: Server;
let client: LinodeClient;
let answer: unknown;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  client = new LinodeClient({
    endpoint: `http://127.0.0.1:${port}`,
    token: () => "t",
    requestTimeoutMs: 2_000,
    clock: systemClock,
    call: (_op, fn) => fn(new AbortController().signal),
  });
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe("answers that are not what Linode sends", () => {
  test.each([
    ["an object without data", { pages: 1 }],
    ["pages that is not a count", { data: [], page: 1, pages: 1.5 }],
    ["another page than asked", { data: [], page: 2, pages: 2 }],
    ["a list", []],
  ])("a list answered with %s: SuspectAnswerError naming the path", async (_what, body) => {
    answer = body;
    const err = await client.list("nodebalancers.list", "/nodebalancers").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SuspectAnswerError);
    expect((err as Error).message).toContain("/nodebalancers");
    expect((err as Error).message).toContain("not a page 1 envelope");
  });

  const linode = {
    id: 7,
    label: "n",
    region: "us-east",
    type: "g6",
    ipv4: ["192.168.1.2"],
    ipv6: null,
    tags: [],
  };
  test.each([
    ["id 0", { ...linode, id: 0 }],
    ["a negative id", { ...linode, id: -3 }],
    ["a fractional id", { ...linode, id: 1.5 }],
    ["an ipv4 that is not an address", { ...linode, ipv4: ["192.168.1.2", "../../x"] }],
    ["an ipv6 that is not an address", { ...linode, ipv6: "not-v6/128" }],
    ["a type that is not a string", { ...linode, type: 5 }],
    ["tags that are not strings", { ...linode, tags: [1] }],
  ])("a Linode with %s is refused", (_what, body) => {
    expect(() => checkLinode(body)).toThrow(SuspectAnswerError);
  });

  test("a well-formed Linode passes, its /128 IPv6 included", () => {
    expect(checkLinode({ ...linode, ipv6: "2600:3c03::1/128" }).id).toBe(7);
  });

  const nb = {
    id: 9,
    label: "x",
    region: "us-east",
    hostname: "h",
    ipv4: "172.105.0.1",
    ipv6: null,
    tags: [],
  };
  test.each([
    ["id 0", { ...nb, id: 0 }],
    ["a string id", { ...nb, id: "9" }],
    ["an ipv4 that is not an address", { ...nb, ipv4: "172.105.0.1/../" }],
    ["an ipv6 that is an IPv4", { ...nb, ipv6: "172.105.0.1" }],
    ["tags that are not a list", { ...nb, tags: "a,b" }],
  ])("a NodeBalancer with %s is refused", (_what, body) => {
    expect(() => checkNodeBalancer(body)).toThrow(SuspectAnswerError);
  });

  test("ids must be positive safe integers", () => {
    expect(checkId(12, "firewall")).toBe(12);
    for (const bad of [0, -1, 2 ** 53, "12", null])
      expect(() => checkId(bad, "firewall")).toThrow(SuspectAnswerError);
  });
});
