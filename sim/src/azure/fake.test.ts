// The fake Azure Resource Manager and Entra ID, driven by the official SDKs (the clients the
// azure provider uses) over HTTPS with the fake's certificate trusted through the clients'
// options; every exchange checked against the swagger in sim/fixtures/azure/.

import { request } from "node:https";
import { ComputeManagementClient } from "@azure/arm-compute";
import { NetworkManagementClient } from "@azure/arm-network";
import { ClientSecretCredential } from "@azure/identity";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { AzureFake } from "./fake.js";
import { azureOpenApiDocument } from "./swagger.js";

const SUB = "00000000-0000-0000-0000-00000000aaaa";
const TENANT = "tenant-1";
const RG = "rg-fleet";
const LOCATION = "eastus";
const SUBNET = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes`;
let fake: AzureFake;
let network: NetworkManagementClient;
let compute: ComputeManagementClient;
let credential: ClientSecretCredential;

beforeAll(async () => {
  fake = await AzureFake.start({ pageSize: 2 });
  fake.createSubscription(SUB, TENANT, "app-1", "s3cret");
  fake.createResourceGroup(SUB, RG);
  const tlsOptions = { ca: fake.certificate.cert };
  credential = new ClientSecretCredential(TENANT, "app-1", "s3cret", {
    authorityHost: fake.entra.url,
    disableInstanceDiscovery: true,
    tlsOptions,
    retryOptions: { maxRetries: 0 },
  });
  const opts = { endpoint: fake.url, tlsOptions, retryOptions: { maxRetries: 0 } };
  network = new NetworkManagementClient(credential, SUB, opts);
  compute = new ComputeManagementClient(credential, SUB, opts);
});
afterAll(() => fake.close());
afterEach(() => fake.assertSpecClean());

describe("the joined swagger", () => {
  test("holds every operation the provider calls, by the swagger's operationId", () => {
    const doc = azureOpenApiDocument() as { paths: Record<string, Record<string, { operationId: string }>> };
    const ids = new Set(
      Object.values(doc.paths).flatMap((item) => Object.values(item).map((o) => o.operationId)),
    );
    for (const id of [
      "LoadBalancers_CreateOrUpdate",
      "LoadBalancers_Get",
      "LoadBalancers_Delete",
      "LoadBalancers_List",
      "PublicIPAddresses_CreateOrUpdate",
      "NetworkSecurityGroups_CreateOrUpdate",
      "RouteTables_CreateOrUpdate",
      "NetworkInterfaces_Get",
      "NetworkInterfaces_CreateOrUpdate",
      "VirtualMachines_Get",
      "VirtualMachines_List",
      "VirtualMachineScaleSetVMs_Get",
      "NetworkInterfaces_ListVirtualMachineScaleSetNetworkInterfaces",
      "NetworkInterfaces_ListVirtualMachineScaleSetVMNetworkInterfaces",
      "NetworkInterfaces_GetVirtualMachineScaleSetNetworkInterface",
      "PublicIPAddresses_ListVirtualMachineScaleSetPublicIPAddresses",
      "PublicIPAddresses_ListVirtualMachineScaleSetVMPublicIPAddresses",
      "PublicIPAddresses_GetVirtualMachineScaleSetPublicIPAddress",
      "Disks_Get",
      "Disks_ListByResourceGroup",
    ])
      expect(ids).toContain(id);
  });
});

describe("managed disks", () => {
  test("a zonal disk attached to a VM and a regional one, listed in pages; a 404 in ARM's envelope", async () => {
    const vm = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachines/node-d`;
    fake.createDisk(SUB, {
      resourceGroup: RG,
      name: "pvc-a",
      location: LOCATION,
      sizeGiB: 16,
      zone: "3",
      managedBy: vm,
    });
    fake.createDisk(SUB, { resourceGroup: RG, name: "pvc-b", location: LOCATION, sizeGiB: 8 });
    fake.createDisk(SUB, { resourceGroup: RG, name: "pvc-c", location: LOCATION, sizeGiB: 4 });
    const a = await compute.disks.get(RG, "PVC-A");
    expect(a).toMatchObject({
      name: "pvc-a",
      zones: ["3"],
      managedBy: vm,
      diskSizeGB: 16,
      diskState: "Attached",
    });
    const pages: string[][] = [];
    for await (const page of compute.disks.listByResourceGroup(RG).byPage())
      pages.push(page.map((d) => d.name ?? ""));
    expect(pages).toEqual([["pvc-a", "pvc-b"], ["pvc-c"]]);
    await expect(compute.disks.get(RG, "gone")).rejects.toMatchObject({
      statusCode: 404,
      code: "ResourceNotFound",
    });
  });
});

