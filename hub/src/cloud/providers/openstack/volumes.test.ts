// Cinder volumes through the fake OpenStack cloud, Cinder in the catalog both as `block-storage`
// (…/volume/v3, the project added to each path) and as older clouds' `volumev3`
// (…/volume/v3/<project_id>): a batch pages `volumes/detail` by limit/marker, the zone is the
// volume's availability zone (none with ignoreVolumeAZ), the owner the CSI driver's cluster
// metadata, only a direct 404 says "not found", and a server error stays one.
import { afterAll, describe, expect, test } from "@jest/globals";
import { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import { DiskNotFoundError } from "../../errors.js";
import type { Volumes } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { openstackProvider } from "./index.js";
import { APP_CREDENTIAL, PROJECT, REGION } from "./project.testkit.js";
import { CINDER_CSI_DRIVER, CINDER_IN_TREE, CLUSTER_METADATA } from "./volumes.js";

const fakes: OpenStackFake[] = [];

async function start(cinderCatalogType: "block-storage" | "volumev3", ignoreVolumeAZ = false) {
  const fake = await OpenStackFake.start({ spec: true, cinderCatalogType });
  fakes.push(fake);
  fake.createProject(PROJECT);
  fake.createApplicationCredential(PROJECT, APP_CREDENTIAL.id, APP_CREDENTIAL.secret);
  const bound = await bindRecorded(
    openstackProvider,
    {
      name: PROJECT,
      provider: "openstack",
      region: REGION,
      endpoint: fake.url,
      credential: APP_CREDENTIAL.secret,
      secret: () => APP_CREDENTIAL.secret,
      credentialNames: ["applicationCredentialSecret"],
      requestTimeoutMs: 5_000,
    },
    { applicationCredentialId: APP_CREDENTIAL.id, pageSize: 2, ignoreVolumeAZ },
  );
  const volumes = bound.provider.volumes as Volumes;
  const calls = () => bound.ops.filter((o) => !o.startsWith("keystone."));
  return { fake, volumes, calls };
}

afterAll(async () => {
  for (const f of fakes) {
    expect(f.specProblems()).toEqual([]);
    await f.close();
  }
});

describe.each(["block-storage", "volumev3"] as const)("Cinder as %s in the catalog", (type) => {
  test("one volume: zone, region, size, state, server, owner, name, creation time", async () => {
    const { fake, volumes } = await start(type);
    const server = fake.createServer(PROJECT, REGION, { name: "n1" });
    const v = fake.createVolume(PROJECT, REGION, {
      name: "pvc-1",
      size: 20,
      az: "az-2",
      serverId: server.id,
      metadata: { [CLUSTER_METADATA]: "prod" },
    });
    await expect(volumes.get(v.id)).resolves.toEqual({
      id: v.id,
      region: REGION,
      zones: ["az-2"],
      sizeGiB: 20,
      state: "in-use",
      attachedTo: server.id,
      ownerClusters: ["prod"],
      name: "pvc-1",
      createdAt: new Date(Math.floor(v.createdMs / 1000) * 1000),
    });
  });

  test("a batch pages volumes/detail (2 a page) and answers only the ids asked", async () => {
    const { fake, volumes, calls } = await start(type);
    const made = [1, 2, 3, 4, 5].map((n) => fake.createVolume(PROJECT, REGION, { size: n }));
    const asked = [made[0]!.id, made[4]!.id, "5e0c0000-0000-4000-8000-00000000fffe"];
    const found = await volumes.getMany(asked);
    expect(found.map((d) => [d.id, d.sizeGiB, d.state])).toEqual([
      [made[0]!.id, 1, "available"],
      [made[4]!.id, 5, "available"],
    ]);
    expect(calls()).toEqual(["cinder.volumes.list", "cinder.volumes.list", "cinder.volumes.list"]);
  });
});

test("ignoreVolumeAZ (upstream's ignore-volume-az): no zone, the region only", async () => {
  const { fake, volumes } = await start("block-storage", true);
  const v = fake.createVolume(PROJECT, REGION, { size: 1, az: "az-2" });
  expect((await volumes.get(v.id)).zones).toEqual([]);
});

test("handles: in-tree cinder volumeID and the CSI driver's volumeHandle are the UUID; nothing else is ours", async () => {
  const { volumes } = await start("block-storage");
  const id = "5E0C0000-0000-4000-8000-000000000abc";
  expect(volumes.parseVolumeHandle(CINDER_IN_TREE, "", id)).toEqual({ id: id.toLowerCase() });
  expect(volumes.parseVolumeHandle("csi", CINDER_CSI_DRIVER, id)).toEqual({ id: id.toLowerCase() });
  expect(volumes.parseVolumeHandle("csi", "manila.csi.openstack.org", id)).toBeUndefined();
  expect(volumes.parseVolumeHandle("csi", CINDER_CSI_DRIVER, "vol-1")).toBeUndefined();
  expect(volumes.sources).toEqual({ inTree: ["cinder"], csiDrivers: [CINDER_CSI_DRIVER] });
});

test("not found only on a direct 404 (another region's volume is not this endpoint's); a server error stays one", async () => {
  const { fake, volumes } = await start("block-storage");
  const far = fake.createVolume(PROJECT, "RegionTwo", { size: 1 });
  await expect(volumes.get(far.id)).rejects.toBeInstanceOf(DiskNotFoundError);
  await expect(volumes.getMany([far.id])).resolves.toEqual([]);
  await expect(volumes.get("not-a-uuid")).rejects.toBeInstanceOf(DiskNotFoundError);
  const v = fake.createVolume(PROJECT, REGION, { size: 1 });
  fake.faults.set({ errorRate: 1 }, PROJECT);
  try {
    const err = await volumes.get(v.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(DiskNotFoundError);
  } finally {
    fake.faults.reset();
  }
});

test("listOwned: one listing for every cluster asked, by the CSI driver's cluster metadata", async () => {
  const { fake, volumes, calls } = await start("volumev3");
  const a = fake.createVolume(PROJECT, REGION, { size: 1, metadata: { [CLUSTER_METADATA]: "a" } });
  const b = fake.createVolume(PROJECT, REGION, { size: 1, metadata: { [CLUSTER_METADATA]: "b" } });
  fake.createVolume(PROJECT, REGION, { size: 1, metadata: { [CLUSTER_METADATA]: "c" } });
  fake.createVolume(PROJECT, REGION, { size: 1 });
  const owned = await volumes.listOwned(["a", "b"]);
  expect(owned.map((d) => [d.id, d.ownerClusters])).toEqual([
    [a.id, ["a"]],
    [b.id, ["b"]],
  ]);
  expect(calls()).toEqual(["cinder.volumes.list", "cinder.volumes.list"]);
});
