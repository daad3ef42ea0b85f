import { AzureFake } from "@fleet-ccm/sim";
import type { ConformanceFixture, FakeResource } from "../../conformance/conformance.testkit.js";
import { describeProviderConformance } from "../../conformance/conformance.testkit.js";
import type { AccountBinding, LbOwner } from "../../provider.js";
import { azureProvider } from "./index.js";
import { TAG_CLUSTER, TAG_SERVICE_UID } from "./records.js";
import { AZURE_DISK_CSI_DRIVER, DISK_CLUSTER_TAG } from "./volumes.js";

const SUB = "00000000-0000-0000-0000-0000000c0f0e";
const TENANT = "conf-tenant";
const APP = "conf-app";
const SECRET = "conf-secret";
const REGION = "eastus";
const RG = "rg-conf";
const NODE_RGS = ["rg-conf", "rg-conf-2"];
const FAR_RG = "rg-far";
/**
 * The suite makes hundreds of calls a second, more than ARM's budgets of one subscription
 * (reads 25 a second): both the fake's buckets and the provider's are raised, so the suite tests
 * behaviour, not waiting (arm-budget.test.ts tests the budgets).
 */
const ROOMY = { perSecond: 10_000, bucket: 100_000 };
const ROOMY_FAKE = { size: ROOMY.bucket, perSecond: ROOMY.perSecond };

/**
 * The Service uid a name's `a<uid without dashes>` stands for: a Kubernetes uid is a UUID, whose
 * dashes go back where they were; the suite's own uids are `uid-<n>`.
 */
export function uidOfName(name: string): string | undefined {
  const m = /^a([0-9a-z]+)(?:-|$)/.exec(name);
  const raw = m?.[1];
  if (raw === undefined) return undefined;
  if (/^[0-9a-f]{32}$/.test(raw))
    return `${raw.slice(0, 8)}-${raw.slice(8, 12)}-${raw.slice(12, 16)}-${raw.slice(16, 20)}-${raw.slice(20)}`;
  const test = /^uid(\d+)$/.exec(raw);
  return test === null ? undefined : `uid-${test[1]}`;
}