describe("virtual machines and network interfaces", () => {
  test("a VM with its instance view, its NIC and public IP; a 404 in ARM's envelope", async () => {
    const vm = fake.createVm(SUB, {
      resourceGroup: RG,
      name: "node-1",
      location: LOCATION,
      zone: "2",
      subnetId: SUBNET,
      privateIp: "10.240.0.4",
      publicIp: "20.1.1.1",
      power: "deallocated",
    });
    const got = await compute.virtualMachines.get(RG, "node-1", { expand: "instanceView" });
    expect(got.id).toBe(vm.id);
    expect(got.zones).toEqual(["2"]);
    expect(got.instanceView?.statuses?.map((s) => s.code)).toContain("PowerState/deallocated");
    const nic = await network.networkInterfaces.get(RG, "node-1-nic");
    expect(nic.ipConfigurations?.[0]?.privateIPAddress).toBe("10.240.0.4");
    await expect(compute.virtualMachines.get(RG, "missing")).rejects.toMatchObject({
      statusCode: 404,
      code: "ResourceNotFound",
    });
  });

  test("lists page with nextLink", async () => {
    for (const n of ["node-2", "node-3", "node-4"])
      fake.createVm(SUB, {
        resourceGroup: RG,
        name: n,
        location: LOCATION,
        subnetId: SUBNET,
        privateIp: "10.240.0.9",
      });
    const names: string[] = [];
    for await (const vm of compute.virtualMachines.list(RG)) names.push(vm.name ?? "");
    expect(names).toEqual(["node-1", "node-2", "node-3", "node-4"]);
    expect(fake.log.requests({ operation: "virtualMachines.list" }).length).toBe(2);
  });

  test("a scale-set VM", async () => {
    fake.createVm(SUB, {
      resourceGroup: RG,
      name: "3",
      scaleSet: "pool",
      location: LOCATION,
      subnetId: SUBNET,
      privateIp: "10.240.0.20",
    });
    const got = await compute.virtualMachineScaleSetVMs.get(RG, "pool", "3", { expand: "instanceView" });
    expect(got.instanceId).toBe("3");
  });
});

/** A uniform scale set of three VMs (instances 0, 1, 2) with these addresses. */
function createScaleSet(
  scaleSet: string,
  addresses: (n: string) => { privateIp: string; publicIp?: string },
) {
  for (const n of ["0", "1", "2"])
    fake.createVm(SUB, {
      resourceGroup: RG,
      name: n,
      scaleSet,
      location: LOCATION,
      subnetId: SUBNET,
      ...addresses(n),
    });
}

