// The DigitalOcean provider's TLS (certificate-id, certificate-name, tls-ports, http2-ports,
// http3-port, tls-passthrough, redirect-http-to-https), the hostname annotation and the
// load-balancer-id it reports, against the fake over HTTP (every request and answer checked
// against DigitalOcean's OpenAPI document, the certificates operations included).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { DigitalOceanFake } from "../../../../../sim/src/digitalocean/index.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import { CloudError } from "../../errors.js";
import { isInProgress, type LoadBalancerSpec, type ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { LOAD_BALANCER_ID } from "./annotations.js";
import { ccmLoadBalancer } from "./do-ccm.testkit.js";
import { digitalOceanProvider } from "./index.js";
import { ownerName } from "./load-balancers.js";

const REGION = "nyc3";
const VPC = "c33931f2-a26a-4e61-b85c-4e95a2ec431b";
const P = "service.beta.kubernetes.io/do-loadbalancer-";

let fake: DigitalOceanFake;
let token: string;
let nodes: string[];
let seq = 0;

beforeAll(async () => {
  fake = await DigitalOceanFake.start({ spec: true });
  token = fake.createAccount("acme").token;
  nodes = [0, 1].map((n) =>
    String(fake.createDroplet("acme", { name: `t-${n}`, region: REGION, vpcUuid: VPC }).id),
  );
});
afterAll(() => fake.close());
afterEach(() => fake.assertSpecClean());

function bound() {
  return bindRecorded(
    digitalOceanProvider,
    {
      name: "acme",
      provider: "digitalocean",
      region: REGION,
      network: VPC,
      endpoint: fake.url,
      credential: token,
      secret: () => token,
      requestTimeoutMs: 2_000,
    },
    { loadBalancerPollMs: 5 },
  );
}

const target = (over: Partial<ServiceTarget> = {}): ServiceTarget => ({
  cluster: "prod",
  network: VPC,
  scope: {},
  serviceUid: `c3rt${++seq}-bb`,
  ...over,
});

const spec = (annotations: Record<string, string>, over: Partial<LoadBalancerSpec> = {}) =>
  sampleLoadBalancerSpec(nodes, { annotations, ...over });

async function settle<T>(f: () => Promise<T>): Promise<Exclude<T, { kind: "in-progress" }>> {
  for (let n = 0; n < 50; n++) {
    const a = await f();
    if (!isInProgress(a)) return a as Exclude<T, { kind: "in-progress" }>;
  }
  throw new Error("still in progress");
}

const lbOf = (t: ServiceTarget) => fake.store.loadBalancersOf("acme").find((l) => l.name === ownerName(t));
const rulesOf = (t: ServiceTarget) =>
  [...(lbOf(t)?.forwarding_rules ?? [])].sort((a, b) =>
    `${a.entry_port}${a.entry_protocol}`.localeCompare(`${b.entry_port}${b.entry_protocol}`),
  );

describe("TLS forwarding rules", () => {
  test("certificate-id: 443 becomes https to http with it (upstream's default TLS port), the rest stay tcp; redirect-http-to-https is set", async () => {
    const cert = fake.createCertificate("acme", { name: "shop" });
    const { provider, ops } = await bound();
    const t = target();
    await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        spec({ [`${P}certificate-id`]: cert.id, [`${P}redirect-http-to-https`]: "true" }),
      ),
    );
    expect(rulesOf(t)).toEqual([
      {
        entry_protocol: "https",
        entry_port: 443,
        target_protocol: "http",
        target_port: 30443,
        certificate_id: cert.id,
      },
      { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 30080 },
    ]);
    expect(lbOf(t)?.redirect_http_to_https).toBe(true);
    // An id is used as given: no certificate call.
    expect(ops.filter((o) => o.startsWith("certificates."))).toEqual([]);
    const before = ops.length;
    await provider.loadBalancers!.ensure(
      t,
      spec({ [`${P}certificate-id`]: cert.id, [`${P}redirect-http-to-https`]: "true" }),
    );
    expect(ops.slice(before)).not.toContain("loadBalancers.update");
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("certificate-name is looked up with GET /v2/certificates?name= on page 1; a name with no certificate is refused before any write", async () => {
    fake.createCertificate("acme", { name: "api-other" });
    const cert = fake.createCertificate("acme", { name: "api" });
    const { provider, ops } = await bound();
    const t = target();
    await settle(() => provider.loadBalancers!.ensure(t, spec({ [`${P}certificate-name`]: "api" })));
    expect(rulesOf(t)[0]).toMatchObject({ entry_protocol: "https", certificate_id: cert.id });
    expect(ops[0]).toBe("certificates.list");
    const list = fake.log
      .requests()
      .filter((e) => e.operation === "certificates.list")
      .at(-1);
    expect(list?.path).toBe("/v2/certificates");
    expect(new URLSearchParams(list?.query).get("name")).toBe("api");
    expect(new URLSearchParams(list?.query).get("page")).toBe("1");
    await provider.loadBalancers!.ensureDeleted(t);

    const missing = target();
    const { provider: p2, ops: ops2 } = await bound();
    const err = await p2
      .loadBalancers!.ensure(missing, spec({ [`${P}certificate-name`]: "nope" }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect(String(err)).toContain('certificate with name: "nope" not found');
    expect(ops2).toEqual(["certificates.list"]);
  });

  test("tls-ports, http2-ports and http3-port: https and http2 terminate with the certificate, HTTP/3 beside the https port to its node port; protocol http makes the rest http", async () => {
    const cert = fake.createCertificate("acme", { name: "multi" });
    const { provider } = await bound();
    const t = target();
    const listeners = [
      { protocol: "TCP" as const, port: 80, nodePort: 30080, proxyProtocol: false },
      { protocol: "TCP" as const, port: 443, nodePort: 30443, proxyProtocol: false },
      { protocol: "TCP" as const, port: 8443, nodePort: 30843, proxyProtocol: false },
      { protocol: "UDP" as const, port: 53, nodePort: 30053, proxyProtocol: false },
    ];
    await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        spec(
          {
            [`${P}protocol`]: "http",
            [`${P}certificate-id`]: cert.id,
            [`${P}tls-ports`]: "443",
            [`${P}http2-ports`]: "8443",
            [`${P}http3-port`]: "443",
          },
          { listeners },
        ),
      ),
    );
    expect(rulesOf(t)).toEqual([
      {
        entry_protocol: "http3",
        entry_port: 443,
        target_protocol: "http",
        target_port: 30443,
        certificate_id: cert.id,
      },
      {
        entry_protocol: "https",
        entry_port: 443,
        target_protocol: "http",
        target_port: 30443,
        certificate_id: cert.id,
      },
      { entry_protocol: "udp", entry_port: 53, target_protocol: "udp", target_port: 30053 },
      { entry_protocol: "http", entry_port: 80, target_protocol: "http", target_port: 30080 },
      {
        entry_protocol: "http2",
        entry_port: 8443,
        target_protocol: "http",
        target_port: 30843,
        certificate_id: cert.id,
      },
    ]);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("tls-passthrough: the TLS ports pass through to the same protocol, no certificate", async () => {
    const { provider } = await bound();
    const t = target();
    await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        spec({ [`${P}tls-passthrough`]: "true", [`${P}http2-ports`]: "443" }),
      ),
    );
    expect(rulesOf(t)).toEqual([
      {
        entry_protocol: "http2",
        entry_port: 443,
        target_protocol: "http2",
        target_port: 30443,
        tls_passthrough: true,
      },
      { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 30080 },
    ]);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("upstream's refusals are AnnotationErrors before any call", async () => {
    const cert = "892071a0-bb95-49bc-8021-3afd67a210bf";
    const { provider, ops } = await bound();
    const cases: [Record<string, string>, RegExp][] = [
      [{ [`${P}tls-ports`]: "443" }, /must set certificate id or enable tls pass through/],
      [{ [`${P}http2-ports`]: "443" }, /must set certificate id or enable tls pass through/],
      [{ [`${P}protocol`]: "https" }, /must set certificate id or enable tls pass through/],
      [{ [`${P}certificate-id`]: cert, [`${P}tls-passthrough`]: "true" }, /not both/],
      [{ [`${P}certificate-name`]: "x", [`${P}tls-passthrough`]: "true" }, /not both/],
      [
        { [`${P}http3-port`]: "443", [`${P}tls-passthrough`]: "true" },
        /not allowed to be used in conjunction with HTTP3/,
      ],
      [{ [`${P}http3-port`]: "443" }, /certificate ID is required for HTTP3/],
      [{ [`${P}protocol`]: "http3" }, /expected one of/],
      [
        { [`${P}http-ports`]: "80,443", [`${P}tls-ports`]: "443", [`${P}certificate-id`]: cert },
        /port 443 is in more than one/,
      ],
      [{ [`${P}certificate-id`]: "not-a-uuid" }, /certificate UUID/],
      [{ [`${P}tls-passthrough`]: "maybe" }, /tls-passthrough/],
      [{ [`${P}hostname`]: "203.0.113.7" }, /DNS name/],
      [{ [`${P}hostname`]: "bad_host.example.com" }, /DNS name/],
    ];
    for (const [a, why] of cases) {
      expect(() => provider.loadBalancers!.checkAnnotations!(a)).toThrow(why);
      const err = await provider.loadBalancers!.ensure(target(), spec(a)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AnnotationError);
      expect(String(err)).toMatch(why);
    }
    // Depends on the Service's ports: refused by ensure, still before any call.
    const h3 = { [`${P}http3-port`]: "80", [`${P}certificate-id`]: cert };
    expect(() => provider.loadBalancers!.checkAnnotations!(h3)).not.toThrow();
    await expect(provider.loadBalancers!.ensure(target(), spec(h3))).rejects.toThrow(
      /https or http2 ports.*port 80 is not one/,
    );
    expect(ops).toEqual([]);
  });
});

describe("Let's Encrypt renewal (upstream's recordUpdatedLetsEncryptCert)", () => {
  test("DigitalOcean renewed the certificate under a new id (the old one gone): the load balancer keeps the renewed one", async () => {
    const cert = fake.createCertificate("acme", { name: "le-shop", type: "lets_encrypt" });
    const { provider, ops } = await bound();
    const t = target();
    const a = { [`${P}certificate-id`]: cert.id };
    await settle(() => provider.loadBalancers!.ensure(t, spec(a)));
    const renewed = fake.renewCertificate(cert.id);
    const before = ops.length;
    const annotated: Record<string, string> = {};
    await provider.loadBalancers!.ensure(t, spec(a), undefined, {
      annotations: a,
      ingress: [],
      annotate: (key, value) => {
        annotated[key] = value;
      },
    });
    expect(rulesOf(t)[0]?.certificate_id).toBe(renewed.id);
    expect(ops.slice(before)).toEqual(["loadBalancers.get", "certificates.get", "certificates.get"]);
    // As upstream: the Service's certificate-id follows the renewal (and names the load balancer).
    expect(annotated).toEqual({
      [`${P}certificate-id`]: renewed.id,
      [LOAD_BALANCER_ID]: lbOf(t)?.id,
      [`${P}type`]: "REGIONAL",
    });
    // Set back on the Service, the ids agree: no certificate read at all.
    const next = { [`${P}certificate-id`]: renewed.id };
    const again = ops.length;
    await provider.loadBalancers!.ensure(t, spec(next), undefined, { annotations: next, ingress: [] });
    expect(ops.slice(again)).toEqual(["loadBalancers.get"]);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("the annotated certificate still exists: the load balancer's is kept only if it is Let's Encrypt with the same name", async () => {
    const annotated = fake.createCertificate("acme", { name: "le-api", type: "lets_encrypt" });
    const sameName = fake.createCertificate("acme", { name: "le-api", type: "lets_encrypt" });
    const otherName = fake.createCertificate("acme", { name: "le-other", type: "lets_encrypt" });
    const custom = fake.createCertificate("acme", { name: "le-api", type: "custom" });
    const { provider } = await bound();
    const t = target();
    const a = { [`${P}certificate-id`]: annotated.id };
    await settle(() => provider.loadBalancers!.ensure(t, spec(a)));
    const swap = (id: string) => {
      const rule = lbOf(t)!.forwarding_rules.find((r) => r.entry_port === 443)!;
      rule.certificate_id = id;
    };
    swap(sameName.id);
    await provider.loadBalancers!.ensure(t, spec(a));
    expect(rulesOf(t)[0]?.certificate_id).toBe(sameName.id);
    for (const other of [otherName, custom]) {
      swap(other.id);
      await provider.loadBalancers!.ensure(t, spec(a));
      expect(rulesOf(t)[0]?.certificate_id).toBe(annotated.id);
    }
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("certificate-name finds the renewed certificate by its name: nothing to change", async () => {
    const cert = fake.createCertificate("acme", { name: "le-named", type: "lets_encrypt" });
    const { provider, ops } = await bound();
    const t = target();
    const a = { [`${P}certificate-name`]: "le-named" };
    await settle(() => provider.loadBalancers!.ensure(t, spec(a)));
    const renewed = fake.renewCertificate(cert.id);
    const before = ops.length;
    await provider.loadBalancers!.ensure(t, spec(a));
    expect(ops.slice(before)).toEqual(["certificates.list", "loadBalancers.get"]);
    expect(rulesOf(t)[0]?.certificate_id).toBe(renewed.id);
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("hostname", () => {
  test("the Service's ingress is the hostname (lower case) instead of the address, as upstream; get still reads the address", async () => {
    const { provider } = await bound();
    const t = target();
    const ingress = await settle(() =>
      provider.loadBalancers!.ensure(t, spec({ [`${P}hostname`]: "Shop.Example.com" })),
    );
    expect(ingress).toEqual([{ hostname: "shop.example.com" }]);
    const state = await provider.loadBalancers!.get(t);
    expect(state?.ingress).toEqual([{ ip: lbOf(t)?.ip }]);
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("kubernetes.digitalocean.com/load-balancer-id", () => {
  test("declared, and set by ensure for the owner's load balancer; set back on the Service it finds the same one", async () => {
    const { provider, ops } = await bound();
    expect(provider.loadBalancers!.capabilities.serviceAnnotationKeys).toEqual([
      LOAD_BALANCER_ID,
      `${P}certificate-id`,
      `${P}type`,
    ]);
    const t = target();
    const annotations: Record<string, string> = {};
    await settle(() =>
      provider.loadBalancers!.ensure(t, spec({}), undefined, {
        annotations: {},
        ingress: [],
        annotate: (key, value) => {
          annotations[key] = value;
        },
      }),
    );
    expect(annotations).toEqual({ [LOAD_BALANCER_ID]: lbOf(t)?.id, [`${P}type`]: "REGIONAL" });
    const creates = ops.filter((o) => o === "loadBalancers.create").length;
    await expect(
      provider.loadBalancers!.ensure(t, spec(annotations), undefined, { annotations, ingress: [] }),
    ).resolves.toEqual([{ ip: lbOf(t)?.ip }]);
    expect(ops.filter((o) => o === "loadBalancers.create")).toHaveLength(creates);
    await provider.loadBalancers!.ensureDeleted(t);
    expect(await provider.loadBalancers!.get(t)).toBeUndefined();
  });

  test("a TLS load balancer the DigitalOcean CCM built is adopted by its id with its rules as they are, and its id reported", async () => {
    const cert = fake.createCertificate("acme", { name: "vendor-tls" });
    const t = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    const made = await ccmLoadBalancer(
      { url: fake.url, token },
      {
        serviceUid: t.serviceUid,
        region: REGION,
        vpcUuid: VPC,
        ports: [
          { port: 80, nodePort: 30080 },
          { port: 443, nodePort: 30443 },
        ],
        dropletIds: nodes.map(Number),
        tls: { certificateId: cert.id, redirectHttpToHttps: true },
      },
    );
    const rules = fake.store.loadBalancers.get(made.id)?.forwarding_rules.map((r) => ({ ...r }));
    const annotations = {
      [LOAD_BALANCER_ID]: made.id,
      [`${P}certificate-id`]: cert.id,
      [`${P}redirect-http-to-https`]: "true",
    };
    const { provider } = await bound();
    const annotated: Record<string, string> = {};
    const ingress = await settle(() =>
      provider.loadBalancers!.ensure(t, spec(annotations), undefined, {
        annotations,
        ingress: [],
        annotate: (key, value) => {
          annotated[key] = value;
        },
      }),
    );
    expect(ingress).toEqual([{ ip: made.ip }]);
    const lb = fake.store.loadBalancers.get(made.id);
    expect(lb?.name).toBe(ownerName(t));
    expect(lb?.forwarding_rules).toEqual(rules);
    expect(lb?.redirect_http_to_https).toBe(true);
    expect(annotated).toEqual({ [LOAD_BALANCER_ID]: made.id, [`${P}type`]: "REGIONAL" });
    await provider.loadBalancers!.ensureDeleted(t);
  });
});
