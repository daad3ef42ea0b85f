// NodeBalancers against the fake Linode API: the Linode CCM's build and rebuild, every
// linode-loadbalancer-* annotation this provider honours, Cloud Firewalls, adoption of a
// NodeBalancer the Linode CCM made, preserve, and the ingress shape.
import { X509Certificate } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { type FakeLinode, type FakeNodeBalancer, LinodeFake } from "../../../../../sim/src/linode/index.js";
import { selfSignedCertificate } from "../../../../../sim/src/util/certificate.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import { CloudError, TransientCloudError } from "../../errors.js";
import { loadBalancerName, loadBalancerSpecDigest, specText } from "../../naming.js";
import type {
  ClusterTarget,
  LbOwner,
  LbSecret,
  LbServiceHints,
  LoadBalancerSpec,
  LoadBalancers,
  ServiceTarget,
} from "../../provider.js";
import { ACCOUNT, type LinodeHarness, linodeHarness, REGION, VPC } from "./linode.testkit.js";
import { attachFirewallDevice, ccmNodeBalancer as ccmBuild, sourceRangeRules } from "./linode-ccm.testkit.js";
import { nodeBalancerTags, OWNED_TAG, ownerTags } from "./load-balancers.js";

const P = "service.beta.kubernetes.io/linode-loadbalancer-";

let h: LinodeHarness<LinodeFake>;
let nodes: FakeLinode[];
let seq = 0;

/** A Service of cluster prod; `at`: its cluster's network or scope. */
const owner = (at: Partial<ClusterTarget> = {}): ServiceTarget => ({
  cluster: "prod",
  scope: {},
  ...at,
  serviceUid: `uid-${++seq}`,
});
const lbs = async (): Promise<LoadBalancers> => {
  const l = (await h.provider()).provider.loadBalancers;
  if (l === undefined) throw new Error("no load balancers");
  return l;
};
const ids = (ls: readonly FakeLinode[]) => ls.map((l) => String(l.id)).sort();
const spec = (annotations: Record<string, string> = {}, overrides: Partial<LoadBalancerSpec> = {}) =>
  sampleLoadBalancerSpec(ids(nodes.slice(0, 2)), {
    ...(Object.keys(annotations).length > 0 && { annotations }),
    ...overrides,
  });
const hints = (annotations: Record<string, string> = {}, ip?: string): LbServiceHints => ({
  annotations,
  ingress: ip === undefined ? [] : [{ ip }],
});
/** A cluster migrating from the Linode CCM run with --cluster-name `name` (clusters[].adoptFrom). */
const adoptingFrom = (name: string): Partial<ClusterTarget> => ({
  scope: { adoptFrom: { vendorCcmClusterName: name } },
});
const MIGRATING = adoptingFrom("prod");
const migrating = (ip?: string) => hints({}, ip);

function nbOf(o: LbOwner): FakeNodeBalancer {
  const nb = h.fake.store.nodeBalancersOf(ACCOUNT).find((n) => n.tags.includes(`fccm:u=${o.serviceUid}`));
  if (nb === undefined) throw new Error(`no NodeBalancer of ${o.serviceUid}`);
  return nb;
}
const configOf = (o: LbOwner, port: number) => {
  const c = nbOf(o).configs.find((x) => x.port === port);
  if (c === undefined) throw new Error(`no config for ${port}`);
  return c;
};
/** A NodeBalancer's tags but the digest tags (their own tests check those). */
const tagsOf = (nb: FakeNodeBalancer) => nb.tags.filter((t) => !t.startsWith("fleet-ccm.io/"));
const firewallsOf = (nbId: number) => h.fake.store.firewallsOfDevice(ACCOUNT, "nodebalancer", nbId);
/** The fake's NodeBalancer of that id (its live state). */
const storedNb = (id: number): FakeNodeBalancer => {
  const nb = h.fake.store.nodeBalancers.get(id);
  if (nb === undefined) throw new Error(`no NodeBalancer ${id}`);
  return nb;
};
/** What the Linode CCM built for a Service of ports 80 and 443 (nodePorts 30080, 30443) on `on`. */
const ccmService = (on: readonly FakeLinode[], tags: readonly string[], label: string) => ({
  tags,
  region: REGION,
  label,
  ports: [
    { port: 80, nodePort: 30080 },
    { port: 443, nodePort: 30443 },
  ],
  nodes: on.map((l) => ({ privateIPv4: l.privateIPv4 ?? "", name: l.label })),
});

beforeAll(async () => {
  h = linodeHarness(await LinodeFake.start({ spec: true, seed: 3 }));
  nodes = [0, 1, 2].map((i) => h.fake.createLinode(ACCOUNT, { label: `node-${i}`, region: REGION }));
});

afterEach(() => {
  h.fake.resetFaults();
  expect(h.fake.specProblems()).toEqual([]);
});

afterAll(async () => {
  await h?.close();
});

describe("build and rebuild", () => {
  test("one NodeBalancer, a config per port, private IPs as nodes, the Linode CCM's defaults", async () => {
    const o = owner();
    const ingress = await (await lbs()).ensure(o, spec());
    const nb = nbOf(o);
    expect(nb.label).toBe(loadBalancerName(o.cluster, o.serviceUid));
    expect(tagsOf(nb)).toEqual(nodeBalancerTags(o, []));
    expect(nb.clientConnThrottle).toBe(0);
    expect(ingress).toEqual([{ ip: nb.ipv4, hostname: nb.hostname }]);
    expect(nb.configs.map((c) => c.port).sort((a, b) => a - b)).toEqual([80, 443]);
    const c80 = configOf(o, 80);
    expect(c80).toMatchObject({
      protocol: "tcp",
      algorithm: "roundrobin",
      stickiness: "none",
      check: "connection",
      checkInterval: 5,
      checkTimeout: 3,
      checkAttempts: 2,
      checkPassive: true,
      proxyProtocol: "none",
    });
    expect(c80.nodes.map((n) => n.address).sort()).toEqual(
      nodes
        .slice(0, 2)
        .map((l) => `${l.privateIPv4}:30080`)
        .sort(),
    );
    expect(c80.nodes.every((n) => n.weight === 100 && n.mode === "accept")).toBe(true);
    expect(c80.nodes.map((n) => n.label).sort()).toEqual(nodes.slice(0, 2).map((l) => `${l.id}-${l.label}`));
    expect(firewallsOf(nb.id)).toEqual([]);
    expect((await (await lbs()).get(o))?.backends).toEqual(ids(nodes.slice(0, 2)));
  });

  test("a node change rebuilds each config with the full node list, keeping the ids of nodes that stay", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec());
    const staying = configOf(o, 80).nodes.find((n) => n.address.startsWith(`${nodes[1]!.privateIPv4}:`));
    const mark = h.fake.log.mark();
    await (await lbs()).updateBackends(o, ids(nodes.slice(1, 3)));
    const rebuilds = h.fake.mutations.filter(
      (m) => m.seq > mark && m.operation === "nodebalancers.configs.rebuild",
    );
    expect(rebuilds).toHaveLength(2);
    const body = rebuilds[0]?.body as { nodes: { id?: number; address: string }[] };
    expect(body.nodes.find((n) => n.address === staying?.address)?.id).toBe(staying?.id);
    expect(configOf(o, 80).nodes.find((n) => n.address === staying?.address)?.id).toBe(staying?.id);
    expect((await (await lbs()).get(o))?.backends).toEqual(ids(nodes.slice(1, 3)));
    // Nothing to change: no rebuild.
    const again = h.fake.log.mark();
    await (await lbs()).updateBackends(o, ids(nodes.slice(1, 3)));
    expect(h.fake.mutations.filter((m) => m.seq > again)).toEqual([]);
  });

  test("no NodeBalancer is made without a node to put behind it (retried, nothing made)", async () => {
    const before = h.fake.store.nodeBalancers.size;
    const err = await (await lbs()).ensure(owner(), spec({}, { backends: [] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientCloudError);
    expect(h.fake.store.nodeBalancers.size).toBe(before);
  });

  test("removed ports lose their config, new ones get one", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec());
    const kept = configOf(o, 80).id;
    await (await lbs()).ensure(
      o,
      spec(
        {},
        {
          listeners: [
            { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false },
            { protocol: "TCP", port: 8080, nodePort: 30808, proxyProtocol: false },
          ],
        },
      ),
    );
    expect(
      nbOf(o)
        .configs.map((c) => c.port)
        .sort(),
    ).toEqual([80, 8080]);
    expect(configOf(o, 80).id).toBe(kept);
    expect(configOf(o, 8080).nodes.map((n) => n.address.split(":")[1])).toEqual(["30808", "30808"]);
  });
});

