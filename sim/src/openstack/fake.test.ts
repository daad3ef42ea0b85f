// The fake OpenStack cloud on its own, over HTTP: Keystone tokens (both methods, the catalog of
// two regions and two interfaces, expiry), Nova's paging, microversions and error body,
// Neutron's floating IPs, router extra routes and error body, Octavia's provisioning state
// machine (409 while PENDING_UPDATE) and error body; every request and answer checked
// against the spec subsets; Cinder's volumes (catalog, paging without a last-page link, its
// fault body, a project not the token's refused) against its api-ref, whose checker is shown
// to catch what it should.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { cinderSpecChecker } from "./cinder-spec.js";
import { OpenStackFake } from "./index.js";
import type { FakeNetwork } from "./store.js";

let fake: OpenStackFake;
let clock = 1_000_000;
let net: FakeNetwork;
let ext: FakeNetwork;

async function call(
  method: string,
  url: string,
  opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {},
) {
  const res = await fetch(url.startsWith("http") ? url : `${fake.url}${url}`, {
    method,
    headers: {
      ...(opts.token !== undefined && { "x-auth-token": opts.token }),
      ...(opts.body !== undefined && { "content-type": "application/json" }),
      ...opts.headers,
    },
    ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? undefined : JSON.parse(text) };
}

async function appToken(id = "ac1", secret = "s3cret") {
  return call("POST", "/v3/auth/tokens", {
    body: {
      auth: { identity: { methods: ["application_credential"], application_credential: { id, secret } } },
    },
  });
}

beforeAll(async () => {
  fake = await OpenStackFake.start({ spec: true, now: () => clock, pendingMs: 1000, tokenTtlMs: 60_000 });
  fake.createProject("demo");
  fake.createApplicationCredential("demo", "ac1", "s3cret");
  fake.createUser("demo", { name: "alice", password: "pw" });
  net = fake.createNetwork("demo", "RegionOne", { name: "private", cidr: "10.0.0.0/24" });
  ext = fake.createNetwork("demo", "RegionOne", { name: "public", cidr: "172.24.4.0/24", external: true });
  for (let i = 0; i < 5; i++) fake.createServer("demo", "RegionOne", { name: `s-${i}`, networks: [net] });
  fake.createServer("demo", "RegionTwo", { name: "far", networks: [] });
});

afterEach(() => {
  const problems = fake.specProblems();
  fake.resetSpecProblems();
  expect(problems).toEqual([]);
});
afterAll(() => fake.close());

const nova = (region = "RegionOne") => `/${region}/public/compute/v2.1`;
const neutron = `/RegionOne/internal/network/v2.0`;
const octavia = `/RegionOne/public/load-balancer/v2/lbaas`;

describe("keystone", () => {
  test("an application credential gets a token (X-Subject-Token) with a catalog of two regions and interfaces", async () => {
    const res = await appToken();
    expect(res.status).toBe(201);
    expect(res.headers.get("x-subject-token")).toMatch(/^gAAAAA/);
    const token = res.body.token;
    expect(Date.parse(token.expires_at)).toBe(clock + 60_000);
    const compute = token.catalog.find((s: { type: string }) => s.type === "compute");
    expect(
      compute.endpoints.map((e: { region: string; interface: string }) => `${e.region}/${e.interface}`),
    ).toEqual(["RegionOne/public", "RegionOne/internal", "RegionTwo/public", "RegionTwo/internal"]);
    expect(token.project.name).toBe("demo");
  });

  test("a password with a project scope gets a token; a wrong secret is Keystone's 401", async () => {
    const ok = await call("POST", "/v3/auth/tokens", {
      body: {
        auth: {
          identity: {
            methods: ["password"],
            password: { user: { name: "alice", domain: { name: "Default" }, password: "pw" } },
          },
          scope: { project: { name: "demo", domain: { name: "Default" } } },
        },
      },
    });
    expect(ok.status).toBe(201);
    const bad = await appToken("ac1", "nope");
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ error: { code: 401, message: expect.any(String), title: "Unauthorized" } });
  });

  test("a token is refused once expired", async () => {
    const token = (await appToken()).headers.get("x-subject-token") ?? "";
    expect((await call("GET", `${nova()}/servers/detail`, { token })).status).toBe(200);
    clock += 60_001;
    const after = await call("GET", `${nova()}/servers/detail`, { token });
    expect(after.status).toBe(401);
  });
});

