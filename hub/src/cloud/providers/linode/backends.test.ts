// NodeBalancer backends and what a NodeBalancer records, against the fake Linode API: the
// Linode CCM's node annotations (private-ip, public-ipv6), the digest tags listOwned returns,
// the account's nodeBalancerTags, a changed reserved-ipv4, and IPv6 routes refused.

import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { type FakeLinode, type FakeNodeBalancer, LinodeFake } from "../../../../../sim/src/linode/index.js";
import { parseOptions } from "../../bind-provider.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import { NeedsEnsureError } from "../../errors.js";
import { backendsDigest, loadBalancerSpecDigest } from "../../naming.js";
import {
  AccountConfigError,
  type BackendAnnotations,
  type ClusterTarget,
  type LbOwner,
  type LoadBalancerSpec,
  type LoadBalancers,
  type OwnedLoadBalancer,
  type ServiceTarget,
} from "../../provider.js";
import { NODE_PRIVATE_IP, NODE_PUBLIC_IPV6 } from "./annotations.js";
import { linodeProvider } from "./index.js";
import { ACCOUNT, type LinodeHarness, linodeHarness, REGION, VPC } from "./linode.testkit.js";
import {
  BACKENDS_DIGEST_TAG,
  IP_CHANGE_IGNORED,
  nodeBalancerTags,
  SPEC_DIGEST_TAG,
} from "./load-balancers.js";

const P = "service.beta.kubernetes.io/linode-loadbalancer-";

let h: LinodeHarness<LinodeFake>;
let nodes: FakeLinode[];
let seq = 0;

/** A Service of cluster prod; `at`: its cluster's network or scope. */
const owner = (at: Partial<ClusterTarget> = {}): ServiceTarget => ({
  cluster: "prod",
  scope: {},
  ...at,
  serviceUid: `uid-b${++seq}`,
});
const lbsOf = (p: { provider: { loadBalancers?: LoadBalancers } }): LoadBalancers => {
  const l = p.provider.loadBalancers;
  if (l === undefined) throw new Error("no load balancers");
  return l;
};
const lbs = async () => lbsOf(await h.provider());
const ids = (ls: readonly FakeLinode[]) => ls.map((l) => String(l.id)).sort();
const spec = (
  backends: readonly FakeLinode[],
  annotations: Record<string, string> = {},
  overrides: Partial<LoadBalancerSpec> = {},
): LoadBalancerSpec =>
  sampleLoadBalancerSpec(ids(backends), {
    ...(Object.keys(annotations).length > 0 && { annotations }),
    ...overrides,
  });

function nbOf(o: LbOwner): FakeNodeBalancer {
  const nb = h.fake.store.nodeBalancersOf(ACCOUNT).find((n) => n.tags.includes(`fccm:u=${o.serviceUid}`));
  if (nb === undefined) throw new Error(`no NodeBalancer of ${o.serviceUid}`);
  return nb;
}
const addresses = (o: LbOwner, port = 80) =>
  (nbOf(o).configs.find((c) => c.port === port)?.nodes ?? []).map((n) => n.address).sort();

async function listed(o: LbOwner): Promise<OwnedLoadBalancer | undefined> {
  let token: string | undefined;
  do {
    const page = await (await lbs()).listOwned?.(token);
    const item = page?.items.find((i) => i.owner.serviceUid === o.serviceUid);
    if (item !== undefined) return item;
    token = page?.nextPageToken;
  } while (token !== undefined);
  return undefined;
}

beforeAll(async () => {
  h = linodeHarness(await LinodeFake.start({ spec: true, seed: 11 }));
  nodes = [0, 1, 2].map((i) => h.fake.createLinode(ACCOUNT, { label: `bnode-${i}`, region: REGION }));
});

afterEach(() => {
  h.fake.resetFaults();
  expect(h.fake.specProblems()).toEqual([]);
});

afterAll(async () => {
  await h?.close();
});

