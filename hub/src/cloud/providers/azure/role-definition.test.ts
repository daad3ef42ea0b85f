// The custom role of docs/providers/azure.md names exactly the ARM actions the azure provider
// needs: the action of every SDK operation its sources call (`c.network.<group>.<op>(` and
// `c.compute.<group>.<op>(`), plus the join actions ARM checks on what a load balancer
// references. The operations come from the code, so a new call without its action fails here
// instead of with a 403 AuthorizationFailed in a user's subscription; an action nothing needs
// fails here too.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "@jest/globals";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..", "..", "..", "..");
const SOURCES = readdirSync(HERE).filter((f) => f.endsWith(".ts") && !/\.test(kit)?\.ts$/.test(f));

/** The resource type of each SDK operation group. */
const TYPES: Record<string, string> = {
  virtualMachines: "Microsoft.Compute/virtualMachines",
  virtualMachineScaleSetVMs: "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
  virtualMachineScaleSets: "Microsoft.Compute/virtualMachineScaleSets",
  disks: "Microsoft.Compute/disks",
  networkInterfaces: "Microsoft.Network/networkInterfaces",
  publicIPAddresses: "Microsoft.Network/publicIPAddresses",
  loadBalancers: "Microsoft.Network/loadBalancers",
  networkSecurityGroups: "Microsoft.Network/networkSecurityGroups",
  routeTables: "Microsoft.Network/routeTables",
};
/**
 * Operations whose action is not their group's type and verb: a uniform scale set's NICs and
 * public IPs are read as Compute's ("Azure resource provider operations", Microsoft.Compute).
 */
const OPERATIONS: Record<string, string> = {
  "networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces":
    "Microsoft.Compute/virtualMachineScaleSets/networkInterfaces/read",
  "networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces":
    "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read",
  "publicIPAddresses.listVirtualMachineScaleSetPublicIPAddresses":
    "Microsoft.Compute/virtualMachineScaleSets/publicIPAddresses/read",
  "publicIPAddresses.getVirtualMachineScaleSetPublicIPAddress":
    "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/ipConfigurations/publicIPAddresses/read",
};
const VERBS: Record<string, string> = {
  get: "read",
  list: "read",
  listByResourceGroup: "read",
  beginCreateOrUpdate: "write",
  beginDelete: "delete",
};

/**
 * What ARM checks on the resources a load-balancer write references: the frontend's public IP
 * (load-balancers.ts `publicIPAddress: { id`), the internal frontend's subnet (`subnet: { id`)
 * and the backend addresses' virtual network (`virtualNetwork: { id`); and on a NIC naming a
 * NIC-based pool (nic-pool.ts `loadBalancerBackendAddressPools:`), the pool.
 */
const JOINS: Record<string, string> = {
  "publicIPAddress: { id": "Microsoft.Network/publicIPAddresses/join/action",
  "subnet: { id": "Microsoft.Network/virtualNetworks/subnets/join/action",
  "virtualNetwork: { id": "Microsoft.Network/virtualNetworks/joinLoadBalancer/action",
  "loadBalancerBackendAddressPools:": "Microsoft.Network/loadBalancers/backendAddressPools/join/action",
};

function actionsUsed(): Set<string> {
  const out = new Set<string>();
  for (const file of SOURCES) {
    const text = readFileSync(join(HERE, file), "utf8");
    for (const m of text.matchAll(/\bc\.(?:network|compute)\.(\w+)\.(\w+)\(/g)) {
      const own = OPERATIONS[`${m[1]}.${m[2]}`];
      const type = TYPES[m[1] ?? ""];
      const verb = VERBS[m[2] ?? ""];
      if (own !== undefined) out.add(own);
      else if (type === undefined || verb === undefined)
        throw new Error(`${file}: no action known for ${m[0]}`);
      else out.add(`${type}/${verb}`);
    }
    for (const [needle, action] of Object.entries(JOINS)) if (text.includes(needle)) out.add(action);
  }
  return out;
}

test("docs/providers/azure.md's role definition lists exactly the actions the code uses", () => {
  const doc = readFileSync(join(ROOT, "docs", "providers", "azure.md"), "utf8");
  const block = /```json\n([\s\S]*?)\n```/.exec(doc)?.[1];
  expect(block).toBeDefined();
  const role = JSON.parse(block ?? "{}") as { Actions: string[] };
  expect([...role.Actions].sort()).toEqual([...actionsUsed()].sort());
});