describe("nova", () => {
  let token: string;
  beforeAll(async () => {
    token = (await appToken()).headers.get("x-subject-token") ?? "";
  });

  test("servers/detail pages with limit and marker; each region its own", async () => {
    const seen: string[] = [];
    let url: string | undefined = `${nova()}/servers/detail?limit=2`;
    while (url !== undefined) {
      const page = await call("GET", url, { token });
      expect(page.status).toBe(200);
      seen.push(...page.body.servers.map((s: { name: string }) => s.name));
      url = page.body.servers_links.find((l: { rel: string }) => l.rel === "next")?.href;
    }
    expect(seen).toEqual(["s-0", "s-1", "s-2", "s-3", "s-4"]);
    const two = await call("GET", `${nova("RegionTwo")}/servers/detail`, { token });
    expect(two.body.servers.map((s: { name: string }) => s.name)).toEqual(["far"]);
  });

  test("microversion 2.47 embeds the flavor and is echoed; an unknown server is itemNotFound", async () => {
    const list = await call("GET", `${nova()}/servers/detail`, { token });
    const id = list.body.servers[0].id;
    const old = await call("GET", `${nova()}/servers/${id}`, { token });
    expect(old.body.server.flavor.id).toBe("m1.small");
    const v = await call("GET", `${nova()}/servers/${id}`, {
      token,
      headers: { "openstack-api-version": "compute 2.47" },
    });
    expect(v.headers.get("openstack-api-version")).toBe("compute 2.47");
    expect(v.body.server.flavor.original_name).toBe("m1.small");
    expect(v.body.server.addresses.private[0]).toMatchObject({ "OS-EXT-IPS:type": "fixed", version: 4 });
    const gone = await call("GET", `${nova()}/servers/5e0c0000-0000-4000-8000-00000000ffff`, { token });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({
      itemNotFound: { code: 404, message: expect.stringContaining("could not be found") },
    });
    const tooNew = await call("GET", `${nova()}/servers/${id}`, {
      token,
      headers: { "openstack-api-version": "compute 2.200" },
    });
    expect(tooNew.status).toBe(406);
  });
});