describe("node annotations (as the Linode CCM reads them for backends)", () => {
  test("private-ip replaces the Linode's private IPv4; a changed value rebuilds; removing it restores the Linode's", async () => {
    const o = owner();
    const [a, b] = [nodes[0]!, nodes[1]!];
    const override: BackendAnnotations = { [String(a.id)]: { [NODE_PRIVATE_IP]: "192.168.250.7" } };
    await (await lbs()).ensure(o, spec([a, b], {}, { backendAnnotations: override }));
    expect(addresses(o)).toEqual([`${b.privateIPv4}:30080`, "192.168.250.7:30080"].sort());

    const moved: BackendAnnotations = { [String(a.id)]: { [NODE_PRIVATE_IP]: "192.168.250.8" } };
    await (await lbs()).updateBackends(o, ids([a, b]), undefined, moved);
    expect(addresses(o)).toEqual([`${b.privateIPv4}:30080`, "192.168.250.8:30080"].sort());
    expect((await listed(o))?.backendsDigest).toBe(backendsDigest(ids([a, b]), moved));

    await (await lbs()).updateBackends(o, ids([a, b]));
    expect(addresses(o)).toEqual([`${a.privateIPv4}:30080`, `${b.privateIPv4}:30080`].sort());
    expect((await listed(o))?.backendsDigest).toBe(backendsDigest(ids([a, b])));
  });

  test("private-ip puts a Linode without a private IPv4 behind the NodeBalancer; a public or malformed value is ignored", async () => {
    const bare = h.fake.createLinode(ACCOUNT, { label: "no-private", region: REGION, noPrivateIP: true });
    const o = owner();
    const a = nodes[0]!;
    await (await lbs()).ensure(
      o,
      spec(
        [a, bare],
        {},
        {
          backendAnnotations: {
            [String(bare.id)]: { [NODE_PRIVATE_IP]: "192.168.251.1" },
            [String(a.id)]: { [NODE_PRIVATE_IP]: "203.0.113.9" },
          },
        },
      ),
    );
    expect(addresses(o)).toEqual([`${a.privateIPv4}:30080`, "192.168.251.1:30080"].sort());
    await (await lbs()).updateBackends(o, ids([a]), undefined, {
      [String(a.id)]: { [NODE_PRIVATE_IP]: "not-an-ip" },
    });
    expect(addresses(o)).toEqual([`${a.privateIPv4}:30080`]);
  });

  test("VPC backends take the VPC address: private-ip does not apply (as the Linode CCM with a backend subnet)", async () => {
    const inVpc = [0, 1].map((i) =>
      h.fake.createLinode(ACCOUNT, { label: `vnode-${i}`, region: REGION, vpcSubnetId: h.subnetId }),
    );
    const o = owner({ network: VPC });
    const vpcLbs = lbsOf(await h.provider({ network: VPC }));
    await vpcLbs.ensure(
      o,
      spec(
        inVpc,
        {},
        { backendAnnotations: { [String(inVpc[0]!.id)]: { [NODE_PRIVATE_IP]: "192.168.252.1" } } },
      ),
    );
    const vpcIPs = inVpc.map((l) => l.interfaces.find((i) => i.purpose === "vpc")?.vpcIPv4);
    expect(addresses(o)).toEqual(vpcIPs.map((ip) => `${ip}:30080`).sort());
  });

  test("public-ipv6 (prefix form, as the Linode CCM writes it, or a bare address) replaces the SLAAC address of IPv6 backends", async () => {
    const o = owner();
    const [a, b] = [nodes[0]!, nodes[1]!];
    const six = { [`${P}enable-ipv6-backends`]: "true" };
    await (await lbs()).ensure(
      o,
      spec([a, b], six, {
        backendAnnotations: {
          [String(a.id)]: { [NODE_PUBLIC_IPV6]: "2600:3c03::aa/128" },
          [String(b.id)]: { [NODE_PUBLIC_IPV6]: "2600:3c03::bb" },
        },
      }),
    );
    expect(addresses(o)).toEqual(["[2600:3c03::aa]:30080", "[2600:3c03::bb]:30080"]);
    // Malformed: the Linode's own SLAAC address.
    await (await lbs()).updateBackends(o, ids([a]), undefined, {
      [String(a.id)]: { [NODE_PUBLIC_IPV6]: "10.1.2.3/32" },
    });
    expect(addresses(o)).toEqual([`[${a.ipv6.replace(/\/128$/, "")}]:30080`]);
  });

  test("the backends digest changes with a backend's annotations and ignores those of nodes not in the set", () => {
    const plain = backendsDigest(["1", "2"]);
    expect(backendsDigest(["2", "1"], {})).toBe(plain);
    expect(backendsDigest(["1", "2"], { "3": { [NODE_PRIVATE_IP]: "192.168.0.3" } })).toBe(plain);
    const one = backendsDigest(["1", "2"], { "1": { [NODE_PRIVATE_IP]: "192.168.0.1" } });
    expect(one).not.toBe(plain);
    expect(backendsDigest(["1", "2"], { "1": { [NODE_PRIVATE_IP]: "192.168.0.9" } })).not.toBe(one);
    // The spec digest never depends on the backends or their annotations.
    const s = sampleLoadBalancerSpec(["1", "2"]);
    expect(loadBalancerSpecDigest({ ...s, backendAnnotations: { "1": { k: "v" } } })).toBe(
      loadBalancerSpecDigest(s),
    );
  });
});

