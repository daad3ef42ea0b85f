import { describe, expect, test } from "@jest/globals";
import { SuspectAnswerError } from "../../errors.js";
import {
  formatProviderID,
  parseProviderIDParts,
  parseWireInstance,
  parseWireInstanceList,
  parseWireLoadBalancer,
  parseWireNetworkList,
  parseWirePool,
  parseWirePoolPage,
  parseWireRoutePage,
  toCloudRoute,
  toInstanceMetadata,
  type WireInstance,
} from "./convert.js";

const fixture: WireInstance = {
  id: "i-0a1b2c3d4e5f",
  name: "node-1",
  region: "sim-east-1",
  zone: "sim-east-1a",
  instance_type: "sim.large",
  state: "running",
  addresses: [
    { type: "InternalIP", address: "10.0.0.1" },
    { type: "ExternalIP", address: "100.64.0.1" },
    { type: "Hostname", address: "node-1" },
    { type: "InternalDNS", address: "i-0a1b2c3d4e5f.sim-east-1.compute.sim.internal" },
  ],
  network: "vpc-1234abcd",
  tags: { "fleet-ccm/cluster": "a" },
  created_at: "2026-01-01T00:00:00.000Z",
};

function withField(field: string, value: unknown): unknown {
  return { ...fixture, [field]: value };
}

describe("simulated convert", () => {
  test("convert - wire instance maps to InstanceMetadata", () => {
    expect(toInstanceMetadata(parseWireInstance(fixture))).toEqual({
      providerID: "simulated://sim-east-1/i-0a1b2c3d4e5f",
      instanceID: "i-0a1b2c3d4e5f",
      name: "node-1",
      instanceType: "sim.large",
      region: "sim-east-1",
      zone: "sim-east-1a",
      addresses: fixture.addresses,
      state: "running",
      network: "vpc-1234abcd",
      tags: { "fleet-ccm/cluster": "a" },
    });
  });

  test.each(["pending", "running", "stopping", "stopped", "terminated"])(
    "convert - state %s maps as is",
    (state) => {
      expect(toInstanceMetadata({ ...fixture, state }).state).toBe(state);
    },
  );

  test("convert - an unknown state is 'unknown', unknown address types are left out", () => {
    const meta = toInstanceMetadata({
      ...fixture,
      state: "rebooting",
      addresses: [...fixture.addresses, { type: "IPv6Magic", address: "::1" }],
    });
    expect(meta.state).toBe("unknown");
    expect(meta.addresses).toEqual(fixture.addresses);
  });

  test.each([
    ["empty object", {}],
    ["null", null],
    ["array", [fixture]],
    ["id not a string", withField("id", 7)],
    ["empty id", withField("id", "")],
    ["missing zone", withField("zone", undefined)],
    ["addresses not an array", withField("addresses", "10.0.0.1")],
    ["address without type", withField("addresses", [{ address: "10.0.0.1" }])],
    ["tags not an object", withField("tags", ["a"])],
    ["tag value not a string", withField("tags", { a: 1 })],
  ])("convert - malformed instance (%s) is a SuspectAnswerError", (_name, body) => {
    expect(() => parseWireInstance(body)).toThrow(SuspectAnswerError);
  });

  test("convert - list: token kept, empty token dropped, malformed items suspect", () => {
    expect(parseWireInstanceList({ instances: [fixture], next_page_token: "abc" })).toEqual({
      instances: [fixture],
      next_page_token: "abc",
    });
    expect(parseWireInstanceList({ instances: [], next_page_token: "" })).toEqual({ instances: [] });
    expect(() => parseWireInstanceList({})).toThrow(SuspectAnswerError);
    expect(() => parseWireInstanceList({ instances: [{}] })).toThrow(SuspectAnswerError);
    expect(() => parseWireInstanceList({ instances: [], next_page_token: 5 })).toThrow(SuspectAnswerError);
  });

  test("convert - providerID round trip and refusals", () => {
    expect(formatProviderID("sim-east-1", "i-0a1b2c3d4e5f")).toBe("simulated://sim-east-1/i-0a1b2c3d4e5f");
    expect(parseProviderIDParts("simulated://sim-east-1/i-0a1b2c3d4e5f")).toEqual({
      region: "sim-east-1",
      id: "i-0a1b2c3d4e5f",
    });
    for (const bad of [
      "",
      "aws:///us-east-1a/i-0a1b2c3d4e5f",
      "simulated://i-0a1b2c3d4e5f",
      "simulated:///i-0a1b2c3d4e5f",
      "simulated://sim-east-1/i-0a1b2c3d4e5f/extra",
      "simulated://sim-east-1/../admin",
      "simulated://SIM/i-0a1b2c3d4e5f",
      "simulated://sim-east-1/node-1",
    ]) {
      expect(parseProviderIDParts(bad)).toBeUndefined();
    }
  });
});

