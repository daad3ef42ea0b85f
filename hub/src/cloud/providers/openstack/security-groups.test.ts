// Node-port security groups (upstream's manage-security-groups) through the fake OpenStack
// cloud: the group named and described as upstream, ingress rules for each node port and the
// health-check node port from the member subnet (from the source ranges with the OVN provider),
// on the members' ports (each tagged with the group's id), moved with the nodes, removed with
// the load balancer; upstream's group adopted.
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import type { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork, FakeSecurityGroup } from "../../../../../sim/src/openstack/store.js";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import type { LoadBalancers, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { openstackProvider } from "./index.js";
import {
  APP_CREDENTIAL,
  type FakeProject,
  PROJECT,
  projectAccount,
  REGION,
  startFakeProject,
} from "./project.testkit.js";
import { securityGroupName } from "./security-groups.js";

let project: FakeProject;
let fake: OpenStackFake;
let net: FakeNetwork;
let servers: string[];
let seq = 0;

async function lbsWith(
  loadBalancer: Record<string, unknown>,
  before?: (op: string) => Promise<void>,
): Promise<LoadBalancers> {
  const { provider } = await bindRecorded(
    openstackProvider,
    projectAccount(project),
    {
      applicationCredentialId: APP_CREDENTIAL.id,
      loadBalancer: { floatingNetworkId: project.ext.id, manageSecurityGroups: true, ...loadBalancer },
    },
    before === undefined ? {} : { before },
  );
  if (provider.loadBalancers === undefined) throw new Error("no load balancers");
  return provider.loadBalancers;
}

const target = (): ServiceTarget => ({
  cluster: "c1",
  network: net.id,
  scope: {},
  serviceUid: `0000000${++seq}-aaaa-bbbb-cccc-dddddddddddd`,
});
const portOf = (server: string) => [...fake.store.ports.values()].find((p) => p.deviceId === server);
const groupOf = (uid: string): FakeSecurityGroup | undefined =>
  [...fake.store.securityGroups.values()].find((g) => g.name.startsWith(`lb-sg-${uid}-`));
const ingressRules = (g: FakeSecurityGroup | undefined) =>
  (g?.rules ?? [])
    .filter((r) => r.direction === "ingress")
    .map((r) => `${r.ethertype} ${r.protocol} ${r.portRangeMin}-${r.portRangeMax} ${r.remoteIpPrefix}`)
    .sort();

beforeAll(async () => {
  project = await startFakeProject();
  ({ fake, net } = project);
  servers = [0, 1, 2].map((i) => fake.createServer(PROJECT, REGION, { name: `n${i}`, networks: [net] }).id);
});

afterAll(async () => {
  // Closed whatever the answer, so a spec problem fails the suite instead of hanging it.
  const problems = fake.specProblems();
  await fake.close();
  expect(problems).toEqual([]);
});

test("a group per load balancer as upstream names it, node-port rules from the member subnet, on the members' ports, moved with the nodes, gone with the load balancer", async () => {
  const lbs = await lbsWith({});
  const t = target();
  const local = sampleLoadBalancerSpec(servers.slice(0, 2), {
    serviceName: "shop/web",
    listeners: [
      { protocol: "TCP", port: 80, nodePort: 30080, proxyProtocol: false },
      { protocol: "UDP", port: 53, nodePort: 30053, proxyProtocol: false },
    ],
    // externalTrafficPolicy: Local: the load balancer probes the health-check node port.
    healthCheck: {
      ...sampleLoadBalancerSpec([]).healthCheck,
      protocol: "HTTP",
      port: 32000,
      path: "/healthz",
    },
  });
  await settle(() => lbs.ensure(t, local));
  const g = groupOf(t.serviceUid);
  expect(g?.name).toBe(`lb-sg-${t.serviceUid}-shop-web`);
  expect(g?.description).toBe("Security Group for shop/web Service LoadBalancer in cluster c1");
  expect(g?.tags).toEqual(["fleet-ccm.io/cluster=c1", `fleet-ccm.io/service-uid=${t.serviceUid}`]);
  expect(ingressRules(g)).toEqual([
    "IPv4 tcp 30080-30080 10.0.0.0/16",
    "IPv4 tcp 32000-32000 10.0.0.0/16",
    "IPv4 udp 30053-30053 10.0.0.0/16",
  ]);
  // Neutron's own egress rules of a new group stay.
  expect(g?.rules.filter((r) => r.direction === "egress")).toHaveLength(2);
  const withGroup = () =>
    servers.filter(
      (s) => portOf(s)?.securityGroups.includes(g?.id ?? "") && portOf(s)?.tags.includes(g?.id ?? ""),
    );
  expect(withGroup()).toEqual(servers.slice(0, 2));

  // A node leaves and another joins: the group follows the members.
  await settle(() => lbs.updateBackends(t, [servers[1] ?? "", servers[2] ?? ""].sort()));
  expect(withGroup()).toEqual(servers.slice(1, 3));
  expect(portOf(servers[0] ?? "")?.tags).toEqual([]);

  // A Service port goes: so does its rule.
  const changed = { ...local, backends: servers.slice(1, 3), listeners: local.listeners.slice(0, 1) };
  await settle(() => lbs.ensure(t, changed));
  expect(ingressRules(groupOf(t.serviceUid))).toEqual([
    "IPv4 tcp 30080-30080 10.0.0.0/16",
    "IPv4 tcp 32000-32000 10.0.0.0/16",
  ]);

  await settle(() => lbs.ensureDeleted(t));
  expect(groupOf(t.serviceUid)).toBeUndefined();
  expect(servers.map((s) => portOf(s)?.securityGroups)).toEqual([[], [], []]);
  expect(servers.map((s) => portOf(s)?.tags)).toEqual([[], [], []]);
});

test("with Octavia's OVN provider the rules allow the Service's source ranges (everywhere without any), as upstream", async () => {
  const lbs = await lbsWith({ provider: "ovn" });
  const t = target();
  await settle(() =>
    lbs.ensure(
      t,
      sampleLoadBalancerSpec(servers, { serviceName: "default/dns", sourceRanges: ["192.0.2.0/24"] }),
    ),
  );
  const lb = [...fake.store.loadBalancers.values()].find((l) =>
    l.tags.includes(`fleet-ccm.io/service-uid=${t.serviceUid}`),
  );
  expect(lb?.provider).toBe("ovn");
  expect(ingressRules(groupOf(t.serviceUid))).toEqual([
    "IPv4 tcp 30080-30080 10.0.0.0/16",
    "IPv4 tcp 30080-30080 192.0.2.0/24",
    "IPv4 tcp 30443-30443 192.0.2.0/24",
  ]);
  await settle(() => lbs.ensure(t, sampleLoadBalancerSpec(servers, { serviceName: "default/dns" })));
  expect(ingressRules(groupOf(t.serviceUid))).toEqual([
    "IPv4 tcp 30080-30080 0.0.0.0/0",
    "IPv4 tcp 30080-30080 10.0.0.0/16",
    "IPv4 tcp 30443-30443 0.0.0.0/0",
  ]);
  await settle(() => lbs.ensureDeleted(t));
  expect(groupOf(t.serviceUid)).toBeUndefined();
});

test("upstream's group (its name, its port tags) is adopted, not duplicated; a port without port security is left alone", async () => {
  const lbs = await lbsWith({});
  const t = target();
  const upstream: FakeSecurityGroup = {
    id: fake.store.uuid(),
    account: PROJECT,
    region: REGION,
    name: securityGroupName(t.serviceUid, "default/legacy"),
    description: "Security Group for default/legacy Service LoadBalancer in cluster kubernetes",
    rules: [
      {
        id: fake.store.uuid(),
        direction: "ingress",
        ethertype: "IPv4",
        protocol: "tcp",
        portRangeMin: 31999,
        portRangeMax: 31999,
        remoteIpPrefix: "10.0.0.0/16",
      },
    ],
    tags: [],
  };
  fake.store.securityGroups.set(upstream.id, upstream);
  const first = portOf(servers[0] ?? "");
  if (first === undefined) throw new Error("no port");
  first.securityGroups.push(upstream.id);
  first.tags.push(upstream.id);
  const third = portOf(servers[2] ?? "");
  if (third === undefined) throw new Error("no port");
  third.portSecurityEnabled = false;
  await settle(() => lbs.ensure(t, sampleLoadBalancerSpec(servers, { serviceName: "default/legacy" })));
  const groups = [...fake.store.securityGroups.values()].filter((g) => g.name === upstream.name);
  expect(groups.map((g) => g.id)).toEqual([upstream.id]);
  expect(upstream.tags).toContain(`fleet-ccm.io/service-uid=${t.serviceUid}`);
  // Upstream's stale rule replaced by the Service's.
  expect(ingressRules(upstream)).toEqual([
    "IPv4 tcp 30080-30080 10.0.0.0/16",
    "IPv4 tcp 30443-30443 10.0.0.0/16",
  ]);
  expect(servers.map((s) => portOf(s)?.securityGroups.includes(upstream.id))).toEqual([true, true, false]);
  await settle(() => lbs.ensureDeleted(t));
  expect(fake.store.securityGroups.has(upstream.id)).toBe(false);
  third.portSecurityEnabled = true;
});

test("two Services taking their groups off the same ports at once never undo each other's change (If-Match on the port's revision)", async () => {
  let interleave: (() => Promise<void>) | undefined;
  const lbs = await lbsWith({}, async (op) => {
    // A's first port write waits while B is deleted whole: A's revision of the port is stale.
    if (op !== "port.update" || interleave === undefined) return;
    const run = interleave;
    interleave = undefined;
    await run();
  });
  const [a, b] = [target(), target()];
  await settle(() => lbs.ensure(a, sampleLoadBalancerSpec(servers, { serviceName: "default/a" })));
  await settle(() => lbs.ensure(b, sampleLoadBalancerSpec(servers, { serviceName: "default/b" })));
  const ga = groupOf(a.serviceUid)?.id ?? "";
  const gb = groupOf(b.serviceUid)?.id ?? "";
  expect(servers.map((s) => portOf(s)?.securityGroups.sort())).toEqual(servers.map(() => [ga, gb].sort()));
  interleave = () => settle(() => lbs.ensureDeleted(b)).then(() => undefined);
  // Without the revision check A would write back B's group; with it Neutron refuses (412), and
  // A reads the port again and writes what is left.
  const before = fake.log.stats().byOperation["neutron.ports.update"] ?? 0;
  await settle(() => lbs.ensureDeleted(a));
  const writes = (fake.log.stats().byOperation["neutron.ports.update"] ?? 0) - before;
  // B's three; A's three refused (B moved every port on after A listed them), then A's three.
  expect(writes).toBe(9);
  expect([...fake.store.securityGroups.values()]).toEqual([]);
  expect(servers.map((s) => [portOf(s)?.securityGroups, portOf(s)?.tags])).toEqual(
    servers.map(() => [[], []]),
  );
});

test("upstream's group on a port it never tagged, outside the backends: found by security_groups, taken off, then deleted", async () => {
  const lbs = await lbsWith({});
  const t = target();
  const upstream: FakeSecurityGroup = {
    id: fake.store.uuid(),
    account: PROJECT,
    region: REGION,
    name: securityGroupName(t.serviceUid, "default/untagged"),
    description: "Security Group for default/untagged Service LoadBalancer in cluster kubernetes",
    rules: [],
    tags: [],
  };
  fake.store.securityGroups.set(upstream.id, upstream);
  // Upstream put it on every node's port, untagged ("we don't tag ports with SG IDs anymore").
  for (const s of servers) portOf(s)?.securityGroups.push(upstream.id);
  // The third node is no backend any more (excluded from load balancers, say).
  const members = servers.slice(0, 2);
  await settle(() => lbs.ensure(t, sampleLoadBalancerSpec(members, { serviceName: "default/untagged" })));
  expect(servers.map((s) => portOf(s)?.securityGroups.includes(upstream.id))).toEqual([true, true, false]);
  await settle(() => lbs.ensureDeleted(t));
  expect(fake.store.securityGroups.has(upstream.id)).toBe(false);
  expect(servers.map((s) => [portOf(s)?.securityGroups, portOf(s)?.tags])).toEqual(
    servers.map(() => [[], []]),
  );
});