function fixture(asyncMs: number, backendPoolType?: "nodeIPConfiguration"): ConformanceFixture {
  return {
    async start() {
      const fake = await AzureFake.start({
        pageSize: 20,
        asyncMs,
        armBuckets: { reads: ROOMY_FAKE, writes: ROOMY_FAKE, deletes: ROOMY_FAKE },
      });
      fake.createSubscription(SUB, TENANT, APP, SECRET);
      for (const rg of [...NODE_RGS, FAR_RG]) fake.createResourceGroup(SUB, rg);
      const subnet = (vnet: string) =>
        `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/${vnet}/subnets/nodes`;
      const nsg = (cluster: string) =>
        fake.put(SUB, RG, "networkSecurityGroups", `${cluster}-nsg`, {
          location: REGION,
          properties: { securityRules: [] },
        });
      for (const c of ["conf", "conf-b"]) nsg(c);
      let disks = 0;
      const byName = new Map<string, number>();
      let ip = 10;
      const make = (name: string, inScope: boolean, vnet = "vnet-conf") => {
        const k = byName.get(name) ?? 0;
        byName.set(name, k + 1);
        const rg = inScope ? (NODE_RGS[k] ?? `rg-extra-${k}`) : FAR_RG;
        if (inScope && NODE_RGS[k] === undefined) fake.createResourceGroup(SUB, rg);
        ip++;
        const vm = fake.createVm(SUB, {
          resourceGroup: rg,
          name,
          location: inScope ? REGION : "westus",
          subnetId: subnet(vnet),
          privateIp: `10.${vnet === "vnet-conf" ? 240 : 241}.${Math.floor(ip / 250)}.${ip % 250}`,
        });
        const id = vm.id.replace(`/resourceGroups/${rg}/`, `/resourceGroups/${rg.toLowerCase()}/`);
        return { instanceID: id, providerID: `azure://${id}` };
      };
      const lbOwnerOf = (lbName: string, itemName: string): LbOwner | undefined => {
        const uid = uidOfName(itemName);
        return uid === undefined ? undefined : { cluster: lbName.replace(/-internal$/, ""), serviceUid: uid };
      };
      return {
        factory: azureProvider,
        account: (): AccountBinding => ({
          name: "conf",
          provider: "azure",
          region: REGION,
          network: "vnet-conf",
          endpoint: fake.url,
          credential: SECRET,
          requestTimeoutMs: 5_000,
        }),
        options: {
          tenantId: TENANT,
          clientId: APP,
          subscriptionId: SUB,
          resourceGroup: RG,
          nodeResourceGroups: NODE_RGS,
          securityGroupName: "{cluster}-nsg",
          authorityHost: fake.entra.url,
          caCertificates: fake.certificate.cert,
          operationPollMs: asyncMs === 0 ? 0 : 20,
          armLimits: { reads: ROOMY, writes: ROOMY, deletes: ROOMY },
          ...(backendPoolType !== undefined && { backendPoolType }),
        },
        isMutation: (op) => /\.(createOrUpdate|delete)$/.test(op),
        createInstance: ({ name, inScope }) => make(name, inScope),
        terminateInstance: (id) => fake.remove(id),
        disks: {
          zonal: true,
          // Disks alternate between the node resource groups and between the in-tree diskURI (in
          // another letter case: ARM ids are case-insensitive) and the CSI volumeHandle.
          create: ({ sizeGiB, zones, inScope, ownerCluster, attachedTo }) => {
            const n = ++disks;
            const rg = NODE_RGS[n % NODE_RGS.length] ?? RG;
            const name = `pvc-${n}`;
            const d = fake.createDisk(SUB, {
              resourceGroup: rg,
              name,
              location: inScope ? REGION : "westus",
              sizeGiB,
              ...(zones > 0 && { zone: String((n % 3) + 1) }),
              ...(attachedTo !== undefined && { managedBy: attachedTo }),
              tags: {
                "k8s-azure-created-by": "kubernetes-azure-dd",
                "kubernetes.io-created-for-pv-name": name,
                ...(ownerCluster !== undefined && { [DISK_CLUSTER_TAG]: ownerCluster }),
              },
            });
            const id = d.id;
            return n % 2 === 0
              ? {
                  id,
                  source: "azureDisk",
                  csiDriver: "",
                  handle: id.toUpperCase(),
                }
              : { id, source: "csi", csiDriver: AZURE_DISK_CSI_DRIVER, handle: id };
          },
          missing: () => {
            const handle = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/disks/no-such-disk`;
            return { id: handle, source: "csi", csiDriver: AZURE_DISK_CSI_DRIVER, handle };
          },
        },
        missingProviderID: () =>
          `azure:///subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachines/no-such-vm`,
        instancePageSize: 20,
        // A page of load balancers, and the resource group's public IPs for their addresses.
        listOwnedReadsPerPage: 2,
        throttle: (seconds) => fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, SUB),
        failWithServerErrors: () => fake.setFaults({ errorRate: 1 }, SUB),
        clearFaults: () => fake.resetFaults(),
        resources: (): FakeResource[] => {
          const out: FakeResource[] = [];
          for (const lb of fake.list(SUB, "loadBalancers")) {
            out.push({ kind: "load-balancer", id: lb.id });
            const p = lb.body["properties"] as Record<string, { name: string; id: string }[] | undefined>;
            for (const [kind, list] of [
              ["frontend", p["frontendIPConfigurations"]],
              ["probe", p["probes"]],
              ["rule", p["loadBalancingRules"]],
            ] as const)
              for (const item of list ?? []) {
                const owner = lbOwnerOf(lb.name, item.name);
                out.push({ kind, id: item.id, ...(owner !== undefined && { lbOwner: owner }) });
              }
          }
          for (const pip of fake.list(SUB, "publicIPAddresses")) {
            const tags = (pip.body["tags"] as Record<string, string> | undefined) ?? {};
            const cluster = tags[TAG_CLUSTER];
            const uid = tags[TAG_SERVICE_UID];
            out.push({
              kind: "public-ip",
              id: pip.id,
              ...(cluster !== undefined && uid !== undefined && { lbOwner: { cluster, serviceUid: uid } }),
            });
          }
          for (const n of fake.list(SUB, "networkSecurityGroups")) {
            const cluster = n.name.replace(/-nsg$/, "");
            for (const r of (n.body["properties"] as { securityRules?: { name: string; id: string }[] })
              .securityRules ?? []) {
              const uid = uidOfName(r.name);
              out.push({
                kind: "nsg-rule",
                id: r.id,
                ...(uid !== undefined && { lbOwner: { cluster, serviceUid: uid } }),
              });
            }
          }
          for (const t of fake.list(SUB, "routeTables")) {
            const cluster = t.name.replace(/-routetable$/, "");
            for (const r of (
              t.body["properties"] as { routes?: { id: string; properties: { addressPrefix: string } }[] }
            ).routes ?? [])
              out.push({
                kind: "route",
                id: r.id,
                routeOwner: cluster,
                destinationCIDR: r.properties.addressPrefix,
              });
          }
          return out;
        },
        createForeignLoadBalancer: () => {
          fake.put(SUB, RG, "loadBalancers", "someone-elses", {
            location: REGION,
            sku: { name: "Standard" },
            properties: { frontendIPConfigurations: [{ name: "theirs", properties: {} }] },
          });
        },
        // Floating IP (upstream's default): the rules send the Service port to the nodes.
        trafficTo: "port",
        backendPorts: (o) => {
          const lb = fake.list(SUB, "loadBalancers").find((l) => l.name === o.cluster);
          const p = lb?.body["properties"] as
            | {
                loadBalancingRules?: { name: string; properties: { backendPort: number } }[];
                backendAddressPools?: {
                  name: string;
                  properties: { loadBalancerBackendAddresses?: unknown[] };
                }[];
              }
            | undefined;
          const pool = p?.backendAddressPools?.find((b) => b.name === o.cluster);
          // Members by address, or NICs naming the pool (NIC-based).
          const poolId = `${lb?.id}/backendAddressPools/${o.cluster}`.toLowerCase();
          const nicMembers = fake.list(SUB, "networkInterfaces").some((nic) =>
            (
              (
                nic.body["properties"] as {
                  ipConfigurations?: {
                    properties?: { loadBalancerBackendAddressPools?: { id: string }[] };
                  }[];
                }
              ).ipConfigurations ?? []
            ).some((c) =>
              (c.properties?.loadBalancerBackendAddressPools ?? []).some(
                (r) => r.id.toLowerCase() === poolId,
              ),
            ),
          );
          if ((pool?.properties.loadBalancerBackendAddresses ?? []).length === 0 && !nicMembers) return [];
          const ports = (p?.loadBalancingRules ?? [])
            .filter((r) => uidOfName(r.name) === o.serviceUid)
            .map((r) => r.properties.backendPort);
          return [...new Set(ports)].sort((a, b) => a - b);
        },
        otherNetwork: {
          network: "vnet-other",
          createInstance: (name) => make(name, true, "vnet-other"),
          prepareCluster: (cluster) => void nsg(cluster),
        },
        close: async () => {
          fake.assertSpecClean();
          await fake.close();
        },
      };
    },
  };
}

describeProviderConformance("azure", fixture(0), { digests: true });
describeProviderConformance("azure (NIC-based backend pools)", fixture(0, "nodeIPConfiguration"), {
  digests: true,
});
describeProviderConformance("azure (writes stay Updating for 120 ms)", fixture(120), {
  digests: true,
  inProgress: true,
});