describe("a uniform scale set's NICs (the scale set's own API, api-version 2018-10-01)", () => {
  const SS = "agents";
  const vmId = (n: string) =>
    `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachineScaleSets/${SS}/virtualMachines/${n}`;
  beforeAll(() => createScaleSet(SS, (n) => ({ privateIp: `10.240.2.${n}` })));

  test("listed per scale set in pages, per VM, and got by name; named by the scale set's network profile", async () => {
    const all = [];
    for await (const nic of network.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces(RG, SS))
      all.push(nic);
    expect(all.map((n) => [n.id, n.virtualMachine?.id, n.ipConfigurations?.[0]?.privateIPAddress])).toEqual(
      ["0", "1", "2"].map((n) => [`${vmId(n)}/networkInterfaces/${SS}-nic`, vmId(n), `10.240.2.${n}`]),
    );
    // Three NICs at two a page: the nextLink is followed once.
    expect(fake.log.requests({ operation: "vmssNetworkInterfaces.list" })).toHaveLength(2);
    const ss = await compute.virtualMachineScaleSets.get(RG, SS);
    expect(ss.virtualMachineProfile?.networkProfile?.networkInterfaceConfigurations?.[0]?.name).toBe(
      `${SS}-nic`,
    );
    const vm = await compute.virtualMachineScaleSetVMs.get(RG, SS, "1");
    expect(vm.networkProfile?.networkInterfaces?.[0]?.id).toBe(`${vmId("1")}/networkInterfaces/${SS}-nic`);
    const one = [];
    for await (const nic of network.networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces(
      RG,
      SS,
      "1",
    ))
      one.push(nic.name);
    expect(one).toEqual([`${SS}-nic`]);
    const got = await network.networkInterfaces.getVirtualMachineScaleSetNetworkInterface(
      RG,
      SS,
      "2",
      `${SS}-nic`,
    );
    expect(got.ipConfigurations?.[0]?.id).toBe(
      `${vmId("2")}/networkInterfaces/${SS}-nic/ipConfigurations/ipconfig1`,
    );
    // Not in the group's own NICs: those are standalone NICs only.
    const standalone = [];
    for await (const nic of network.networkInterfaces.list(RG)) standalone.push(nic.id ?? "");
    expect(standalone.filter((id) => id.includes("virtualMachineScaleSets"))).toEqual([]);
  });

  test("an unknown VM, NIC or scale set is a 404 in ARM's envelope; a removed VM's NIC is gone", async () => {
    await expect(
      network.networkInterfaces.getVirtualMachineScaleSetNetworkInterface(RG, SS, "9", `${SS}-nic`),
    ).rejects.toMatchObject({ statusCode: 404, code: "ResourceNotFound" });
    const listing = async (it: AsyncIterable<unknown>) => {
      for await (const _ of it) {
        // drained
      }
    };
    await expect(
      listing(network.networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces(RG, SS, "9")),
    ).rejects.toMatchObject({ statusCode: 404, code: "ResourceNotFound" });
    await expect(
      listing(network.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces(RG, "nope")),
    ).rejects.toMatchObject({ statusCode: 404, code: "ResourceNotFound" });
    fake.remove(vmId("0"));
    await expect(
      network.networkInterfaces.getVirtualMachineScaleSetNetworkInterface(RG, SS, "0", `${SS}-nic`),
    ).rejects.toMatchObject({ statusCode: 404, code: "ResourceNotFound" });
    const left = [];
    for await (const nic of network.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces(RG, SS))
      left.push(nic.virtualMachine?.id);
    expect(left).toEqual([vmId("1"), vmId("2")]);
  });
});

