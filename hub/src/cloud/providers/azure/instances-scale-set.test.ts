// A cluster of uniform scale-set VMs (and one VM of a flexible scale set) against the fake ARM,
// through the SDK: the nodes' addresses come from the scale set's own NIC API as upstream reads
// them (azure_vmss.go GetPrimaryInterface / GetIPByNodeName; azure_instances.go NodeAddresses:
// InternalIP, Hostname, ExternalIP), the periodic listing takes one NIC listing and one public-IP
// listing per scale set per pass and none per VM, a failed page fails the listing, a VM removed from the scale set takes its NIC
// with it, and an IP-based backend pool holds the scale-set nodes by their addresses.
import { AzureFake } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, expect, test } from "@jest/globals";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import { InstanceNotFoundError } from "../../errors.js";
import type { CloudProvider, InstanceMetadata, LoadBalancers } from "../../provider.js";
import { bindToFake } from "./azure.testkit.js";
import type { AzureInstances } from "./instances.js";

const SUB = "00000000-0000-0000-0000-0000000000ss".replace(/s/g, "5");
const RG = "rg-vmss";
const SS = "aks-nodes-vmss";
let fake: AzureFake;
let provider: CloudProvider;
let instances: AzureInstances;
let ops: string[];

const ssVm = (n: string) =>
  `/subscriptions/${SUB}/resourceGroups/${RG.toLowerCase()}/providers/Microsoft.Compute/virtualMachineScaleSets/${SS}/virtualMachines/${n}`;

beforeAll(async () => {
  fake = await AzureFake.start({ pageSize: 2 });
  fake.createSubscription(SUB, "t", "app", "secret");
  fake.createResourceGroup(SUB, RG);
  const subnetId = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`;
  for (const n of ["0", "1", "2"])
    fake.createVm(SUB, {
      resourceGroup: RG,
      name: n,
      scaleSet: SS,
      location: "eastus",
      zone: "1",
      subnetId,
      privateIp: `10.224.0.${4 + Number(n)}`,
      publicIp: `52.1.0.${n}`,
    });
  fake.createVm(SUB, {
    resourceGroup: RG,
    name: "flex-0",
    flexibleScaleSet: "flex",
    location: "eastus",
    subnetId,
    privateIp: "10.224.1.4",
  });
  fake.put(SUB, RG, "networkSecurityGroups", "kubernetes-nsg", {
    location: "eastus",
    properties: { securityRules: [] },
  });
  ({ provider, ops } = await bindToFake(
    fake,
    { subscription: SUB, resourceGroup: RG },
    { network: "vnet" },
    { operationPollMs: 0 },
  ));
  instances = provider.instances as AzureInstances;
});
afterAll(() => fake.close());
afterEach(() => fake.assertSpecClean());

async function listAll(): Promise<InstanceMetadata[]> {
  const all: InstanceMetadata[] = [];
  let token: string | undefined;
  do {
    const page = await provider.instances.listPage(token);
    all.push(...page.instances);
    token = page.nextPageToken;
  } while (token !== undefined);
  return all;
}

test("a pass: scale-set nodes with InternalIP and Hostname from the scale set's NICs, one NIC listing per scale set", async () => {
  ops.length = 0;
  const pagesBefore = fake.log.requests({ operation: "vmssNetworkInterfaces.list" }).length;
  const all = await listAll();
  expect(all.map((i) => [i.name, i.zone, i.addresses])).toEqual([
    [
      "flex-0",
      "0",
      [
        { type: "InternalIP", address: "10.224.1.4" },
        { type: "Hostname", address: "flex-0" },
      ],
    ],
    ...["0", "1", "2"].map((n) => [
      `${SS}00000${n}`,
      "eastus-1",
      [
        { type: "InternalIP", address: `10.224.0.${4 + Number(n)}` },
        { type: "Hostname", address: `${SS}00000${n}` },
        { type: "ExternalIP", address: `52.1.0.${n}` },
      ],
    ]),
  ]);
  expect(all.map((i) => i.network)).toEqual(["vnet", "vnet", "vnet", "vnet"]);
  // One listing of the scale set's NICs (three NICs in pages of two: two requests), none per VM;
  // the flexible scale set's VM is a standalone VM with a standalone NIC.
  expect(
    ops.filter((o) => o === "networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces"),
  ).toHaveLength(1);
  expect(fake.log.requests({ operation: "vmssNetworkInterfaces.list" }).length - pagesBefore).toBe(2);
  expect(ops.filter((o) => o === "networkInterfaces.list")).toHaveLength(1);
  // Their public IPs: one listing of the scale set's serves both pages of its VMs; the
  // group's own public IPs are not listed (no VM of the flexible set's page has one).
  expect(ops.filter((o) => o.startsWith("publicIPAddresses."))).toEqual([
    "publicIPAddresses.listVirtualMachineScaleSetPublicIPAddresses",
  ]);
  // The group's scale sets read once a pass: by the NIC listing, and reused by the VM listing.
  expect(ops.filter((o) => o === "virtualMachineScaleSets.list")).toHaveLength(1);
  expect(
    ops.filter((o) => o.startsWith("networkInterfaces.") && !o.startsWith("networkInterfaces.list")),
  ).toEqual([]);
  expect(ops.filter((o) => o === "networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces")).toEqual(
    [],
  );
  // The flexible scale set has no VMs of its own to list: only the uniform one's are listed.
  expect(fake.log.requests({ operation: "vmssVirtualMachines.list" }).every((r) => r.path.includes(SS))).toBe(
    true,
  );
});

test("one node by providerID or hostname: that VM's NICs and public IP through the scale set's API", async () => {
  ops.length = 0;
  const one = await provider.instances.getByProviderID(`azure://${ssVm("1")}`);
  expect(one.addresses).toEqual([
    { type: "InternalIP", address: "10.224.0.5" },
    { type: "Hostname", address: `${SS}000001` },
    { type: "ExternalIP", address: "52.1.0.1" },
  ]);
  expect(ops).toEqual([
    "virtualMachineScaleSetVMs.get",
    "networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces",
    "publicIPAddresses.getVirtualMachineScaleSetPublicIPAddress",
  ]);
  const [found] = await provider.instances.findByName(`${SS.toUpperCase()}000002`);
  expect(found?.addresses[0]).toEqual({ type: "InternalIP", address: "10.224.0.6" });
});

