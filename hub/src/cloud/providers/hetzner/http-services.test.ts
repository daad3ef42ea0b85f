// HTTP and HTTPS services of Hetzner load balancers against the fake Hetzner Cloud API over
// HTTP: uploaded certificates by id and name, the Service's managed certificate issued through
// its action (in progress meanwhile, on any replica), the HTTP options written whole through
// update_service, what is refused before any call, and adoption of an HTTPS load balancer the
// Hetzner CCM built. Every request and answer checked against the spec subset.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import type { FakeServer } from "../../../../../sim/src/hetzner/index.js";
import {
  ACCOUNT,
  type HetznerWorld,
  REGION,
  startHetznerWorld,
} from "../../../../../sim/src/hetzner/world.js";
import { selfSignedCertificate } from "../../../../../sim/src/util/certificate.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import { CloudError, OperationFailedError } from "../../errors.js";
import { OWNER_TAG_CLUSTER } from "../../naming.js";
import {
  type ClusterTarget,
  isInProgress,
  type LbOwner,
  type LoadBalancerSpec,
  type LoadBalancers,
  type ServiceTarget,
} from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { A } from "./annotations.js";
import { STAGING_LABEL } from "./certificates.js";
import { hetznerCcmLoadBalancer, hetznerCcmManagedCertificate, hetznerResources } from "./hetzner.testkit.js";
import { managedCertificateName } from "./http-settings.js";
import { hetznerProvider } from "./index.js";
import { ownerOfLabels, UPSTREAM_UID_LABEL } from "./load-balancers.js";

let w: HetznerWorld;
let nodes: FakeServer[];
let seq = 0;
/** Uploaded certificates: the user's, made by hand in the project. */
let shop: { id: number; name: string };
let api: { id: number; name: string };