describe("a uniform scale set's VMs' public IPs (the scale set's own API)", () => {
  const SS = "edge";
  const nicId = (n: string) =>
    `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachineScaleSets/${SS}/virtualMachines/${n}/networkInterfaces/${SS}-nic`;
  beforeAll(() => createScaleSet(SS, (n) => ({ privateIp: `10.240.3.${n}`, publicIp: `52.0.0.${n}` })));
  const getPip = (n: string) =>
    network.publicIPAddresses.getVirtualMachineScaleSetPublicIPAddress(
      RG,
      SS,
      n,
      `${SS}-nic`,
      "ipconfig1",
      `${SS}-pip`,
    );

  test("listed per scale set in pages and per IP configuration, got by name; each names its IP configuration", async () => {
    const all = [];
    for await (const pip of network.publicIPAddresses.listVirtualMachineScaleSetPublicIPAddresses(RG, SS))
      all.push([pip.id, pip.ipAddress, pip.ipConfiguration?.id]);
    expect(all).toEqual(
      ["0", "1", "2"].map((n) => [
        `${nicId(n)}/ipConfigurations/ipconfig1/publicIPAddresses/${SS}-pip`,
        `52.0.0.${n}`,
        `${nicId(n)}/ipConfigurations/ipconfig1`,
      ]),
    );
    expect(fake.log.requests({ operation: "vmssPublicIPAddresses.list" })).toHaveLength(2);
    const nic = await network.networkInterfaces.getVirtualMachineScaleSetNetworkInterface(
      RG,
      SS,
      "1",
      `${SS}-nic`,
    );
    expect(nic.ipConfigurations?.[0]?.publicIPAddress?.id).toBe(all[1]?.[0]);
    const ss = await compute.virtualMachineScaleSets.get(RG, SS);
    expect(
      ss.virtualMachineProfile?.networkProfile?.networkInterfaceConfigurations?.[0]?.ipConfigurations?.[0]
        ?.publicIPAddressConfiguration?.name,
    ).toBe(`${SS}-pip`);
    const one = [];
    for await (const pip of network.publicIPAddresses.listVirtualMachineScaleSetVMPublicIPAddresses(
      RG,
      SS,
      "2",
      `${SS}-nic`,
      "ipconfig1",
    ))
      one.push(pip.ipAddress);
    expect(one).toEqual(["52.0.0.2"]);
    expect((await getPip("0")).ipAddress).toBe("52.0.0.0");
  });

  test("an unknown one is a 404 in ARM's envelope; a removed VM's public IP is gone", async () => {
    fake.remove(nicId("0").replace(/\/networkInterfaces\/.*$/, ""));
    await expect(getPip("0")).rejects.toMatchObject({ statusCode: 404, code: "ResourceNotFound" });
    const left = [];
    for await (const pip of network.publicIPAddresses.listVirtualMachineScaleSetPublicIPAddresses(RG, SS))
      left.push(pip.ipAddress);
    expect(left).toEqual(["52.0.0.1", "52.0.0.2"]);
  });
});

describe("NIC-based backend pools", () => {
  test("a NIC PUT names the pool: the pool shows the IP configuration; an unknown pool is refused", async () => {
    fake.createVm(SUB, {
      resourceGroup: RG,
      name: "nic-1",
      location: LOCATION,
      subnetId: SUBNET,
      privateIp: "10.240.0.30",
    });
    const lb = await network.loadBalancers.beginCreateOrUpdateAndWait(RG, "nicmode", {
      location: LOCATION,
      sku: { name: "Standard" },
      backendAddressPools: [{ name: "nicmode" }],
    });
    const poolId = lb.backendAddressPools?.[0]?.id ?? "";
    const nic = await network.networkInterfaces.get(RG, "nic-1-nic");
    const ipc = nic.ipConfigurations?.[0];
    const joined = await network.networkInterfaces.beginCreateOrUpdateAndWait(
      RG,
      "nic-1-nic",
      { ...nic, ipConfigurations: [{ ...ipc, loadBalancerBackendAddressPools: [{ id: poolId }] }] },
      { requestOptions: { customHeaders: { "If-Match": nic.etag ?? "" } } },
    );
    expect(joined.virtualMachine?.id).toBe(nic.virtualMachine?.id);
    const pool = (await network.loadBalancers.get(RG, "nicmode")).backendAddressPools?.[0];
    expect(pool?.backendIPConfigurations?.map((b) => b.id)).toEqual([ipc?.id]);
    await expect(
      network.networkInterfaces.beginCreateOrUpdateAndWait(RG, "nic-1-nic", {
        ...joined,
        ipConfigurations: [{ ...ipc, loadBalancerBackendAddressPools: [{ id: `${poolId}x` }] }],
      }),
    ).rejects.toMatchObject({ statusCode: 400, code: "InvalidResourceReference" });
    await expect(
      network.networkInterfaces.beginCreateOrUpdateAndWait(RG, "nic-1-nic", joined, {
        requestOptions: { customHeaders: { "If-Match": nic.etag ?? "" } },
      }),
    ).rejects.toMatchObject({ statusCode: 412, code: "PreconditionFailed" });
  });
});