describe("VPC backends", () => {
  test("with the account's VPC, new NodeBalancers reach the nodes' VPC IPs in their subnet; vpcBackends false keeps private IPs", async () => {
    const vpcNodes = [0, 1].map((i) =>
      h.fake.createLinode(ACCOUNT, { label: `vpc-node-${i}`, region: REGION, vpcSubnetId: h.subnetId }),
    );
    const withVpc = async (options?: Record<string, unknown>) => {
      const l = (await h.provider({ network: VPC }, options)).provider.loadBalancers;
      if (l === undefined) throw new Error("no load balancers");
      return l;
    };
    // The cluster's network (ClusterTarget.network) is the VPC its NodeBalancers reach.
    const o = owner({ network: VPC });
    await (await withVpc()).ensure(o, sampleLoadBalancerSpec(ids(vpcNodes)));
    expect(nbOf(o).backendSubnets).toEqual([h.subnetId]);
    const vpcIPs = vpcNodes.map((l) => l.interfaces.find((i) => i.purpose === "vpc")?.vpcIPv4).sort();
    expect(
      configOf(o, 80)
        .nodes.map((n) => n.address.split(":")[0])
        .sort(),
    ).toEqual(vpcIPs);
    expect(configOf(o, 80).nodes.every((n) => n.subnetId === h.subnetId)).toBe(true);
    // A NodeBalancer made with private-IP backends keeps them.
    const plain = owner({ network: VPC });
    await (await withVpc({ vpcBackends: false })).ensure(plain, sampleLoadBalancerSpec(ids(vpcNodes)));
    expect(nbOf(plain).backendSubnets).toEqual([]);
    await (await withVpc()).updateBackends(plain, ids(vpcNodes.slice(0, 1)));
    expect(configOf(plain, 80).nodes.map((n) => n.address.split(":")[0])).toEqual([vpcNodes[0]?.privateIPv4]);
  });
});

describe("backend subnet annotations", () => {
  test("backend-vpc-name and backend-subnet-name (or backend-subnet-id) choose the backend subnet; backend-ipv4-range goes with it", async () => {
    const vpc = h.fake.createVpc(ACCOUNT, {
      label: "other-vpc",
      region: REGION,
      subnets: [
        { label: "nodes", ipv4: "10.9.0.0/24" },
        { label: "lbs", ipv4: "10.9.1.0/24" },
      ],
    });
    const [nodesSubnet, lbSubnet] = vpc.subnets;
    const members = [0, 1].map((i) =>
      h.fake.createLinode(ACCOUNT, { label: `sub-node-${i}`, region: REGION, vpcSubnetId: nodesSubnet!.id }),
    );
    const lb = (await h.provider({ network: "other-vpc" })).provider.loadBalancers;
    const o = owner({ network: "other-vpc" });
    const mark = h.fake.log.mark();
    await lb?.ensure(
      o,
      sampleLoadBalancerSpec(ids(members), {
        annotations: {
          [`${P}backend-vpc-name`]: "other-vpc",
          [`${P}backend-subnet-name`]: "lbs",
          [`${P}backend-ipv4-range`]: "10.9.1.0/30",
        },
      }),
    );
    expect(nbOf(o).backendSubnets).toEqual([lbSubnet!.id]);
    expect(configOf(o, 80).nodes.every((n) => n.subnetId === lbSubnet!.id)).toBe(true);
    const create = h.fake.mutations.find((m) => m.seq > mark && m.operation === "nodebalancers.create");
    expect((create?.body as { backend_vpcs?: unknown } | undefined)?.backend_vpcs).toEqual([
      { subnet_id: lbSubnet!.id, ipv4_range: "10.9.1.0/30" },
    ]);
    // A node joining later takes the NodeBalancer's backend subnet too.
    const late = h.fake.createLinode(ACCOUNT, {
      label: "sub-node-2",
      region: REGION,
      vpcSubnetId: nodesSubnet!.id,
    });
    await (await h.provider({ network: "other-vpc" })).provider.loadBalancers?.updateBackends(
      o,
      ids([...members, late]),
    );
    expect(configOf(o, 80).nodes).toHaveLength(3);
    expect(configOf(o, 80).nodes.every((n) => n.subnetId === lbSubnet!.id)).toBe(true);
    const byId = owner({ network: "other-vpc" });
    await lb?.ensure(
      byId,
      sampleLoadBalancerSpec(ids(members), {
        annotations: { [`${P}backend-subnet-id`]: String(lbSubnet!.id) },
      }),
    );
    expect(nbOf(byId).backendSubnets).toEqual([lbSubnet!.id]);
  });
});

describe("VPC frontend", () => {
  test("frontend-subnet-id (or frontend-vpc-name + frontend-subnet-name): the NodeBalancer's address in that subnet, as the ingress", async () => {
    const o = owner();
    const mark = h.fake.log.mark();
    const ingress = await (await lbs()).ensure(
      o,
      spec({ [`${P}frontend-subnet-id`]: String(h.subnetId), [`${P}frontend-ipv4-range`]: "10.0.0.128/30" }),
    );
    const nb = nbOf(o);
    expect(nb.frontendSubnetId).toBe(h.subnetId);
    expect(nb.ipv4).toMatch(/^10\.0\.0\./);
    expect(ingress).toEqual([{ ip: nb.ipv4, hostname: nb.hostname }]);
    const create = h.fake.mutations.find((m) => m.seq > mark && m.operation === "nodebalancers.create");
    expect((create?.body as { frontend_vpcs?: unknown } | undefined)?.frontend_vpcs).toEqual([
      { subnet_id: h.subnetId, ipv4_range: "10.0.0.128/30" },
    ]);
    const byName = owner();
    await (await h.provider({ network: VPC }, { vpcBackends: false })).provider.loadBalancers?.ensure(
      byName,
      spec({ [`${P}frontend-vpc-name`]: VPC, [`${P}frontend-subnet-name`]: "nodes" }),
    );
    expect(nbOf(byName).frontendSubnetId).toBe(h.subnetId);
    const half = await (await lbs())
      .ensure(owner(), spec({ [`${P}frontend-vpc-name`]: VPC }))
      .catch((e: unknown) => e);
    expect(half).toBeInstanceOf(CloudError);
  });
});

