// The vendor-built load balancers the adoption tests start from, held to what
// cloud-provider-gcp's gce_loadbalancer_external.go / _internal.go make.

import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { GcpComputeFake } from "./fake.js";
import { putUpstreamExternalLb, putUpstreamInternalLb, upstreamPortRanges } from "./upstream.js";

const PROJECT = "up-project";
const REGION = "us-central1";
const A = `${REGION}-a`;
const CHECKERS = ["130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"];
let fake: GcpComputeFake;

beforeAll(async () => {
  fake = await GcpComputeFake.start({});
  fake.createProject(PROJECT, { [REGION]: [A] });
  fake.createInstance(PROJECT, { name: "node-0", zone: A, tags: ["gke-node"] });
});
afterAll(() => fake.close());

const firewall = (name: string) => fake.list(PROJECT, "firewalls").find((f) => f.name === name);
const sorted = (v: unknown) => [...((v as string[] | undefined) ?? [])].sort();

describe("putUpstreamExternalLb", () => {
  test("getPortRanges: runs of ports joined", () => {
    expect(upstreamPortRanges([443, 80, 81, 82, 8080, 80])).toEqual(["80-82", "443", "8080"]);
    expect(upstreamPortRanges([53])).toEqual(["53"]);
  });

  test("firewallObject's fields on every firewall, the health-check ones to the IP; the shared one keeps the first Service's", () => {
    const base = {
      clusterId: "legacy",
      ports: [80, 81, 443],
      backends: [`${A}/node-0`],
      nodeTags: ["gke-node"],
    };
    const ip1 = putUpstreamExternalLb(fake, PROJECT, REGION, {
      ...base,
      lbName: "a1",
      serviceName: "default/one",
    });
    const client = firewall("k8s-fw-a1");
    expect(client).toMatchObject({
      description: `{"kubernetes.io/service-name":"default/one", "kubernetes.io/service-ip":"${ip1}"}`,
      sourceRanges: ["0.0.0.0/0"],
      destinationRanges: [ip1],
      targetTags: ["gke-node"],
      allowed: [{ IPProtocol: "tcp", ports: ["80-81", "443"] }],
      priority: 1000,
    });
    const shared = firewall("k8s-legacy-node-http-hc");
    expect(shared).toMatchObject({
      description: '{"kubernetes.io/cluster-id":"legacy"}',
      destinationRanges: [ip1],
      targetTags: ["gke-node"],
      allowed: [{ IPProtocol: "tcp", ports: ["10256"] }],
      priority: 1000,
    });
    expect(sorted(shared?.sourceRanges)).toEqual(CHECKERS);
    // A second Service: upstream leaves the shared firewall as the first one made it.
    putUpstreamExternalLb(fake, PROJECT, REGION, { ...base, lbName: "a2", serviceName: "default/two" });
    expect(firewall("k8s-legacy-node-http-hc")?.destinationRanges).toEqual([ip1]);
  });

  test("externalTrafficPolicy Local: the Service's own check and firewall on healthCheckNodePort, to the IP", () => {
    const ip = putUpstreamExternalLb(fake, PROJECT, REGION, {
      clusterId: "legacy",
      lbName: "a3",
      serviceName: "default/three",
      ports: [80],
      backends: [`${A}/node-0`],
      nodeTags: ["gke-node"],
      healthCheckNodePort: 31888,
    });
    expect(fake.list(PROJECT, "httpHealthChecks").find((h) => h.name === "a3")).toMatchObject({
      description: '{"kubernetes.io/service-name":"a3"}',
      port: 31888,
      requestPath: "/healthz",
    });
    const fw = firewall("k8s-a3-http-hc");
    expect(fw).toMatchObject({
      description: `{"kubernetes.io/service-name":"default/three", "kubernetes.io/service-ip":"${ip}"}`,
      destinationRanges: [ip],
      allowed: [{ IPProtocol: "tcp", ports: ["31888"] }],
      priority: 1000,
    });
    expect(sorted(fw?.sourceRanges)).toEqual(CHECKERS);
    const pool = fake.list(PROJECT, "targetPools").find((p) => p.name === "a3");
    expect(
      (pool?.healthChecks as string[] | undefined)?.map((l) => l.split("/").slice(-3).join("/")),
    ).toEqual(["global/httpHealthChecks/a3"]);
  });
});

describe("putUpstreamInternalLb", () => {
  test("the health-check firewall names no destination (ensureInternalFirewalls passes none); the client one the IP", () => {
    const ip = putUpstreamInternalLb(fake, PROJECT, REGION, {
      clusterId: "ilb",
      lbName: "a4",
      serviceName: "default/four",
      ports: [80, 81],
      backends: [`${A}/node-0`],
      nodeTags: ["gke-node"],
    });
    expect(firewall("k8s-ilb-node-hc")?.destinationRanges).toBeUndefined();
    expect(firewall("k8s-fw-a4")).toMatchObject({
      destinationRanges: [ip],
      allowed: [{ IPProtocol: "tcp", ports: ["80-81"] }],
    });
  });
});