describe("load balancers", () => {
  test("a whole-object PUT with If-Match; a stale ETag is 412 PreconditionFailed", async () => {
    const pip = await network.publicIPAddresses.beginCreateOrUpdateAndWait(RG, "kubernetes-a1", {
      location: LOCATION,
      sku: { name: "Standard" },
      publicIPAllocationMethod: "Static",
    });
    expect(pip.ipAddress).toMatch(/^20\./);

    const lbId = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/loadBalancers/kubernetes`;
    const lb = await network.loadBalancers.beginCreateOrUpdateAndWait(RG, "kubernetes", {
      location: LOCATION,
      sku: { name: "Standard" },
      frontendIPConfigurations: [{ name: "a1", publicIPAddress: { id: pip.id } }],
      backendAddressPools: [{ name: "kubernetes" }],
      probes: [{ name: "a1-TCP-80", protocol: "Tcp", port: 30080, intervalInSeconds: 5, numberOfProbes: 2 }],
      loadBalancingRules: [
        {
          name: "a1-TCP-80",
          protocol: "Tcp",
          frontendPort: 80,
          backendPort: 80,
          frontendIPConfiguration: { id: `${lbId}/frontendIPConfigurations/a1` },
          backendAddressPool: { id: `${lbId}/backendAddressPools/kubernetes` },
          probe: { id: `${lbId}/probes/a1-TCP-80` },
          enableFloatingIP: true,
        },
      ],
    });
    expect(lb.provisioningState).toBe("Succeeded");
    expect(lb.etag).toBeDefined();
    const ok = await network.loadBalancers.beginCreateOrUpdateAndWait(RG, "kubernetes", lb, {
      requestOptions: { customHeaders: { "If-Match": lb.etag ?? "" } },
    });
    expect(ok.etag).not.toBe(lb.etag);
    await expect(
      network.loadBalancers.beginCreateOrUpdateAndWait(RG, "kubernetes", lb, {
        requestOptions: { customHeaders: { "If-Match": lb.etag ?? "" } },
      }),
    ).rejects.toMatchObject({ statusCode: 412, code: "PreconditionFailed" });
    // The public IP is in use by the frontend: ARM refuses to delete it.
    await expect(network.publicIPAddresses.beginDeleteAndWait(RG, "kubernetes-a1")).rejects.toMatchObject({
      statusCode: 400,
      code: "PublicIPAddressInUse",
    });
    await network.loadBalancers.beginDeleteAndWait(RG, "kubernetes");
    await network.publicIPAddresses.beginDeleteAndWait(RG, "kubernetes-a1");
    expect(fake.list(SUB, "publicIPAddresses").map((r) => r.name)).not.toContain("kubernetes-a1");
  });

  test("a write stays Updating until it ends: Azure-AsyncOperation is polled", async () => {
    fake.asyncMs = 1_500;
    try {
      const poller = await network.routeTables.beginCreateOrUpdate(RG, "rt", {
        location: LOCATION,
        routes: [
          {
            name: "node-1",
            addressPrefix: "10.244.0.0/24",
            nextHopType: "VirtualAppliance",
            nextHopIpAddress: "10.240.0.4",
          },
        ],
      });
      expect(poller.isDone()).toBe(false);
      expect((await network.routeTables.get(RG, "rt")).provisioningState).toBe("Updating");
      const done = await poller.pollUntilDone({ abortSignal: AbortSignal.timeout(5_000) });
      expect(done.provisioningState).toBe("Succeeded");
      expect(fake.log.requests({ operation: "operations.get" }).length).toBeGreaterThan(0);
    } finally {
      fake.asyncMs = 0;
    }
  });

  test("throttling is 429 TooManyRequests with Retry-After", async () => {
    fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: 7 });
    try {
      await expect(network.loadBalancers.list(RG).next()).rejects.toMatchObject({
        statusCode: 429,
        code: "TooManyRequests",
      });
    } finally {
      fake.resetFaults();
    }
  });

  test("a body the swagger refuses is a spec problem, naming the field", async () => {
    // The SDK refuses such a body itself: sent raw, with the SDK's own token.
    const token = await credential.getToken("https://management.azure.com/.default");
    const path = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/routeTables/bad?api-version=2024-01-01`;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${fake.url}${path}`,
        {
          method: "PUT",
          ca: fake.certificate.cert,
          headers: { authorization: `Bearer ${token.token}`, "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify({ location: LOCATION, properties: { disableBgpRoutePropagation: "yes" } }));
    });
    expect(status).toBe(201);
    const problems = fake.specProblems().map((p) => JSON.stringify(p));
    fake.resetSpecProblems();
    expect(problems.join("\n")).toMatch(/disableBgpRoutePropagation/);
  });

  test("a wrong client secret gets no token", async () => {
    const bad = new ClientSecretCredential(TENANT, "app-1", "wrong", {
      authorityHost: fake.entra.url,
      disableInstanceDiscovery: true,
      tlsOptions: { ca: fake.certificate.cert },
    });
    await expect(bad.getToken("https://management.azure.com/.default")).rejects.toThrow(
      /7000215|invalid_client/,
    );
  });
});

describe("ARM's throttling", () => {
  test("remaining reads in every answer's header; an empty bucket is 429 with Retry-After when enforced", async () => {
    const limited = await AzureFake.start({
      armLimits: true,
      armBuckets: {
        // A token an hour: none comes back while the test runs, however loaded the machine.
        reads: { size: 3, perSecond: 1 / 3600 },
        writes: { size: 200, perSecond: 10 },
        deletes: { size: 200, perSecond: 10 },
      },
    });
    try {
      limited.createSubscription(SUB, TENANT, "app-1", "s3cret");
      limited.createResourceGroup(SUB, RG);
      const tlsOptions = { ca: limited.certificate.cert };
      const cred = new ClientSecretCredential(TENANT, "app-1", "s3cret", {
        authorityHost: limited.entra.url,
        disableInstanceDiscovery: true,
        tlsOptions,
      });
      const seen: (string | undefined)[] = [];
      const client = new NetworkManagementClient(cred, SUB, {
        endpoint: limited.url,
        tlsOptions,
        retryOptions: { maxRetries: 0 },
        additionalPolicies: [
          {
            position: "perRetry",
            policy: {
              name: "headers",
              sendRequest: async (req, next) => {
                const res = await next(req);
                seen.push(res.headers.get("x-ms-ratelimit-remaining-subscription-reads"));
                return res;
              },
            },
          },
        ],
      });
      for (let i = 0; i < 3; i++) for await (const _ of client.loadBalancers.list(RG)) void _;
      expect(seen).toEqual(["2", "1", "0"]);
      const refused = await (async () => {
        for await (const _ of client.loadBalancers.list(RG)) void _;
      })().catch((e: unknown) => e);
      expect(refused).toMatchObject({ statusCode: 429, code: "TooManyRequests" });
      const retryAfter = (
        refused as { response?: { headers: { get(n: string): string } } }
      ).response?.headers.get("retry-after");
      // ARM's Retry-After: whole seconds until the bucket has a token again.
      expect(Number(retryAfter)).toBeGreaterThan(3000);
    } finally {
      limited.assertSpecClean();
      await limited.close();
    }
  });
});
