import { afterEach, describe, expect, test } from "@jest/globals";
import { cidrKey, isNetworkAddress, parseCidr } from "./cidr.js";
import { startSimulatedCloud } from "./cloud.js";
import { LbStore } from "./lb-store.js";
import { seededRandom } from "./random.js";
import { CloudStore } from "./store.js";
import type { SimulatedCloud, SimulatedCloudOptions } from "./types.js";
import type {
  WireFirewallRule,
  WireHealthCheck,
  WireListener,
  WireLoadBalancer,
  WireLoadBalancerList,
  WirePool,
} from "./wire.js";

const REGION = "sim-east-1";
const clouds: SimulatedCloud[] = [];

afterEach(async () => {
  await Promise.all(clouds.splice(0).map((c) => c.close()));
});

type Body = Record<string, unknown>;

async function harness(opts: SimulatedCloudOptions = {}) {
  const cloud = await startSimulatedCloud(opts);
  clouds.push(cloud);
  const { apiKey } = cloud.createAccount("acme");
  const call = async (method: string, path: string, body?: unknown, key: string = apiKey) => {
    const res = await fetch(`${cloud.url}/v1/regions/${REGION}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text === "" ? {} : JSON.parse(text)) as Body };
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cloud.url}/admin${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as Body };
  };
  const nodes = [0, 1, 2].map((n) => cloud.createInstance("acme", { name: `node-${n}`, region: REGION }));
  /** A whole load balancer over HTTP: lb, hc, pool, listener, firewall rule. */
  const fullLb = async (name: string, tags: Record<string, string> = { owner: "me" }) => {
    const lb = (await call("POST", "/load-balancers", { name, tags })).body as unknown as WireLoadBalancer;
    const hc = (
      await call("POST", "/health-checks", { name: `${name}-hc`, protocol: "TCP", port: 30080, tags })
    ).body as unknown as WireHealthCheck;
    const pool = (
      await call("POST", "/pools", {
        name: `${name}-pool-tcp-80`,
        lb_id: lb.id,
        protocol: "TCP",
        target_port: 30080,
        members: nodes.map((n) => n.id),
        health_check_id: hc.id,
        tags,
      })
    ).body as unknown as WirePool;
    const listener = (
      await call("POST", "/listeners", {
        name: `${name}-tcp-80`,
        lb_id: lb.id,
        protocol: "TCP",
        port: 80,
        pool_id: pool.id,
        tags,
      })
    ).body as unknown as WireListener;
    const fw = (
      await call("POST", "/firewall-rules", {
        name: `${name}-fw-tcp-80`,
        lb_id: lb.id,
        protocol: "TCP",
        port: 80,
        source_cidrs: ["0.0.0.0/0"],
        tags,
      })
    ).body as unknown as WireFirewallRule;
    return { lb, hc, pool, listener, fw };
  };
  return { cloud, apiKey, call, admin, nodes, fullLb };
}

function errorCode(body: Body): unknown {
  return (body["error"] as { code?: unknown } | undefined)?.code;
}

describe("simulated cloud - load balancers", () => {
  test("lb - create answers every field; get and list agree; ingress and hostname", async () => {
    const { cloud, call } = await harness();
    const res = await call("POST", "/load-balancers", { name: "web", tags: { a: "1" } });
    expect(res.status).toBe(201);
    const lb = res.body as unknown as WireLoadBalancer;
    expect(lb).toMatchObject({
      name: "web",
      region: REGION,
      network: cloud.networks("acme", REGION)[0]!.id,
      internal: false,
      ingress: { ip: "198.18.0.1", hostname: `web.${REGION}.lb.sim.example` },
      listener_ids: [],
      pool_ids: [],
      health_check_ids: [],
      firewall_ids: [],
      tags: { a: "1" },
    });
    expect(lb.id).toMatch(/^lb-[0-9a-f]{12}$/);
    expect((await call("GET", `/load-balancers/${lb.id}`)).body).toEqual(lb);
    const internal = (await call("POST", "/load-balancers", { name: "db", internal: true }))
      .body as unknown as WireLoadBalancer;
    expect(internal.ingress.ip).toBe("10.200.0.1");
    const list = (await call("GET", "/load-balancers")).body as unknown as WireLoadBalancerList;
    expect(list.load_balancers.map((l) => l.name)).toEqual(["web", "db"]);
    expect(cloud.loadBalancers("acme").map((l) => l.id)).toEqual([lb.id, internal.id]);
  });

  test("lb - names are not unique: a second create with the same name succeeds", async () => {
    const { cloud, call } = await harness();
    const a = await call("POST", "/load-balancers", { name: "same", tags: { o: "x" } });
    const b = await call("POST", "/load-balancers", { name: "same", tags: { o: "x" } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body["id"]).not.toBe(b.body["id"]);
    expect(cloud.auditLoadBalancers().duplicates).toEqual([
      {
        kind: "load-balancer",
        account: "acme",
        region: REGION,
        name: "same",
        ids: [a.body["id"], b.body["id"]],
      },
    ]);
  });

  test("lb - sub-resources link up: the lb lists them by id", async () => {
    const { cloud, call, fullLb, nodes } = await harness();
    const { lb, hc, pool, listener, fw } = await fullLb("web");
    expect(pool).toMatchObject({
      lb_id: lb.id,
      members: nodes.map((n) => n.id),
      session_affinity: "None",
      health_check_id: hc.id,
    });
    expect(listener).toMatchObject({ pool_id: pool.id, proxy_protocol: false, idle_timeout_seconds: 60 });
    expect(hc).toMatchObject({ interval_seconds: 10, timeout_seconds: 5, path: "" });
    expect(fw.source_cidrs).toEqual(["0.0.0.0/0"]);
    for (const [prefix, id] of [
      ["hc", hc.id],
      ["pool", pool.id],
      ["lsn", listener.id],
      ["fw", fw.id],
    ] as const)
      expect(id).toMatch(new RegExp(`^${prefix}-[0-9a-f]{12}$`));
    const got = (await call("GET", `/load-balancers/${lb.id}`)).body as unknown as WireLoadBalancer;
    expect(got).toMatchObject({
      listener_ids: [listener.id],
      pool_ids: [pool.id],
      health_check_ids: [hc.id],
      firewall_ids: [fw.id],
    });
    const inv = cloud.inventory("acme");
    expect(inv.loadBalancers).toHaveLength(1);
    expect(inv.listeners[0]).toMatchObject({ id: listener.id, lbId: lb.id, poolId: pool.id, port: 80 });
    expect(inv.pools[0]).toMatchObject({ id: pool.id, targetPort: 30080, healthCheckId: hc.id });
    expect(inv.healthChecks[0]?.id).toBe(hc.id);
    expect(inv.firewallRules[0]).toMatchObject({ id: fw.id, sourceCidrs: ["0.0.0.0/0"] });
    expect(cloud.auditLoadBalancers()).toEqual({ orphans: [], duplicates: [] });
  });

  test("lb - references are checked: members, pools of another lb, health checks, lb", async () => {
    const { cloud, call, nodes } = await harness();
    const lb = (await call("POST", "/load-balancers", { name: "a" })).body as unknown as WireLoadBalancer;
    const other = (await call("POST", "/load-balancers", { name: "b" })).body as unknown as WireLoadBalancer;
    const pool = (
      await call("POST", "/pools", { name: "p", lb_id: other.id, protocol: "TCP", target_port: 1 })
    ).body as unknown as WirePool;
    const gone = nodes[0]!;
    cloud.terminateInstance(gone.id);
    cloud.createAccount("rival");
    const theirs = cloud.createInstance("rival", { name: "t", region: REGION });
    const west = cloud.createInstance("acme", { name: "w", region: "sim-west-1" });
    for (const members of [[gone.id], [theirs.id], [west.id], ["i-000000000000"], "nope"]) {
      const res = await call("POST", "/pools", {
        name: "p",
        lb_id: lb.id,
        protocol: "TCP",
        target_port: 1,
        members,
      });
      expect([res.status, errorCode(res.body)]).toEqual([400, "InvalidParameter"]);
    }
    const cross = await call("POST", "/listeners", {
      name: "l",
      lb_id: lb.id,
      protocol: "TCP",
      port: 80,
      pool_id: pool.id,
    });
    expect(cross.status).toBe(400);
    expect(String((cross.body["error"] as Body)["message"])).toMatch(/belongs to load balancer/);
    const noLb = await call("POST", "/firewall-rules", {
      name: "f",
      lb_id: "lb-000000000000",
      protocol: "TCP",
      port: 1,
      source_cidrs: ["0.0.0.0/0"],
    });
    expect(noLb.status).toBe(400);
    const noHc = await call("POST", "/pools", {
      name: "p",
      lb_id: lb.id,
      protocol: "TCP",
      target_port: 1,
      health_check_id: "hc-000000000000",
    });
    expect(noHc.status).toBe(400);
    const badCidr = await call("POST", "/firewall-rules", {
      name: "f",
      lb_id: lb.id,
      protocol: "TCP",
      port: 1,
      source_cidrs: ["10.0.0.0/33"],
    });
    expect(badCidr.status).toBe(400);
    expect((await call("POST", "/load-balancers", { name: "x", nope: 1 })).status).toBe(400);
    expect((await call("POST", "/load-balancers", { name: "x", network: "vpc-elsewhere" })).status).toBe(400);
    expect(
      (await call("POST", "/listeners", { name: "l", lb_id: lb.id, protocol: "QUIC", port: 1 })).status,
    ).toBe(400);
  });

  test("lb - one listener per protocol and port: 409 DuplicateListener", async () => {
    const { call, fullLb } = await harness();
    const { lb, pool } = await fullLb("web");
    const dup = await call("POST", "/listeners", {
      name: "again",
      lb_id: lb.id,
      protocol: "TCP",
      port: 80,
      pool_id: pool.id,
    });
    expect([dup.status, errorCode(dup.body)]).toEqual([409, "DuplicateListener"]);
    const udp = await call("POST", "/listeners", {
      name: "udp",
      lb_id: lb.id,
      protocol: "UDP",
      port: 80,
      pool_id: pool.id,
    });
    expect(udp.status).toBe(201);
  });

  test("lb - dependency rules: 409 DependencyViolation in the wrong order, success in the right one", async () => {
    const { cloud, call, fullLb } = await harness();
    const { lb, hc, pool, listener, fw } = await fullLb("web");
    for (const path of [`/load-balancers/${lb.id}`, `/pools/${pool.id}`, `/health-checks/${hc.id}`]) {
      const res = await call("DELETE", path);
      expect([res.status, errorCode(res.body)]).toEqual([409, "DependencyViolation"]);
    }
    expect((await call("DELETE", `/listeners/${listener.id}`)).status).toBe(204);
    // The load balancer may go now; its pool and firewall rule stay behind as orphans.
    expect((await call("DELETE", `/load-balancers/${lb.id}`)).status).toBe(204);
    const audit = cloud.auditLoadBalancers();
    expect(audit.orphans.map((o) => [o.kind, o.id])).toEqual([
      ["pool", pool.id],
      ["firewall-rule", fw.id],
    ]);
    expect((await call("DELETE", `/health-checks/${hc.id}`)).status).toBe(409);
    expect((await call("DELETE", `/pools/${pool.id}`)).status).toBe(204);
    expect(cloud.auditLoadBalancers().orphans.map((o) => [o.kind, o.reason])).toEqual([
      ["health-check", "no pool uses it"],
      ["firewall-rule", `load balancer ${lb.id} does not exist`],
    ]);
    expect((await call("DELETE", `/health-checks/${hc.id}`)).status).toBe(204);
    expect((await call("DELETE", `/firewall-rules/${fw.id}`)).status).toBe(204);
    expect(cloud.inventory()).toEqual({
      loadBalancers: [],
      listeners: [],
      pools: [],
      healthChecks: [],
      firewallRules: [],
    });
    const again = await call("DELETE", `/pools/${pool.id}`);
    expect(again.status).toBe(404);
    expect(again.body["error"]).toMatchObject({ code: "NotFound", resource: { type: "pool", id: pool.id } });
    // An id of another kind is not found under this collection.
    expect((await call("DELETE", `/listeners/${hc.id}`)).status).toBe(404);
  });

  test("lb - update in place: listener, pool, health check, firewall rule, lb tags", async () => {
    const { call, fullLb, nodes } = await harness();
    const { lb, hc, pool, listener, fw } = await fullLb("web");
    const l = await call("PATCH", `/listeners/${listener.id}`, {
      port: 8080,
      proxy_protocol: true,
      idle_timeout_seconds: 300,
    });
    expect(l.body).toMatchObject({
      id: listener.id,
      port: 8080,
      proxy_protocol: true,
      idle_timeout_seconds: 300,
    });
    const p = await call("PATCH", `/pools/${pool.id}`, {
      members: [nodes[1]!.id],
      target_port: 31000,
      session_affinity: "ClientIP",
    });
    expect(p.body).toMatchObject({
      members: [nodes[1]!.id],
      target_port: 31000,
      session_affinity: "ClientIP",
    });
    const h = await call("PATCH", `/health-checks/${hc.id}`, {
      protocol: "HTTP",
      path: "/healthz",
      port: 31001,
    });
    expect(h.body).toMatchObject({ protocol: "HTTP", path: "/healthz", port: 31001 });
    const f = await call("PATCH", `/firewall-rules/${fw.id}`, {
      source_cidrs: ["203.0.113.0/24", "2001:db8::/32"],
    });
    expect(f.body["source_cidrs"]).toEqual(["203.0.113.0/24", "2001:db8::/32"]);
    const t = await call("PATCH", `/load-balancers/${lb.id}`, { tags: { owner: "me", extra: "1" } });
    expect(t.body["tags"]).toEqual({ owner: "me", extra: "1" });
    // Read-only or unknown fields are refused.
    expect((await call("PATCH", `/load-balancers/${lb.id}`, { internal: true })).status).toBe(400);
    expect((await call("PATCH", `/pools/${pool.id}`, { lb_id: lb.id })).status).toBe(400);
    // Detach the health check (JSON null), then it may go.
    expect(
      (await call("PATCH", `/pools/${pool.id}`, { health_check_id: null })).body["health_check_id"],
    ).toBeNull();
    expect((await call("DELETE", `/health-checks/${hc.id}`)).status).toBe(204);
  });

  test("lb - lists filter on name, tags (AND) and lb_id, and page", async () => {
    const { call } = await harness();
    for (let n = 0; n < 7; n++) {
      await call("POST", "/load-balancers", {
        name: n % 2 === 0 ? "even" : "odd",
        tags: { cluster: "c1", n: String(n) },
      });
    }
    await call("POST", "/load-balancers", { name: "even", tags: { cluster: "c2" } });
    const names = async (qs: string) =>
      (
        (await call("GET", `/load-balancers?${qs}`)).body as unknown as WireLoadBalancerList
      ).load_balancers.map((l) => `${l.name}:${l.tags["n"] ?? "-"}`);
    expect(await names("name=even&tag=cluster=c1")).toEqual(["even:0", "even:2", "even:4", "even:6"]);
    expect(await names("tag=cluster=c1&tag=n=3")).toEqual(["odd:3"]);
    expect(await names("tag=cluster=c2")).toEqual(["even:-"]);
    expect(await names(`tag=${encodeURIComponent("cluster=c1")}&name=nobody`)).toEqual([]);
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = (
        await call(
          "GET",
          `/load-balancers?tag=cluster=c1&page_size=3${token === undefined ? "" : `&page_token=${token}`}`,
        )
      ).body as unknown as WireLoadBalancerList;
      seen.push(...page.load_balancers.map((l) => l.tags["n"] ?? ""));
      token = page.next_page_token;
      pages++;
    } while (token !== undefined);
    expect(seen).toEqual(["0", "1", "2", "3", "4", "5", "6"]);
    expect(pages).toBe(3);
    expect((await call("GET", "/load-balancers?tag=novalue")).status).toBe(400);
    expect((await call("GET", "/load-balancers?page_token=garbage")).status).toBe(400);
  });

  test("lb - lb_id filter on sub-resources; account and region scoping", async () => {
    const { cloud, apiKey, call, fullLb } = await harness();
    const a = await fullLb("a");
    const b = await fullLb("b");
    const listeners = (await call("GET", `/listeners?lb_id=${b.lb.id}`)).body["listeners"] as WireListener[];
    expect(listeners.map((l) => l.id)).toEqual([b.listener.id]);
    const rival = cloud.createAccount("rival");
    expect((await call("GET", `/load-balancers/${a.lb.id}`, undefined, rival.apiKey)).status).toBe(404);
    expect((await call("GET", "/pools", undefined, rival.apiKey)).body).toEqual({ pools: [] });
    expect((await call("DELETE", `/pools/${a.pool.id}`, undefined, rival.apiKey)).status).toBe(404);
    const west = await fetch(`${cloud.url}/v1/regions/sim-west-1/load-balancers/${a.lb.id}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(west.status).toBe(404);
  });

  test("lb - faults apply: throttle, errors, empty and dropped lists, stale gets, lost answers", async () => {
    let now = 1_000_000;
    const { cloud, call } = await harness({ now: () => now });
    for (let n = 0; n < 6; n++) await call("POST", "/load-balancers", { name: `lb-${n}`, tags: { k: "v" } });
    cloud.setFaults({ throttleRate: 1 });
    expect((await call("POST", "/load-balancers", { name: "x" })).status).toBe(429);
    cloud.setFaults({ throttleRate: 0, errorRate: 1 });
    expect([500, 503]).toContain((await call("GET", "/pools")).status);
    cloud.setFaults({ errorRate: 0, emptyListRate: 1 });
    expect((await call("GET", "/load-balancers?tag=k=v")).body).toEqual({ load_balancers: [] });
    cloud.setFaults({ emptyListRate: 0, dropFromListRate: 1 });
    const dropped = await call("GET", "/load-balancers?page_size=2");
    expect(dropped.body["load_balancers"]).toEqual([]);
    expect(typeof dropped.body["next_page_token"]).toBe("string");
    cloud.setFaults({ dropFromListRate: 0, staleReadMs: 1_000 });
    const fresh = await call("POST", "/load-balancers", { name: "fresh" });
    expect((await call("GET", `/load-balancers/${fresh.body["id"]}`)).status).toBe(404); // not visible yet
    now += 1_000;
    expect((await call("GET", `/load-balancers/${fresh.body["id"]}`)).status).toBe(200);
    expect((await call("DELETE", `/load-balancers/${fresh.body["id"]}`)).status).toBe(204);
    expect((await call("GET", `/load-balancers/${fresh.body["id"]}`)).status).toBe(200); // still seen
    now += 1_000;
    expect((await call("GET", `/load-balancers/${fresh.body["id"]}`)).status).toBe(404);
    cloud.setFaults({ staleReadMs: 0, lostResponseRate: 1 });
    const lost = await call("POST", "/load-balancers", { name: "lost" });
    expect([lost.status, errorCode(lost.body)]).toEqual([504, "GatewayTimeout"]);
    expect(cloud.loadBalancers().filter((l) => l.name === "lost")).toHaveLength(1); // made anyway
    cloud.resetFaults();
    const stats = cloud.stats().byAccount["acme"]!;
    expect(stats.byOperation).toMatchObject({ "lb.create": 9, "lb.get": 4, "lb.list": 2, "pool.list": 1 });
  });

  test("lb - the account rate limit and suspension cover the new API", async () => {
    const { cloud, call } = await harness();
    cloud.setAccountRateLimit("acme", 1);
    expect((await call("GET", "/listeners")).status).toBe(200);
    const limited = await call("GET", "/listeners");
    expect([limited.status, errorCode(limited.body)]).toEqual([429, "RateLimitExceeded"]);
    cloud.setAccountRateLimit("acme", 0);
    cloud.setAccountSuspended("acme", true);
    expect((await call("POST", "/load-balancers", { name: "x" })).status).toBe(403);
  });

  test("lb - bad bodies and methods", async () => {
    const { cloud, apiKey, call } = await harness();
    const res = await fetch(`${cloud.url}/v1/regions/${REGION}/load-balancers`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}` },
      body: "{not json",
    });
    expect(res.status).toBe(400);
    expect((await call("POST", "/load-balancers", [1, 2])).status).toBe(400);
    const put = await call("PUT", "/load-balancers");
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, POST");
    expect((await call("GET", "/load-balancers/lb-000000000000")).body["error"]).toMatchObject({
      code: "NotFound",
      resource: { type: "load-balancer", id: "lb-000000000000" },
    });
  });

  test("admin - inventory, audit with a tag filter, create and delete over HTTP", async () => {
    const { cloud, admin, fullLb } = await harness();
    await fullLb("mine", { owner: "me" });
    await fullLb("mine", { owner: "someone-else" });
    const inv = await admin("GET", "/load-balancers?account=acme");
    expect((inv.body["loadBalancers"] as unknown[]).length).toBe(2);
    const audit = await admin("GET", `/load-balancers/audit?tag=${encodeURIComponent("owner=me")}`);
    expect(audit.body).toEqual({ orphans: [], duplicates: [] });
    expect(((await admin("GET", "/load-balancers/audit")).body["duplicates"] as unknown[]).length).toBe(5);
    const lb = await admin("POST", "/load-balancers", { account: "acme", name: "foreign", region: REGION });
    expect(lb.status).toBe(201);
    const hc = await admin("POST", "/health-checks", {
      account: "acme",
      name: "hc",
      region: REGION,
      protocol: "HTTP",
      port: 80,
    });
    expect(hc.body).toMatchObject({ path: "/", protocol: "HTTP" });
    expect((await admin("DELETE", `/listeners/${lb.body["id"]}`)).status).toBe(404);
    expect((await admin("DELETE", `/load-balancers/${lb.body["id"]}`)).status).toBe(204);
    expect((await admin("DELETE", `/health-checks/${hc.body["id"]}`)).status).toBe(204);
    const busy = cloud.inventory().loadBalancers[0]!;
    expect((await admin("DELETE", `/load-balancers/${busy.id}`)).status).toBe(409);
  });
});

describe("load balancer store and CIDRs", () => {
  test("store - ids are deterministic for a seed; ingress addresses are unique", () => {
    const make = () => {
      const cloud = new CloudStore(seededRandom(3), () => 1_000, 0, ["r1"]);
      cloud.createAccount("a");
      let seq = 0;
      const lbs = new LbStore(
        cloud,
        seededRandom(9),
        () => 1_000,
        () => ++seq,
      );
      return Array.from({ length: 400 }, (_, n) =>
        lbs.createLoadBalancer("a", { name: `lb${n}`, region: "r1", internal: n % 3 === 0 }),
      );
    };
    const a = make();
    expect(make()).toEqual(a);
    expect(new Set(a.map((l) => l.ingress.ip)).size).toBe(400);
    expect(a[1]!.ingress.ip).toBe("198.18.0.1");
    expect(a.filter((l) => !l.internal)[254]!.ingress.ip).toBe("198.18.1.1");
    expect(() =>
      new LbStore(
        new CloudStore(seededRandom(1), () => 0, 0, []),
        seededRandom(1),
        () => 0,
        () => 0,
      ).createLoadBalancer("nobody", { name: "x", region: "r1" }),
    ).toThrow(/account/);
  });

  test("cidr - parse, host bits, one key per network", () => {
    expect(parseCidr("10.0.0.0/8")).toEqual({ family: 4, prefix: 8, value: 10n << 24n });
    expect(parseCidr("10.0.0.0")).toBeUndefined();
    expect(parseCidr("10.0.0.0/33")).toBeUndefined();
    expect(parseCidr("300.0.0.0/8")).toBeUndefined();
    expect(parseCidr("fd00::/129")).toBeUndefined();
    expect(isNetworkAddress(parseCidr("10.1.2.0/24")!)).toBe(true);
    expect(isNetworkAddress(parseCidr("10.1.2.5/24")!)).toBe(false);
    expect(isNetworkAddress(parseCidr("fd00:1::/32")!)).toBe(true);
    expect(isNetworkAddress(parseCidr("fd00::1/64")!)).toBe(false);
    expect(cidrKey(parseCidr("fd00:0:0::/64")!)).toBe(cidrKey(parseCidr("fd00::/64")!));
    expect(cidrKey(parseCidr("::/0")!)).toBe("6/0/0");
  });
});
