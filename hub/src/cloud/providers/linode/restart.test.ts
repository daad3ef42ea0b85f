// A restarted hub adopts Linode Services from the account listing of NodeBalancers (the digest
// tags): the service controller as the hub runs it, against the fake Linode API.
import { Node, type Service } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LinodeFake } from "../../../../../sim/src/linode/index.js";
import { selfSignedCertificate } from "../../../../../sim/src/util/certificate.js";
import { parseHubConfig } from "../../../config/load.js";
import type { WorkKey } from "../../../queue/index.js";
import {
  convergeAndStop,
  lbService,
  startServiceHarness,
  waitUntil,
} from "../../../reconcilers/service/harness.testkit.js";
import { NODE_PRIVATE_IP } from "./annotations.js";
import { linodeProvider } from "./index.js";
import { LB_OPS } from "./load-balancers.js";

const REGION = "us-east";
const SERVICES = 6;

let fake: LinodeFake;
beforeAll(async () => {
  fake = await LinodeFake.start({ spec: true, seed: 5 });
});
afterAll(async () => {
  expect(fake.specProblems()).toEqual([]);
  await fake.close();
});

function services(uidPrefix: string): Service[] {
  return Array.from({ length: SERVICES }, (_, i) =>
    lbService(`s${i}`, `${uidPrefix}${i}`, {
      // A Linode setting and an ACL firewall: what a restart must not read again.
      annotations: {
        "service.beta.kubernetes.io/linode-loadbalancer-throttle": "5",
        "service.beta.kubernetes.io/linode-loadbalancer-firewall-acl":
          '{"allowList":{"ipv4":["203.0.113.0/24"]}}',
      },
    }),
  );
}

/** An account with two Linodes, their nodes (one with a private-ip override) and a hub config. */
function account(name: string) {
  const { token } = fake.createAccount(name);
  const nodes = [0, 1].map((i) => {
    const l = fake.createLinode(name, { label: `${name}-n${i}`, region: REGION });
    return Node.fromPartial({
      name: `${name}-n${i}`,
      uid: `uid-${name}-n${i}`,
      resourceVersion: "1",
      providerId: `linode://${l.id}`,
      conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
      ...(i === 0 && { annotations: { [NODE_PRIVATE_IP]: "192.168.200.1" } }),
    });
  });
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [
        {
          name,
          provider: "linode",
          region: REGION,
          endpoint: fake.url,
          credentials: { env: "KEY" },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: "c1", account: name, token: { env: "T" } }],
    }),
  );
  const boot = (onOutcome?: (key: WorkKey) => void) =>
    startServiceHarness({
      config,
      env: { KEY: token },
      logger: pino({ level: "silent" }),
      providers: [linodeProvider],
      ...(onOutcome !== undefined && { onOutcome }),
    });
  return { nodes, boot };
}

const READS = new Set<string>([LB_OPS.list, "instances.list", "instances.get", "vpcs.list"]);

test("a restarted hub makes only listing calls for unchanged Linode Services: no NodeBalancer, config, node or firewall reads, no writes", async () => {
  const { nodes, boot } = account("restart-linode");
  const left = await convergeAndStop(await boot(), "c1", nodes, services("uid-lr"));
  expect(fake.store.nodeBalancersOf("restart-linode")).toHaveLength(SERVICES);
  const mark = fake.log.mark();

  let reconciled = 0;
  const second = await boot((key) => {
    if (key.kind === "service") reconciled++;
  });
  try {
    second.fleet.setConnected("c1", true);
    second.fleet.replace("c1", nodes, left);
    await waitUntil("every Service to be reconciled", () => reconciled >= SERVICES);
    await waitUntil("the queue to drain", () => second.drained());
    const calls = await second.callsByOp();
    // One page of the account's NodeBalancers serves all six; the rest is instance verification.
    expect(calls[LB_OPS.list]).toBe(1);
    for (const op of Object.keys(calls)) expect(READS.has(op)).toBe(true);
    expect(fake.mutations.filter((m) => m.seq > mark)).toEqual([]);
  } finally {
    await second.stop();
  }
});

test("a restarted hub whose node's private-ip override changed meanwhile rebuilds the backends only, no whole ensure", async () => {
  const { nodes, boot } = account("restart-override");
  const left = await convergeAndStop(await boot(), "c1", nodes, services("uid-lo"));
  const moved = nodes.map((n, i) =>
    i === 0 ? { ...n, resourceVersion: "2", annotations: { [NODE_PRIVATE_IP]: "192.168.200.2" } } : n,
  );
  const mark = fake.log.mark();
  const second = await boot();
  try {
    second.fleet.setConnected("c1", true);
    second.fleet.replace("c1", moved, left);
    const rebuilt = () =>
      fake.store
        .nodeBalancersOf("restart-override")
        .every((nb) => nb.configs.every((c) => c.nodes.some((x) => x.address === "192.168.200.2:30080")));
    await waitUntil("every NodeBalancer to reach the node at its new address", rebuilt);
    await waitUntil("the queue to drain", () => second.drained());
    const ops = fake.mutations.filter((m) => m.seq > mark).map((m) => m.operation);
    // Per Service: one rebuild, one backends-digest update; no create, no firewall or config change.
    expect(ops.filter((o) => o === LB_OPS.rebuild)).toHaveLength(SERVICES);
    expect(ops.filter((o) => o === LB_OPS.update)).toHaveLength(SERVICES);
    expect(ops).toHaveLength(2 * SERVICES);
    const calls = await second.callsByOp();
    expect(calls[LB_OPS.firewallsList] ?? 0).toBe(0);
    expect(calls[LB_OPS.nbFirewalls] ?? 0).toBe(0);
  } finally {
    await second.stop();
  }
});

test("a restarted hub whose https Service's nodes changed meanwhile sends the certificate again (an ensure), since Linode never returns it", async () => {
  const { nodes, boot } = account("restart-tls");
  const tls = selfSignedCertificate("shop.example.com");
  const https = lbService("web", "uid-tls-0", {
    namespace: "shop",
    ports: [{ name: "https", protocol: "TCP", port: 443, nodePort: 30443 }],
    annotations: {
      "service.beta.kubernetes.io/linode-loadbalancer-port-443":
        '{"protocol":"https","tls-secret-name":"web-tls"}',
    },
    secrets: [
      {
        name: "web-tls",
        data: { "tls.crt": Buffer.from(tls.cert), "tls.key": Buffer.from(tls.key) },
        problem: "",
      },
    ],
  });
  const [first = nodes[0]] = nodes;
  const left = await convergeAndStop(await boot(), "c1", first === undefined ? [] : [first], [https]);
  const mark = fake.log.mark();
  const second = await boot();
  try {
    second.fleet.setConnected("c1", true);
    second.fleet.replace("c1", nodes, left);
    await waitUntil("the NodeBalancer to reach both nodes", () =>
      fake.store.nodeBalancersOf("restart-tls").every((nb) => nb.configs.every((c) => c.nodes.length === 2)),
    );
    await waitUntil("the queue to drain", () => second.drained());
    const rebuilds = fake.mutations.filter((m) => m.seq > mark && m.operation === LB_OPS.rebuild);
    expect(rebuilds).toHaveLength(1);
    expect(rebuilds[0]?.body).toMatchObject({ ssl_cert: tls.cert.trim(), ssl_key: tls.key.trim() });
  } finally {
    await second.stop();
  }
});
