// Routes of a Hetzner network against the fake: ownership by the network's claim labels (the
// API keeps no owner on a route), foreign routes never deleted nor replaced, the Hetzner CCM's
// routes claimed only with adoptFrom, actions running across calls, one lock per network.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import type { FakeServer } from "../../../../../sim/src/hetzner/index.js";
import {
  ACCOUNT,
  type HetznerWorld,
  NETWORK,
  REGION,
  startHetznerWorld,
} from "../../../../../sim/src/hetzner/world.js";
import { CloudError } from "../../errors.js";
import { type ClusterTarget, isInProgress, type Routes } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { hetznerProvider } from "./index.js";
import { routeClaimKey } from "./routes.js";

let w: HetznerWorld;
let nodes: FakeServer[];
let n = 0;
const cidr = () => `10.244.${++n}.0/24`;
const prod: ClusterTarget = { cluster: "prod", network: NETWORK, scope: {} };
const staging: ClusterTarget = { cluster: "staging", network: NETWORK, scope: {} };
const migrating: ClusterTarget = { ...prod, scope: { adoptFrom: { vendorCcmClusterName: "prod" } } };

async function routes(): Promise<Routes> {
  return (await bindRecorded(hetznerProvider, w.account(), {})).provider.routes as Routes;
}
const net = () => w.fake.store.networks.get(w.networkId);
const gateway = (s: FakeServer) => s.privateNet[0]?.ip ?? "";

beforeAll(async () => {
  w = await startHetznerWorld();
  nodes = [0, 1].map((i) =>
    w.fake.createServer(ACCOUNT, { name: `r-${i}`, location: REGION, networks: [w.networkId] }),
  );
});
afterAll(async () => {
  expect(w.fake.specProblems()).toEqual([]);
  await w.fake.close();
});
beforeEach(() => w.fake.setActionPolls(0));

describe("ownership", () => {
  test("a created route is claimed on the network; list names its owner and target", async () => {
    const r = await routes();
    const dest = cidr();
    await r.create(prod, { destinationCIDR: dest, targetInstanceID: String(nodes[0]?.id) });
    expect(net()?.routes).toContainEqual({ destination: dest, gateway: gateway(nodes[0] as FakeServer) });
    expect(net()?.labels[routeClaimKey(dest)]).toBe("prod");
    const listed = (await r.list(prod)).find((x) => x.destinationCIDR === dest);
    expect(listed).toMatchObject({ ownerCluster: "prod", targetInstanceID: String(nodes[0]?.id) });
    // Another cluster of the network sees it as prod's, and may not take or delete it.
    await expect(
      r.create(staging, { destinationCIDR: dest, targetInstanceID: String(nodes[1]?.id) }),
    ).rejects.toThrow(/claimed by cluster prod/);
    await expect(r.delete(staging, listed!)).rejects.toThrow(/cluster prod claims it/);
    await r.delete(prod, listed!);
    expect(net()?.routes.some((x) => x.destination === dest)).toBe(false);
    expect(net()?.labels[routeClaimKey(dest)]).toBeUndefined();
  });

  test("a route without a claim (the Hetzner CCM's, a user's) is never deleted, and taken over only with adoptFrom", async () => {
    const r = await routes();
    const dest = cidr();
    w.fake.addRoute(w.networkId, dest, gateway(nodes[1] as FakeServer));
    const listed = (await r.list(prod)).find((x) => x.destinationCIDR === dest);
    expect(listed?.ownerCluster).toBeUndefined();
    await expect(r.delete(prod, { ...listed!, ownerCluster: "prod" })).rejects.toBeInstanceOf(CloudError);
    const target = { destinationCIDR: dest, targetInstanceID: String(nodes[0]?.id) };
    await expect(r.create(prod, target)).rejects.toThrow(/made by someone else.*adoptFrom/);
    expect(net()?.routes.find((x) => x.destination === dest)?.gateway).toBe(gateway(nodes[1] as FakeServer));
    // Migrating: claimed, then pointed at the node's server (replaced, as upstream does).
    await r.create(migrating, target);
    expect(net()?.labels[routeClaimKey(dest)]).toBe("prod");
    expect(net()?.routes.filter((x) => x.destination === dest)).toEqual([
      { destination: dest, gateway: gateway(nodes[0] as FakeServer) },
    ]);
  });

  test("IPv6 pod CIDRs are refused: Hetzner networks carry IPv4 only", async () => {
    await expect(
      (await routes()).create(prod, {
        destinationCIDR: "fd00:1::/64",
        targetInstanceID: String(nodes[0]?.id),
      }),
    ).rejects.toThrow(/IPv4 only/);
  });

  test("writes of one network are serialized: the lock key is the network", async () => {
    const r = await routes();
    expect(r.lockKey?.(prod, { destinationCIDR: cidr(), targetInstanceID: "1" })).toBe(
      r.lockKey?.(staging, { destinationCIDR: cidr(), targetInstanceID: "2" }),
    );
    expect(
      r.lockKey?.({ ...prod, network: "other" }, { destinationCIDR: cidr(), targetInstanceID: "1" }),
    ).not.toBe(r.lockKey?.(prod, { destinationCIDR: cidr(), targetInstanceID: "1" }));
  });
});

