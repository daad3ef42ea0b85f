/**
 * The fake Azure (ARM and Entra ID) for `fleet-ccm demo --provider azure` and the end-to-end
 * tests: one subscription in eastus with an app registration whose client secret is in a file of
 * this run, the resource group `rg-fleet-demo`, per cluster its VMs in the virtual network
 * `vnet-demo` (tagged `k8s-cluster=<cluster>`, the cluster's scope) and its network security
 * group `<cluster>-nsg`. The hub trusts the fake's generated certificate through the account's
 * `caCertificates`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AzureFake, nodeName } from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

export const AZURE_DEMO_SUBSCRIPTION = "00000000-0000-0000-0000-00000000d3e0";
export const AZURE_DEMO_REGION = "eastus";
export const AZURE_DEMO_ACCOUNT = "azure-main";
export const AZURE_DEMO_NETWORK = "vnet-demo";
const TENANT = "fleet-ccm-demo";
const CLIENT = "fleet-ccm-hub";
const RG = "rg-fleet-demo";
const CLUSTER_TAG = "k8s-cluster";

export class AzureLocalCloud implements LocalCloud {
  readonly provider = "azure";
  private ip = 3;

  private constructor(
    readonly fake: AzureFake,
    readonly secretFile: string,
    private readonly dir: string,
    private readonly scaleSetFrom: number,
  ) {}

  /**
   * `scaleSetFrom`: the nodes of that index on are instances of the cluster's uniform scale set
   * `<cluster>-vmss` (default: none), their NICs the scale set's.
   */
  static async start(
    clusters: readonly string[],
    opts: { readonly latencyMs?: number; readonly scaleSetFrom?: number } = {},
  ): Promise<AzureLocalCloud> {
    const fake = await AzureFake.start();
    if (opts.latencyMs) fake.setFaults({ latencyMs: opts.latencyMs });
    const secret = `demo-${Math.random().toString(36).slice(2)}`;
    fake.createSubscription(AZURE_DEMO_SUBSCRIPTION, TENANT, CLIENT, secret);
    fake.createResourceGroup(AZURE_DEMO_SUBSCRIPTION, RG);
    for (const c of clusters)
      fake.put(AZURE_DEMO_SUBSCRIPTION, RG, "networkSecurityGroups", `${c}-nsg`, {
        location: AZURE_DEMO_REGION,
        properties: { securityRules: [] },
      });
    const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-azure-"));
    const secretFile = join(dir, "client-secret");
    writeFileSync(secretFile, secret, { mode: 0o600 });
    return new AzureLocalCloud(fake, secretFile, dir, opts.scaleSetFrom ?? Number.POSITIVE_INFINITY);
  }

  accountsConfig() {
    return {
      accounts: [
        {
          name: AZURE_DEMO_ACCOUNT,
          provider: "azure",
          region: AZURE_DEMO_REGION,
          network: AZURE_DEMO_NETWORK,
          endpoint: this.fake.url,
          credentials: { file: this.secretFile },
          rateLimit: { perSecond: 50, burst: 100 },
          requestTimeoutMs: 5000,
          options: {
            tenantId: TENANT,
            clientId: CLIENT,
            subscriptionId: AZURE_DEMO_SUBSCRIPTION,
            resourceGroup: RG,
            securityGroupName: "{cluster}-nsg",
            authorityHost: this.fake.entra.url,
            caCertificates: this.fake.certificate.cert,
            operationPollMs: 100,
          },
        },
      ],
      env: {},
    };
  }

  clusterConfig(cluster: string) {
    return {
      account: AZURE_DEMO_ACCOUNT,
      scope: { network: AZURE_DEMO_NETWORK, tags: { [CLUSTER_TAG]: cluster } },
    };
  }

  /**
   * A VM (or scale-set VM) with its NIC in the demo's vnet; kubelet on Azure registers the VM's
   * computer name (a scale-set VM's is the scale set's name and its instance id).
   */
  addMachine(cluster: string, index: number): string {
    const scaleSet = index >= this.scaleSetFrom ? `${cluster}-vmss` : undefined;
    this.ip++;
    const vm = this.fake.createVm(AZURE_DEMO_SUBSCRIPTION, {
      resourceGroup: RG,
      name: scaleSet === undefined ? nodeName(cluster, index) : String(index),
      ...(scaleSet !== undefined && { scaleSet }),
      location: AZURE_DEMO_REGION,
      zone: String((index % 3) + 1),
      subnetId: `/subscriptions/${AZURE_DEMO_SUBSCRIPTION}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/${AZURE_DEMO_NETWORK}/subnets/nodes`,
      privateIp: `10.240.${Math.floor(this.ip / 250)}.${this.ip % 250}`,
      tags: { [CLUSTER_TAG]: cluster },
    });
    return String((vm.body["properties"] as { osProfile: { computerName: string } }).osProfile.computerName);
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  async close(): Promise<void> {
    await this.fake.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
