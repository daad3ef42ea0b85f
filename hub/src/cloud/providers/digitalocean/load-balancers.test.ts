// The DigitalOcean provider's own behaviour beside the conformance suite: the `new` and
// `errored` states, the annotations it honours and refuses, adoption only with adoptFrom, and
// the exact requests it makes (the fake checks each against DigitalOcean's OpenAPI document).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { DigitalOceanFake } from "../../../../../sim/src/digitalocean/index.js";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import {
  CloudError,
  ImplementedElsewhereError,
  InstanceNotFoundError,
  OperationFailedError,
} from "../../errors.js";
import { isInProgress, type LoadBalancerSpec, type ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { doVendorLbSettings } from "./annotations.js";
import { type CcmService, ccmLoadBalancer, KUBE_PROXY_HEALTH_PORT } from "./do-ccm.testkit.js";
import { digitalOceanProvider } from "./index.js";
import { FAILED_SUFFIX, ownerName, ownerOfName } from "./load-balancers.js";

const REGION = "nyc3";
const VPC = "c33931f2-a26a-4e61-b85c-4e95a2ec431b";
const P = "service.beta.kubernetes.io/do-loadbalancer-";

let fake: DigitalOceanFake;
let token: { value: string };
let nodes: string[];
let seq = 0;

beforeAll(async () => {
  fake = await DigitalOceanFake.start({ spec: true });
  token = { value: fake.createAccount("acme").token };
  nodes = [0, 1].map((n) =>
    String(fake.createDroplet("acme", { name: `n-${n}`, region: REGION, vpcUuid: VPC }).id),
  );
});
afterAll(() => fake.close());
afterEach(() => {
  fake.resetFaults();
  fake.setActivation(1);
  fake.assertSpecClean();
});

async function bound() {
  return bindRecorded(
    digitalOceanProvider,
    {
      name: "acme",
      provider: "digitalocean",
      region: REGION,
      network: VPC,
      endpoint: fake.url,
      credential: token.value,
      secret: () => token.value,
      requestTimeoutMs: 2_000,
    },
    { loadBalancerPollMs: 5 },
  );
}

const target = (over: Partial<ServiceTarget> = {}): ServiceTarget => ({
  cluster: "prod",
  network: VPC,
  scope: {},
  serviceUid: `7f1c${++seq}-aa`,
  ...over,
});

async function settle<T>(f: () => Promise<T>): Promise<Exclude<T, { kind: "in-progress" }>> {
  for (let n = 0; n < 50; n++) {
    const a = await f();
    if (!isInProgress(a)) return a as Exclude<T, { kind: "in-progress" }>;
  }
  throw new Error("still in progress");
}

const lbOf = (t: ServiceTarget) =>
  fake.store.loadBalancersOf("acme").find((l) => l.name.startsWith(ownerName(t)));

describe("names", () => {
  test("the owner is read back from the name, its hash checked; a forged name is nobody's", () => {
    const t = target();
    expect(ownerOfName(ownerName(t))).toEqual({ cluster: "prod", serviceUid: t.serviceUid });
    expect(ownerOfName(ownerName(t) + FAILED_SUFFIX)).toEqual({ cluster: "prod", serviceUid: t.serviceUid });
    expect(ownerOfName(`fccm-000000000000000000000000000.prod.${t.serviceUid}`)).toBeUndefined();
    expect(ownerOfName("a0123456789abcdef")).toBeUndefined();
  });
});

describe("asynchronous states", () => {
  test("`new` is InProgress with the configured delay until the cloud says active; one create only", async () => {
    fake.setActivation(3);
    const { provider, ops } = await bound();
    const t = target();
    const answers = [];
    for (let n = 0; n < 4; n++)
      answers.push(await provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    expect(answers.slice(0, 3).every(isInProgress)).toBe(true);
    expect(answers[0]).toMatchObject({ retryAfterMs: 5 });
    expect(answers[3]).toEqual([{ ip: expect.stringMatching(/^\d+\./) }]);
    expect(ops.filter((o) => o === "loadBalancers.create")).toHaveLength(1);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("errored: OperationFailedError once, marked in the name; the next ensure (any replica) deletes it and builds anew", async () => {
    fake.failNextCreates("acme", 1);
    const t = target();
    const first = await bound();
    expect(isInProgress(await first.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)))).toBe(
      true,
    );
    await expect(
      first.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)),
    ).rejects.toBeInstanceOf(OperationFailedError);
    const failed = lbOf(t);
    expect(failed).toMatchObject({ status: "errored", name: ownerName(t) + FAILED_SUFFIX });
    const second = await bound();
    const ingress = await settle(() =>
      second.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)),
    );
    expect(ingress).toHaveLength(1);
    expect(second.ops).toEqual(expect.arrayContaining(["loadBalancers.delete", "loadBalancers.create"]));
    expect(fake.store.loadBalancers.has(failed!.id)).toBe(false);
    expect(lbOf(t)).toMatchObject({ status: "active", name: ownerName(t) });
    await second.provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("errored, where the cloud will not rename it", () => {
  test("the failed load balancer is deleted at once, the failure still reported once; the next ensure creates", async () => {
    fake.failNextCreates("acme", 1);
    const t = target();
    const { provider } = await bindRecorded(
      digitalOceanProvider,
      {
        name: "acme",
        provider: "digitalocean",
        region: REGION,
        network: VPC,
        endpoint: fake.url,
        credential: token.value,
        secret: () => token.value,
        requestTimeoutMs: 2_000,
      },
      { loadBalancerPollMs: 5 },
      {
        before: (op) => {
          if (op === "loadBalancers.update" && lbOf(t)?.status === "errored")
            throw new CloudError("DigitalOcean API PUT: HTTP 422 unprocessable_entity");
        },
      },
    );
    await provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes));
    const failed = lbOf(t);
    await expect(provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes))).rejects.toBeInstanceOf(
      OperationFailedError,
    );
    expect(fake.store.loadBalancers.has(failed!.id)).toBe(false);
    expect(await settle(() => provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)))).toHaveLength(
      1,
    );
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("annotations", () => {
  const withAnnotations = (annotations: Record<string, string>, over: Partial<LoadBalancerSpec> = {}) =>
    sampleLoadBalancerSpec(nodes, { annotations, ...over });

  test("protocol, http-ports, sticky cookies, size, keepalive, allow/deny rules and healthcheck-port become the request", async () => {
    const { provider } = await bound();
    const t = target();
    const spec = withAnnotations({
      [`${P}http-ports`]: "80",
      [`${P}sticky-sessions-type`]: "cookies",
      [`${P}sticky-sessions-cookie-name`]: "route",
      [`${P}sticky-sessions-cookie-ttl`]: "300",
      [`${P}size-unit`]: "3",
      [`${P}enable-backend-keepalive`]: "true",
      [`${P}allow-rules`]: "cidr:10.0.0.0/8,ip:192.0.2.7",
      [`${P}deny-rules`]: "ip:10.1.2.3",
      [`${P}healthcheck-port`]: "443",
      [`${P}healthcheck-protocol`]: "https",
    });
    await settle(() => provider.loadBalancers!.ensure(t, spec));
    expect(lbOf(t)).toMatchObject({
      forwarding_rules: [
        { entry_protocol: "http", entry_port: 80, target_protocol: "http", target_port: 30080 },
        { entry_protocol: "tcp", entry_port: 443, target_protocol: "tcp", target_port: 30443 },
      ],
      sticky_sessions: { type: "cookies", cookie_name: "route", cookie_ttl_seconds: 300 },
      size_unit: 3,
      enable_backend_keepalive: true,
      firewall: { allow: ["cidr:10.0.0.0/8", "ip:192.0.2.7"], deny: ["ip:10.1.2.3"] },
      health_check: { protocol: "https", port: 30443 },
      vpc_uuid: VPC,
      droplet_ids: nodes.map(Number),
    });
    // loadBalancerSourceRanges win over allow-rules, as upstream.
    await settle(() => provider.loadBalancers!.ensure(t, { ...spec, sourceRanges: ["198.51.100.0/24"] }));
    expect(lbOf(t)?.firewall.allow).toEqual(["cidr:198.51.100.0/24"]);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("keys standing for unified settings are read by lbSettings, within DigitalOcean's bounds", () => {
    expect(
      doVendorLbSettings({
        [`${P}healthcheck-protocol`]: "http",
        [`${P}healthcheck-path`]: "/healthz",
        [`${P}healthcheck-check-interval-seconds`]: "5",
        [`${P}enable-proxy-protocol`]: "true",
        [`${P}http-idle-timeout-seconds`]: "120",
        [`${P}network`]: "INTERNAL",
      }),
    ).toEqual({
      healthCheckProtocol: "HTTP",
      healthCheckPath: "/healthz",
      healthCheckIntervalSeconds: 5,
      proxyProtocol: true,
      idleTimeoutSeconds: 120,
      internal: true,
    });
    expect(() => doVendorLbSettings({ [`${P}http-idle-timeout-seconds`]: "10" })).toThrow(AnnotationError);
  });

  test("bad values (a certificate id that is not a UUID, TLS ports without a certificate) are refused before any call", async () => {
    const { provider, ops } = await bound();
    const refused: Record<string, string>[] = [
      { [`${P}certificate-id`]: "abc" },
      { [`${P}tls-ports`]: "443" },
      { [`${P}protocol`]: "https" },
      { [`${P}allow-rules`]: "10.0.0.0/8" },
      { [`${P}size-unit`]: "101" },
      { [`${P}type`]: "GLOBAL" },
      { [`${P}sticky-sessions-type`]: "cookies" },
    ];
    for (const a of refused) {
      expect(() => provider.loadBalancers!.checkAnnotations!(a)).toThrow(AnnotationError);
      await expect(provider.loadBalancers!.ensure(target(), withAnnotations(a))).rejects.toBeInstanceOf(
        AnnotationError,
      );
    }
    expect(ops).toEqual([]);
  });

  test("a custom name is warned about, not applied: the hub finds the load balancer by its own name", async () => {
    const { provider } = await bound();
    const t = target();
    const warned: string[] = [];
    const a = { [`${P}name`]: "my-lb" };
    await settle(() =>
      provider.loadBalancers!.ensure(t, withAnnotations(a), undefined, {
        annotations: a,
        ingress: [],
        warn: (reason) => warned.push(reason),
      }),
    );
    expect(warned[0]).toBe("LoadBalancerNameIgnored");
    expect(lbOf(t)?.name).toBe(ownerName(t));
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

/** externalTrafficPolicy Local with PROXY protocol, as the reconciler builds it: kube-proxy's /healthz on healthCheckNodePort. */
const HC_NODE_PORT = 31999;
const proxiedLocal = (annotations?: Record<string, string>): LoadBalancerSpec =>
  sampleLoadBalancerSpec(nodes, {
    listeners: sampleLoadBalancerSpec(nodes).listeners.map((l) => ({ ...l, proxyProtocol: true })),
    healthCheck: {
      ...sampleLoadBalancerSpec(nodes).healthCheck,
      protocol: "HTTP",
      port: HC_NODE_PORT,
      path: "/healthz",
    },
    ...(annotations !== undefined && { annotations }),
  });

async function vendorBuilt(
  t: ServiceTarget,
  vpcUuid = VPC,
  over: { healthCheckNodePort?: number; proxyProtocol?: boolean } = {},
) {
  const made = await ccmLoadBalancer(
    { url: fake.url, token: token.value },
    {
      serviceUid: t.serviceUid,
      region: REGION,
      vpcUuid,
      ports: [{ port: 80, nodePort: 30080 }],
      dropletIds: [],
      ...over,
    },
  );
  return { made, annotations: { "kubernetes.digitalocean.com/load-balancer-id": made.id } };
}

describe("PROXY protocol and the health check (upstream's buildHealthCheck)", () => {
  test("a check on kube-proxy's healthCheckNodePort is sent with proxy_protocol false; one on the app's node port follows the load balancer", async () => {
    const { provider } = await bound();
    const local = target();
    await settle(() => provider.loadBalancers!.ensure(local, proxiedLocal()));
    expect(lbOf(local)).toMatchObject({
      enable_proxy_protocol: true,
      health_check: { protocol: "http", port: HC_NODE_PORT, path: "/healthz", proxy_protocol: false },
    });
    const app = target();
    const onApp = { ...proxiedLocal(), healthCheck: sampleLoadBalancerSpec(nodes).healthCheck };
    await settle(() => provider.loadBalancers!.ensure(app, onApp));
    expect(lbOf(app)?.enable_proxy_protocol).toBe(true);
    expect(lbOf(app)?.health_check).not.toHaveProperty("proxy_protocol");
    for (const t of [local, app]) await provider.loadBalancers!.ensureDeleted(t);
  });

  test("a load balancer whose kube-proxy check lost proxy_protocol false is PUT back; one that has it is left alone", async () => {
    const { provider, ops } = await bound();
    const t = target();
    await settle(() => provider.loadBalancers!.ensure(t, proxiedLocal()));
    const before = ops.length;
    await settle(() => provider.loadBalancers!.ensure(t, proxiedLocal()));
    expect(ops.slice(before)).not.toContain("loadBalancers.update");
    delete lbOf(t)!.health_check["proxy_protocol"];
    await settle(() => provider.loadBalancers!.ensure(t, proxiedLocal()));
    expect(ops.slice(before)).toContain("loadBalancers.update");
    expect(lbOf(t)?.health_check["proxy_protocol"]).toBe(false);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("adopted: the DigitalOcean CCM's load balancer with PROXY protocol keeps its check's proxy_protocol false", async () => {
    const t = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    const { made, annotations } = await vendorBuilt(t, VPC, {
      healthCheckNodePort: HC_NODE_PORT,
      proxyProtocol: true,
    });
    expect(fake.store.loadBalancers.get(made.id)?.health_check).toMatchObject({
      protocol: "http",
      port: HC_NODE_PORT,
      path: "/healthz",
      proxy_protocol: false,
    });
    const { provider } = await bound();
    const a = { ...annotations, [`${P}enable-proxy-protocol`]: "true" };
    await settle(() =>
      provider.loadBalancers!.ensure(t, proxiedLocal(a), undefined, { annotations: a, ingress: [] }),
    );
    const adopted = fake.store.loadBalancers.get(made.id);
    expect(adopted?.name).toBe(ownerName(t));
    expect(adopted).toMatchObject({
      enable_proxy_protocol: true,
      health_check: { protocol: "http", port: HC_NODE_PORT, path: "/healthz", proxy_protocol: false },
    });
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("the DigitalOcean CCM's kube-proxy check without PROXY protocol is upstream's default: 10256, /healthz, 3/5/3/5, proxy_protocol false", async () => {
    const t = target();
    const { made } = await vendorBuilt(t);
    expect(fake.store.loadBalancers.get(made.id)).toMatchObject({
      enable_proxy_protocol: false,
      type: "REGIONAL",
      network_stack: "IPV4",
      health_check: {
        protocol: "http",
        port: KUBE_PROXY_HEALTH_PORT,
        path: "/healthz",
        check_interval_seconds: 3,
        response_timeout_seconds: 5,
        unhealthy_threshold: 3,
        healthy_threshold: 5,
        proxy_protocol: false,
      },
    });
    fake.store.loadBalancers.delete(made.id);
  });
});

describe("adoption", () => {
  test("without adoptFrom the DigitalOcean CCM's load balancer is refused, by its id or its name, and nothing changes", async () => {
    const t = target();
    const { made, annotations } = await vendorBuilt(t);
    const { provider, ops } = await bound();
    for (const a of [annotations, {}]) {
      const err = await provider
        .loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations: a }), undefined, {
          annotations: a,
          ingress: [],
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CloudError);
      expect(String(err)).toMatch(/no adoptFrom/);
    }
    expect(ops.filter((o) => !o.endsWith(".list") && !o.endsWith(".get"))).toEqual([]);
    expect(fake.store.loadBalancers.get(made.id)?.name).toBe(`a${t.serviceUid.replace(/-/g, "")}`);
    await provider.loadBalancers!.ensureDeleted(t);
    expect(fake.store.loadBalancers.has(made.id)).toBe(true);
    fake.store.loadBalancers.delete(made.id);
  });

  test("with adoptFrom: adopted in place (renamed to the owner's name); outside the cluster's VPC it is refused", async () => {
    const t = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    const { made, annotations } = await vendorBuilt(t);
    const { provider } = await bound();
    const ingress = await settle(() =>
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations }), undefined, {
        annotations,
        ingress: [],
      }),
    );
    expect(ingress).toEqual([{ ip: fake.store.loadBalancers.get(made.id)?.ip }]);
    expect(fake.store.loadBalancers.get(made.id)?.name).toBe(ownerName(t));
    await provider.loadBalancers!.ensureDeleted(t);
    expect(fake.store.loadBalancers.has(made.id)).toBe(false);

    const elsewhere = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    const other = await vendorBuilt(elsewhere, "5a4981aa-9653-4bd1-bef5-d6bff52042e4");
    await expect(
      provider.loadBalancers!.ensure(
        elsewhere,
        sampleLoadBalancerSpec(nodes, { annotations: other.annotations }),
      ),
    ).rejects.toThrow(/not the cluster's/);
    fake.store.loadBalancers.delete(other.made.id);
  });

  test("an id naming another Service's load balancer of this hub is refused", async () => {
    const { provider } = await bound();
    const a = target();
    await settle(() => provider.loadBalancers!.ensure(a, sampleLoadBalancerSpec(nodes)));
    const annotations = { "kubernetes.digitalocean.com/load-balancer-id": lbOf(a)!.id };
    const b = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    await expect(
      provider.loadBalancers!.ensure(b, sampleLoadBalancerSpec(nodes, { annotations })),
    ).rejects.toThrow(/belongs to another Service/);
    await provider.loadBalancers!.ensureDeleted(a);
  });
});

describe("instances", () => {
  test("upstream's addresses, off as stopped, the VPC as network; the token is read per request", async () => {
    const d = fake.createDroplet("acme", {
      name: "web",
      region: REGION,
      vpcUuid: VPC,
      status: "off",
      sizeSlug: "s-4vcpu-8gb",
    });
    const { provider } = await bound();
    const meta = await provider.instances.getByProviderID(`digitalocean://${d.id}`);
    expect(meta).toMatchObject({
      instanceType: "s-4vcpu-8gb",
      region: REGION,
      zone: "",
      state: "stopped",
      network: VPC,
      addresses: [
        { type: "Hostname", address: "web" },
        { type: "InternalIP", address: d.privateIPv4 },
        { type: "ExternalIP", address: d.publicIPv4 },
        { type: "ExternalIP", address: d.ipv6 },
      ],
    });
    fake.rotateToken("acme", "dop_v1_rotated");
    token.value = "dop_v1_rotated";
    expect((await provider.instances.getByProviderID(`digitalocean://${d.id}`)).instanceID).toBe(
      String(d.id),
    );
    fake.deleteDroplet(d.id);
    await expect(provider.instances.getByProviderID(`digitalocean://${d.id}`)).rejects.toBeInstanceOf(
      InstanceNotFoundError,
    );
    // A Droplet in another region is outside the account: refused, never "not found".
    const far = fake.createDroplet("acme", { name: "far", region: "sfo3" });
    await expect(provider.instances.getByProviderID(`digitalocean://${far.id}`)).rejects.toThrow(
      /outside account/,
    );
    expect(provider.instances.parseProviderID("linode://1")).toBeUndefined();
  });

  test("listPage filters by the dropletTag option (tag_name)", async () => {
    fake.createDroplet("acme", { name: "tagged", region: REGION, tags: ["k8s:abc"] });
    const { provider } = await bindRecorded(
      digitalOceanProvider,
      {
        name: "acme",
        provider: "digitalocean",
        region: REGION,
        endpoint: fake.url,
        credential: token.value,
        requestTimeoutMs: 2_000,
      },
      { dropletTag: "k8s:abc" },
    );
    const page = await provider.instances.listPage(undefined);
    expect(page.instances.map((i) => i.name)).toEqual(["tagged"]);
    expect(page.instances[0]?.tags).toEqual({ k8s: "abc" });
  });
});

describe("after a restart", () => {
  const ID = "kubernetes.digitalocean.com/load-balancer-id";

  test("a Service's load-balancer-id annotation finds its load balancer by id: no listing of them all", async () => {
    const t = target();
    const first = await bound();
    await settle(() => first.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    const id = lbOf(t)?.id ?? "";
    const restarted = await bound();
    const spec = { ...sampleLoadBalancerSpec(nodes), annotations: { [ID]: id } };
    await restarted.provider.loadBalancers!.ensure(t, spec);
    expect(restarted.ops).not.toContain("loadBalancers.list");
    expect(restarted.ops[0]).toBe("loadBalancers.get");
    await restarted.provider.loadBalancers!.ensureDeleted(t);
  });

  test("an id naming another owner's load balancer is not taken: found by name as before", async () => {
    const mine = target();
    const other = target({ cluster: "staging" });
    const first = await bound();
    await settle(() => first.provider.loadBalancers!.ensure(mine, sampleLoadBalancerSpec(nodes)));
    await settle(() => first.provider.loadBalancers!.ensure(other, sampleLoadBalancerSpec(nodes)));
    const restarted = await bound();
    const spec = { ...sampleLoadBalancerSpec(nodes), annotations: { [ID]: lbOf(other)?.id ?? "" } };
    await settle(() => restarted.provider.loadBalancers!.ensure(mine, spec));
    expect(restarted.ops).toContain("loadBalancers.list");
    expect(fake.store.loadBalancersOf("acme").filter((l) => l.name.startsWith(ownerName(mine)))).toHaveLength(
      1,
    );
    for (const t of [mine, other]) await restarted.provider.loadBalancers!.ensureDeleted(t);
  });

  test("the account listing a restarted hub makes first lets each Service read its own by id", async () => {
    const t = target();
    const first = await bound();
    await settle(() => first.provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    const restarted = await bound();
    await restarted.provider.loadBalancers!.listOwned!(undefined);
    const before = restarted.ops.length;
    await restarted.provider.loadBalancers!.updateBackends(t, nodes);
    expect(restarted.ops.slice(before)).not.toContain("loadBalancers.list");
    await restarted.provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("deletion", () => {
  const adopting = () => target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });

  test("with adoptFrom, the DigitalOcean CCM's load balancer of a Service never adopted goes with it (by its id, or its name), as upstream deletes it", async () => {
    const { provider } = await bound();
    const byId = adopting();
    const one = await vendorBuilt(byId);
    await provider.loadBalancers!.ensureDeleted(byId, undefined, {
      annotations: one.annotations,
      ingress: [],
    });
    expect(fake.store.loadBalancers.has(one.made.id)).toBe(false);
    const byName = adopting();
    const two = await vendorBuilt(byName);
    await provider.loadBalancers!.ensureDeleted(byName, undefined, { annotations: {}, ingress: [] });
    expect(fake.store.loadBalancers.has(two.made.id)).toBe(false);
  });

  test("it stays where adoption would refuse it: no adoptFrom, another VPC, another Service's of this hub", async () => {
    const { provider, ops } = await bound();
    const plain = target();
    const kept = [await vendorBuilt(plain)];
    await provider.loadBalancers!.ensureDeleted(plain, undefined, {
      annotations: kept[0]!.annotations,
      ingress: [],
    });
    const elsewhere = adopting();
    kept.push(await vendorBuilt(elsewhere, "5a4981aa-9653-4bd1-bef5-d6bff52042e4"));
    await provider.loadBalancers!.ensureDeleted(elsewhere, undefined, {
      annotations: kept[1]!.annotations,
      ingress: [],
    });
    const other = target();
    await settle(() => provider.loadBalancers!.ensure(other, sampleLoadBalancerSpec(nodes)));
    const othersId = { "kubernetes.digitalocean.com/load-balancer-id": lbOf(other)!.id };
    await provider.loadBalancers!.ensureDeleted(adopting(), undefined, {
      annotations: othersId,
      ingress: [],
    });
    expect(ops).not.toContain("loadBalancers.delete");
    for (const { made } of kept) expect(fake.store.loadBalancers.has(made.id)).toBe(true);
    expect(lbOf(other)).toBeDefined();
    for (const { made } of kept) fake.store.loadBalancers.delete(made.id);
    await provider.loadBalancers!.ensureDeleted(other);
  });
});

describe("service.kubernetes.io/do-loadbalancer-disown (upstream's annDODisownLB)", () => {
  const DISOWN = "service.kubernetes.io/do-loadbalancer-disown";

  test("forwarded to the hub, and a value strconv.ParseBool refuses is an AnnotationError, on delete too", async () => {
    expect(digitalOceanProvider.annotationPrefixes.some((p) => DISOWN.startsWith(p))).toBe(true);
    const { provider, ops } = await bound();
    const bad = { [DISOWN]: "yes" };
    expect(() => provider.loadBalancers!.checkAnnotations!(bad)).toThrow(AnnotationError);
    await expect(
      provider.loadBalancers!.ensureDeleted(target(), undefined, { annotations: bad, ingress: [] }),
    ).rejects.toBeInstanceOf(AnnotationError);
    expect(ops).toEqual([]);
  });

  test("a disowned load balancer is left as it is: ensure answers ImplementedElsewhere with no call, backends and delete change nothing", async () => {
    const { provider, ops } = await bound();
    const t = target();
    await settle(() => provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    const lb = lbOf(t)!;
    const disowned = { [DISOWN]: "true" };
    const hints = { annotations: disowned, ingress: [{ ip: lb.ip }] };
    const before = ops.length;
    const changed = sampleLoadBalancerSpec([nodes[0]!], { annotations: disowned, idleTimeoutSeconds: 120 });
    await expect(provider.loadBalancers!.ensure(t, changed, undefined, hints)).rejects.toBeInstanceOf(
      ImplementedElsewhereError,
    );
    expect(ops.slice(before)).toEqual([]);
    expect(await provider.loadBalancers!.updateBackends(t, [nodes[0]!])).toBeUndefined();
    await provider.loadBalancers!.ensureDeleted(t, undefined, hints);
    expect(ops.slice(before)).toEqual([]);
    expect(fake.store.loadBalancers.get(lb.id)).toMatchObject({
      name: ownerName(t),
      http_idle_timeout_seconds: 60,
      droplet_ids: nodes.map(Number),
    });
    // Owned again ("false"): ensure applies the Service, delete deletes.
    const owned = { [DISOWN]: "false" };
    await settle(() =>
      provider.loadBalancers!.ensure(t, { ...changed, annotations: owned }, undefined, {
        ...hints,
        annotations: owned,
      }),
    );
    expect(fake.store.loadBalancers.get(lb.id)?.http_idle_timeout_seconds).toBe(120);
    await provider.loadBalancers!.ensureDeleted(t, undefined, { ...hints, annotations: owned });
    expect(fake.store.loadBalancers.has(lb.id)).toBe(false);
  });
});

/** Hints recording what ensure warns about and writes back onto the Service. */
function recordingHints(annotations: Record<string, string>) {
  const warned: string[] = [];
  const annotated: Record<string, string> = {};
  return {
    warned,
    annotated,
    hints: {
      annotations,
      ingress: [],
      warn: (reason: string, message: string) => warned.push(`${reason}: ${message}`),
      annotate: (k: string, v: string) => {
        annotated[k] = v;
      },
    },
  };
}

const TYPE = `${P}type`;
const STACK = `${P}network-stack`;
const ID = "kubernetes.digitalocean.com/load-balancer-id";
const adopting = () => target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });

/** A Service with a TCP port 80 and a UDP port 53, as the reconciler hands it over. */
const tcpAndUdp = (annotations: Record<string, string>, over: Partial<LoadBalancerSpec> = {}) =>
  sampleLoadBalancerSpec(nodes, {
    listeners: [
      { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false },
      { protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false },
    ],
    annotations,
    ...over,
  });
const TCP_AND_UDP: CcmService["ports"] = [
  { port: 80, nodePort: 30080 },
  { port: 53, nodePort: 30053, protocol: "UDP" },
];

/** What of a load balancer decides who reaches what: its rules, type, stack, network and firewall. */
const exposure = (id: string) => {
  const lb = fake.store.loadBalancers.get(id)!;
  return {
    forwarding_rules: [...lb.forwarding_rules]
      .map((r) => ({ ...r }))
      .sort((a, b) => a.entry_port - b.entry_port),
    type: lb.type,
    network: lb.network,
    network_stack: lb.network_stack,
    firewall: { allow: [...lb.firewall.allow].sort(), deny: [...lb.firewall.deny].sort() },
    redirect_http_to_https: lb.redirect_http_to_https,
  };
};

describe("REGIONAL_NETWORK (upstream's buildRegionalNetworkForwardingRule)", () => {
  test("each Service port is forwarded tcp or udp to the same port, not the node port; protocol and TLS annotations are warned about, never made http rules", async () => {
    const { provider } = await bound();
    const t = target();
    const a = {
      [TYPE]: "REGIONAL_NETWORK",
      [`${P}protocol`]: "http",
      [`${P}http-ports`]: "80",
      // Upstream reads none of these for a network load balancer, values included: no refusal.
      [`${P}tls-ports`]: "443",
      [`${P}http3-port`]: "not-a-port",
    };
    expect(() => provider.loadBalancers!.checkAnnotations!(a)).not.toThrow();
    const rec = recordingHints(a);
    await settle(() => provider.loadBalancers!.ensure(t, tcpAndUdp(a), undefined, rec.hints));
    expect(lbOf(t)).toMatchObject({ type: "REGIONAL_NETWORK", network_stack: "IPV4" });
    expect(lbOf(t)?.forwarding_rules).toEqual([
      { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 80 },
      { entry_protocol: "udp", entry_port: 53, target_protocol: "udp", target_port: 53 },
    ]);
    expect(
      rec.warned.some((w) => w.startsWith("LoadBalancerAnnotationIgnored:") && w.includes("http-ports")),
    ).toBe(true);
    expect(rec.annotated).toMatchObject({ [TYPE]: "REGIONAL_NETWORK", [ID]: lbOf(t)!.id });
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("an SCTP port is refused before any call, as upstream's 'only TCP or UDP protocol is supported'", async () => {
    const { provider, ops } = await bound();
    const a = { [TYPE]: "REGIONAL_NETWORK" };
    const spec = sampleLoadBalancerSpec(nodes, {
      listeners: [{ protocol: "SCTP", port: 9, nodePort: 30009, proxyProtocol: false }],
      annotations: a,
    });
    await expect(provider.loadBalancers!.ensure(target(), spec)).rejects.toThrow(/TCP or UDP only/);
    expect(ops).toEqual([]);
  });

  test("adopted: the DigitalOcean CCM's network load balancer keeps its rules port to port, its type and stack, and is no more open", async () => {
    const t = adopting();
    const made = await ccmLoadBalancer(
      { url: fake.url, token: token.value },
      {
        mode: "REGIONAL_NETWORK",
        serviceUid: t.serviceUid,
        region: REGION,
        vpcUuid: VPC,
        ports: TCP_AND_UDP,
        dropletIds: nodes.map(Number),
        sourceRanges: ["198.51.100.0/24"],
      },
    );
    const before = exposure(made.id);
    expect(before).toMatchObject({
      type: "REGIONAL_NETWORK",
      network_stack: "IPV4",
      forwarding_rules: [
        { entry_protocol: "udp", entry_port: 53, target_protocol: "udp", target_port: 53 },
        { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 80 },
      ],
    });
    expect(made.annotations).toEqual({ [ID]: made.id, [TYPE]: "REGIONAL_NETWORK" });
    const { provider } = await bound();
    // A leftover http protocol annotation, which upstream ignores for this type.
    const a = { ...made.annotations, [`${P}protocol`]: "http" };
    const rec = recordingHints(a);
    const ingress = await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        tcpAndUdp(a, { sourceRanges: ["198.51.100.0/24"] }),
        undefined,
        rec.hints,
      ),
    );
    expect(ingress).toEqual([{ ip: made.ip }]);
    expect(fake.store.loadBalancers.get(made.id)?.name).toBe(ownerName(t));
    expect(exposure(made.id)).toEqual(before);
    expect(rec.annotated).toEqual({ [ID]: made.id, [TYPE]: "REGIONAL_NETWORK" });
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("adopted without the type annotation (its Service lost it): the load balancer's own type is kept, and written back", async () => {
    const t = adopting();
    const made = await ccmLoadBalancer(
      { url: fake.url, token: token.value },
      {
        mode: "REGIONAL_NETWORK",
        serviceUid: t.serviceUid,
        region: REGION,
        vpcUuid: VPC,
        ports: TCP_AND_UDP,
        dropletIds: nodes.map(Number),
      },
    );
    const before = exposure(made.id);
    const { provider } = await bound();
    const a = { [ID]: made.id };
    const rec = recordingHints(a);
    await settle(() => provider.loadBalancers!.ensure(t, tcpAndUdp(a), undefined, rec.hints));
    expect(exposure(made.id)).toEqual(before);
    expect(rec.annotated[TYPE]).toBe("REGIONAL_NETWORK");
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("type and network stack of an existing load balancer (upstream's getType and getNetworkStack defaults)", () => {
  test("adopted: the DigitalOcean CCM's DUALSTACK REGIONAL load balancer, its Service without a network-stack annotation, stays DUALSTACK with its IPv6 in the ingress", async () => {
    const t = adopting();
    const made = await ccmLoadBalancer(
      { url: fake.url, token: token.value },
      {
        mode: "REGIONAL_DUALSTACK",
        serviceUid: t.serviceUid,
        region: REGION,
        vpcUuid: VPC,
        ports: [
          { port: 80, nodePort: 30080 },
          { port: 443, nodePort: 30443 },
        ],
        dropletIds: nodes.map(Number),
      },
    );
    expect(made.ipv6).toBeDefined();
    const before = exposure(made.id);
    expect(before).toMatchObject({ type: "REGIONAL", network_stack: "DUALSTACK" });
    const { provider, ops } = await bound();
    for (const a of [made.annotations, { [ID]: made.id }]) {
      const rec = recordingHints(a);
      const ingress = await settle(() =>
        provider.loadBalancers!.ensure(
          t,
          sampleLoadBalancerSpec(nodes, { annotations: a }),
          undefined,
          rec.hints,
        ),
      );
      expect(ingress).toEqual([{ ip: made.ip }, { ip: made.ipv6 }]);
      expect(exposure(made.id)).toEqual(before);
      expect(rec.annotated[TYPE]).toBe("REGIONAL");
    }
    // Asking for another stack is still refused: DigitalOcean cannot change it.
    const ipv4 = { ...made.annotations, [STACK]: "IPV4" };
    const before2 = ops.length;
    await expect(
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations: ipv4 }), undefined, {
        annotations: ipv4,
        ingress: [],
      }),
    ).rejects.toThrow(/cannot change after creation/);
    expect(ops.slice(before2)).not.toContain("loadBalancers.update");
    expect(exposure(made.id)).toEqual(before);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("a new Service without annotations is still built REGIONAL/IPV4 and its type written back; the account's defaultLoadBalancerType makes it REGIONAL_NETWORK", async () => {
    const { provider } = await bound();
    const t = target();
    const rec = recordingHints({});
    await settle(() =>
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes), undefined, rec.hints),
    );
    expect(lbOf(t)).toMatchObject({ type: "REGIONAL", network_stack: "IPV4" });
    expect(lbOf(t)?.forwarding_rules[0]).toMatchObject({ target_port: 30080 });
    expect(rec.annotated[TYPE]).toBe("REGIONAL");
    await provider.loadBalancers!.ensureDeleted(t);

    const nlb = await bindRecorded(
      digitalOceanProvider,
      {
        name: "acme",
        provider: "digitalocean",
        region: REGION,
        network: VPC,
        endpoint: fake.url,
        credential: token.value,
        secret: () => token.value,
        requestTimeoutMs: 2_000,
      },
      { loadBalancerPollMs: 5, defaultLoadBalancerType: "REGIONAL_NETWORK" },
    );
    const n = target();
    const nrec = recordingHints({});
    await settle(() => nlb.provider.loadBalancers!.ensure(n, tcpAndUdp({}), undefined, nrec.hints));
    expect(lbOf(n)).toMatchObject({ type: "REGIONAL_NETWORK", network_stack: "IPV4" });
    expect(exposure(lbOf(n)!.id).forwarding_rules).toEqual([
      { entry_protocol: "udp", entry_port: 53, target_protocol: "udp", target_port: 53 },
      { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 80 },
    ]);
    expect(nrec.annotated[TYPE]).toBe("REGIONAL_NETWORK");
    // The same load balancer under an account defaulting to REGIONAL keeps its type.
    const before = exposure(lbOf(n)!.id);
    await settle(() => provider.loadBalancers!.ensure(n, tcpAndUdp({}), undefined, nrec.hints));
    expect(exposure(lbOf(n)!.id)).toEqual(before);
    await nlb.provider.loadBalancers!.ensureDeleted(n);
  });

  test("the hub's own DUALSTACK load balancer keeps its stack when the Service drops the annotation", async () => {
    const { provider, ops } = await bound();
    const t = target();
    const dual = { [STACK]: "DUALSTACK" };
    await settle(() =>
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations: dual })),
    );
    expect(lbOf(t)?.network_stack).toBe("DUALSTACK");
    const before = ops.length;
    await settle(() => provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    expect(ops.slice(before)).not.toContain("loadBalancers.update");
    expect(lbOf(t)?.network_stack).toBe("DUALSTACK");
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("ip and subnet-uuid (upstream's annDOLoadBalancerIP and annDOSubnetUUID)", () => {
  const IP = `${P}ip`;
  const SUBNET = `${P}subnet-uuid`;

  test("subnet-uuid is refused before any call, naming the key (DigitalOcean's API document has no subnet field); empty is none, as upstream", async () => {
    const { provider, ops } = await bound();
    const a = { [SUBNET]: "0c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f" };
    expect(() => provider.loadBalancers!.checkAnnotations!(a)).toThrow(AnnotationError);
    const err = await provider
      .loadBalancers!.ensure(target(), sampleLoadBalancerSpec(nodes, { annotations: a }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnnotationError);
    expect((err as AnnotationError).annotation).toBe(SUBNET);
    expect(ops).toEqual([]);
    expect(() => provider.loadBalancers!.checkAnnotations!({ [SUBNET]: " " })).not.toThrow();
  });

  test("a new load balancer on an ip is refused, naming the key, with nothing created", async () => {
    const { provider, ops } = await bound();
    const t = target();
    const a = { [IP]: "203.0.113.7" };
    const err = await provider
      .loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations: a }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnnotationError);
    expect((err as AnnotationError).annotation).toBe(IP);
    expect(ops).not.toContain("loadBalancers.create");
    expect(lbOf(t)).toBeUndefined();
  });

  test("an existing load balancer keeps its address, as upstream (create-only): the same ip is quiet, another is warned about", async () => {
    const t = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    const { made, annotations } = await vendorBuilt(t);
    const { provider } = await bound();
    const same = recordingHints({ ...annotations, [IP]: made.ip });
    await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        sampleLoadBalancerSpec(nodes, { annotations: same.hints.annotations }),
        undefined,
        same.hints,
      ),
    );
    expect(same.warned).toEqual([]);
    const other = recordingHints({ ...annotations, [IP]: "203.0.113.7" });
    const ingress = await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        sampleLoadBalancerSpec(nodes, { annotations: other.hints.annotations }),
        undefined,
        other.hints,
      ),
    );
    expect(ingress).toEqual([{ ip: made.ip }]);
    expect(other.warned).toEqual([
      expect.stringMatching(/^LoadBalancerAnnotationIgnored: .*ip 203\.0\.113\.7/),
    ]);
    await provider.loadBalancers!.ensureDeleted(t);
  });
});

describe("size (upstream sends none without size-unit or size-slug)", () => {
  test("the hub's load balancer scaled in the console keeps its size_unit: no PUT, and a PUT for another change sends it back", async () => {
    const { provider, ops } = await bound();
    const t = target();
    await settle(() => provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    expect(lbOf(t)?.size_unit).toBe(1);
    lbOf(t)!.size_unit = 3;
    const before = ops.length;
    await settle(() => provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes)));
    expect(ops.slice(before)).not.toContain("loadBalancers.update");
    const keepalive = { [`${P}enable-backend-keepalive`]: "true" };
    await settle(() =>
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations: keepalive })),
    );
    expect(lbOf(t)).toMatchObject({ size_unit: 3, enable_backend_keepalive: true });
    // The annotation still sizes it.
    await settle(() =>
      provider.loadBalancers!.ensure(
        t,
        sampleLoadBalancerSpec(nodes, { annotations: { [`${P}size-unit`]: "2" } }),
      ),
    );
    expect(lbOf(t)?.size_unit).toBe(2);
    await provider.loadBalancers!.ensureDeleted(t);
  });

  test("adopted: the DigitalOcean CCM's load balancer, scaled to 3 nodes, keeps them", async () => {
    const t = target({ scope: { adoptFrom: { vendorCcmClusterName: "old" } } });
    const { made, annotations } = await vendorBuilt(t);
    fake.store.loadBalancers.get(made.id)!.size_unit = 3;
    const { provider } = await bound();
    await settle(() =>
      provider.loadBalancers!.ensure(t, sampleLoadBalancerSpec(nodes, { annotations }), undefined, {
        annotations,
        ingress: [],
      }),
    );
    expect(fake.store.loadBalancers.get(made.id)).toMatchObject({ name: ownerName(t), size_unit: 3 });
    await provider.loadBalancers!.ensureDeleted(t);
  });
});