describe("simulated convert - load balancers and routes", () => {
  const lb = {
    id: "lb-0123456789ab",
    name: "fccm-x",
    region: "sim-east-1",
    status: "ACTIVE",
    network: "vpc-1",
    internal: false,
    ingress: { ip: "198.18.0.1", hostname: "fccm-x.sim-east-1.lb.sim.example" },
    listener_ids: [],
    pool_ids: [],
    health_check_ids: [],
    firewall_ids: [],
    tags: { a: "b" },
    created_at: "2026-01-01T00:00:00.000Z",
  };
  const pool = {
    id: "pool-0123456789ab",
    name: "fccm-x-pool-tcp-80",
    region: "sim-east-1",
    lb_id: lb.id,
    protocol: "TCP",
    target_port: 30080,
    members: ["i-0a1b2c3d4e5f"],
    session_affinity: "None",
    health_check_id: null,
    tags: {},
    created_at: "2026-01-01T00:00:00.000Z",
  };

  test("convert - well-formed resources and pages parse", () => {
    expect(parseWireLoadBalancer(lb)).toEqual(lb);
    const failed = { ...lb, status: "ERROR", status_message: "no capacity" };
    expect(parseWireLoadBalancer(failed)).toEqual(failed);
    const pending = { ...lb, status: "PENDING_CREATE", poll_after_ms: 250 };
    expect(parseWireLoadBalancer(pending)).toEqual(pending);
    expect(parseWirePool(pool)).toEqual(pool);
    expect(parseWirePoolPage({ pools: [pool], next_page_token: "t" })).toEqual({
      items: [pool],
      next_page_token: "t",
    });
    expect(parseWirePoolPage({ pools: [], next_page_token: "" })).toEqual({ items: [] });
  });

  test.each([
    ["an ingress without ip", { ...lb, ingress: { hostname: "h" } }],
    ["a string internal", { ...lb, internal: "false" }],
    ["non-string tag values", { ...lb, tags: { a: 1 } }],
    ["an empty id", { ...lb, id: "" }],
    ["no status", { ...lb, status: undefined }],
    ["a status it does not know", { ...lb, status: "DEGRADED" }],
    ["a negative poll hint", { ...lb, status: "PENDING_CREATE", poll_after_ms: -1 }],
    ["not an object", [lb]],
  ])("convert - a load balancer with %s is suspect", (_name, body) => {
    expect(() => parseWireLoadBalancer(body)).toThrow(SuspectAnswerError);
  });

  test("convert - malformed pools and pages are suspect", () => {
    expect(() => parseWirePool({ ...pool, members: [1] })).toThrow(SuspectAnswerError);
    expect(() => parseWirePool({ ...pool, target_port: "80" })).toThrow(SuspectAnswerError);
    expect(() => parseWirePoolPage({ items: [] })).toThrow(SuspectAnswerError);
    expect(() => parseWirePoolPage({ pools: [], next_page_token: 3 })).toThrow(SuspectAnswerError);
    expect(() => parseWireNetworkList({ networks: [{ id: "vpc-1" }] })).toThrow(SuspectAnswerError);
  });

  test("convert - routes map to the contract's CloudRoute", () => {
    const route = {
      id: "rt-0123456789ab",
      network: "vpc-1",
      destination_cidr: "10.244.0.0/24",
      target_instance_id: "i-0a1b2c3d4e5f",
      description: "",
      blackhole: false,
      tags: { "fleet-ccm.io/cluster": "c1" },
      region: "sim-east-1",
      route_table_id: "rtb-1",
      created_at: "2026-01-01T00:00:00.000Z",
    };
    const page = parseWireRoutePage({ routes: [route] });
    expect(page.items.map(toCloudRoute)).toEqual([
      {
        id: route.id,
        destinationCIDR: "10.244.0.0/24",
        targetInstanceID: "i-0a1b2c3d4e5f",
        ownerCluster: "c1",
      },
    ]);
    expect(() => parseWireRoutePage({ routes: [{ ...route, blackhole: "no" }] })).toThrow(SuspectAnswerError);
  });
});