describe("IPv6 backends", () => {
  test("enable-ipv6-backends: the nodes' public IPv6, bracketed, and no backend VPC", async () => {
    const o = owner();
    const six = { [`${P}enable-ipv6-backends`]: "true" };
    const withVpc = (await h.provider({ network: VPC })).provider.loadBalancers;
    await withVpc?.ensure(o, spec(six));
    expect(nbOf(o).backendSubnets).toEqual([]);
    const want = nodes
      .slice(0, 2)
      .map((l) => `[${l.ipv6.replace(/\/128$/, "")}]:30080`)
      .sort();
    expect(
      configOf(o, 80)
        .nodes.map((n) => n.address)
        .sort(),
    ).toEqual(want);
    await withVpc?.updateBackends(o, ids(nodes.slice(0, 1)));
    expect(configOf(o, 80).nodes.map((n) => n.address)).toEqual([
      want.find((w) => w.includes(nodes[0]!.ipv6.replace(/\/128$/, ""))),
    ]);
  });
});

describe("annotations", () => {
  test("protocol, proxy protocol, algorithm, stickiness: defaults and per port", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec({
        [`${P}default-protocol`]: "http",
        [`${P}default-proxy-protocol`]: "v1",
        [`${P}default-algorithm`]: "leastconn",
        [`${P}port-443`]: JSON.stringify({
          protocol: "tcp",
          "proxy-protocol": "v2",
          algorithm: "source",
          stickiness: "none",
        }),
      }),
    );
    expect(configOf(o, 80)).toMatchObject({
      protocol: "http",
      proxyProtocol: "v1",
      algorithm: "leastconn",
      stickiness: "table",
    });
    expect(configOf(o, 443)).toMatchObject({
      protocol: "tcp",
      proxyProtocol: "v2",
      algorithm: "source",
      stickiness: "none",
    });
  });

  test("a UDP port: session stickiness, no active check, not passive, udp-check-port (default 80)", async () => {
    const o = owner();
    const udp = { protocol: "UDP" as const, port: 53, nodePort: 30053, proxyProtocol: false };
    await (await lbs()).ensure(o, spec({}, { listeners: [udp] }));
    expect(configOf(o, 53)).toMatchObject({
      protocol: "udp",
      stickiness: "session",
      algorithm: "roundrobin",
      check: "none",
      checkPassive: false,
      proxyProtocol: "none",
      udpCheckPort: 80,
    });
    await (await lbs()).ensure(
      o,
      spec({ [`${P}udp-check-port`]: "8053", [`${P}default-algorithm`]: "ring_hash" }, { listeners: [udp] }),
    );
    expect(configOf(o, 53)).toMatchObject({ udpCheckPort: 8053, algorithm: "ring_hash" });
    const bad = await (await lbs())
      .ensure(o, spec({ [`${P}default-proxy-protocol`]: "v2" }, { listeners: [udp] }))
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(CloudError);
  });

  test("the deprecated proxy-protocol key; default-stickiness", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec({
        [`${P}proxy-protocol`]: "v2",
        [`${P}default-protocol`]: "http",
        [`${P}default-stickiness`]: "http_cookie",
      }),
    );
    expect(configOf(o, 80)).toMatchObject({ proxyProtocol: "v2", stickiness: "http_cookie" });
  });

  test("health checks: type, path, body, interval, timeout, attempts, passive", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec({
        [`${P}check-type`]: "http_body",
        [`${P}check-path`]: "/healthz",
        [`${P}check-body`]: "ok",
        [`${P}check-interval`]: "20",
        [`${P}check-timeout`]: "10",
        [`${P}check-attempts`]: "4",
        [`${P}check-passive`]: "false",
      }),
    );
    expect(configOf(o, 80)).toMatchObject({
      check: "http_body",
      checkPath: "/healthz",
      checkBody: "ok",
      checkInterval: 20,
      checkTimeout: 10,
      checkAttempts: 4,
      checkPassive: false,
    });
  });

  test("a unified lb.fleet-ccm.io key wins over the Linode key for the same setting", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec(
        { [`${P}check-interval`]: "20", "lb.fleet-ccm.io/health-check-interval": "10" },
        {
          healthCheck: { ...sampleLoadBalancerSpec([]).healthCheck, intervalSeconds: 10, timeoutSeconds: 5 },
        },
      ),
    );
    expect(configOf(o, 80)).toMatchObject({ checkInterval: 10, checkTimeout: 3 });
  });

  test("throttle (clamped to 20) and tags", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec({ [`${P}throttle`]: "50", [`${P}tags`]: "team-a, prod" }));
    expect(nbOf(o).clientConnThrottle).toBe(20);
    expect(tagsOf(nbOf(o))).toEqual([...ownerTags(o), "prod", "team-a"]);
    await (await lbs()).ensure(o, spec({ [`${P}throttle`]: "5" }));
    expect(nbOf(o).clientConnThrottle).toBe(5);
    expect(tagsOf(nbOf(o))).toEqual(nodeBalancerTags(o, []));
  });

  test("ingress: IP and hostname, hostname only when asked, IPv6 when enabled", async () => {
    const o = owner();
    const plain = await (await lbs()).ensure(o, spec());
    const nb = nbOf(o);
    expect(plain).toEqual([{ ip: nb.ipv4, hostname: nb.hostname }]);
    expect(await (await lbs()).ensure(o, spec({ [`${P}hostname-only-ingress`]: "true" }))).toEqual([
      { hostname: nb.hostname },
    ]);
    expect(await (await lbs()).ensure(o, spec({ [`${P}enable-ipv6-ingress`]: "true" }))).toEqual([
      { ip: nb.ipv4, hostname: nb.hostname },
      { ip: nb.ipv6, hostname: nb.hostname },
    ]);
  });

  test("nodebalancer-type at creation (an unknown type is common, as the Linode CCM has it)", async () => {
    const premium = owner();
    await (await lbs()).ensure(premium, spec({ [`${P}nodebalancer-type`]: "Premium" }));
    expect(nbOf(premium).type).toBe("premium");
    const unknown = owner();
    await (await lbs()).ensure(unknown, spec({ [`${P}nodebalancer-type`]: "gold" }));
    expect(nbOf(unknown).type).toBe("common");
  });

  test("reserved-ipv4: the NodeBalancer takes the reserved IP; retained on delete unless retain-reserved-ipv4 is false", async () => {
    const kept = owner();
    const ip1 = h.fake.reserveIPv4(ACCOUNT, REGION);
    const ingress = await (await lbs()).ensure(kept, spec({ [`${P}reserved-ipv4`]: ip1 }));
    expect(ingress).toEqual([expect.objectContaining({ ip: ip1 })]);
    expect(nbOf(kept).ipv4).toBe(ip1);
    await (await lbs()).ensureDeleted(kept, undefined, hints({ [`${P}reserved-ipv4`]: ip1 }));
    expect(h.fake.store.reservedIPs.has(ip1)).toBe(true);
    const released = owner();
    const ip2 = h.fake.reserveIPv4(ACCOUNT, REGION);
    const a = { [`${P}reserved-ipv4`]: ip2, [`${P}retain-reserved-ipv4`]: "false" };
    await (await lbs()).ensure(released, spec(a));
    await (await lbs()).ensureDeleted(released, undefined, hints(a));
    expect(h.fake.store.reservedIPs.has(ip2)).toBe(false);
    expect(h.fake.store.nodeBalancersOf(ACCOUNT).some((n) => n.ipv4 === ip2)).toBe(false);
  });

  test("bad and unsupported annotations are refused naming the key, with nothing made", async () => {
    const before = h.fake.store.nodeBalancers.size;
    const bad: Record<string, string>[] = [
      { [`${P}default-protocol`]: "quic" },
      { [`${P}check-type`]: "http_body" },
      { [`${P}port-443`]: "{not json" },
      { [`${P}port-443`]: JSON.stringify({ protocol: "https" }) },
      { [`${P}reserved-ipv4`]: "not-an-ip" },
      { [`${P}frontend-ipv4-range`]: "10.0.0.0/24" },
      { [`${P}udp-check-port`]: "0" },
      { [`${P}preserve`]: "maybe" },
      { [`${P}firewall-acl`]: JSON.stringify({ allowList: {}, denyList: {} }) },
    ];
    for (const a of bad) {
      const err = await (await lbs()).ensure(owner(), spec(a)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CloudError);
      expect((err as Error).message).toContain(Object.keys(a)[0]);
    }
    expect(h.fake.store.nodeBalancers.size).toBe(before);
  });
});