test("a failed page of the scale set's NICs fails the whole listing: no node without its address", async () => {
  fake.failNextPages(1);
  await expect(instances.nicsOf(RG)).rejects.toThrow(/InternalServerError|internal server error/i);
  // The failed listing is not reused: the next pass lists again, and fails on its failed page.
  fake.failNextPages(1);
  await expect(provider.instances.listPage(undefined)).rejects.toThrow();
  const again = await instances.nicsOf(RG);
  expect([...again.keys()].filter((id) => id.includes("/virtualmachinescalesets/"))).toHaveLength(3);
});

test("an IP-based backend pool holds the scale-set nodes by the addresses of their NICs", async () => {
  const lbs = provider.loadBalancers as LoadBalancers;
  const backends = ["0", "1", "2"].map(ssVm);
  const t = {
    cluster: "kubernetes",
    network: "vnet",
    scope: {},
    serviceUid: "0000aaaa-bbbb-cccc-dddd-eeeeffff0000",
  };
  await settle(() => lbs.ensure(t, sampleLoadBalancerSpec(backends)));
  const lb = fake.byId(fake.resourceId(SUB, RG, "loadBalancers", "kubernetes"));
  const pools = (lb.body["properties"] as { backendAddressPools: { properties: Record<string, unknown> }[] })
    .backendAddressPools;
  const addresses = (pools[0]?.properties["loadBalancerBackendAddresses"] ?? []) as {
    properties: { ipAddress: string };
  }[];
  expect(addresses.map((a) => a.properties.ipAddress).sort()).toEqual([
    "10.224.0.4",
    "10.224.0.5",
    "10.224.0.6",
  ]);
  await settle(() => lbs.ensureDeleted(t));
});

test("a VM removed from the scale set: its NIC is gone with it, and the node is not found", async () => {
  fake.remove(fake.resourceId(SUB, RG, "vmssVirtualMachines", `${SS}/2`));
  const nics = await instances.nicsOf(RG);
  expect([...nics.values()].map((n) => n.virtualMachine?.id?.toLowerCase())).not.toContain(
    ssVm("2").toLowerCase(),
  );
  await expect(provider.instances.getByProviderID(`azure://${ssVm("2")}`)).rejects.toBeInstanceOf(
    InstanceNotFoundError,
  );
  expect((await listAll()).map((i) => i.name)).toEqual(["flex-0", `${SS}000000`, `${SS}000001`]);
});

test("a uniform scale-set VM's instance type is its sku.name, as upstream reads it, also when ARM leaves hardwareProfile empty", async () => {
  const vm = fake.createVm(SUB, {
    resourceGroup: RG,
    name: "3",
    scaleSet: SS,
    location: "eastus",
    zone: "1",
    subnetId: `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`,
    privateIp: "10.224.0.7",
    size: "Standard_D4s_v3",
    sizeInSkuOnly: true,
  });
  // ARM's VirtualMachineScaleSetVM_Get shape: the size in sku.name, none in hardwareProfile.
  expect(vm.body["sku"]).toMatchObject({ name: "Standard_D4s_v3" });
  expect((vm.body["properties"] as Record<string, unknown>)["hardwareProfile"]).toEqual({});
  expect((await provider.instances.getByProviderID(`azure://${ssVm("3")}`)).instanceType).toBe(
    "Standard_D4s_v3",
  );
  const listed = await listAll();
  expect(listed.map((i) => [i.name, i.instanceType])).toEqual([
    ["flex-0", "Standard_D2s_v3"],
    [`${SS}000000`, "Standard_D2s_v3"],
    [`${SS}000001`, "Standard_D2s_v3"],
    [`${SS}000003`, "Standard_D4s_v3"],
  ]);
  fake.remove(vm.id);
});
