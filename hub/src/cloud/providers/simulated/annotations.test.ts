// Invalid annotations through the service controller as the hub runs it, against the simulated
// cloud on a loopback port: the simulated provider's vendor key and a unified key past its bound
// each give one Warning naming the key and the bound, with no load balancer call at all.
import { Node } from "@fleet-ccm/proto";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../../sim/src/cloud/index.js";
import { parseHubConfig } from "../../../config/load.js";
import { FINALIZER_LB_CLEANUP } from "../../../k8s/well-known.js";
import type { Outcome } from "../../../reconcilers/outcome.js";
import { lbService, startServiceHarness, waitUntil } from "../../../reconcilers/service/harness.testkit.js";

const REGION = "sim-east-1";
const VENDOR_IDLE = "service.beta.kubernetes.io/simulated-load-balancer-idle-timeout";
const PATH = "lb.fleet-ccm.io/health-check-path";

let cloud: SimulatedCloud;
beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 21 });
});
afterAll(async () => {
  await cloud.close();
});

test("a vendor idle timeout past 3600 and a 64 KiB unified health check path: one Warning each, no load balancer call", async () => {
  const env: NodeJS.ProcessEnv = { KEY_A: cloud.createAccount("a").apiKey };
  const instance = cloud.createInstance("a", { name: "n0", region: REGION });
  const config = parseHubConfig(
    JSON.stringify({
      grpc: { insecure: true },
      nats: { servers: ["nats://127.0.0.1:1"] },
      accounts: [
        {
          name: "a",
          provider: "simulated",
          region: REGION,
          endpoint: cloud.url,
          credentials: { env: "KEY_A" },
          rateLimit: { perSecond: 1000, burst: 1000 },
        },
      ],
      clusters: [{ name: "c1", account: "a", token: { env: "T" } }],
    }),
  );
  const outcomes: Outcome[] = [];
  const hub = await startServiceHarness({
    config,
    env,
    logger: pino({ level: "silent" }),
    onOutcome: (_key, out) => outcomes.push(out),
  });
  const node = Node.fromPartial({
    name: "n0",
    uid: "uid-n0",
    resourceVersion: "1",
    providerId: `simulated://${REGION}/${instance.id}`,
    conditions: [{ type: "Ready", status: "True", reason: "", message: "" }],
  });
  const bad = { finalizers: [FINALIZER_LB_CLEANUP] };
  try {
    hub.fleet.setConnected("c1", true);
    hub.fleet.replace(
      "c1",
      [node],
      [
        lbService("vendor", "uid-vendor", { ...bad, annotations: { [VENDOR_IDLE]: "99999" } }),
        lbService("path", "uid-path", { ...bad, annotations: { [PATH]: `/${"a".repeat(64 * 1024 - 1)}` } }),
      ],
    );
    const warnings = () => outcomes.flatMap((o) => (o.events ?? []).filter((e) => e.type === "Warning"));
    await waitUntil("a Warning per Service", () => warnings().length >= 2);
    await waitUntil("the queue to drain", () => hub.drained());
    const byName = new Map(warnings().map((e) => [e.name, e.message]));
    expect(warnings()).toHaveLength(2);
    expect(byName.get("vendor")).toBe(
      `Error syncing load balancer: invalid annotation ${VENDOR_IDLE}="99999": expected a whole number of seconds from 1 to 3600 (above 3600)`,
    );
    expect(byName.get("path")).toContain(`${PATH}="/aaa`);
    expect(byName.get("path")).toContain("1 to 1024 characters (65536 characters)");
    // No retry: each was synced once.
    expect(outcomes.every((o) => o.requeue.kind === "done")).toBe(true);
    const ops = Object.keys(await hub.callsByOp());
    expect(ops.filter((op) => /^(lb|listener|pool|healthcheck|firewall)\./.test(op))).toEqual([]);
    expect(cloud.inventory("a").loadBalancers).toEqual([]);
  } finally {
    await hub.stop();
  }
});