describe("TLS ports (tls-secret-name)", () => {
  const first = selfSignedCertificate("shop.example.com");
  const rotated = selfSignedCertificate("shop.example.com");
  const https = (secret: LbSecret | undefined, portJson: Record<string, unknown> = {}) =>
    spec(
      { [`${P}port-443`]: JSON.stringify({ protocol: "https", "tls-secret-name": "shop-tls", ...portJson }) },
      secret === undefined ? {} : { secrets: { "shop-tls": secret } },
    );
  const tls = (c: { cert: string; key: string }): LbSecret => ({
    // A Secret's PEM ends in a newline; Linode gets it trimmed, as the Linode CCM sends it.
    data: { "tls.crt": c.cert, "tls.key": c.key },
  });
  const rebuildsSince = (mark: number) =>
    h.fake.mutations.filter((m) => m.seq > mark && m.operation === "nodebalancers.configs.rebuild");

  test("an https port gets the Secret's certificate and key; the API redacts them on read", async () => {
    const o = owner();
    await (await lbs()).ensure(o, https(tls(first)));
    const c = configOf(o, 443);
    expect(c.protocol).toBe("https");
    expect(c.stickiness).toBe("table");
    expect(c.sslCert).toBe(first.cert.trim());
    expect(c.sslKey).toBe(first.key.trim());
    expect(c.sslFingerprint).toBe(new X509Certificate(first.cert).fingerprint);
    // Port 80 stays plain TCP and gets no certificate.
    expect(configOf(o, 80)).toMatchObject({ protocol: "tcp", sslCert: null, sslKey: null });
    const res = await fetch(`${h.fake.url}/v4/nodebalancers/${nbOf(o).id}/configs/${c.id}`, {
      headers: { authorization: `Bearer ${h.token.value}` },
    });
    const wire = (await res.json()) as Record<string, unknown>;
    expect(wire).toMatchObject({
      ssl_cert: "<REDACTED>",
      ssl_key: "<REDACTED>",
      ssl_commonname: "shop.example.com",
    });
    expect(JSON.stringify(wire)).not.toContain("PRIVATE KEY");
  });

  test("the same certificate again changes nothing; a rotated one rebuilds the config with it", async () => {
    const o = owner();
    await (await lbs()).ensure(o, https(tls(first)));
    const id = configOf(o, 443).id;
    const same = h.fake.log.mark();
    await (await lbs()).ensure(o, https(tls(first)));
    expect(rebuildsSince(same)).toEqual([]);
    const mark = h.fake.log.mark();
    await (await lbs()).ensure(o, https(tls(rotated)));
    const rebuilds = rebuildsSince(mark);
    expect(rebuilds).toHaveLength(1);
    expect(rebuilds[0]?.path).toContain(`/configs/${id}/rebuild`);
    expect(rebuilds[0]?.body).toMatchObject({ ssl_cert: rotated.cert.trim(), ssl_key: rotated.key.trim() });
    expect(configOf(o, 443)).toMatchObject({ id, sslCert: rotated.cert.trim(), sslKey: rotated.key.trim() });
  });

  test("a node change rebuilds the https config with its certificate again, as the Linode CCM does", async () => {
    const o = owner();
    // One provider, as the hub keeps one per account (the key it sent is remembered in memory).
    const provider = await lbs();
    await provider.ensure(o, https(tls(first)));
    const mark = h.fake.log.mark();
    await provider.updateBackends(o, ids(nodes.slice(1, 3)));
    const rebuilds = rebuildsSince(mark);
    expect(rebuilds).toHaveLength(2);
    const by = (port: number) =>
      rebuilds.find((m) => m.path.endsWith(`/configs/${configOf(o, port).id}/rebuild`))?.body as Record<
        string,
        unknown
      >;
    expect(by(443)).toMatchObject({ ssl_cert: first.cert.trim(), ssl_key: first.key.trim() });
    expect(by(80)["ssl_cert"]).toBeUndefined();
    expect(configOf(o, 443)).toMatchObject({ sslCert: first.cert.trim(), protocol: "https" });
  });

  test("a config added later for an https port is created with the certificate", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec());
    const mark = h.fake.log.mark();
    await (await lbs()).ensure(o, https(tls(first)));
    // The tcp config on 443 becomes https: rebuilt with the certificate.
    expect(
      rebuildsSince(mark).some((m) => (m.body as Record<string, unknown>)["ssl_cert"] === first.cert.trim()),
    ).toBe(true);
    expect(configOf(o, 443).sslCert).toBe(first.cert.trim());
  });

  test("a missing, unreadable or malformed Secret fails the sync naming it, never its content; nothing is made", async () => {
    const before = h.fake.store.nodeBalancers.size;
    const cases: [LoadBalancerSpec, RegExp][] = [
      [https(undefined), /port 443: TLS Secret "shop-tls" was not received/],
      [
        https({ problem: "Secret default/shop-tls not found" }),
        /TLS Secret "shop-tls": Secret default\/shop-tls not found/,
      ],
      [
        https({ data: { "tls.crt": "-----BEGIN CERTIFICATE-----\nAAAA", "tls.key": first.key } }),
        /tls\.crt is not a PEM certificate/,
      ],
      [
        https({ data: { "tls.crt": first.cert, "tls.key": "not a key" } }),
        /tls\.key is not a PEM private key/,
      ],
      [
        https({ data: { "tls.crt": first.cert, "tls.key": rotated.key } }),
        /tls\.key is not the key of the certificate/,
      ],
      [
        spec({ [`${P}port-443`]: JSON.stringify({ protocol: "https" }) }),
        /protocol https needs "tls-secret-name"/,
      ],
      [
        spec(
          { [`${P}port-443`]: JSON.stringify({ protocol: "udp", "tls-secret-name": "shop-tls" }) },
          { secrets: { "shop-tls": tls(first) } },
        ),
        /not supported for UDP/,
      ],
    ];
    for (const [s, message] of cases) {
      const err = await (await lbs()).ensure(owner(), s).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CloudError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain("PRIVATE KEY");
    }
    expect(h.fake.store.nodeBalancers.size).toBe(before);
  });

  test("the spec digest follows the certificate and holds no key", () => {
    const a = https(tls(first));
    const b = https(tls(rotated));
    expect(loadBalancerSpecDigest(a)).not.toBe(loadBalancerSpecDigest(b));
    expect(loadBalancerSpecDigest(a)).toBe(loadBalancerSpecDigest(https(tls(first))));
    const body = (c: string) =>
      c
        .split("\n")
        .filter((l) => !l.startsWith("-----"))
        .join("");
    for (const text of [specText(a), specText(b)]) {
      expect(text).not.toContain(body(first.key).slice(0, 24));
      expect(text).not.toContain(body(rotated.key).slice(0, 24));
      expect(text).not.toContain("PRIVATE KEY");
    }
  });
});

