// Instances of a cluster with VMs and a scale set: the periodic listing pages through the VMs
// and each scale set's VMs of every node resource group with their power state; a scale-set
// node is found by its hostname in any case; addresses in upstream's order (addressGetter in
// cloud-provider-azure's azure_instances.go: InternalIP, Hostname, ExternalIP).
import { AzureFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { InstanceNotFoundError } from "../../errors.js";
import type { CloudProvider, InstanceMetadata } from "../../provider.js";
import { bindToFake } from "./azure.testkit.js";

const SUB = "00000000-0000-0000-0000-0000000000ee";
const RG = "rg-ss";
let fake: AzureFake;
let provider: CloudProvider;
let ops: string[];

beforeAll(async () => {
  fake = await AzureFake.start({ pageSize: 2 });
  fake.createSubscription(SUB, "t", "app", "secret");
  fake.createResourceGroup(SUB, RG);
  const subnetId = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`;
  fake.createVm(SUB, {
    resourceGroup: RG,
    name: "cp-0",
    location: "eastus",
    subnetId,
    privateIp: "10.240.0.4",
    publicIp: "20.0.0.4",
    zone: "2",
  });
  fake.createVm(SUB, {
    resourceGroup: RG,
    name: "cp-1",
    location: "eastus",
    subnetId,
    privateIp: "10.240.0.5",
  });
  for (const [i, power] of [
    ["0", "running"],
    ["1", "running"],
    ["2", "deallocated"],
  ] as const)
    fake.createVm(SUB, {
      resourceGroup: RG,
      name: i,
      scaleSet: "pool",
      location: "eastus",
      subnetId,
      privateIp: `10.240.1.${i}`,
      power,
    });
  ({ provider, ops } = await bindToFake(fake, { subscription: SUB, resourceGroup: RG }));
});
afterAll(async () => {
  fake.assertSpecClean();
  await fake.close();
});

test("the listing pages through VMs and scale-set VMs, with power state; VM addresses in upstream's order", async () => {
  const all: InstanceMetadata[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await provider.instances.listPage(token);
    all.push(...page.instances);
    token = page.nextPageToken;
    pages++;
  } while (token !== undefined && pages < 20);
  expect(all.map((i) => [i.name, i.state])).toEqual([
    ["cp-0", "running"],
    ["cp-1", "running"],
    ["pool000000", "running"],
    ["pool000001", "running"],
    ["pool000002", "stopped"],
  ]);
  expect(all[2]?.providerID).toBe(
    `azure:///subscriptions/${SUB}/resourceGroups/rg-ss/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/0`,
  );
  expect(all[0]?.addresses).toEqual([
    { type: "InternalIP", address: "10.240.0.4" },
    { type: "Hostname", address: "cp-0" },
    { type: "ExternalIP", address: "20.0.0.4" },
  ]);
  expect(all[0]?.zone).toBe("eastus-2");
  // The VMs' page, the scale sets once (read by the NIC listing, which takes their NICs, and
  // reused for the listing's next part), two pages of the scale set's VMs.
  expect(ops.filter((o) => o.endsWith(".list") && o.startsWith("virtual"))).toEqual([
    "virtualMachines.list",
    "virtualMachineScaleSets.list",
    "virtualMachineScaleSetVMs.list",
    "virtualMachineScaleSetVMs.list",
  ]);
});

test("a scale-set node by its hostname, in any case; a gone scale-set VM is not found by its own 404", async () => {
  const found = await provider.instances.findByName("POOL000001");
  expect(found.map((i) => i.instanceID)).toEqual([
    `/subscriptions/${SUB}/resourceGroups/rg-ss/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/1`,
  ]);
  expect(await provider.instances.findByName("cp-1")).toHaveLength(1);
  await expect(
    provider.instances.getByProviderID(
      `azure:///subscriptions/${SUB}/resourceGroups/rg-ss/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/9`,
    ),
  ).rejects.toBeInstanceOf(InstanceNotFoundError);
});

test("shut down as upstream counts it: stopped, deallocated or deallocating with provisioningState Succeeded; stopping is not", async () => {
  const id = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachines/cp-1`;
  const providerID = `azure://${id.replace(RG, RG.toLowerCase())}`;
  const rows: [power: string, provisioning: string, state: string][] = [
    ["stopping", "Succeeded", "unknown"],
    ["stopped", "Succeeded", "stopped"],
    ["deallocated", "Succeeded", "stopped"],
    ["deallocating", "Succeeded", "stopped"],
    ["deallocated", "Updating", "unknown"],
    ["deallocated", "Failed", "unknown"],
    ["stopped", "Updating", "unknown"],
    ["deallocating", "Updating", "unknown"],
    ["running", "Succeeded", "running"],
  ];
  const got: [string, string, string][] = [];
  for (const [power, provisioning] of rows) {
    fake.setPower(id, power);
    fake.setProvisioningState(id, provisioning);
    got.push([power, provisioning, (await provider.instances.getByProviderID(providerID)).state]);
  }
  expect(got).toEqual(rows);
});
