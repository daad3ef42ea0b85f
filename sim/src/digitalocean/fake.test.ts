// The fake DigitalOcean API: its answers and the requests made of it, checked against
// DigitalOcean's OpenAPI document (sim/fixtures/digitalocean/).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { DigitalOceanFake } from "./fake.js";

const VPC = "c33931f2-a26a-4e61-b85c-4e95a2ec431b";

let fake: DigitalOceanFake;
let token: string;

async function call(method: string, path: string, body?: unknown, auth = token) {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${auth}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text === "" ? undefined : JSON.parse(text),
  };
}

const lbBody = (over: Record<string, unknown> = {}) => ({
  name: "fccm-test",
  region: "nyc3",
  vpc_uuid: VPC,
  forwarding_rules: [{ entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 30080 }],
  health_check: {
    protocol: "tcp",
    port: 30080,
    check_interval_seconds: 10,
    response_timeout_seconds: 5,
    healthy_threshold: 3,
    unhealthy_threshold: 3,
  },
  sticky_sessions: { type: "none" },
  firewall: { allow: ["cidr:10.0.0.0/8"], deny: [] },
  droplet_ids: [] as number[],
  ...over,
});

beforeAll(async () => {
  fake = await DigitalOceanFake.start({ spec: true });
  token = fake.createAccount("acme").token;
});
afterAll(() => fake.close());
afterEach(() => {
  fake.resetFaults();
  fake.assertSpecClean();
});

describe("droplets", () => {
  test("get answers the Droplet with its networks, size and region; another account's or a missing one is a 404 envelope", async () => {
    const d = fake.createDroplet("acme", { name: "web-1", region: "nyc3", vpcUuid: VPC });
    const got = await call("GET", `/v2/droplets/${d.id}`);
    expect(got.status).toBe(200);
    expect(got.body.droplet).toMatchObject({
      id: d.id,
      name: "web-1",
      size_slug: "s-2vcpu-4gb",
      region: { slug: "nyc3" },
      vpc_uuid: VPC,
    });
    expect(got.headers.get("ratelimit-limit")).toBe("5000");
    expect(Number(got.headers.get("ratelimit-remaining"))).toBeLessThan(5000);
    const other = fake.createAccount("other");
    const theirs = fake.createDroplet("other", { name: "x", region: "nyc3" });
    const missing = await call("GET", `/v2/droplets/${theirs.id}`);
    expect(missing).toMatchObject({ status: 404, body: { id: "not_found" } });
    expect(other.token).not.toBe(token);
  });

  test("list pages with per_page and links.pages.next, filters by tag_name and name", async () => {
    for (let i = 0; i < 5; i++)
      fake.createDroplet("acme", { name: `many-${i}`, region: "nyc3", tags: ["k8s:pool"] });
    const first = await call("GET", "/v2/droplets?tag_name=k8s:pool&per_page=2");
    expect(first.body.droplets).toHaveLength(2);
    expect(first.body.meta.total).toBe(5);
    const next = new URL(first.body.links.pages.next as string);
    expect(next.searchParams.get("page")).toBe("2");
    expect(next.searchParams.get("tag_name")).toBe("k8s:pool");
    const last = await call("GET", "/v2/droplets?tag_name=k8s:pool&per_page=2&page=3");
    expect(last.body.droplets).toHaveLength(1);
    expect(last.body.links.pages.next).toBeUndefined();
    const byName = await call("GET", "/v2/droplets?name=many-3");
    expect(byName.body.droplets.map((d: { name: string }) => d.name)).toEqual(["many-3"]);
  });

  test("a bad token is a 401 envelope", async () => {
    expect(await call("GET", "/v2/droplets", undefined, "nope")).toMatchObject({
      status: 401,
      body: { id: "unauthorized" },
    });
  });
});

describe("load balancers", () => {
  test("create answers 202 `new`; a read makes it active with an IP; PUT replaces the whole object; delete is 204", async () => {
    const d = fake.createDroplet("acme", { name: "lb-node", region: "nyc3", vpcUuid: VPC });
    const made = await call("POST", "/v2/load_balancers", lbBody({ droplet_ids: [d.id] }));
    expect(made.status).toBe(202);
    expect(made.body.load_balancer).toMatchObject({ status: "new", ip: "", droplet_ids: [d.id] });
    const id = made.body.load_balancer.id as string;
    const early = await call("PUT", `/v2/load_balancers/${id}`, lbBody());
    expect(early).toMatchObject({ status: 422, body: { id: "unprocessable_entity" } });
    const got = await call("GET", `/v2/load_balancers/${id}`);
    expect(got.body.load_balancer.status).toBe("active");
    expect(got.body.load_balancer.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const put = await call(
      "PUT",
      `/v2/load_balancers/${id}`,
      lbBody({
        droplet_ids: [],
        sticky_sessions: { type: "cookies", cookie_name: "c", cookie_ttl_seconds: 60 },
      }),
    );
    expect(put.status).toBe(200);
    expect(put.body.load_balancer).toMatchObject({ droplet_ids: [], sticky_sessions: { type: "cookies" } });
    const list = await call("GET", "/v2/load_balancers?per_page=1");
    expect(list.body.load_balancers).toHaveLength(1);
    expect((await call("DELETE", `/v2/load_balancers/${id}`)).status).toBe(204);
    expect((await call("GET", `/v2/load_balancers/${id}`)).status).toBe(404);
  });

  test("a failed creation ends errored; a tag and droplet_ids together are refused", async () => {
    fake.failNextCreates("acme", 1);
    const made = await call("POST", "/v2/load_balancers", lbBody({ name: "fails" }));
    const got = await call("GET", `/v2/load_balancers/${made.body.load_balancer.id}`);
    expect(got.body.load_balancer.status).toBe("errored");
    const both = await call("POST", "/v2/load_balancers", lbBody({ tag: "k8s", droplet_ids: [1] }));
    expect(both.status).toBe(422);
    // The spec refuses that body too (its oneOf: by ids or by tag).
    expect(fake.specProblems().map((p) => p.message)).toEqual([
      "body: must match exactly one schema in oneOf",
    ]);
    fake.resetSpecProblems();
    await call("DELETE", `/v2/load_balancers/${made.body.load_balancer.id}`);
  });

  test("activation can wait for several reads", async () => {
    fake.setActivation(3);
    const made = await call("POST", "/v2/load_balancers", lbBody({ name: "slow" }));
    const id = made.body.load_balancer.id as string;
    const states = [];
    for (let i = 0; i < 3; i++)
      states.push((await call("GET", `/v2/load_balancers/${id}`)).body.load_balancer.status);
    expect(states).toEqual(["new", "new", "active"]);
    fake.setActivation(1);
    await call("DELETE", `/v2/load_balancers/${id}`);
  });

  test("faults: a throttle is DigitalOcean's 429 with Retry-After and the ratelimit headers", async () => {
    fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 4 }, "acme");
    const t = await call("GET", "/v2/load_balancers");
    expect(t).toMatchObject({ status: 429, body: { id: "too_many_requests" } });
    expect(t.headers.get("retry-after")).toBe("4");
    expect(t.headers.get("ratelimit-reset")).toMatch(/^\d+$/);
    fake.resetFaults();
    fake.setFaults({ errorRate: 1 }, "acme");
    expect((await call("GET", "/v2/load_balancers")).status).toBeGreaterThanOrEqual(500);
  });
});