describe("Cloud Firewalls", () => {
  test("loadBalancerSourceRanges: an allow-list firewall attached to the NodeBalancer, updated in place, deleted when gone", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["10.0.0.0/8", "2001:db8::/32"] }));
    const nb = nbOf(o);
    const [fw] = firewallsOf(nb.id);
    expect(fw?.label).toBe(nb.label);
    expect(fw?.rules.inbound_policy).toBe("DROP");
    expect(fw?.rules.inbound).toEqual([
      expect.objectContaining({
        action: "ACCEPT",
        protocol: "TCP",
        ports: "80,443",
        addresses: { ipv4: ["10.0.0.0/8"] },
      }),
      expect.objectContaining({ action: "ACCEPT", addresses: { ipv6: ["2001:db8::/32"] } }),
    ]);
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["192.0.2.0/24"] }));
    expect(firewallsOf(nb.id).map((f) => f.id)).toEqual([fw?.id]);
    expect(firewallsOf(nb.id)[0]?.rules.inbound[0]?.addresses.ipv4).toEqual(["192.0.2.0/24"]);
    await (await lbs()).ensure(o, spec());
    expect(firewallsOf(nb.id)).toEqual([]);
    expect(h.fake.store.firewalls.has(fw?.id ?? 0)).toBe(false);
  });

  test("firewall-acl deny list; firewall-id attaches the user's firewall and never deletes it", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec({ [`${P}firewall-acl`]: JSON.stringify({ denyList: { ipv4: ["198.51.100.0/24"] } }) }),
    );
    const nb = nbOf(o);
    const [acl] = firewallsOf(nb.id);
    expect(acl?.rules.inbound_policy).toBe("ACCEPT");
    expect(acl?.rules.inbound[0]).toMatchObject({ action: "DROP", addresses: { ipv4: ["198.51.100.0/24"] } });
    const users = h.fake.createFirewall(ACCOUNT, "users-fw", {
      inbound: [],
      inbound_policy: "ACCEPT",
      outbound: [],
      outbound_policy: "ACCEPT",
    });
    await (await lbs()).ensure(o, spec({ [`${P}firewall-id`]: String(users.id) }));
    expect(firewallsOf(nb.id).map((f) => f.id)).toEqual([users.id]);
    expect(h.fake.store.firewalls.has(acl?.id ?? 0)).toBe(false);
    // Back to no firewall: the user's one is detached, not deleted.
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["10.1.0.0/16"] }));
    expect(firewallsOf(nb.id).map((f) => f.label)).toEqual([nb.label]);
    expect(h.fake.store.firewalls.has(users.id)).toBe(true);
    await (await lbs()).ensureDeleted(o);
    expect(h.fake.store.firewalls.has(users.id)).toBe(true);
    expect(h.fake.store.firewallsOf(ACCOUNT).filter((f) => f.label === nb.label)).toEqual([]);
  });
});

describe("firewall rules per protocol", () => {
  const tcp = { protocol: "TCP" as const, port: 80, nodePort: 30080, proxyProtocol: false };
  const udp = { protocol: "UDP" as const, port: 53, nodePort: 30053, proxyProtocol: false };

  test("loadBalancerSourceRanges on TCP and UDP ports: ACCEPT rules for each protocol on its own ports", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec({}, { listeners: [tcp, udp], sourceRanges: ["10.0.0.0/8", "2001:db8::/32"] }),
    );
    const [fw] = firewallsOf(nbOf(o).id);
    expect(fw?.rules.inbound_policy).toBe("DROP");
    expect(fw?.rules.inbound.map((r) => [r.action, r.protocol, r.ports, r.addresses])).toEqual([
      ["ACCEPT", "TCP", "80", { ipv4: ["10.0.0.0/8"] }],
      ["ACCEPT", "TCP", "80", { ipv6: ["2001:db8::/32"] }],
      ["ACCEPT", "UDP", "53", { ipv4: ["10.0.0.0/8"] }],
      ["ACCEPT", "UDP", "53", { ipv6: ["2001:db8::/32"] }],
    ]);
    // A UDP-only Service: UDP rules only; and a repeat changes nothing.
    await (await lbs()).ensure(o, spec({}, { listeners: [udp], sourceRanges: ["10.0.0.0/8"] }));
    expect(firewallsOf(nbOf(o).id)[0]?.rules.inbound.map((r) => [r.protocol, r.ports])).toEqual([
      ["UDP", "53"],
    ]);
    const mark = h.fake.log.mark();
    await (await lbs()).ensure(o, spec({}, { listeners: [udp], sourceRanges: ["10.0.0.0/8"] }));
    expect(h.fake.mutations.filter((m) => m.seq > mark && m.operation.startsWith("firewalls."))).toEqual([]);
    await (await lbs()).ensureDeleted(o);
  });

  test("a firewall-acl deny list drops the denied addresses on UDP ports too", async () => {
    const o = owner();
    await (await lbs()).ensure(
      o,
      spec(
        { [`${P}firewall-acl`]: JSON.stringify({ denyList: { ipv4: ["198.51.100.0/24"] } }) },
        { listeners: [tcp, udp] },
      ),
    );
    const [fw] = firewallsOf(nbOf(o).id);
    expect(fw?.rules.inbound_policy).toBe("ACCEPT");
    expect(fw?.rules.inbound.map((r) => [r.action, r.protocol, r.ports, r.addresses])).toEqual([
      ["DROP", "TCP", "80", { ipv4: ["198.51.100.0/24"] }],
      ["DROP", "UDP", "53", { ipv4: ["198.51.100.0/24"] }],
    ]);
    await (await lbs()).ensureDeleted(o);
  });

  test("more than 15 ports of a protocol: split over rules (the API takes 15 ports a rule)", async () => {
    const o = owner();
    const listeners = Array.from({ length: 16 }, (_, i) => ({ ...tcp, port: 8000 + i, nodePort: 30100 + i }));
    await (await lbs()).ensure(o, spec({}, { listeners, sourceRanges: ["10.0.0.0/8"] }));
    const [fw] = firewallsOf(nbOf(o).id);
    expect(fw?.rules.inbound.map((r) => r.ports)).toEqual([
      listeners
        .slice(0, 15)
        .map((l) => l.port)
        .join(","),
      "8015",
    ]);
    await (await lbs()).ensureDeleted(o);
  });
});