describe("digest tags", () => {
  const digestTags = (o: LbOwner) =>
    nbOf(o).tags.filter((t) => t.startsWith(SPEC_DIGEST_TAG) || t.startsWith(BACKENDS_DIGEST_TAG));

  test("recorded last by ensure and updateBackends, one of each, within Linode's 50 characters; listOwned returns them", async () => {
    const o = owner();
    const first = spec(nodes.slice(0, 2), {
      [`${P}firewall-acl`]: '{"allowList":{"ipv4":["203.0.113.0/24"]}}',
    });
    const start = h.fake.log.mark();
    await (await lbs()).ensure(o, first);
    expect(digestTags(o).sort()).toEqual(
      [
        `${SPEC_DIGEST_TAG}${loadBalancerSpecDigest(first)}`,
        `${BACKENDS_DIGEST_TAG}${backendsDigest(first.backends)}`,
      ].sort(),
    );
    for (const t of nbOf(o).tags) expect(t.length).toBeLessThanOrEqual(50);
    // The firewall first (named in the create); the digest PUT is the ensure's last mutation.
    const made = h.fake.mutations.filter((m) => m.seq > start).map((m) => m.operation);
    expect(made).toEqual(["firewalls.create", "nodebalancers.create", "nodebalancers.update"]);
    expect(await listed(o)).toMatchObject({
      specDigest: loadBalancerSpecDigest(first),
      backendsDigest: backendsDigest(first.backends),
    });

    // Nothing changed: no call writes anything.
    const mark = h.fake.log.mark();
    await (await lbs()).ensure(o, first);
    expect(h.fake.mutations.filter((m) => m.seq > mark)).toEqual([]);

    // A changed spec replaces the stale spec digest; updateBackends only the backends one.
    const changed = spec(nodes.slice(0, 2), { [`${P}throttle`]: "7" });
    await (await lbs()).ensure(o, changed);
    await (await lbs()).updateBackends(o, ids(nodes.slice(1, 3)));
    expect(digestTags(o).sort()).toEqual(
      [
        `${SPEC_DIGEST_TAG}${loadBalancerSpecDigest(changed)}`,
        `${BACKENDS_DIGEST_TAG}${backendsDigest(ids(nodes.slice(1, 3)))}`,
      ].sort(),
    );
  });

  test("the ingress shape is recorded with the spec digest, so listOwned shows the ingress ensure returned", async () => {
    const hostOnly = owner();
    const a = await (await lbs()).ensure(
      hostOnly,
      spec(nodes.slice(0, 1), { [`${P}hostname-only-ingress`]: "true" }),
    );
    expect((await listed(hostOnly))?.ingress).toEqual(a);
    const dual = owner();
    const b = await (await lbs()).ensure(
      dual,
      spec(nodes.slice(0, 1), { [`${P}enable-ipv6-ingress`]: "true" }),
    );
    expect(b).toHaveLength(2);
    expect((await listed(dual))?.ingress).toEqual(b);
  });

  test("digest tags are ours: a tags annotation cannot set them, preserve removes them, malformed ones are not answers", async () => {
    const o = owner();
    const forged = `${SPEC_DIGEST_TAG}0123456789abcdef`;
    const s = spec(nodes.slice(0, 1), { [`${P}tags`]: forged });
    await (await lbs()).ensure(o, s);
    expect(digestTags(o)).not.toContain(forged);
    // Two spec digests (someone edited the tags): neither is trusted.
    const nb = nbOf(o);
    nb.tags.push(forged);
    expect((await listed(o))?.specDigest).toBeUndefined();
    await (await lbs()).ensure(o, s);
    expect(digestTags(o)).toHaveLength(2);
    expect((await listed(o))?.specDigest).toBe(loadBalancerSpecDigest(s));
    await (await lbs()).ensureDeleted(o, undefined, {
      annotations: { [`${P}preserve`]: "true" },
      ingress: [],
    });
    expect(nb.tags.filter((t) => t.startsWith("fleet-ccm.io/") || t.startsWith("fccm:"))).toEqual([]);
  });
});

