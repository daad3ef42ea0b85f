// The fake Linode API on its own: every route it serves answers in the spec's shapes (checked
// against Linode's OpenAPI document), numbered pages, X-Filter, the error envelope, faults.

import { X509Certificate } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { selfSignedCertificate } from "../util/certificate.js";
import { LinodeFake } from "./fake.js";

let fake: LinodeFake;
let token: string;
let linodeId: number;
let vpcId: number;
let subnetId: number;

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; filter?: unknown; token?: string } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(`${fake.url}/v4${path}`, {
    method,
    headers: {
      authorization: `Bearer ${opts.token ?? token}`,
      ...(opts.body !== undefined && { "content-type": "application/json" }),
      ...(opts.filter !== undefined && { "x-filter": JSON.stringify(opts.filter) }),
    },
    ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

beforeAll(async () => {
  fake = await LinodeFake.start({ spec: true, seed: 11 });
  token = fake.createAccount("acme").token;
  const vpc = fake.createVpc("acme", {
    label: "v1",
    region: "us-east",
    subnets: [{ label: "s1", ipv4: "10.1.0.0/24" }],
  });
  vpcId = vpc.id;
  subnetId = vpc.subnets[0]!.id;
  for (let i = 0; i < 30; i++)
    fake.createLinode("acme", {
      label: `n-${i}`,
      region: i % 2 === 0 ? "us-east" : "eu-west",
      tags: ["team=a"],
    });
  linodeId = fake.createLinode("acme", {
    label: "vpc-node",
    region: "us-east",
    vpcSubnetId: vpc.subnets[0]!.id,
  }).id;
});

afterEach(() => {
  fake.resetFaults();
  expect(fake.specProblems()).toEqual([]);
});

afterAll(async () => {
  await fake.close();
});

describe("fake Linode API", () => {
  test("numbered pages, X-Filter on label, region, tags and ids (+or)", async () => {
    const p1 = await call("GET", "/linode/instances?page=1&page_size=25");
    expect(p1.body).toMatchObject({ page: 1, pages: 2, results: 31 });
    expect((p1.body["data"] as unknown[]).length).toBe(25);
    const p2 = await call("GET", "/linode/instances?page=2&page_size=25");
    expect((p2.body["data"] as unknown[]).length).toBe(6);
    const east = await call("GET", "/linode/instances", { filter: { region: "us-east", tags: "team=a" } });
    expect(east.body["results"]).toBe(15);
    const one = await call("GET", "/linode/instances", { filter: { label: "n-3" } });
    expect((one.body["data"] as { label: string }[]).map((l) => l.label)).toEqual(["n-3"]);
    const some = await call("GET", "/linode/instances", {
      filter: { "+or": [{ id: linodeId }, { label: "n-1" }], region: "us-east" },
    });
    expect((some.body["data"] as { id: number }[]).map((l) => l.id)).toEqual([linodeId]);
    const refused = await call("GET", "/linode/instances", { filter: { image: "x" } });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ errors: [{ reason: "Cannot filter on image", field: "X-Filter" }] });
    // Linode's minimum page size: the fake refuses what the spec refuses.
    expect((await call("GET", "/linode/instances?page_size=10")).status).toBe(400);
    expect(fake.specProblems().map((p) => p.message)).toEqual(["query page_size: must be >= 25"]);
    fake.resetSpecProblems();
  });

  test("a Linode, its IPs (public, private, VPC, SLAAC) and its config interfaces", async () => {
    const l = await call("GET", `/linode/instances/${linodeId}`);
    expect(l.body).toMatchObject({ id: linodeId, label: "vpc-node", region: "us-east", status: "running" });
    const ips = await call("GET", `/linode/instances/${linodeId}/ips`);
    const v4 = ips.body["ipv4"] as Record<string, { address: string }[]>;
    expect(v4["public"]?.length).toBe(1);
    expect(v4["private"]?.[0]?.address).toMatch(/^192\.168\./);
    expect(v4["vpc"]?.[0]?.address).toMatch(/^10\.1\.0\./);
    const configs = await call("GET", `/linode/instances/${linodeId}/configs`);
    const cfg = (configs.body["data"] as { id: number; interfaces: { id: number; purpose: string }[] }[])[0];
    const vpcIface = cfg?.interfaces.find((i) => i.purpose === "vpc");
    const put = await call(
      "PUT",
      `/linode/instances/${linodeId}/configs/${cfg?.id}/interfaces/${vpcIface?.id}`,
      {
        body: { ip_ranges: ["10.244.0.0/24"] },
      },
    );
    expect(put.body["ip_ranges"]).toEqual(["10.244.0.0/24"]);
    const vpcIps = await call("GET", `/vpcs/${vpcId}/ips`);
    expect((vpcIps.body["data"] as { address_range: string | null }[]).map((e) => e.address_range)).toContain(
      "10.244.0.0/24",
    );
    expect((await call("GET", `/vpcs/${vpcId}`)).body["label"]).toBe("v1");
    // The newer Linode interfaces API (hand-added to the checked spec).
    const newer = fake.createLinode("acme", {
      label: "newer-node",
      region: "us-east",
      vpcSubnetId: subnetId,
      linodeInterfaces: true,
    });
    expect((await call("GET", `/linode/instances/${newer.id}`)).body["interface_generation"]).toBe("linode");
    const ifaces = (await call("GET", `/linode/instances/${newer.id}/interfaces`)).body["interfaces"] as {
      id: number;
      vpc: unknown;
    }[];
    const newerVpc = ifaces.find((i) => i.vpc !== null);
    const putNewer = await call("PUT", `/linode/instances/${newer.id}/interfaces/${newerVpc?.id}`, {
      body: { vpc: { ipv4: { ranges: [{ range: "10.245.0.0/24" }] } } },
    });
    expect(putNewer.body["vpc"]).toMatchObject({ ipv4: { ranges: [{ range: "10.245.0.0/24" }] } });
    expect((await call("GET", `/linode/instances/${linodeId}/interfaces`)).status).toBe(400);
    expect((await call("GET", `/vpcs/${vpcId}/subnets`)).body["results"]).toBe(1);
    expect((await call("GET", "/vpcs", { filter: { label: "v1" } })).body["results"]).toBe(1);
    const missing = await call("GET", "/linode/instances/1");
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ errors: [{ reason: "Not found" }] });
  });

  test("NodeBalancers, configs, nodes and rebuild; TLS keys redacted on read", async () => {
    const nb = await call("POST", "/nodebalancers", {
      body: {
        label: "lb-one",
        region: "us-east",
        tags: ["tag-1"],
        configs: [
          {
            port: 80,
            protocol: "tcp",
            nodes: [{ address: "192.168.128.1:30080", label: "a-node", weight: 100 }],
          },
        ],
      },
    });
    expect(nb.status).toBe(200);
    const id = nb.body["id"] as number;
    expect((await call("GET", "/nodebalancers", { filter: { ipv4: nb.body["ipv4"] } })).body["results"]).toBe(
      1,
    );
    const configs = await call("GET", `/nodebalancers/${id}/configs`);
    const cid = (configs.body["data"] as { id: number }[])[0]?.id;
    const nodes = await call("GET", `/nodebalancers/${id}/configs/${cid}/nodes`);
    const nodeId = (nodes.body["data"] as { id: number }[])[0]?.id;
    const rebuilt = await call("POST", `/nodebalancers/${id}/configs/${cid}/rebuild`, {
      body: {
        nodes: [
          { id: nodeId, address: "192.168.128.1:30080", label: "a-node" },
          { address: "192.168.128.2:30080", label: "b-node" },
        ],
      },
    });
    expect(rebuilt.status).toBe(200);
    const after = (await call("GET", `/nodebalancers/${id}/configs/${cid}/nodes`)).body["data"] as {
      id: number;
    }[];
    expect(after.map((n) => n.id)).toContain(nodeId);
    expect(after).toHaveLength(2);
    const pem = selfSignedCertificate("shop.example.com");
    const other = selfSignedCertificate("other.example.com");
    const https = (body: Record<string, unknown>) =>
      call("POST", `/nodebalancers/${id}/configs`, { body: { port: 443, protocol: "https", ...body } });
    expect((await https({})).body).toEqual({
      errors: [{ reason: "SSL certificate and key are required for https", field: "ssl_cert" }],
    });
    expect((await https({ ssl_cert: "-----BEGIN CERTIFICATE-----", ssl_key: pem.key })).body).toEqual({
      errors: [{ reason: "Invalid SSL certificate", field: "ssl_cert" }],
    });
    expect((await https({ ssl_cert: pem.cert, ssl_key: other.key })).body).toEqual({
      errors: [{ reason: "SSL key does not match the certificate", field: "ssl_key" }],
    });
    const tls = await https({ ssl_cert: pem.cert, ssl_key: pem.key });
    expect(tls.body).toMatchObject({
      ssl_cert: "<REDACTED>",
      ssl_key: "<REDACTED>",
      ssl_commonname: "shop.example.com",
      ssl_fingerprint: new X509Certificate(pem.cert).fingerprint,
    });
    const dup = await call("POST", `/nodebalancers/${id}/configs`, { body: { port: 443, protocol: "tcp" } });
    expect(dup.status).toBe(400);
    expect(dup.body).toEqual({
      errors: [{ reason: "Port is already in use by another config", field: "port" }],
    });
    expect(
      (await call("PUT", `/nodebalancers/${id}`, { body: { client_conn_throttle: 5 } })).body[
        "client_conn_throttle"
      ],
    ).toBe(5);
    expect((await call("GET", `/nodebalancers/${id}/configs/${cid}`)).body["port"]).toBe(80);
    // Newer than the spec file (hand-added to the checked document): types and reserved IPs.
    const ip = fake.reserveIPv4("acme", "us-east");
    const premium = await call("POST", "/nodebalancers", {
      body: { label: "lb-premium", region: "us-east", type: "premium", ipv4: ip },
    });
    expect(premium.body).toMatchObject({ type: "premium", ipv4: ip });
    expect((await call("POST", "/nodebalancers", { body: { region: "us-east", ipv4: ip } })).status).toBe(
      400,
    );
    expect((await call("DELETE", `/networking/reserved/ips/${ip}`)).status).toBe(200);
    expect((await call("DELETE", `/networking/reserved/ips/${ip}`)).status).toBe(404);
    expect((await call("DELETE", `/nodebalancers/${id}/configs/${cid}`)).status).toBe(200);
    expect((await call("DELETE", `/nodebalancers/${id}`)).status).toBe(200);
    expect((await call("GET", `/nodebalancers/${id}`)).status).toBe(404);
  });

  test("backends must be private IPv4 (or IPv6) addresses; tags are strings of 3 to 50 characters", async () => {
    const base = { label: "lb-checks", region: "us-east" };
    const withNode = (address: string) => ({
      ...base,
      configs: [{ port: 80, protocol: "tcp", nodes: [{ address, label: "a-node" }] }],
    });
    expect((await call("POST", "/nodebalancers", { body: withNode("203.0.113.5:30080") })).body).toEqual({
      errors: [{ reason: "Must be a private IP address", field: "nodes[0].address" }],
    });
    expect((await call("POST", "/nodebalancers", { body: { ...base, tags: ["ab"] } })).body).toEqual({
      errors: [{ reason: "Length must be 3-50 characters", field: "tags" }],
    });
    const digest = `fleet-ccm.io/spec-digest=${"0".repeat(16)}:h`;
    const nb = await call("POST", "/nodebalancers", {
      body: { ...withNode("[2600:3c03::1]:30080"), label: "lb-checks-2", tags: [digest] },
    });
    expect(nb.status).toBe(200);
    const found = await call("GET", "/nodebalancers", { filter: { tags: digest } });
    expect((found.body["data"] as { id: number }[]).map((x) => x.id)).toEqual([nb.body["id"]]);
    expect((await call("DELETE", `/nodebalancers/${nb.body["id"]}`)).status).toBe(200);
  });

  test("Cloud Firewalls: created attached, rules replaced, devices listed and detached", async () => {
    const nb = await call("POST", "/nodebalancers", { body: { label: "lb-fw", region: "us-east" } });
    const nbId = nb.body["id"] as number;
    const rules = { inbound: [], inbound_policy: "DROP", outbound: [], outbound_policy: "ACCEPT" };
    const fw = await call("POST", "/networking/firewalls", {
      body: { label: "fw-one", rules, devices: { nodebalancers: [nbId] } },
    });
    const fwId = fw.body["id"] as number;
    const attached = await call("GET", `/nodebalancers/${nbId}/firewalls`);
    expect((attached.body["data"] as { id: number }[]).map((f) => f.id)).toEqual([fwId]);
    const put = await call("PUT", `/networking/firewalls/${fwId}/rules`, {
      body: {
        ...rules,
        inbound: [{ action: "ACCEPT", protocol: "TCP", ports: "80", addresses: { ipv4: ["10.0.0.0/8"] } }],
      },
    });
    expect(put.body["version"]).toBe(2);
    const devices = await call("GET", `/networking/firewalls/${fwId}/devices`);
    const device = (devices.body["data"] as { id: number; entity: { id: number } }[])[0];
    expect(device?.entity.id).toBe(nbId);
    expect((await call("DELETE", `/networking/firewalls/${fwId}/devices/${device?.id}`)).status).toBe(200);
    expect(((await call("GET", `/nodebalancers/${nbId}/firewalls`)).body["data"] as unknown[]).length).toBe(
      0,
    );
    expect(
      (await call("GET", "/networking/firewalls", { filter: { label: "fw-one" } })).body["results"],
    ).toBe(1);
    expect((await call("DELETE", `/networking/firewalls/${fwId}`)).status).toBe(200);
  });

  test("Cloud Firewall rules: at most 15 port pieces a rule, ports only for TCP and UDP, 25 rules in all", async () => {
    const rule = (protocol: string, ports?: string) => ({
      action: "ACCEPT",
      protocol,
      ...(ports !== undefined && { ports }),
      addresses: { ipv4: ["10.0.0.0/8"] },
    });
    const rules = (inbound: unknown[], outbound: unknown[] = []) => ({
      inbound,
      inbound_policy: "DROP",
      outbound,
      outbound_policy: "ACCEPT",
    });
    const fifteen = Array.from({ length: 15 }, (_, i) => 8000 + i).join(",");
    const fw = await call("POST", "/networking/firewalls", {
      body: {
        label: "fw-ports",
        rules: rules([rule("TCP", fifteen), rule("UDP", "53, 60-70"), rule("ICMP")]),
      },
    });
    expect(fw.status).toBe(200);
    const put = (body: unknown) => call("PUT", `/networking/firewalls/${fw.body["id"]}/rules`, { body });
    for (const bad of [
      rules([rule("TCP", `${fifteen},9000`)]),
      rules([rule("TCP", "8000-8010,9000-9010,1,2,3,4,5,6,7,8,9,10,11,12")]),
      rules([rule("UDP", "080")]),
      rules([rule("TCP", "90-80")]),
      rules([rule("ICMP", "80")]),
      rules(
        Array.from({ length: 20 }, () => rule("TCP", "80")),
        Array.from({ length: 6 }, () => rule("TCP", "80")),
      ),
    ]) {
      expect((await put(bad)).status).toBe(400);
    }
    expect((await call("DELETE", `/networking/firewalls/${fw.body["id"]}`)).status).toBe(200);
  });

  test("faults: 429 with Retry-After, 5xx, latency, a new Linode missing from lists, a bad token", async () => {
    fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 9 }, "acme");
    const throttled = await call("GET", "/linode/instances");
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get("retry-after")).toBe("9");
    expect(throttled.body).toEqual({ errors: [{ reason: "Too many requests" }] });
    fake.resetFaults();
    fake.setFaults({ errorRate: 1 }, "acme");
    expect((await call("GET", "/linode/instances")).status).toBeGreaterThanOrEqual(500);
    fake.resetFaults();
    fake.setFaults({ latencyMs: 150 }, "acme");
    const t0 = Date.now();
    await call("GET", `/linode/instances/${linodeId}`);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    fake.resetFaults();
    fake.setListLag(60_000);
    const fresh = fake.createLinode("acme", { label: "fresh", region: "us-east" });
    expect((await call("GET", "/linode/instances", { filter: { label: "fresh" } })).body["results"]).toBe(0);
    expect((await call("GET", `/linode/instances/${fresh.id}`)).status).toBe(200);
    const bad = await call("GET", "/linode/instances", { token: "nope" });
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ errors: [{ reason: "Invalid Token" }] });
    expect(fake.log.requests({ outcome: "401" }).length).toBeGreaterThan(0);
  });
});