describe("a firewall that filters other devices too is detached, never deleted", () => {
  const api = () => ({ url: h.fake.url, token: h.token.value });
  /** A Linode an operator put behind the firewall too. */
  const other = () => h.fake.createLinode(ACCOUNT, { label: `other-${++seq}`, region: REGION });
  const devicesOf = (fwId: number) =>
    (h.fake.store.firewalls.get(fwId)?.devices ?? []).map((d) => `${d.type}/${d.entityId}`);
  const acl = { [`${P}firewall-acl`]: JSON.stringify({ allowList: { ipv4: ["10.0.0.0/8"] } }) };

  /** Made by the Linode CCM of cluster prod for a firewall-acl allow list: its firewall, labelled like the NodeBalancer. */
  async function vendorBuilt(label: string) {
    const made = await ccmBuild(api(), {
      ...ccmService(nodes.slice(0, 2), ["prod"], label),
      firewall: sourceRangeRules([80, 443], ["10.0.0.0/8"]),
    });
    const fwId = made.firewallId ?? 0;
    expect(h.fake.store.firewalls.get(fwId)?.label).toBe(made.label);
    return { nb: storedNb(made.id), fwId };
  }

  test("the Linode CCM's firewall, also on a Linode: removing the ACL detaches it, deleting the Service keeps it", async () => {
    const { nb, fwId } = await vendorBuilt("ccm-0f1e2d3c4b5a");
    const linode = other();
    await attachFirewallDevice(api(), fwId, { type: "linode", id: linode.id });
    const o = owner(MIGRATING);
    await (await lbs()).ensure(o, spec(acl), undefined, migrating(nb.ipv4));
    expect(firewallsOf(nb.id).map((f) => f.id)).toEqual([fwId]);
    // The ACL goes: the NodeBalancer is no longer filtered by it; the Linode still is.
    await (await lbs()).ensure(o, spec(), undefined, migrating(nb.ipv4));
    expect(firewallsOf(nb.id)).toEqual([]);
    expect(devicesOf(fwId)).toEqual([`linode/${linode.id}`]);
    expect(h.fake.store.firewalls.get(fwId)?.tags).toEqual(["prod"]);
    await (await lbs()).ensureDeleted(o, undefined, hints());
    expect(h.fake.store.nodeBalancers.has(nb.id)).toBe(false);
    expect(devicesOf(fwId)).toEqual([`linode/${linode.id}`]);
  });

  test("the Linode CCM's firewall, also on a Linode: deleting the Service deletes the NodeBalancer only", async () => {
    const { nb, fwId } = await vendorBuilt("ccm-a1b2c3d4e5f6");
    const linode = other();
    await attachFirewallDevice(api(), fwId, { type: "linode", id: linode.id });
    const o = owner(MIGRATING);
    await (await lbs()).ensure(o, spec(acl), undefined, migrating(nb.ipv4));
    await (await lbs()).ensureDeleted(o, undefined, hints(acl));
    expect(h.fake.store.nodeBalancers.has(nb.id)).toBe(false);
    expect(devicesOf(fwId)).toEqual([`linode/${linode.id}`]);
    // Let go of: no fleet-ccm tag left on it.
    expect(h.fake.store.firewalls.get(fwId)?.tags).toEqual(["prod"]);
  });

  test("the Linode CCM's firewall alone on its NodeBalancer is still deleted with it", async () => {
    const { nb, fwId } = await vendorBuilt("ccm-00aa11bb22cc");
    const o = owner(MIGRATING);
    await (await lbs()).ensure(o, spec(), undefined, migrating(nb.ipv4));
    expect(h.fake.store.firewalls.has(fwId)).toBe(false);
    await (await lbs()).ensureDeleted(o, undefined, hints());
  });

  test("fleet-ccm's own firewall, also on a Linode: detached when the ranges go, taken back when they return, let go of with the Service", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["10.0.0.0/8"] }));
    const nb = nbOf(o);
    const [fw] = firewallsOf(nb.id);
    const fwId = fw?.id ?? 0;
    const linode = other();
    await attachFirewallDevice(api(), fwId, { type: "linode", id: linode.id });
    await (await lbs()).ensure(o, spec());
    expect(firewallsOf(nb.id)).toEqual([]);
    expect(devicesOf(fwId)).toEqual([`linode/${linode.id}`]);
    // Still the Service's: the ranges' return takes it back (its label is the Service's).
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["10.0.0.0/8"] }));
    expect(firewallsOf(nb.id).map((f) => f.id)).toEqual([fwId]);
    await (await lbs()).ensureDeleted(o);
    expect(h.fake.store.nodeBalancers.has(nb.id)).toBe(false);
    expect(devicesOf(fwId)).toEqual([`linode/${linode.id}`]);
    expect(h.fake.store.firewalls.get(fwId)?.tags).toEqual([]);
  });
  test("fleet-ccm's own firewall, detached (ranges gone) and on a Linode: the Service's deletion lets go of it", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["10.0.0.0/8"] }));
    const fwId = firewallsOf(nbOf(o).id)[0]?.id ?? 0;
    const linode = other();
    await attachFirewallDevice(api(), fwId, { type: "linode", id: linode.id });
    await (await lbs()).ensure(o, spec());
    await (await lbs()).ensureDeleted(o);
    expect(devicesOf(fwId)).toEqual([`linode/${linode.id}`]);
    expect(h.fake.store.firewalls.get(fwId)?.tags).toEqual([]);
  });
});

describe("firewalls before traffic, and let go of", () => {
  const open = () => ({
    inbound: [],
    inbound_policy: "ACCEPT" as const,
    outbound: [],
    outbound_policy: "ACCEPT" as const,
  });

  test("removing firewall-id detaches the user's firewall (never deletes it)", async () => {
    const o = owner();
    const users = h.fake.createFirewall(ACCOUNT, `users-fw-${seq}`, open());
    await (await lbs()).ensure(o, spec({ [`${P}firewall-id`]: String(users.id) }));
    const nb = nbOf(o);
    expect(firewallsOf(nb.id).map((f) => f.id)).toEqual([users.id]);
    await (await lbs()).ensure(o, spec());
    expect(firewallsOf(nb.id)).toEqual([]);
    expect(h.fake.store.firewalls.has(users.id)).toBe(true);
    await (await lbs()).ensureDeleted(o);
    expect(h.fake.store.firewalls.has(users.id)).toBe(true);
  });

  test.each([
    ["loadBalancerSourceRanges", {}, ["192.0.2.0/24"]],
    ["firewall-acl", { [`${P}firewall-acl`]: JSON.stringify({ allowList: { ipv4: ["192.0.2.0/24"] } }) }, []],
  ] as const)(
    "%s: the firewall is made first and named in the NodeBalancer's create (never reachable unfiltered)",
    async (_what, annotations, sourceRanges) => {
      const o = owner();
      const mark = h.fake.log.mark();
      await (await lbs()).ensure(o, spec({ ...annotations }, { sourceRanges: [...sourceRanges] }));
      const nb = nbOf(o);
      const [fw] = firewallsOf(nb.id);
      const made = h.fake.mutations.filter((m) => m.seq > mark);
      const fwCreate = made.findIndex((m) => m.operation === "firewalls.create");
      const nbCreate = made.findIndex((m) => m.operation === "nodebalancers.create");
      expect(fwCreate).toBeGreaterThanOrEqual(0);
      expect(fwCreate).toBeLessThan(nbCreate);
      expect(made[nbCreate]?.body).toMatchObject({ firewall_id: fw?.id });
      expect(made.filter((m) => m.operation === "firewalls.devices.create")).toEqual([]);
      await (await lbs()).ensureDeleted(o);
      expect(h.fake.store.firewalls.has(fw?.id ?? 0)).toBe(false);
    },
  );

  test("firewall-id on a new NodeBalancer: named in its create", async () => {
    const o = owner();
    const users = h.fake.createFirewall(ACCOUNT, `users-fw-${seq}`, open());
    const mark = h.fake.log.mark();
    await (await lbs()).ensure(o, spec({ [`${P}firewall-id`]: String(users.id) }));
    const create = h.fake.mutations.find((m) => m.seq > mark && m.operation === "nodebalancers.create");
    expect(create?.body).toMatchObject({ firewall_id: users.id });
    expect(firewallsOf(nbOf(o).id).map((f) => f.id)).toEqual([users.id]);
    await (await lbs()).ensureDeleted(o);
    expect(h.fake.store.firewalls.has(users.id)).toBe(true);
  });
});