describe("actions", () => {
  test("add_route and delete_route running answer in progress; the next call finishes from what the cloud says", async () => {
    w.fake.setActionPolls(2);
    const target = { destinationCIDR: cidr(), targetInstanceID: String(nodes[0]?.id) };
    expect(isInProgress(await (await routes()).create(prod, target))).toBe(true);
    let made = await (await routes()).create(prod, target);
    for (let i = 0; isInProgress(made) && i < 10; i++) made = await (await routes()).create(prod, target);
    expect(made).toMatchObject({ ...target, ownerCluster: "prod" });
    expect(net()?.routes.filter((x) => x.destination === target.destinationCIDR)).toHaveLength(1);
    const listed = (await (await routes()).list(prod)).find(
      (x) => x.destinationCIDR === target.destinationCIDR,
    )!;
    expect(isInProgress(await (await routes()).delete(prod, listed))).toBe(true);
    let gone = await (await routes()).delete(prod, listed);
    for (let i = 0; isInProgress(gone) && i < 10; i++) gone = await (await routes()).delete(prod, listed);
    expect(gone).toBeUndefined();
    expect(net()?.labels[routeClaimKey(target.destinationCIDR)]).toBeUndefined();
  });

  test("an add_route ending in error is OperationFailedError; the claim stays and the next create adds it", async () => {
    w.fake.failNextActions("add_route", 1);
    const r = await routes();
    const target = { destinationCIDR: cidr(), targetInstanceID: String(nodes[1]?.id) };
    await expect(r.create(prod, target)).rejects.toThrow(/add_route\) ended in error/);
    expect(net()?.routes.some((x) => x.destination === target.destinationCIDR)).toBe(false);
    expect(await r.create(prod, target)).toMatchObject({ ownerCluster: "prod" });
    expect(net()?.routes.some((x) => x.destination === target.destinationCIDR)).toBe(true);
  });
});

describe("API calls of the route controller's passes", () => {
  test("every cluster's listing in one pass shares one listing of the networks, and servers are listed only for an unknown gateway", async () => {
    const bound = await bindRecorded(hetznerProvider, w.account(), {});
    const r = bound.provider.routes as Routes;
    const dest = cidr();
    await r.create(prod, { destinationCIDR: dest, targetInstanceID: String(nodes[0]?.id) });
    const before = bound.ops.length;
    for (const c of [prod, staging, prod, staging]) await r.list(c);
    // One listing of the networks for all four; the servers at most once (for gateways of
    // routes others made: the created route's was learnt when it was made).
    const ops = bound.ops.slice(before);
    expect(ops.filter((o) => o === "routes.networks")).toHaveLength(1);
    expect(ops.filter((o) => o === "routes.servers").length).toBeLessThanOrEqual(1);
    expect(ops.filter((o) => o !== "routes.networks" && o !== "routes.servers")).toEqual([]);
    const listed = (await r.list(prod)).find((x) => x.destinationCIDR === dest);
    expect(listed?.targetInstanceID).toBe(String(nodes[0]?.id));
    await r.delete(prod, listed!);
  });

  test("a write is seen by the next listing at once", async () => {
    const r = await routes();
    const dest = cidr();
    expect((await r.list(prod)).some((x) => x.destinationCIDR === dest)).toBe(false);
    await r.create(prod, { destinationCIDR: dest, targetInstanceID: String(nodes[1]?.id) });
    const listed = (await r.list(prod)).find((x) => x.destinationCIDR === dest);
    expect(listed).toMatchObject({ ownerCluster: "prod", targetInstanceID: String(nodes[1]?.id) });
    await r.delete(prod, listed!);
    expect((await r.list(prod)).some((x) => x.destinationCIDR === dest)).toBe(false);
  });
});
