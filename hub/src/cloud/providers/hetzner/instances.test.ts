// Servers against the fake Hetzner Cloud API: upstream's providerIDs, labels, zone and address
// order, the private IP of the cluster's network, and "not found" only from the server's own URL.
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import {
  ACCOUNT,
  ELSEWHERE,
  type HetznerWorld,
  NETWORK,
  REGION,
  startHetznerWorld,
} from "../../../../../sim/src/hetzner/world.js";
import { ForbiddenError, InstanceNotFoundError } from "../../errors.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { hetznerProvider } from "./index.js";
import { ipv6Host, legacyZone } from "./instances.js";

let w: HetznerWorld;

const bind = async (options: unknown = {}, clusterNetworks?: readonly (string | undefined)[]) =>
  (
    await bindRecorded(
      hetznerProvider,
      w.account(),
      options,
      clusterNetworks === undefined ? {} : { clusterNetworks },
    )
  ).provider.instances;

beforeAll(async () => {
  w = await startHetznerWorld();
});
afterAll(async () => {
  expect(w.fake.specProblems()).toEqual([]);
  await w.fake.close();
});

describe("instances", () => {
  test("metadata as the Hetzner CCM writes it", async () => {
    const s = w.fake.createServer(ACCOUNT, {
      name: "web-1",
      location: REGION,
      serverType: "cpx31",
      networks: [w.networkId],
    });
    const m = await (await bind()).getByProviderID(`hcloud://${s.id}`);
    expect(m).toMatchObject({
      providerID: `hcloud://${s.id}`,
      instanceID: String(s.id),
      instanceType: "cpx31",
      region: "fsn1",
      zone: "fsn1-dc14",
      state: "running",
      network: NETWORK,
      additionalLabels: { "instance.hetzner.cloud/provided-by": "cloud" },
    });
    expect(m.addresses).toEqual([
      { type: "Hostname", address: "web-1" },
      { type: "ExternalIP", address: s.ipv4 },
      { type: "InternalIP", address: s.privateNet[0]?.ip },
    ]);
    const dual = await (await bind({ addressFamily: "dualstack", zoneLabel: false })).getByProviderID(
      `hcloud://${s.id}`,
    );
    expect(dual.zone).toBe("");
    expect(dual.addresses[2]).toEqual({ type: "ExternalIP", address: ipv6Host(s.ipv6 ?? "") });
  });

  test("off is stopped; the private IP is the cluster's network's, and none outside the clusters' networks", async () => {
    const other = w.fake.createNetwork(ACCOUNT, { name: "elsewhere-net", ipRange: "10.9.0.0/16" });
    const s = w.fake.createServer(ACCOUNT, {
      name: "db-1",
      location: REGION,
      status: "off",
      networks: [other.id],
    });
    const m = await (await bind()).getByProviderID(`hcloud://${s.id}`);
    expect(m.state).toBe("stopped");
    expect(m.network).toBeUndefined();
    expect(m.addresses.some((a) => a.type === "InternalIP")).toBe(false);
    // A cluster on that network (by id): its address is there.
    const there = await (await bind({}, [String(other.id)])).getByProviderID(`hcloud://${s.id}`);
    expect(there.addresses).toContainEqual({ type: "InternalIP", address: s.privateNet[0]?.ip });
    // The account option names the network when no cluster does (HCLOUD_NETWORK).
    const opt = await (await bind({ network: "elsewhere-net" }, [undefined])).getByProviderID(
      `hcloud://${s.id}`,
    );
    expect(opt.network).toBe("elsewhere-net");
  });

  test("stopping is not shut down and deleting is not gone: upstream says shut down only for off, gone only on not_found", async () => {
    const i = await bind();
    const s = w.fake.createServer(ACCOUNT, { name: "going-1", location: REGION, status: "stopping" });
    const stopping = await i.getByProviderID(`hcloud://${s.id}`);
    expect(["stopped", "stopping", "terminated"]).not.toContain(stopping.state);
    w.fake.setServerStatus(s.id, "deleting");
    const deleting = await i.getByProviderID(`hcloud://${s.id}`);
    expect(["stopped", "stopping", "terminated"]).not.toContain(deleting.state);
    expect((await i.findByName("going-1")).map((m) => m.state)).toEqual([deleting.state]);
    w.fake.setServerStatus(s.id, "off");
    expect((await i.getByProviderID(`hcloud://${s.id}`)).state).toBe("stopped");
  });

  test("providerIDs: hcloud://<id> only; Robot servers (hrobot://, hcloud://bm-) are refused without a call", async () => {
    const i = await bind();
    expect(i.parseProviderID("hcloud://42")).toBe("42");
    for (const id of ["hrobot://42", "hcloud://bm-42", "linode://42", "hcloud://x"]) {
      expect(i.parseProviderID(id)).toBeUndefined();
      await expect(i.getByProviderID(id)).rejects.toBeInstanceOf(ForbiddenError);
    }
  });

  test("not found only from the server's own URL; another location is out of scope", async () => {
    const i = await bind();
    await expect(i.getByProviderID("hcloud://99999")).rejects.toBeInstanceOf(InstanceNotFoundError);
    const far = w.fake.createServer(ACCOUNT, { name: "far", location: ELSEWHERE });
    await expect(i.getByProviderID(`hcloud://${far.id}`)).rejects.toBeInstanceOf(ForbiddenError);
    expect(await i.findByName("far")).toEqual([]);
  });

  test("the legacy datacenter of each location, as upstream's table", () => {
    expect(["nbg1", "hel1", "fsn1", "ash", "hil", "sin", "xyz1"].map(legacyZone)).toEqual([
      "nbg1-dc3",
      "hel1-dc2",
      "fsn1-dc14",
      "ash-dc1",
      "hil-dc1",
      "sin-dc1",
      "xyz1",
    ]);
  });
});