describe("taking over from the Linode CCM", () => {
  /** Made by the Linode CCM of cluster prod for loadBalancerSourceRanges 10.0.0.0/8: with its firewall. */
  async function ccmNodeBalancer(label: string) {
    const made = await ccmBuild(
      { url: h.fake.url, token: h.token.value },
      {
        ...ccmService(nodes.slice(0, 2), ["prod"], label),
        firewall: sourceRangeRules([80, 443], ["10.0.0.0/8"]),
      },
    );
    const fw = h.fake.store.firewalls.get(made.firewallId ?? 0);
    if (fw === undefined) throw new Error("no firewall");
    return { nb: storedNb(made.id), fw };
  }

  test("found by the Service's ingress IP: adopted in place, its firewall too, nothing duplicated", async () => {
    const { nb, fw } = await ccmNodeBalancer("ccm-1a2b3c4d5e6f");
    const o = owner(MIGRATING);
    const count = h.fake.store.nodeBalancers.size;
    const ingress = await (await lbs()).ensure(
      o,
      spec({}, { sourceRanges: ["10.0.0.0/8"] }),
      undefined,
      migrating(nb.ipv4),
    );
    expect(ingress).toEqual([{ ip: nb.ipv4, hostname: nb.hostname }]);
    expect(h.fake.store.nodeBalancers.size).toBe(count);
    expect(nb.tags).toEqual(expect.arrayContaining([...ownerTags(o), "prod"]));
    expect(nb.label).toBe("ccm-1a2b3c4d5e6f");
    expect(firewallsOf(nb.id).map((f) => f.id)).toEqual([fw.id]);
    expect(fw.tags).toEqual(expect.arrayContaining(ownerTags(o)));
    expect((await (await lbs()).get(o))?.id).toBe(String(nb.id));
    // A repeat changes nothing.
    const mark = h.fake.log.mark();
    await (await lbs()).ensure(o, spec({}, { sourceRanges: ["10.0.0.0/8"] }), undefined, migrating(nb.ipv4));
    expect(h.fake.mutations.filter((m) => m.seq > mark)).toEqual([]);
    await (await lbs()).ensureDeleted(o, undefined, hints());
    expect(h.fake.store.nodeBalancers.has(nb.id)).toBe(false);
    expect(h.fake.store.firewalls.has(fw.id)).toBe(false);
  });

  test("found by the nodebalancer-id annotation; a changed id moves the Service and deletes the old one", async () => {
    const first = (await ccmNodeBalancer("ccm-aaaaaaaaaaaa")).nb;
    const second = (await ccmNodeBalancer("ccm-bbbbbbbbbbbb")).nb;
    const o = owner(MIGRATING);
    await (await lbs()).ensure(
      o,
      spec({ [`${P}nodebalancer-id`]: String(first.id) }),
      undefined,
      migrating(),
    );
    expect(nbOf(o).id).toBe(first.id);
    await (await lbs()).ensure(
      o,
      spec({ [`${P}nodebalancer-id`]: String(second.id) }),
      undefined,
      migrating(),
    );
    expect(nbOf(o).id).toBe(second.id);
    expect(h.fake.store.nodeBalancers.has(first.id)).toBe(false);
    const missing = await (await lbs())
      .ensure(owner(), spec({ [`${P}nodebalancer-id`]: "999999" }))
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(CloudError);
  });

  test("another Service's NodeBalancer is never adopted", async () => {
    const theirs = owner();
    await (await lbs()).ensure(theirs, spec());
    const err = await (await lbs())
      .ensure(owner(), spec({ [`${P}nodebalancer-id`]: String(nbOf(theirs).id) }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect(tagsOf(nbOf(theirs))).toEqual(nodeBalancerTags(theirs, []));
  });

  test("preserve: deletion lets go of the NodeBalancer and its firewall, and deletes nothing", async () => {
    const o = owner();
    await (await lbs()).ensure(o, spec({ [`${P}preserve`]: "true" }, { sourceRanges: ["10.0.0.0/8"] }));
    const nb = nbOf(o);
    const [fw] = firewallsOf(nb.id);
    await (await lbs()).ensureDeleted(o, undefined, hints({ [`${P}preserve`]: "true" }));
    expect(h.fake.store.nodeBalancers.get(nb.id)?.tags).toEqual(["prod"]);
    expect(h.fake.store.firewalls.get(fw?.id ?? 0)?.tags).toEqual([]);
    expect(await (await lbs()).get(o)).toBeUndefined();
    const page = await (await lbs()).listOwned?.(undefined);
    expect(page?.items.map((i) => i.id)).not.toContain(String(nb.id));
    expect(nb.tags).not.toContain(OWNED_TAG);
  });
});

describe("cross-cluster reach: only what is in the cluster's scope is touched", () => {
  // Cluster prod (A) and cluster other (B) in one account, one provider for both.
  const ownerB = (): ServiceTarget => ({ cluster: "other", scope: {}, serviceUid: `uid-${++seq}` });
  const open = () => ({
    inbound: [],
    inbound_policy: "ACCEPT" as const,
    outbound: [],
    outbound_policy: "ACCEPT" as const,
  });
  /** Mutations since `mark` whose path names this NodeBalancer or firewall. */
  const writesTo = (mark: number, kind: "nodebalancers" | "networking/firewalls", id: number) =>
    h.fake.mutations.filter(
      (m) =>
        m.seq > mark &&
        (new RegExp(`/${kind}/${id}(/|$)`).test(m.path) || JSON.stringify(m.body).includes(`:${id}`)),
    );
  /** Made by the Linode CCM (its --cluster-name and tags annotation's as `tags`), or by hand (none). */
  async function vendorNodeBalancer(label: string, tags: string[]) {
    const made = await ccmBuild(
      { url: h.fake.url, token: h.token.value },
      {
        ...ccmService(nodes.slice(2, 3), tags, label),
        ports: [{ port: 80, nodePort: 30080 }],
      },
    );
    return storedNb(made.id);
  }
  const snapshot = (nb: FakeNodeBalancer) => JSON.stringify(h.fake.store.nodeBalancers.get(nb.id));

  test.each([
    ["the Linode CCM's for cluster B, no adoptFrom", ["cluster-b"], undefined, "no adoptFrom"],
    ["the Linode CCM's for cluster B, adoptFrom naming A's", ["cluster-b"], "prod", "lacks the tag prod"],
    ["one that has nothing to do with Kubernetes", [], "prod", "lacks the tag prod"],
    ["B's, hub-made", undefined, "prod", "another Service (cluster other)"],
  ] as const)(
    "nodebalancer-id of %s: refused, no write to it, nothing made",
    async (_what, tags, adoptFrom, why) => {
      let nb: FakeNodeBalancer;
      if (tags === undefined) {
        const b = ownerB();
        await (await lbs()).ensure(b, spec());
        nb = nbOf(b);
      } else nb = await vendorNodeBalancer(`foreign-${++seq}`, [...tags]);
      const before = snapshot(nb);
      const count = h.fake.store.nodeBalancers.size;
      const mark = h.fake.log.mark();
      for (const hint of [hints({}, undefined), hints({}, nb.ipv4)]) {
        const annotations: Record<string, string> =
          hint.ingress.length > 0 ? {} : { [`${P}nodebalancer-id`]: String(nb.id) };
        const err = await (await lbs())
          .ensure(
            owner(adoptFrom === undefined ? {} : adoptingFrom(adoptFrom)),
            spec(annotations),
            undefined,
            hint,
          )
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(CloudError);
        expect((err as Error).message).toContain(why);
      }
      expect(writesTo(mark, "nodebalancers", nb.id)).toEqual([]);
      expect(h.fake.mutations.filter((m) => m.seq > mark)).toEqual([]);
      expect(snapshot(nb)).toBe(before);
      expect(h.fake.store.nodeBalancers.size).toBe(count);
    },
  );

  test("with adoptFrom naming the Linode CCM's cluster, a NodeBalancer it built is adopted; deleting the Service deletes it", async () => {
    const nb = await vendorNodeBalancer(`ccm-${++seq}`, ["prod", "team-a"]);
    const o = owner(MIGRATING);
    await (await lbs()).ensure(o, spec({ [`${P}nodebalancer-id`]: String(nb.id) }), undefined, migrating());
    expect(nbOf(o).id).toBe(nb.id);
    expect(nb.tags).toEqual(expect.arrayContaining([...ownerTags(o), "prod"]));
    await (await lbs()).ensureDeleted(o, undefined, hints());
    expect(h.fake.store.nodeBalancers.has(nb.id)).toBe(false);
  });

  test("firewall-id of B's hub-made firewall, or of a firewall filtering B's NodeBalancer: refused, no write", async () => {
    const b = ownerB();
    await (await lbs()).ensure(b, spec({}, { sourceRanges: ["192.0.2.0/24"] }));
    const nbB = nbOf(b);
    const [made] = firewallsOf(nbB.id);
    const shared = h.fake.createFirewall(ACCOUNT, `shared-${++seq}`, open());
    shared.devices.push({ id: h.fake.store.nextId(), type: "nodebalancer", entityId: nbB.id });
    const vendorB = await vendorNodeBalancer(`ccm-b-${++seq}`, ["cluster-b"]);
    const onVendor = h.fake.createFirewall(ACCOUNT, `ccmfw-${++seq}`, open());
    onVendor.devices.push({ id: h.fake.store.nextId(), type: "nodebalancer", entityId: vendorB.id });
    const cases = [
      [made?.id ?? 0, "another Service (cluster other)"],
      [shared.id, `filters NodeBalancer ${nbB.id}`],
      [onVendor.id, `filters NodeBalancer ${vendorB.id}`],
    ] as const;
    for (const [id, why] of cases) {
      const before = JSON.stringify(h.fake.store.firewalls.get(id));
      const count = h.fake.store.nodeBalancers.size;
      const mark = h.fake.log.mark();
      const err = await (await lbs())
        .ensure(owner(MIGRATING), spec({ [`${P}firewall-id`]: String(id) }), undefined, migrating())
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CloudError);
      expect((err as Error).message).toContain(why);
      expect(writesTo(mark, "networking/firewalls", id)).toEqual([]);
      expect(h.fake.mutations.filter((m) => m.seq > mark)).toEqual([]);
      expect(JSON.stringify(h.fake.store.firewalls.get(id))).toBe(before);
      expect(h.fake.store.nodeBalancers.size).toBe(count);
    }
    expect(
      firewallsOf(nbB.id)
        .map((f) => f.id)
        .sort(),
    ).toEqual([made?.id, shared.id].sort());
  });

  test("firewall-id of a firewall filtering this cluster's own NodeBalancers is attached", async () => {
    const a = owner();
    const shared = h.fake.createFirewall(ACCOUNT, `ours-${++seq}`, open());
    await (await lbs()).ensure(a, spec({ [`${P}firewall-id`]: String(shared.id) }));
    const a2 = owner();
    await (await lbs()).ensure(a2, spec({ [`${P}firewall-id`]: String(shared.id) }));
    expect(firewallsOf(nbOf(a2).id).map((f) => f.id)).toEqual([shared.id]);
    expect(firewallsOf(nbOf(a).id).map((f) => f.id)).toEqual([shared.id]);
  });
});

describe("annotations past the Linode API's bounds", () => {
  const refused = {
    // check_path: no documented length; 1024 keeps 64 KiB from the API.
    [`${P}check-path`]: `/${"a".repeat(64 * 1024 - 1)}`,
    // check_timeout: 1..30.
    [`${P}check-timeout`]: "31",
    // check_timeout must be less than check_interval.
    [`${P}check-interval`]: "3",
    // A tag (POST /tags label): 3..50 characters.
    [`${P}tags`]: `team-a,${"t".repeat(51)}`,
    [`${P}backend-vpc-name`]: "v".repeat(65),
    [`${P}check-body`]: "b".repeat(1025),
    // Firewall rule addresses: IP/mask; up to 25 rules of 255.
    [`${P}firewall-acl`]: JSON.stringify({ allowList: { ipv4: ["203.0.113.7"] } }),
  };

  test.each(Object.entries(refused))(
    "%s: an AnnotationError naming it, before any call, nothing made (%#)",
    async (key, value) => {
      const { provider, ops } = await h.provider();
      const l = provider.loadBalancers;
      if (l === undefined) throw new Error("no load balancers");
      const before = h.fake.store.nodeBalancersOf(ACCOUNT).length;
      const o = owner();
      const annotations = { [key]: value };
      expect(() => l.checkAnnotations?.(annotations)).toThrow(AnnotationError);
      const err = await l.ensure(o, spec(annotations)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AnnotationError);
      expect((err as AnnotationError).annotation).toBe(key);
      expect((err as Error).message.length).toBeLessThan(400);
      expect(ops).toEqual([]);
      expect(h.fake.store.nodeBalancersOf(ACCOUNT)).toHaveLength(before);
    },
  );

  test("a firewall ACL of more than 25 rules of 255 addresses is refused, 25 are taken", async () => {
    const v4 = (n: number) =>
      Array.from(
        { length: n },
        (_, i) => `10.${Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}/32`,
      );
    const acl = (n: number) => ({ [`${P}firewall-acl`]: JSON.stringify({ denyList: { ipv4: v4(n) } }) });
    const l = await lbs();
    expect(() => l.checkAnnotations?.(acl(25 * 255))).not.toThrow();
    expect(() => l.checkAnnotations?.(acl(25 * 255 + 1))).toThrow("(26 rules)");
  });

  test("a unified key Linode's check_path pattern refuses is refused by the hub's table (settingBounds)", async () => {
    expect((await lbs()).capabilities.settingBounds?.healthCheckPath?.pattern?.test("/ready_now")).toBe(
      false,
    );
    expect((await lbs()).capabilities.settingBounds?.healthCheckTimeoutSeconds).toMatchObject({
      min: 1,
      max: 30,
    });
  });
});
