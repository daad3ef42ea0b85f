// The fake Hetzner Cloud API on its own, over HTTP: its paging, label selectors, error
// envelope, rate-limit headers, the actions' state machine and locks, and faults; every
// request and answer checked against the spec subset.

import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import { selfSignedCertificate } from "../util/certificate.js";
import {
  HETZNER_RATE_LIMIT,
  HETZNER_SPEC,
  HetznerFake,
  hetznerSpecDocument,
  parseLabelSelector,
} from "./index.js";

let fake: HetznerFake;
let token: string;
let networkId: number;

async function call(method: string, path: string, body?: unknown, auth = token) {
  const res = await fetch(`${fake.url}/v1${path}`, {
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
    // JSON.parse's own (loose) type: the tests read answers field by field.
    body: text === "" ? undefined : JSON.parse(text),
  };
}

const service = (port: number) => ({
  protocol: "tcp",
  listen_port: port,
  destination_port: 30000 + port,
  proxyprotocol: false,
  health_check: { protocol: "tcp", port: 30000 + port, interval: 10, timeout: 5, retries: 3 },
});

beforeAll(async () => {
  fake = await HetznerFake.start({ spec: true });
  token = fake.createAccount("p1").token;
  fake.createAccount("p2");
  networkId = fake.createNetwork("p1", { name: "net", ipRange: "10.0.0.0/16" }).id;
  for (let i = 0; i < 7; i++)
    fake.createServer("p1", {
      name: `s-${i}`,
      location: "fsn1",
      labels: { role: i < 3 ? "web" : "db" },
      networks: [networkId],
    });
  fake.createServer("p2", { name: "not-mine", location: "fsn1" });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.reset();
  fake.setActionPolls(0);
});

describe("reads", () => {
  test("page/per_page with meta.pagination; a project sees its own servers only", async () => {
    const first = await call("GET", "/servers?per_page=3");
    expect(first.status).toBe(200);
    expect(first.body?.servers).toHaveLength(3);
    expect(first.body?.meta.pagination).toEqual({
      page: 1,
      per_page: 3,
      previous_page: null,
      next_page: 2,
      last_page: 3,
      total_entries: 7,
    });
    const last = await call("GET", "/servers?per_page=3&page=3");
    expect(last.body?.servers.map((s: { name: string }) => s.name)).toEqual(["s-6"]);
    expect(last.body?.meta.pagination.next_page).toBeNull();
    expect((await call("GET", "/servers?per_page=51")).status).toBe(400);
  });

  test("label_selector and name filter", async () => {
    expect((await call("GET", "/servers?label_selector=role%3Dweb")).body?.servers).toHaveLength(3);
    expect((await call("GET", "/servers?label_selector=role!%3Dweb,role")).body?.servers).toHaveLength(4);
    expect(
      (await call("GET", "/servers?name=s-4")).body?.servers.map((s: { name: string }) => s.name),
    ).toEqual(["s-4"]);
    expect(parseLabelSelector("a=b, c!=d, e, !f")).toEqual([
      { key: "a", op: "=", value: "b" },
      { key: "c", op: "!=", value: "d" },
      { key: "e", op: "exists" },
      { key: "f", op: "absent" },
    ]);
  });

  test("errors in Hetzner's envelope; RateLimit-* headers on every answer", async () => {
    const missing = await call("GET", "/servers/999");
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      error: { code: "not_found", message: "server not found", details: null },
    });
    expect(missing.headers.get("ratelimit-limit")).toBe(String(HETZNER_RATE_LIMIT));
    const ok = await call("GET", "/servers?per_page=1");
    expect(Number(ok.headers.get("ratelimit-remaining"))).toBeLessThan(HETZNER_RATE_LIMIT);
    expect(Number(ok.headers.get("ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000 - 1);
    const denied = await call("GET", "/servers", undefined, "nope");
    expect(denied.status).toBe(401);
    expect(denied.body?.error.code).toBe("unauthorized");
  });

  test("faults: throttled as rate_limit_exceeded with Retry-After and RateLimit-Reset; 5xx in the envelope", async () => {
    fake.faults.set({ throttleRate: 1, throttleRetryAfterSeconds: 4 }, "p1");
    const t = await call("GET", "/servers");
    expect(t.status).toBe(429);
    expect(t.body?.error.code).toBe("rate_limit_exceeded");
    expect(t.headers.get("retry-after")).toBe("4");
    expect(t.headers.get("ratelimit-remaining")).toBe("0");
    fake.faults.set({ throttleRate: 0, errorRate: 1 }, "p1");
    const e = await call("GET", "/servers");
    expect(e.status).toBeGreaterThanOrEqual(500);
    expect(typeof e.body?.error.code).toBe("string");
  });
});

describe("actions", () => {
  test("a mutation answers an action: running for the configured polls, then success", async () => {
    fake.setActionPolls(2);
    const made = await call("POST", "/load_balancers", {
      name: "lb-a",
      load_balancer_type: "lb11",
      location: "fsn1",
      services: [service(80)],
      targets: [],
    });
    expect(made.status).toBe(201);
    expect(made.body?.action).toMatchObject({
      command: "create_load_balancer",
      status: "running",
      finished: null,
    });
    const id = made.body?.action.id;
    const lb = made.body?.load_balancer.id;
    expect((await call("GET", `/actions/${id}`)).body?.action.status).toBe("running");
    // Locked while it runs: a second action on the load balancer is refused.
    const busy = await call("POST", `/load_balancers/${lb}/actions/add_service`, service(443));
    expect(busy.status).toBe(423);
    expect(busy.body?.error.code).toBe("locked");
    expect((await call("GET", `/actions/${id}`)).body?.action.status).toBe("running");
    expect((await call("GET", `/actions/${id}`)).body?.action).toMatchObject({
      status: "success",
      progress: 100,
    });
    const listed = await call("GET", `/load_balancers/${lb}/actions?sort=id:desc`);
    expect(listed.body?.actions.map((a: { command: string }) => a.command)).toEqual(["create_load_balancer"]);
    expect((await call("DELETE", `/load_balancers/${lb}`)).status).toBe(204);
  });

  test("an action ending in error undoes its change; quotas of the type are refused", async () => {
    const made = await call("POST", "/load_balancers", {
      name: "lb-b",
      load_balancer_type: "lb11",
      network_zone: "eu-central",
    });
    const lb = made.body?.load_balancer.id;
    fake.failNextActions("add_service", 1);
    const failed = await call("POST", `/load_balancers/${lb}/actions/add_service`, service(80));
    expect(failed.body?.action).toMatchObject({ status: "error", error: { code: "action_failed" } });
    expect((await call("GET", `/load_balancers/${lb}`)).body?.load_balancer.services).toEqual([]);
    for (const port of [1, 2, 3, 4, 5])
      expect((await call("POST", `/load_balancers/${lb}/actions/add_service`, service(port))).status).toBe(
        201,
      );
    const over = await call("POST", `/load_balancers/${lb}/actions/add_service`, service(6));
    expect(over.status).toBe(403);
    expect(over.body?.error.code).toBe("resource_limit_exceeded");
    await call("DELETE", `/load_balancers/${lb}`);
  });

  test("routes: add_route and delete_route actions; a gateway outside the network is refused", async () => {
    const add = await call("POST", `/networks/${networkId}/actions/add_route`, {
      destination: "10.244.0.0/24",
      gateway: "10.0.0.5",
    });
    expect(add.body?.action).toMatchObject({ command: "add_route", status: "success" });
    expect((await call("GET", `/networks/${networkId}`)).body?.network.routes).toEqual([
      { destination: "10.244.0.0/24", gateway: "10.0.0.5" },
    ]);
    expect(
      (
        await call("POST", `/networks/${networkId}/actions/add_route`, {
          destination: "10.245.0.0/24",
          gateway: "192.168.1.1",
        })
      ).status,
    ).toBe(400);
    const labels = await call("PUT", `/networks/${networkId}`, {
      labels: { "route.fleet-ccm.io/10.244.0.0-24": "prod" },
    });
    expect(labels.body?.network.labels).toEqual({ "route.fleet-ccm.io/10.244.0.0-24": "prod" });
    expect((await call("PUT", `/networks/${networkId}`, { labels: { "bad key/x": "y" } })).status).toBe(400);
    const del = await call("POST", `/networks/${networkId}/actions/delete_route`, {
      destination: "10.244.0.0/24",
      gateway: "10.0.0.5",
    });
    expect(del.body?.action.status).toBe("success");
    expect((await call("GET", `/networks/${networkId}?`)).body?.network.routes).toEqual([]);
  });

  test("certificates: uploaded (PEM parsed, key matched) and managed (issued by its action), listed by label and type", async () => {
    const pem = selfSignedCertificate("shop.example.com", "DNS:shop.example.com,DNS:www.example.com");
    const up = await call("POST", "/certificates", {
      name: "shop",
      type: "uploaded",
      certificate: pem.cert,
      private_key: pem.key,
      labels: { team: "web" },
    });
    expect(up.status).toBe(201);
    expect(up.body?.action).toBeNull();
    expect(up.body?.certificate).toMatchObject({
      name: "shop",
      type: "uploaded",
      domain_names: ["shop.example.com", "www.example.com"],
      status: null,
    });
    const other = selfSignedCertificate("other.example.com");
    expect(
      (await call("POST", "/certificates", { name: "bad", certificate: pem.cert, private_key: other.key }))
        .body?.error.code,
    ).toBe("invalid_input");
    expect(
      (await call("POST", "/certificates", { name: "shop", certificate: pem.cert, private_key: pem.key }))
        .body?.error.code,
    ).toBe("uniqueness_error");
    fake.setActionPolls(1);
    const managed = await call("POST", "/certificates", {
      name: "managed",
      type: "managed",
      domain_names: ["example.com"],
      labels: { "hcloud-ccm/service-uid": "u1" },
    });
    expect(managed.body?.certificate.status.issuance).toBe("pending");
    expect(managed.body?.action).toMatchObject({ command: "create_certificate", status: "running" });
    const id = managed.body?.certificate.id;
    expect((await call("GET", `/actions/${managed.body?.action.id}`)).body?.action.status).toBe("running");
    expect((await call("GET", `/certificates/${id}`)).body?.certificate.status.issuance).toBe("pending");
    const actions = await call("GET", `/certificates/${id}/actions?sort=id:desc`);
    expect(actions.body?.actions[0].status).toBe("success");
    expect((await call("GET", `/certificates/${id}`)).body?.certificate).toMatchObject({
      status: { issuance: "completed", error: null },
      domain_names: ["example.com"],
    });
    fake.failNextActions("create_certificate", 1);
    fake.setActionPolls(0);
    const failing = await call("POST", "/certificates", {
      name: "failing",
      type: "managed",
      domain_names: ["bad.example.com"],
    });
    expect(failing.body?.action.status).toBe("error");
    expect(
      (await call("GET", `/certificates/${failing.body?.certificate.id}`)).body?.certificate.status,
    ).toMatchObject({ issuance: "failed", error: { code: "action_failed" } });
    const byLabel = await call("GET", "/certificates?label_selector=hcloud-ccm/service-uid%3Du1");
    expect(byLabel.body?.certificates.map((c: { id: number }) => c.id)).toEqual([id]);
    const uploaded = await call("GET", "/certificates?type=uploaded&name=shop");
    expect(uploaded.body?.certificates.map((c: { name: string }) => c.name)).toEqual(["shop"]);
    const relabel = await call("PUT", `/certificates/${id}`, { labels: { a: "b" } });
    expect(relabel.body?.certificate.labels).toEqual({ a: "b" });
    for (const c of [id, failing.body?.certificate.id, up.body?.certificate.id])
      expect((await call("DELETE", `/certificates/${c}`)).status).toBe(204);
    expect((await call("GET", `/certificates/${id}`)).status).toBe(404);
  });

  test("HTTP and HTTPS services: Hetzner's defaults answered, certificates only for https (and needed there), used_by", async () => {
    const pem = selfSignedCertificate("lb.example.com", "DNS:lb.example.com");
    const cert = (
      await call("POST", "/certificates", { name: "lb", certificate: pem.cert, private_key: pem.key })
    ).body?.certificate.id;
    const lb = (
      await call("POST", "/load_balancers", {
        name: "web",
        load_balancer_type: "lb11",
        location: "fsn1",
        services: [
          {
            ...service(443),
            protocol: "https",
            http: { certificates: [cert], redirect_http: true },
            health_check: {
              protocol: "http",
              port: 30443,
              interval: 10,
              timeout: 5,
              retries: 3,
              http: { domain: "lb.example.com", path: "/healthz", status_codes: ["200"], tls: true },
            },
          },
        ],
      })
    ).body?.load_balancer;
    expect(lb.services[0]).toMatchObject({
      protocol: "https",
      http: {
        certificates: [cert],
        redirect_http: true,
        sticky_sessions: false,
        cookie_name: "HCLBSTICKY",
        cookie_lifetime: 300,
      },
      health_check: {
        http: { domain: "lb.example.com", path: "/healthz", response: "", status_codes: ["200"], tls: true },
      },
    });
    expect((await call("GET", `/certificates/${cert}`)).body?.certificate.used_by).toEqual([
      { id: lb.id, type: "load_balancer" },
    ]);
    const path = `/load_balancers/${lb.id}/actions`;
    const refused = [
      { ...service(80), protocol: "https" },
      { ...service(80), protocol: "http", http: { certificates: [cert] } },
      { ...service(80), protocol: "http", http: { redirect_http: true } },
      { ...service(80), http: { sticky_sessions: true } },
      { ...service(80), protocol: "https", http: { certificates: [999999] } },
    ];
    for (const body of refused)
      expect((await call("POST", `${path}/add_service`, body)).status).toBeGreaterThanOrEqual(400);
    // update_service keeps what the body leaves out: the sticky cookie changes, the certificate stays.
    const upd = await call("POST", `${path}/update_service`, {
      listen_port: 443,
      http: { sticky_sessions: true, cookie_name: "SHOP", timeout_idle: 60 },
    });
    expect(upd.body?.action.status).toBe("success");
    const after = (await call("GET", `/load_balancers/${lb.id}`)).body?.load_balancer.services[0];
    expect(after.http).toMatchObject({ certificates: [cert], sticky_sessions: true, cookie_name: "SHOP" });
    expect(after.http.timeout_idle).toBe(60);
    // lb11 takes 10 certificates (docs.hetzner.cloud, "Load Balancer Types"): an 11th is refused.
    const more: number[] = [];
    for (let i = 0; i < 10; i++) {
      const p = selfSignedCertificate(`c${i}.example.com`);
      more.push(
        (await call("POST", "/certificates", { name: `c${i}`, certificate: p.cert, private_key: p.key })).body
          ?.certificate.id,
      );
    }
    const over = await call("POST", `${path}/add_service`, {
      ...service(8443),
      protocol: "https",
      http: { certificates: more },
    });
    expect([over.status, over.body?.error.code]).toEqual([403, "resource_limit_exceeded"]);
    await call("DELETE", `/load_balancers/${lb.id}`);
    for (const c of [cert, ...more]) await call("DELETE", `/certificates/${c}`);
  });

  test("public interface: disabled only on a network with private-IP targets, enabled again; its IPs hidden meanwhile", async () => {
    const server = (await call("GET", "/servers?name=s-0")).body?.servers[0].id;
    const made = await call("POST", "/load_balancers", {
      name: "lb-public",
      load_balancer_type: "lb11",
      location: "fsn1",
      targets: [{ type: "server", server: { id: server }, use_private_ip: false }],
    });
    const lb = made.body?.load_balancer.id;
    const ipv4 = made.body?.load_balancer.public_net.ipv4.ip;
    const disable = () => call("POST", `/load_balancers/${lb}/actions/disable_public_interface`);
    const refused = async () => {
      const r = await disable();
      return [r.status, r.body?.error.code];
    };
    expect(await refused()).toEqual([422, "load_balancer_not_attached_to_network"]);
    await call("POST", `/load_balancers/${lb}/actions/attach_to_network`, { network: networkId });
    expect(await refused()).toEqual([422, "targets_without_use_private_ip"]);
    await call("POST", `/load_balancers/${lb}/actions/remove_target`, {
      type: "server",
      server: { id: server },
    });
    await call("POST", `/load_balancers/${lb}/actions/add_target`, {
      type: "server",
      server: { id: server },
      use_private_ip: true,
    });
    expect((await disable()).body?.action).toMatchObject({
      command: "disable_public_interface",
      status: "success",
    });
    expect((await call("GET", `/load_balancers/${lb}`)).body?.load_balancer.public_net).toMatchObject({
      enabled: false,
      ipv4: { ip: null },
    });
    const enable = await call("POST", `/load_balancers/${lb}/actions/enable_public_interface`);
    expect(enable.body?.action).toMatchObject({ command: "enable_public_interface", status: "success" });
    expect((await call("GET", `/load_balancers/${lb}`)).body?.load_balancer.public_net).toMatchObject({
      enabled: true,
      ipv4: { ip: ipv4 },
    });
    await call("DELETE", `/load_balancers/${lb}`);
  });

  test("delete protection: change_protection sets it, a DELETE is refused `protected` until it is lifted", async () => {
    const lb = (
      await call("POST", "/load_balancers", {
        name: "lb-protected",
        load_balancer_type: "lb11",
        location: "fsn1",
      })
    ).body?.load_balancer.id;
    const on = await call("POST", `/load_balancers/${lb}/actions/change_protection`, { delete: true });
    expect(on.body?.action).toMatchObject({ command: "change_protection", status: "success" });
    expect((await call("GET", `/load_balancers/${lb}`)).body?.load_balancer.protection).toEqual({
      delete: true,
    });
    const refused = await call("DELETE", `/load_balancers/${lb}`);
    expect([refused.status, refused.body?.error.code]).toEqual([423, "protected"]);
    expect((await call("GET", `/load_balancers/${lb}`)).status).toBe(200);
    await call("POST", `/load_balancers/${lb}/actions/change_protection`, { delete: false });
    expect((await call("DELETE", `/load_balancers/${lb}`)).status).toBe(204);
  });

  test("reverse DNS: change_dns_ptr sets the PTR of the load balancer's own public IPv4 or IPv6, null puts the default back; another IP or a name with a trailing dot is refused", async () => {
    const made = await call("POST", "/load_balancers", {
      name: "lb-rdns",
      load_balancer_type: "lb11",
      location: "fsn1",
    });
    const lb = made.body?.load_balancer.id;
    const { ipv4, ipv6 } = made.body!.load_balancer.public_net;
    const ptr = (ip: string, dns_ptr: string | null) =>
      call("POST", `/load_balancers/${lb}/actions/change_dns_ptr`, { ip, dns_ptr });
    expect((await ptr(ipv4.ip, "lb.example.com")).body?.action).toMatchObject({
      command: "change_dns_ptr",
      status: "success",
    });
    await ptr(ipv6.ip, "lb6.example.com");
    expect((await call("GET", `/load_balancers/${lb}`)).body?.load_balancer.public_net).toMatchObject({
      ipv4: { ip: ipv4.ip, dns_ptr: "lb.example.com" },
      ipv6: { ip: ipv6.ip, dns_ptr: "lb6.example.com" },
    });
    await ptr(ipv4.ip, null);
    expect((await call("GET", `/load_balancers/${lb}`)).body?.load_balancer.public_net.ipv4.dns_ptr).toBe(
      ipv4.dns_ptr,
    );
    for (const [ip, name] of [
      ["192.0.2.1", "lb.example.com"],
      [ipv4.ip, "lb.example.com."],
    ] as const) {
      const r = await ptr(ip, name);
      expect([r.status, r.body?.error.code]).toEqual([400, "invalid_input"]);
    }
    await call("DELETE", `/load_balancers/${lb}`);
  });

  test("every request and answer matched the spec subset", () => {
    expect(fake.specProblems()).toEqual([]);
  });
});

describe("the spec fixture", () => {
  test("is a file under sim/fixtures/, inside the repository, whose $refs all resolve inside it", () => {
    const path = fixtureSpecPath(HETZNER_SPEC);
    expect(relative(fileURLToPath(new URL("../../fixtures/", import.meta.url)), path)).toBe(HETZNER_SPEC);
    const doc = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    const refs: string[] = [];
    const walk = (n: unknown): void => {
      if (Array.isArray(n)) n.forEach(walk);
      else if (typeof n === "object" && n !== null) {
        const ref = (n as Record<string, unknown>)["$ref"];
        if (typeof ref === "string") refs.push(ref);
        Object.values(n).forEach(walk);
      }
    };
    walk(doc);
    const resolves = (ref: string) =>
      ref
        .replace(/^#\//, "")
        .split("/")
        .reduce<unknown>(
          (node, part) =>
            typeof node === "object" && node !== null ? (node as Record<string, unknown>)[part] : undefined,
          doc,
        ) !== undefined;
    expect(refs.length).toBeGreaterThan(0);
    expect(refs.filter((r) => !resolves(r))).toEqual([]);
  });

  test("as the checker reads it: /v1 paths, error ranges in OpenAPI's spelling", () => {
    const doc = hetznerSpecDocument() as { paths: Record<string, Record<string, { responses?: object }>> };
    expect(Object.keys(doc.paths).every((p) => p.startsWith("/v1/"))).toBe(true);
    expect(Object.keys(doc.paths["/v1/servers/{id}"]?.["get"]?.responses ?? {}).sort()).toEqual([
      "200",
      "4XX",
      "5XX",
    ]);
  });
});

describe("volumes", () => {
  test("get answers the volume with its location and server; list pages, filters by label_selector and name, per project", async () => {
    const server = fake.store.serversOf("p1")[0]!.id;
    const made = [0, 1, 2].map((i) =>
      fake.createVolume("p1", {
        name: `pvc-${i}`,
        location: i === 2 ? "nbg1" : "fsn1",
        size: 10 + i,
        ...(i === 0 && { server }),
        ...(i < 2 && { labels: { cluster: "prod" } }),
      }),
    );
    const theirs = fake.createVolume("p2", { name: "pvc-9", location: "fsn1", size: 10 });
    const got = await call("GET", `/volumes/${made[0]!.id}`);
    expect(got.status).toBe(200);
    expect(got.body.volume).toMatchObject({
      id: made[0]!.id,
      server,
      size: 10,
      location: { name: "fsn1", network_zone: "eu-central" },
      labels: { cluster: "prod", "managed-by": "csi-driver" },
      status: "available",
    });
    expect((await call("GET", `/volumes/${theirs.id}`)).status).toBe(404);
    const first = await call("GET", "/volumes?per_page=2&page=1");
    expect(first.body.volumes.map((v: { id: number }) => v.id)).toEqual([made[0]!.id, made[1]!.id]);
    expect(first.body.meta.pagination.next_page).toBe(2);
    const second = await call("GET", "/volumes?per_page=2&page=2");
    expect(second.body.volumes.map((v: { id: number }) => v.id)).toEqual([made[2]!.id]);
    const owned = await call("GET", "/volumes?label_selector=cluster%3Dprod");
    expect(owned.body.volumes.map((v: { id: number }) => v.id)).toEqual([made[0]!.id, made[1]!.id]);
    expect((await call("GET", "/volumes?name=pvc-2")).body.volumes).toHaveLength(1);
    // After the suite's own spec check (declared earlier): these exchanges too.
    expect(fake.specProblems()).toEqual([]);
  });
});
