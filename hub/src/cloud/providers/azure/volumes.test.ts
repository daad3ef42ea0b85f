// Managed disks behind PVs: ARM ids read case-insensitively, the zone `<location>-<n>` of a zonal
// disk and the region alone otherwise (cloud-provider-azure's GetAzureDiskLabels), the Disk RP's
// states, scope (the account's subscription and resource groups: anything else is not found,
// without a call), and a batch read from each resource group's listing, every page.
import { AzureFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { DiskNotFoundError } from "../../errors.js";
import type { CloudProvider, Volumes } from "../../provider.js";
import { bindToFake } from "./azure.testkit.js";
import { AZURE_DISK_CSI_DRIVER, DISK_CLUSTER_TAG } from "./volumes.js";

const SUB = "00000000-0000-0000-0000-0000000000dd";
const RG = "rg-disks";
const NODE_RG = "rg-nodes";
const FAR_RG = "rg-far";
let fake: AzureFake;
let provider: CloudProvider;
let volumes: Volumes;
let ops: string[];

const diskId = (rg: string, name: string, sub = SUB) =>
  `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.Compute/disks/${name}`;

beforeAll(async () => {
  fake = await AzureFake.start({ pageSize: 3 });
  fake.createSubscription(SUB, "t", "app", "secret");
  for (const rg of [RG, NODE_RG, FAR_RG]) fake.createResourceGroup(SUB, rg);
  const vm = `/subscriptions/${SUB}/resourceGroups/${NODE_RG}/providers/Microsoft.Compute/virtualMachines/node-0`;
  fake.createDisk(SUB, { resourceGroup: NODE_RG, name: "zonal", location: "EastUS", sizeGiB: 32, zone: "2" });
  fake.createDisk(SUB, { resourceGroup: NODE_RG, name: "regional", location: "eastus", sizeGiB: 8 });
  const reserved = fake.createDisk(SUB, {
    resourceGroup: NODE_RG,
    name: "reserved",
    location: "eastus",
    sizeGiB: 4,
    managedBy: vm,
    tags: { [DISK_CLUSTER_TAG]: "c1", "k8s-azure-created-by": "kubernetes-azure-dd" },
  });
  (reserved.body["properties"] as Record<string, unknown>)["diskState"] = "Reserved";
  for (let i = 0; i < 7; i++)
    fake.createDisk(SUB, { resourceGroup: RG, name: `pvc-${i}`, location: "eastus", sizeGiB: 1, zone: "1" });
  fake.createDisk(SUB, { resourceGroup: FAR_RG, name: "far", location: "eastus", sizeGiB: 1 });
  ({ provider, ops } = await bindToFake(
    fake,
    { subscription: SUB, resourceGroup: RG },
    {},
    {
      nodeResourceGroups: [NODE_RG],
    },
  ));
  if (provider.volumes === undefined) throw new Error("azure has volumes");
  volumes = provider.volumes;
});

afterAll(async () => {
  fake.assertSpecClean();
  await fake.close();
});

test("in-tree diskURI and CSI volumeHandle parse to one id in any letter case; blob URIs and other drivers do not", () => {
  const id = diskId(NODE_RG, "zonal");
  expect(volumes.parseVolumeHandle("azureDisk", "", id.toUpperCase())).toEqual({ id });
  expect(volumes.parseVolumeHandle("csi", AZURE_DISK_CSI_DRIVER, id)).toEqual({ id });
  expect(volumes.parseVolumeHandle("csi", "file.csi.azure.com", id)).toBeUndefined();
  expect(
    volumes.parseVolumeHandle("azureDisk", "", "https://acct.blob.core.windows.net/vhds/pvc-1.vhd"),
  ).toBeUndefined();
});

test("a zonal disk is in `<location>-<n>`; a disk without zones has its region alone", async () => {
  expect(await volumes.get(diskId(NODE_RG, "ZONAL"))).toMatchObject({
    id: diskId(NODE_RG, "zonal"),
    region: "eastus",
    zones: ["eastus-2"],
    sizeGiB: 32,
    state: "available",
    ownerClusters: [],
  });
  const regional = await volumes.get(diskId(NODE_RG, "regional"));
  expect(regional).toMatchObject({ region: "eastus", zones: [] });
  expect(regional.attachedTo).toBeUndefined();
});

test("a disk Reserved by a deallocated VM is in use by it, and names its cluster by tag", async () => {
  expect(await volumes.get(diskId(NODE_RG, "reserved"))).toMatchObject({
    state: "in-use",
    attachedTo: `/subscriptions/${SUB}/resourceGroups/${NODE_RG}/providers/Microsoft.Compute/virtualMachines/node-0`,
    ownerClusters: ["c1"],
  });
  expect((await volumes.listOwned(["c1"])).map((d) => d.name)).toEqual(["reserved"]);
  expect(await volumes.listOwned(["c2"])).toEqual([]);
});

test("out of scope (another resource group or subscription) is not found, without a call", async () => {
  const before = ops.length;
  await expect(volumes.get(diskId(FAR_RG, "far"))).rejects.toBeInstanceOf(DiskNotFoundError);
  await expect(
    volumes.get(diskId(NODE_RG, "zonal", "00000000-0000-0000-0000-0000000000ff")),
  ).rejects.toBeInstanceOf(DiskNotFoundError);
  expect(await volumes.getMany([diskId(FAR_RG, "far")])).toEqual([]);
  expect(ops.length).toBe(before);
  await expect(volumes.get(diskId(RG, "gone"))).rejects.toBeInstanceOf(DiskNotFoundError);
});

test("a batch reads each resource group it names once, every page, and answers only what it asked", async () => {
  const asked = [diskId(RG, "pvc-0"), diskId(RG, "PVC-6"), diskId(NODE_RG, "zonal"), diskId(RG, "gone")];
  const before = ops.length;
  const mark = fake.log.mark();
  const found = await volumes.getMany(asked);
  expect(found.map((d) => d.id).sort()).toEqual(
    [diskId(NODE_RG, "zonal"), diskId(RG, "pvc-0"), diskId(RG, "pvc-6")].sort(),
  );
  // Two resource groups, one listing each (the 7 disks of rg-disks in pages of 3 within it).
  expect(ops.slice(before)).toEqual(["disks.batch", "disks.batch"]);
  // rg-disks' 7 disks in pages of 3 (3 requests, following nextLink), rg-nodes' 3 in one.
  expect(fake.log.count({ operation: "disks.list", afterSeq: mark })).toBe(4);
  expect(found.find((d) => d.id === diskId(RG, "pvc-6"))?.zones).toEqual(["eastus-1"]);
});