describe("neutron", () => {
  let token: string;
  beforeAll(async () => {
    token = (await appToken()).headers.get("x-subject-token") ?? "";
  });

  test("ports by device_id, floating IPs, and Neutron's error body", async () => {
    const servers = (await call("GET", `${nova()}/servers/detail`, { token })).body.servers;
    const ports = await call(
      "GET",
      `${neutron}/ports?device_id=${servers[0].id}&device_id=${servers[1].id}`,
      { token },
    );
    expect(ports.body.ports).toHaveLength(2);
    const fip = await call("POST", `${neutron}/floatingips`, {
      token,
      body: {
        floatingip: { floating_network_id: ext.id, port_id: ports.body.ports[0].id, description: "x" },
      },
    });
    expect(fip.status).toBe(201);
    expect(fip.body.floatingip.port_id).toBe(ports.body.ports[0].id);
    const missing = await call("GET", `${neutron}/floatingips/5e0c0000-0000-4000-8000-00000000ffff`, {
      token,
    });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      NeutronError: { type: "FloatingIPNotFound", message: expect.any(String), detail: "" },
    });
    expect((await call("DELETE", `${neutron}/floatingips/${fip.body.floatingip.id}`, { token })).status).toBe(
      204,
    );
  });

  test("ports page with limit and marker, a next link until the last page (ports_links, spec-checked)", async () => {
    const seen: string[] = [];
    let url: string | undefined = `${neutron}/ports?limit=2`;
    let pages = 0;
    while (url !== undefined) {
      const page = await call("GET", url, { token });
      expect(page.status).toBe(200);
      expect(page.body.ports.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.ports.map((p: { id: string }) => p.id));
      url = page.body.ports_links.find((l: { rel: string }) => l.rel === "next")?.href;
      pages++;
    }
    const all = (await call("GET", `${neutron}/ports`, { token })).body.ports.map(
      (p: { id: string }) => p.id,
    );
    expect(all.length).toBeGreaterThanOrEqual(5);
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 2));
    const bad = await call("GET", `${neutron}/ports?limit=2&marker=5e0c0000-0000-4000-8000-00000000ffff`, {
      token,
    });
    expect(bad.status).toBe(404);
  });

  test("add_extraroutes and remove_extraroutes change only the routes named", async () => {
    const r = fake.createRouter("demo", "RegionOne", "router1");
    fake.addRouterRoute(r.id, "192.168.0.0/24", "10.0.0.99");
    const add = await call("PUT", `${neutron}/routers/${r.id}/add_extraroutes`, {
      token,
      body: { router: { routes: [{ destination: "10.244.1.0/24", nexthop: "10.0.0.3" }] } },
    });
    expect(add.body.router.routes).toHaveLength(2);
    const rm = await call("PUT", `${neutron}/routers/${r.id}/remove_extraroutes`, {
      token,
      body: { router: { routes: [{ destination: "10.244.1.0/24", nexthop: "10.0.0.3" }] } },
    });
    expect(rm.body.router.routes).toEqual([{ destination: "192.168.0.0/24", nexthop: "10.0.0.99" }]);
  });
});

describe("octavia", () => {
  let token: string;
  beforeAll(async () => {
    token = (await appToken()).headers.get("x-subject-token") ?? "";
  });

  test("provisioning: PENDING_CREATE, then ACTIVE; a change while PENDING_UPDATE is 409; cascade delete", async () => {
    const created = await call("POST", `${octavia}/loadbalancers`, {
      token,
      body: {
        loadbalancer: { name: "kube_service_c_default_web", vip_subnet_id: net.subnets[0]?.id, tags: ["a"] },
      },
    });
    expect(created.body).toMatchObject({ loadbalancer: { name: "kube_service_c_default_web" } });
    expect(created.status).toBe(201);
    const lb = created.body.loadbalancer;
    expect(lb.provisioning_status).toBe("PENDING_CREATE");
    const early = await call("POST", `${octavia}/listeners`, {
      token,
      body: { listener: { loadbalancer_id: lb.id, protocol: "TCP", protocol_port: 80 } },
    });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({
      faultcode: "Client",
      faultstring: expect.stringContaining("immutable"),
      debuginfo: null,
    });
    clock += 1000;
    expect(
      (await call("GET", `${octavia}/loadbalancers/${lb.id}`, { token })).body.loadbalancer
        .provisioning_status,
    ).toBe("ACTIVE");
    const listener = await call("POST", `${octavia}/listeners`, {
      token,
      body: { listener: { loadbalancer_id: lb.id, protocol: "TCP", protocol_port: 80, name: "l80" } },
    });
    expect(listener.status).toBe(201);
    const busy = await call("POST", `${octavia}/pools`, {
      token,
      body: {
        pool: { listener_id: listener.body.listener.id, protocol: "TCP", lb_algorithm: "ROUND_ROBIN" },
      },
    });
    expect(busy.status).toBe(409);
    clock += 1000;
    const pool = await call("POST", `${octavia}/pools`, {
      token,
      body: {
        pool: { listener_id: listener.body.listener.id, protocol: "TCP", lb_algorithm: "ROUND_ROBIN" },
      },
    });
    expect(pool.status).toBe(201);
    clock += 1000;
    const members = await call("PUT", `${octavia}/pools/${pool.body.pool.id}/members`, {
      token,
      body: {
        members: [
          { address: "10.0.0.3", protocol_port: 30080 },
          { address: "10.0.0.4", protocol_port: 30080 },
        ],
      },
    });
    expect(members.status).toBe(202);
    clock += 1000;
    const listed = await call("GET", `${octavia}/pools/${pool.body.pool.id}/members`, { token });
    expect(listed.body.members.map((m: { address: string }) => m.address)).toEqual(["10.0.0.3", "10.0.0.4"]);
    const byName = await call("GET", `${octavia}/loadbalancers?name=kube_service_c_default_web`, { token });
    expect(byName.body.loadbalancers).toHaveLength(1);
    expect((await call("DELETE", `${octavia}/loadbalancers/${lb.id}`, { token })).status).toBe(400);
    expect((await call("DELETE", `${octavia}/loadbalancers/${lb.id}?cascade=true`, { token })).status).toBe(
      204,
    );
    expect(fake.lbStatus(lb.id)).toBe("PENDING_DELETE");
    clock += 1000;
    expect((await call("GET", `${octavia}/loadbalancers/${lb.id}`, { token })).status).toBe(404);
    expect(fake.store.pools.size).toBe(0);
  });
});