describe("the account's nodeBalancerTags (the Linode CCM's --nodebalancer-tags)", () => {
  test("on every NodeBalancer, after the cluster name and before the tags annotation's", async () => {
    const o = owner();
    const tagged = lbsOf(await h.provider({}, { nodeBalancerTags: ["team-platform", "env-prod"] }));
    await tagged.ensure(o, spec(nodes.slice(0, 1), { [`${P}tags`]: "svc-x" }));
    const mine = nbOf(o).tags.filter((t) => !t.startsWith("fleet-ccm.io/"));
    expect(mine).toEqual(nodeBalancerTags(o, ["svc-x"], ["team-platform", "env-prod"]));
    expect(mine.slice(-3)).toEqual(["team-platform", "env-prod", "svc-x"]);
  });

  test("tags Linode would refuse, and fleet-ccm's own, are refused in the account config", () => {
    expect(() => parseOptions(linodeProvider, { nodeBalancerTags: ["ab"] })).toThrow(AccountConfigError);
    expect(() => parseOptions(linodeProvider, { nodeBalancerTags: ["x".repeat(51)] })).toThrow(
      "options.nodeBalancerTags.0",
    );
    expect(() => parseOptions(linodeProvider, { nodeBalancerTags: ["fccm:c=other"] })).toThrow(
      AccountConfigError,
    );
    expect(parseOptions(linodeProvider, {}).nodeBalancerTags).toEqual([]);
  });
});

describe("reserved-ipv4 changed after creation", () => {
  test("as the Linode CCM: the NodeBalancer is kept (its IPv4 cannot change), with a NodeBalancerIPChangeIgnored Warning", async () => {
    const o = owner();
    const first = h.fake.reserveIPv4(ACCOUNT, REGION);
    await (await lbs()).ensure(o, spec(nodes.slice(0, 1), { [`${P}reserved-ipv4`]: first }));
    const id = nbOf(o).id;
    const second = h.fake.reserveIPv4(ACCOUNT, REGION);
    const warnings: [string, string][] = [];
    const ingress = await (await lbs()).ensure(
      o,
      spec(nodes.slice(0, 1), { [`${P}reserved-ipv4`]: second }),
      undefined,
      {
        annotations: {},
        ingress: [],
        warn: (reason, message) => warnings.push([reason, message]),
      },
    );
    expect(nbOf(o).id).toBe(id);
    expect(nbOf(o).ipv4).toBe(first);
    expect(ingress).toEqual([expect.objectContaining({ ip: first })]);
    expect(warnings).toEqual([[IP_CHANGE_IGNORED, expect.stringContaining(`remain ${first}`)]]);
    expect(h.fake.store.reservedIPs.has(second)).toBe(true);
  });
});

describe("IPv6 routes", () => {
  test("refused with a reason: Linode VPC interfaces route IPv4 ranges only", async () => {
    const l = h.fake.createLinode(ACCOUNT, { label: "r6", region: REGION, vpcSubnetId: h.subnetId });
    const routes = (await h.provider({ network: VPC })).provider.routes;
    const mark = h.fake.log.mark();
    await expect(
      routes?.create(
        { cluster: "prod", network: VPC, scope: {} },
        { destinationCIDR: "fd00:10:244::/64", targetInstanceID: String(l.id) },
      ),
    ).rejects.toThrow(/IPv4 ranges only/);
    expect(h.fake.mutations.filter((m) => m.seq > mark)).toEqual([]);
  });
});

describe("backends emptied, then refilled", () => {
  test("a config with no nodes left is rebuilt by an ensure (NeedsEnsureError), never onto another Service's node port", async () => {
    // One provider for the account, as the hub has it: two Services (two clusters) on port 80.
    const l = await lbs();
    const mine = owner();
    const theirs: ServiceTarget = { cluster: "other", scope: {}, serviceUid: `uid-b${++seq}` };
    const listeners = (nodePort: number) => [
      { protocol: "TCP" as const, port: 80, nodePort, proxyProtocol: false },
    ];
    await l.ensure(mine, spec(nodes.slice(0, 2), {}, { listeners: listeners(31001) }));
    await l.ensure(theirs, spec(nodes.slice(0, 2), {}, { listeners: listeners(31002) }));
    await l.updateBackends(mine, []);
    expect(addresses(mine)).toEqual([]);
    const err = await l.updateBackends(mine, ids(nodes.slice(0, 1))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NeedsEnsureError);
    expect(addresses(mine)).toEqual([]);
    await l.ensure(mine, spec(nodes.slice(0, 1), {}, { listeners: listeners(31001) }));
    expect(addresses(mine)).toEqual([`${nodes[0]?.privateIPv4}:31001`]);
    await l.ensureDeleted(mine);
    await l.ensureDeleted(theirs);
  });
});
