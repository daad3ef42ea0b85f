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

  test("health_check.proxy_protocol (godo's, beyond the OpenAPI document) is kept when sent, left out when not; not a boolean is a 422", async () => {
    const withIt = (proxy: unknown) =>
      lbBody({ health_check: { ...lbBody().health_check, proxy_protocol: proxy } });
    const made = await call("POST", "/v2/load_balancers", withIt(false));
    const id = made.body.load_balancer.id as string;
    expect(made.body.load_balancer.health_check.proxy_protocol).toBe(false);
    expect(fake.store.loadBalancers.get(id)?.health_check["proxy_protocol"]).toBe(false);
    await call("GET", `/v2/load_balancers/${id}`);
    // A whole-object PUT without it drops it, as every other field it leaves out.
    const put = await call("PUT", `/v2/load_balancers/${id}`, lbBody());
    expect(put.body.load_balancer.health_check).not.toHaveProperty("proxy_protocol");
    expect((await call("PUT", `/v2/load_balancers/${id}`, withIt("no"))).status).toBe(422);
    await call("DELETE", `/v2/load_balancers/${id}`);
  });

  test("a REGIONAL_NETWORK DUALSTACK load balancer forwards port to port; its network_stack cannot be changed (load_balancer_base.yml: 'cannot be updated after creating')", async () => {
    const nlb = lbBody({
      type: "REGIONAL_NETWORK",
      network_stack: "DUALSTACK",
      forwarding_rules: [
        { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 80 },
        { entry_protocol: "udp", entry_port: 53, target_protocol: "udp", target_port: 53 },
      ],
    });
    const made = await call("POST", "/v2/load_balancers", nlb);
    expect(made.status).toBe(202);
    const id = made.body.load_balancer.id as string;
    const got = await call("GET", `/v2/load_balancers/${id}`);
    expect(got.body.load_balancer).toMatchObject({
      type: "REGIONAL_NETWORK",
      network_stack: "DUALSTACK",
      ipv6: expect.stringContaining(":"),
      forwarding_rules: nlb.forwarding_rules,
    });
    const changed = await call("PUT", `/v2/load_balancers/${id}`, { ...nlb, network_stack: "IPV4" });
    expect(changed).toMatchObject({ status: 422, body: { id: "unprocessable_entity" } });
    expect(fake.store.loadBalancers.get(id)?.network_stack).toBe("DUALSTACK");
    expect((await call("PUT", `/v2/load_balancers/${id}`, nlb)).status).toBe(200);
    await call("DELETE", `/v2/load_balancers/${id}`);
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

describe("certificates", () => {
  test("get answers the certificate; list pages and filters by exact name; another account's is a 404", async () => {
    const web = fake.createCertificate("acme", { name: "web-cert", type: "lets_encrypt" });
    fake.createCertificate("acme", { name: "web-cert-2" });
    fake.createCertificate("acme", { name: "api-cert" });
    const other = fake.createAccount("certs-other");
    const theirs = fake.createCertificate("certs-other", { name: "web-cert" });
    const got = await call("GET", `/v2/certificates/${web.id}`);
    expect(got.status).toBe(200);
    expect(got.body.certificate).toMatchObject({ id: web.id, name: "web-cert", type: "lets_encrypt" });
    expect((await call("GET", `/v2/certificates/${theirs.id}`)).status).toBe(404);
    const byName = await call("GET", "/v2/certificates?name=web-cert&page=1&per_page=1");
    expect(byName.body.certificates.map((c: { id: string }) => c.id)).toEqual([web.id]);
    expect(byName.body.meta.total).toBe(1);
    const page1 = await call("GET", "/v2/certificates?per_page=2");
    expect(page1.body.certificates).toHaveLength(2);
    expect(page1.body.links.pages.next).toContain("page=2");
    const none = await call("GET", "/v2/certificates?name=nope");
    expect(none.body).toMatchObject({ certificates: [], meta: { total: 0 } });
    expect((await call("GET", "/v2/certificates", undefined, other.token)).body.certificates).toHaveLength(1);
  });

  test("forwarding rules: https, http2 and http3 need a certificate of the account or passthrough, never both; a renewal moves the load balancer", async () => {
    const cert = fake.createCertificate("acme", { name: "le", type: "lets_encrypt" });
    const theirs = fake.createCertificate("certs-other", { name: "le" });
    const rule = (r: Record<string, unknown>) =>
      lbBody({ name: "fccm-tls", forwarding_rules: [{ entry_port: 443, target_port: 30443, ...r }] });
    const no = await call(
      "POST",
      "/v2/load_balancers",
      rule({ entry_protocol: "http2", target_protocol: "http" }),
    );
    expect(no.status).toBe(422);
    expect(no.body.message).toContain("certificate or TLS passthrough");
    const both = await call(
      "POST",
      "/v2/load_balancers",
      rule({
        entry_protocol: "https",
        target_protocol: "https",
        certificate_id: cert.id,
        tls_passthrough: true,
      }),
    );
    expect(both.status).toBe(422);
    const foreign = await call(
      "POST",
      "/v2/load_balancers",
      rule({ entry_protocol: "https", target_protocol: "http", certificate_id: theirs.id }),
    );
    expect(foreign.status).toBe(422);
    expect(foreign.body.message).toContain("not found");
    const h3pass = await call(
      "POST",
      "/v2/load_balancers",
      rule({ entry_protocol: "http3", target_protocol: "http", tls_passthrough: true }),
    );
    expect(h3pass.status).toBe(422);
    const h3alone = await call(
      "POST",
      "/v2/load_balancers",
      rule({ entry_protocol: "http3", target_protocol: "http", certificate_id: cert.id }),
    );
    expect(h3alone.status).toBe(422);
    expect(h3alone.body.message).toContain("needs an https or http2 rule on the same port");
    const ok = await call(
      "POST",
      "/v2/load_balancers",
      lbBody({
        name: "fccm-tls",
        forwarding_rules: [
          {
            entry_protocol: "https",
            entry_port: 443,
            target_protocol: "http",
            target_port: 30443,
            certificate_id: cert.id,
          },
          {
            entry_protocol: "http3",
            entry_port: 443,
            target_protocol: "http",
            target_port: 30443,
            certificate_id: cert.id,
          },
        ],
      }),
    );
    expect(ok.status).toBe(202);
    const renewed = fake.renewCertificate(cert.id);
    expect(renewed.id).not.toBe(cert.id);
    expect(renewed.name).toBe("le");
    const lb = await call("GET", `/v2/load_balancers/${ok.body.load_balancer.id}`);
    expect(
      lb.body.load_balancer.forwarding_rules.map((r: { certificate_id: string }) => r.certificate_id),
    ).toEqual([renewed.id, renewed.id]);
    expect((await call("GET", `/v2/certificates/${cert.id}`)).status).toBe(404);
  });
});

describe("volumes", () => {
  test("get answers the volume with its region object and droplet; list filters by region and name and pages", async () => {
    const d = fake.createDroplet("acme", { name: "vol-host", region: "nyc3", vpcUuid: VPC });
    const made = [0, 1, 2].map((i) =>
      fake.createVolume("acme", {
        name: `pvc-${i}`,
        region: "nyc3",
        sizeGigabytes: 10 + i,
        ...(i === 0 && { dropletId: d.id }),
        tags: ["k8s:prod"],
      }),
    );
    fake.createVolume("acme", { name: "pvc-0", region: "sfo3", sizeGigabytes: 5 });
    const theirs = fake.createVolume("vol-other", { name: "pvc-9", region: "nyc3", sizeGigabytes: 5 });
    fake.createAccount("vol-other");
    const got = await call("GET", `/v2/volumes/${made[0]!.id}`);
    expect(got.status).toBe(200);
    expect(got.body.volume).toMatchObject({
      id: made[0]!.id,
      droplet_ids: [d.id],
      size_gigabytes: 10,
      region: { slug: "nyc3" },
      tags: ["k8s:prod"],
      description: "Created by DigitalOcean CSI driver",
    });
    expect((await call("GET", `/v2/volumes/${theirs.id}`)).status).toBe(404);
    const first = await call("GET", "/v2/volumes?region=nyc3&per_page=2&page=1");
    expect(first.body.volumes.map((v: { id: string }) => v.id)).toEqual([made[0]!.id, made[1]!.id]);
    expect(first.body.links.pages.next).toContain("page=2");
    const second = await call("GET", "/v2/volumes?region=nyc3&per_page=2&page=2");
    expect(second.body.volumes.map((v: { id: string }) => v.id)).toEqual([made[2]!.id]);
    const byName = await call("GET", "/v2/volumes?name=pvc-0");
    expect(byName.body.volumes.map((v: { region: { slug: string } }) => v.region.slug).sort()).toEqual([
      "nyc3",
      "sfo3",
    ]);
  });
});