describe("cinder", () => {
  test("the catalog's block-storage endpoint, volumes by id and paged details, Cinder's faults", async () => {
    const auth = await appToken();
    const token = auth.headers.get("x-subject-token") ?? "";
    const project = auth.body.token.project.id as string;
    const cinder = auth.body.token.catalog.find((s: { type: string }) => s.type === "block-storage");
    const ep = cinder.endpoints.find(
      (e: { region: string; interface: string }) => e.region === "RegionOne" && e.interface === "public",
    );
    const base = `${ep.url}/${project}`;
    const made = [1, 2, 3].map((n) => fake.createVolume("demo", "RegionOne", { size: n, az: "az-1" }));
    const one = await call("GET", `${base}/volumes/${made[0]!.id}`, { token });
    expect(one.status).toBe(200);
    expect(one.body.volume).toMatchObject({
      id: made[0]!.id,
      size: 1,
      availability_zone: "az-1",
      status: "available",
    });
    const first = await call("GET", `${base}/volumes/detail?limit=2`, { token });
    expect(first.body.volumes.map((v: { id: string }) => v.id)).toEqual([made[0]!.id, made[1]!.id]);
    expect(first.body.volumes_links[0].rel).toBe("next");
    const last = await call("GET", `${base}/volumes/detail?limit=2&marker=${made[1]!.id}`, { token });
    expect(last.body).toEqual({ volumes: [expect.objectContaining({ id: made[2]!.id })] });
    const missing = await call("GET", `${base}/volumes/5e0c0000-0000-4000-8000-00000000fffe`, { token });
    expect(missing.status).toBe(404);
    expect(missing.body.itemNotFound).toMatchObject({ code: 404 });
    const theirs = await call("GET", `${ep.url}/5e0c0000-0000-4000-8000-00000000fffd/volumes/detail`, {
      token,
    });
    expect(theirs.status).toBe(403);
  });

  test("the api-ref checker refuses an undocumented query, a mistyped or undocumented member, a missing required one", () => {
    const checker = cinderSpecChecker();
    const path = "/v3/p1/volumes/detail";
    const q = (s: string) => new URLSearchParams(s);
    expect(checker.checkRequest({ method: "GET", path, query: q("limit=2"), headers: {} }).problems).toEqual(
      [],
    );
    expect(
      checker.checkRequest({ method: "GET", path, query: q("limit=x&id=1"), headers: {} }).problems,
    ).toEqual(["query limit=x is not an integer", "query id is not a documented parameter"]);
    const volume = { id: "v", size: "1", status: "available", colour: "blue" };
    const answer = checker.checkResponse(
      { method: "GET", path: "/v3/p1/volumes/v" },
      { status: 200, headers: {}, body: { volume } },
    );
    expect(answer.specOperation).toBe("GET /v3/{project_id}/volumes/{volume_id}");
    expect(answer.problems).toEqual(
      expect.arrayContaining([
        "volume.size is not integer",
        "volume.colour is not a documented response parameter",
        "volume lacks the required attachments",
      ]),
    );
  });
});
