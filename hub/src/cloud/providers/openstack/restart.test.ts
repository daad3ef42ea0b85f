// A restarted hub adopts the Octavia load balancers it left current from the project listing:
// one page of load balancers and one Neutron call for their floating IPs (the ingress of a
// public Service), no per-Service lookup, no write. The service controller as the hub runs it,
// against the fake OpenStack cloud on a loopback port.

import { Node, type Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import type { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork } from "../../../../../sim/src/openstack/store.js";
import { parseHubConfig } from "../../../config/load.js";
import {
  convergeAndStop,
  lbService,
  startServiceHarness,
  waitUntil,
} from "../../../reconcilers/service/harness.testkit.js";
import { A } from "./annotations.js";
import { openstackProvider } from "./index.js";
import { APP_CREDENTIAL, PROJECT, REGION, startFakeProject } from "./project.testkit.js";

/** Half public (a floating IP), half internal (the VIP). */
const SERVICES = 6;

let fake: OpenStackFake;
let net: FakeNetwork;
let ext: FakeNetwork;
beforeAll(async () => {
  ({ fake, net, ext } = await startFakeProject());
});
afterAll(async () => {
  expect(fake.specProblems()).toEqual([]);
  await fake.close();
});

function services(prefix: number): Service[] {
  return Array.from({ length: SERVICES }, (_, i) =>
    lbService(`s${i}`, `${prefix}000000${i}-1111-2222-3333-444455556666`, {
      ...(i % 2 === 1 && { annotations: { [A.internal]: "true" } }),
    }),
  );
}

function setup(cluster: string) {
  const node = (name: string) => {
    const s = fake.createServer(PROJECT, REGION, { name, networks: [net] });
    return Node.fromPartial({
      name,
      uid: `uid-${name}`,
      resourceVersion: "1",
      providerId: `openstack:///${s.id}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
    });
  };
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [
        {
          name: PROJECT,
          provider: "openstack",
          region: REGION,
          endpoint: fake.url,
          network: net.id,
          credentials: { applicationCredentialSecret: { env: "SECRET" } },
          options: {
            applicationCredentialId: APP_CREDENTIAL.id,
            loadBalancer: { floatingNetworkId: ext.id },
          },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: cluster, account: PROJECT, token: { env: "T" } }],
    }),
  );
  const reconciled = { n: 0 };
  const boot = () =>
    startServiceHarness({
      config,
      env: { SECRET: APP_CREDENTIAL.secret },
      logger: pino({ level: "silent" }),
      providers: [openstackProvider],
      onOutcome: (key) => {
        if (key.kind === "service") reconciled.n++;
      },
    });
  return { node, boot, reconciled };
}

const NODE_CHECK = /^(instances|ports)\./;

test("a restarted hub adopts unchanged public and internal Octavia load balancers with listing calls only", async () => {
  const cluster = "restart";
  const { node, boot, reconciled } = setup(cluster);
  const nodes = [node(`${cluster}-n0`), node(`${cluster}-n1`)];
  const first = await boot();
  const left = await convergeAndStop(first, cluster, nodes, services(0));
  // Public ones show their floating IP, internal ones their VIP.
  const fips = new Set([...fake.store.floatingIps.values()].map((f) => f.address));
  const vips = new Set([...fake.store.loadBalancers.values()].map((l) => l.vipAddress));
  for (const [i, s] of left.entries())
    expect((i % 2 === 0 ? fips : vips).has(s.ingress[0]?.ip ?? "")).toBe(true);
  const firstCalls = await first.callsByOp();

  const second = await boot();
  try {
    second.fleet.setConnected(cluster, true);
    reconciled.n = 0;
    second.fleet.replace(cluster, nodes, left);
    await waitUntil("every Service to be reconciled", () => reconciled.n >= SERVICES);
    await waitUntil("the queue to drain", () => second.drained());
    const calls = await second.callsByOp();
    const lbCalls = Object.fromEntries(
      Object.entries(calls).filter(([op]) => !NODE_CHECK.test(op) && !op.startsWith("keystone.")),
    );
    // One page of load balancers, one floating-IP lookup for all of them: nothing else.
    expect(lbCalls).toEqual({ "loadbalancers.list": 1, "floatingips.list": 1 });
    const firstTotal = Object.values(firstCalls).reduce((a, b) => a + b, 0);
    expect(firstTotal).toBeGreaterThan(10 * SERVICES);
  } finally {
    await second.stop();
  }
});

test("a restarted hub whose node set changed meanwhile only replaces the members", async () => {
  const cluster = "restart-nodes";
  const { node, boot, reconciled } = setup(cluster);
  const nodes = [node(`${cluster}-n0`)];
  const left = await convergeAndStop(await boot(), cluster, nodes, services(1));
  const more = [...nodes, node(`${cluster}-n1`)];
  const second = await boot();
  try {
    reconciled.n = 0;
    second.fleet.setConnected(cluster, true);
    second.fleet.replace(cluster, more, left);
    await waitUntil("every Service to be reconciled", () => reconciled.n >= SERVICES);
    await waitUntil("the queue to drain", () => second.drained());
    const calls = await second.callsByOp();
    for (const op of ["loadbalancers.create", "listener.create", "pool.create", "floatingip.create"])
      expect({ op, n: calls[op] ?? 0 }).toEqual({ op, n: 0 });
    expect(calls["members.update"]).toBe(SERVICES);
  } finally {
    await second.stop();
  }
  const ids = more.map((n) => n.providerId.slice(n.providerId.lastIndexOf("/") + 1));
  const addresses = new Set(
    [...fake.store.ports.values()]
      .filter((p) => ids.includes(p.deviceId))
      .map((p) => p.fixedIps[0]?.ip_address),
  );
  const mine = [...fake.store.loadBalancers.values()].filter((l) =>
    l.tags.includes(`fleet-ccm.io/cluster=${cluster}`),
  );
  expect(mine).toHaveLength(SERVICES);
  for (const lb of mine)
    for (const p of [...fake.store.pools.values()].filter((x) => x.lbId === lb.id))
      expect(new Set(p.members.map((m) => m.address))).toEqual(addresses);
});