const owner = (at: Partial<ClusterTarget> = {}): ServiceTarget => ({
  cluster: "prod",
  network: "fleet-net",
  scope: {},
  ...at,
  serviceUid: `7e1d${++seq}-uid`,
});
const MIGRATING: Partial<ClusterTarget> = { scope: { adoptFrom: { vendorCcmClusterName: "prod" } } };

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${w.fake.url}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${w.token}`, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

async function upload(name: string, labels: Record<string, string> = {}) {
  const pem = selfSignedCertificate(`${name}.example.com`, `DNS:${name}.example.com`);
  const answer = await call("POST", "/certificates", {
    name,
    certificate: pem.cert,
    private_key: pem.key,
    labels,
  });
  return { id: answer.body.certificate.id as number, name };
}

async function bind() {
  const b = await bindRecorded(hetznerProvider, w.account(), {});
  const lbs = b.provider.loadBalancers as LoadBalancers;
  const mutations = () => b.ops.filter((op) => /\.(create|update|delete)$/.test(op));
  return { lbs, ops: b.ops, mutations };
}

const backends = () =>
  nodes
    .slice(0, 2)
    .map((n) => String(n.id))
    .sort();
const spec = (annotations: Record<string, string>, overrides: Partial<LoadBalancerSpec> = {}) =>
  sampleLoadBalancerSpec(backends(), { annotations, ...overrides });
/** One https port, 443 → 30443. */
const httpsOnly = (annotations: Record<string, string>, overrides: Partial<LoadBalancerSpec> = {}) =>
  spec(annotations, {
    listeners: [{ protocol: "TCP", port: 443, nodePort: 30443, proxyProtocol: false }],
    healthCheck: { ...sampleLoadBalancerSpec([]).healthCheck, port: 30443 },
    ...overrides,
  });

const lbOf = (o: LbOwner) =>
  w.fake.store.loadBalancersOf(ACCOUNT).find((lb) => {
    const x = ownerOfLabels(lb.labels);
    return x?.cluster === o.cluster && x.serviceUid === o.serviceUid;
  });
const certsOf = (o: LbOwner) =>
  w.fake.store.certificatesOf(ACCOUNT).filter((c) => c.labels[UPSTREAM_UID_LABEL] === o.serviceUid);

beforeAll(async () => {
  w = await startHetznerWorld();
  nodes = [0, 1, 2].map((n) =>
    w.fake.createServer(ACCOUNT, { name: `node-${n}`, location: REGION, networks: [w.networkId] }),
  );
  shop = await upload("shop");
  api = await upload("api");
});
afterAll(async () => {
  expect(w.fake.specProblems()).toEqual([]);
  await w.fake.close();
});
beforeEach(() => w.fake.setActionPolls(0));

describe("uploaded certificates", () => {
  test("https with certificates by id and by name, redirect, sticky sessions, cookie and idle timeout; an HTTP health check with domain, status codes and TLS", async () => {
    const o = owner();
    const { lbs, mutations } = await bind();
    const annotations = {
      [A.protocol]: "https",
      [A.certificates]: `${shop.id},${api.name}`,
      [A.redirectHttp]: "true",
      [A.stickySessions]: "true",
      [A.cookieName]: "SHOP",
      [A.cookieLifetime]: "10m",
      [A.timeoutIdle]: "90s",
      [A.healthDomain]: "shop.example.com",
      [A.statusCodes]: "200,3??",
      [A.healthTls]: "true",
    };
    const hc = { ...sampleLoadBalancerSpec([]).healthCheck, protocol: "HTTP" as const, path: "/healthz" };
    const ingress = await lbs.ensure(o, spec(annotations, { healthCheck: hc }));
    const lb = lbOf(o);
    expect(ingress).toEqual([{ ip: lb?.ipv4 }]);
    expect(mutations()).toEqual(["lb.create", "lb.labels.update"]);
    expect(lb?.services.map((s) => [s.listen_port, s.protocol])).toEqual([
      [80, "https"],
      [443, "https"],
    ]);
    expect(lb?.services[1]?.http).toEqual({
      cookie_name: "SHOP",
      cookie_lifetime: 600,
      certificates: [shop.id, api.id],
      redirect_http: true,
      sticky_sessions: true,
      timeout_idle: 90,
    });
    expect(lb?.services[1]?.health_check.http).toEqual({
      domain: "shop.example.com",
      path: "/healthz",
      response: "",
      status_codes: ["200", "3??"],
      tls: true,
    });
    // Again: nothing to change.
    const again = await bind();
    await again.lbs.ensure(o, spec(annotations, { healthCheck: hc }));
    expect(again.mutations()).toEqual([]);
    // Sticky sessions and the cookie removed: update_service puts Hetzner's defaults back, in place.
    const {
      [A.stickySessions]: _s,
      [A.cookieName]: _c,
      [A.cookieLifetime]: _l,
      [A.certificates]: _x,
      ...fewer
    } = annotations;
    const changed = await bind();
    await changed.lbs.ensure(o, spec({ ...fewer, [A.certificates]: shop.name }, { healthCheck: hc }));
    expect(changed.mutations()).toEqual(["lb.service.update", "lb.service.update", "lb.labels.update"]);
    expect(lbOf(o)?.id).toBe(lb?.id);
    expect(lbOf(o)?.services[0]?.http).toMatchObject({
      cookie_name: "HCLBSTICKY",
      cookie_lifetime: 300,
      sticky_sessions: false,
      certificates: [shop.id],
    });
    // Back to plain tcp: the services lose their HTTP settings.
    await changed.lbs.ensure(o, spec({ [A.healthDomain]: "x.example.com" }));
    expect(lbOf(o)?.services.map((s) => [s.protocol, s.http])).toEqual([
      ["tcp", undefined],
      ["tcp", undefined],
    ]);
    await changed.lbs.ensureDeleted(o);
    // The user's certificates are never deleted.
    expect(w.fake.store.certificates.has(shop.id) && w.fake.store.certificates.has(api.id)).toBe(true);
  });

  test("a certificate the project does not have, or another cluster's, is refused with nothing built", async () => {
    const theirs = await upload("theirs", { [OWNER_TAG_CLUSTER]: "staging" });
    const { lbs, mutations } = await bind();
    for (const certs of ["999999", "no-such-cert", theirs.name]) {
      const o = owner();
      const err = await lbs
        .ensure(o, httpsOnly({ [A.protocol]: "https", [A.certificates]: certs }))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CloudError);
      expect((err as Error).message).toMatch(
        certs === theirs.name ? /belongs to cluster staging/ : /does not have/,
      );
      expect(lbOf(o)).toBeUndefined();
    }
    expect(mutations()).toEqual([]);
  });

  test("certificates per load balancer are a declared quota of the type (lb11: 10)", async () => {
    const { lbs } = await bind();
    const names = Array.from({ length: 11 }, (_, i) => `c${i}`).join(",");
    expect(lbs.capabilities.quotas?.({ [A.protocol]: "https", [A.certificates]: names })).toContainEqual({
      name: "certificates per load balancer (lb11)",
      limit: 10,
      counts: "annotations",
      used: 11,
    });
    expect(lbs.capabilities.quotas?.({ [A.protocol]: "tcp" })).toHaveLength(1);
  });

  test("what Hetzner would refuse is refused before any call, naming the key", async () => {
    const { lbs, ops } = await bind();
    const refused: [Record<string, string>, string][] = [
      [{ [A.stickySessions]: "true" }, A.stickySessions],
      [{ [A.protocol]: "https" }, A.certificates],
      [{ [A.protocol]: "http", [A.certificates]: "1" }, A.certificates],
      [{ [A.protocol]: "http", [A.redirectHttp]: "true" }, A.redirectHttp],
      [{ [A.protocol]: "https", [A.certificates]: "1,,2" }, A.certificates],
      [{ [A.protocol]: "https", [A.certificateType]: "managed" }, A.managedDomains],
      [{ [A.protocol]: "https", [A.certificateType]: "self-signed" }, A.certificateType],
      [{ [A.protocol]: "http", [A.cookieLifetime]: "soon" }, A.cookieLifetime],
      [{ [A.statusCodes]: "200,abc" }, A.statusCodes],
      [{ [A.protocol]: "udp" }, A.protocol],
      [{ [A.nodeSelector]: "role in (edge" }, A.nodeSelector],
    ];
    for (const [a, key] of refused) {
      expect(() => lbs.checkAnnotations?.(a)).toThrow(AnnotationError);
      const err = await lbs.ensure(owner(), spec(a)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AnnotationError);
      expect((err as AnnotationError).annotation).toBe(key);
    }
    expect(ops).toEqual([]);
  });
});

test("an http service's health check configured by a health-check key takes the service's protocol, as upstream", () => {
  const lbSettings = hetznerProvider.lbSettings;
  expect(lbSettings?.({ [A.protocol]: "http", [A.healthInterval]: "5s" })).toEqual({
    healthCheckProtocol: "HTTP",
    healthCheckIntervalSeconds: 5,
  });
  expect(lbSettings?.({ [A.protocol]: "http" })).toEqual({});
  expect(lbSettings?.({ [A.protocol]: "http", [A.healthProtocol]: "tcp", [A.healthInterval]: "5s" })).toEqual(
    {
      healthCheckProtocol: "TCP",
      healthCheckIntervalSeconds: 5,
    },
  );
});

describe("the managed certificate", () => {
  const managed = (extra: Record<string, string> = {}) =>
    httpsOnly({
      [A.protocol]: "https",
      [A.certificateType]: "managed",
      [A.managedDomains]: "shop.example.com,www.shop.example.com",
      ...extra,
    });

  test("requested as the Hetzner CCM requests it and awaited through its action as in progress (on any replica); then the https service uses it; deleted after the load balancer", async () => {
    w.fake.setActionPolls(2);
    const o = owner();
    const first = await bind();
    const a = await first.lbs.ensure(o, managed({ [A.managedStaging]: "true" }));
    expect(isInProgress(a)).toBe(true);
    expect(first.mutations()).toEqual(["cert.create"]);
    expect(lbOf(o)).toBeUndefined();
    const [cert] = certsOf(o);
    expect(cert).toMatchObject({
      name: managedCertificateName(o.serviceUid),
      type: "managed",
      domainNames: ["shop.example.com", "www.shop.example.com"],
      labels: { [UPSTREAM_UID_LABEL]: o.serviceUid, [OWNER_TAG_CLUSTER]: "prod", [STAGING_LABEL]: "true" },
    });
    // Another replica: no memory of the request; the certificate's action read from the cloud.
    const second = await bind();
    expect(isInProgress(await second.lbs.ensure(o, managed({ [A.managedStaging]: "true" })))).toBe(true);
    expect(second.mutations()).toEqual([]);
    expect(second.ops).toContain("cert.actions");
    const ingress = await settle(() => second.lbs.ensure(o, managed({ [A.managedStaging]: "true" })));
    expect(ingress).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    expect(certsOf(o)).toHaveLength(1);
    expect(lbOf(o)?.services[0]).toMatchObject({ protocol: "https", http: { certificates: [cert?.id] } });
    // Deleted: the load balancer, then the certificate.
    w.fake.setActionPolls(0);
    expect(await second.lbs.ensureDeleted(o)).toBeUndefined();
    expect(lbOf(o)).toBeUndefined();
    expect(certsOf(o)).toEqual([]);
    expect(hetznerResources(w.fake, ACCOUNT).filter((r) => r.lbOwner?.serviceUid === o.serviceUid)).toEqual(
      [],
    );
  });

  test("a failed issuance is OperationFailedError once, the certificate deleted; the next ensure requests it again", async () => {
    w.fake.setActionPolls(1);
    w.fake.failNextActions("create_certificate", 1);
    const o = owner();
    const { lbs } = await bind();
    expect(isInProgress(await lbs.ensure(o, managed({ [A.managedName]: "shop-cert" })))).toBe(true);
    const err = await (await bind()).lbs
      .ensure(o, managed({ [A.managedName]: "shop-cert" }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OperationFailedError);
    expect((err as Error).message).toMatch(/shop-cert.*create_certificate\) ended in error/);
    expect(certsOf(o)).toEqual([]);
    expect(lbOf(o)).toBeUndefined();
    w.fake.setActionPolls(0);
    expect(await lbs.ensure(o, managed({ [A.managedName]: "shop-cert" }))).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    expect(certsOf(o).map((c) => c.name)).toEqual(["shop-cert"]);
    await lbs.ensureDeleted(o);
    expect(certsOf(o)).toEqual([]);
  });

  test("a request whose answer was lost is found again by its label, never requested twice", async () => {
    const o = owner();
    const { lbs } = await bind();
    w.fake.faults.set({ lostResponseRate: 1 }, ACCOUNT);
    const lost = await lbs.ensure(o, managed()).catch((e: unknown) => e);
    w.fake.faults.reset();
    expect(lost).toBeInstanceOf(Error);
    expect(certsOf(o)).toHaveLength(1);
    expect(await settle(() => lbs.ensure(o, managed()))).toEqual([{ ip: lbOf(o)?.ipv4 }]);
    expect(certsOf(o)).toHaveLength(1);
    await lbs.ensureDeleted(o);
    expect(certsOf(o)).toEqual([]);
  });

  test("a load balancer with delete protection is kept on delete, and so is the managed certificate it uses", async () => {
    const o = owner();
    const { lbs, mutations } = await bind();
    await settle(() => lbs.ensure(o, managed()));
    const lb = lbOf(o);
    if (lb === undefined) throw new Error("not built");
    lb.deleteProtected = true;
    expect(await lbs.ensureDeleted(o)).toBeUndefined();
    expect(lbOf(o)?.id).toBe(lb.id);
    expect(certsOf(o)).toHaveLength(1);
    expect(mutations().filter((op) => op.endsWith(".delete"))).toEqual([]);
    lb.deleteProtected = false;
    await lbs.ensureDeleted(o);
    expect(certsOf(o)).toEqual([]);
  });

  test("a name taken by a certificate that is not the Service's is refused, that certificate untouched", async () => {
    const taken = await upload("taken");
    const o = owner();
    const { lbs } = await bind();
    await expect(lbs.ensure(o, managed({ [A.managedName]: "taken" }))).rejects.toThrow(/named taken exists/);
    expect(w.fake.store.certificates.get(taken.id)?.labels).toEqual({});
    expect(lbOf(o)).toBeUndefined();
  });
});

describe("adoption of an HTTPS load balancer the Hetzner CCM built", () => {
  test("uploaded certificates: adopted in place with adoptFrom, nothing more open after (no extra port, still https with its certificate and redirect)", async () => {
    const o = owner();
    const annotations = {
      [A.protocol]: "https",
      [A.certificates]: shop.name,
      [A.redirectHttp]: "true",
    };
    const s = httpsOnly(annotations);
    // Built by the Hetzner CCM, with a plain-http port 8080 the Service has since dropped.
    const built = w.fake.putLoadBalancer(
      hetznerCcmLoadBalancer(o, s, {
        account: ACCOUNT,
        location: REGION,
        http: { protocol: "https", certificates: [shop.id], redirectHttp: true },
        extraPorts: [8080],
      }),
    );
    const before = JSON.stringify(built);
    const { lbs } = await bind();
    await expect(lbs.ensure(o, s)).rejects.toThrow(/built by the Hetzner CCM.*adoptFrom/);
    expect(JSON.stringify(w.fake.store.loadBalancers.get(built.id))).toBe(before);
    const adopting = { ...o, ...MIGRATING };
    expect(await lbs.ensure(adopting, s)).toEqual([{ ip: built.ipv4 }]);
    const after = w.fake.store.loadBalancers.get(built.id);
    expect(after?.labels).toMatchObject({ [UPSTREAM_UID_LABEL]: o.serviceUid, [OWNER_TAG_CLUSTER]: "prod" });
    expect(after?.services.map((x) => [x.listen_port, x.protocol, x.destination_port])).toEqual([
      [443, "https", 30443],
    ]);
    expect(after?.services[0]?.http).toMatchObject({ certificates: [shop.id], redirect_http: true });
    expect(after?.publicEnabled).toBe(true);
    expect(after?.targets.map((t) => String(t.server)).sort()).toEqual(backends());
    // Again: in place, no change.
    const again = await bind();
    await again.lbs.ensure(adopting, s);
    expect(again.mutations()).toEqual([]);
    await again.lbs.ensureDeleted(adopting);
    expect(w.fake.store.loadBalancers.get(built.id)).toBeUndefined();
    expect(w.fake.store.certificates.has(shop.id)).toBe(true);
  });

  test("the Hetzner CCM's managed certificate is adopted with its load balancer, not requested again, and goes with it", async () => {
    const o = owner();
    const domains = ["adopt.example.com"];
    const requested = await call("POST", "/certificates", hetznerCcmManagedCertificate(o, domains));
    const certId = requested.body.certificate.id as number;
    const annotations = {
      [A.protocol]: "https",
      [A.certificateType]: "managed",
      [A.managedDomains]: domains.join(","),
    };
    const s = httpsOnly(annotations);
    const built = w.fake.putLoadBalancer(
      hetznerCcmLoadBalancer(o, s, {
        account: ACCOUNT,
        location: REGION,
        http: { protocol: "https", certificates: [certId] },
      }),
    );
    const { lbs, mutations } = await bind();
    // Without adoptFrom neither is taken: no certificate requested beside the Hetzner CCM's.
    await expect(lbs.ensure(o, s)).rejects.toThrow(/built by the Hetzner CCM/);
    expect(certsOf(o).map((c) => c.id)).toEqual([certId]);
    const adopting = { ...o, ...MIGRATING };
    expect(await lbs.ensure(adopting, s)).toEqual([{ ip: built.ipv4 }]);
    expect(mutations()).not.toContain("cert.create");
    expect(certsOf(o).map((c) => [c.id, c.labels[OWNER_TAG_CLUSTER]])).toEqual([[certId, "prod"]]);
    expect(
      w.fake.store.loadBalancers.get(built.id)?.services.map((x) => [x.protocol, x.http?.["certificates"]]),
    ).toEqual([["https", [certId]]]);
    await lbs.ensureDeleted(adopting);
    expect(w.fake.store.loadBalancers.get(built.id)).toBeUndefined();
    expect(certsOf(o)).toEqual([]);
  });
});
