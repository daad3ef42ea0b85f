/** `accounts[].options` of an Azure account (no SDK here: the hub loads it only for Azure accounts). */
import { z } from "zod";

/** Azure resource-group names: 1-90 of letters, digits, `._-()`, not ending in a period. */
const resourceGroup = z.string().regex(/^[-\w._()]{0,89}[-\w_()]$/);
/** A name template: `{cluster}` stands for the cluster's name (clusters[].name). */
const template = z.string().min(1).max(80);
const budget = z.object({ perSecond: z.number().positive(), bucket: z.number().int().min(1) }).strict();

export const AzureOptionsSchema = z
  .object({
    /** The directory (tenant) of the app registration. */
    tenantId: z.string().min(1),
    /** The app registration's (or user-assigned identity's) client id. */
    clientId: z.string().min(1),
    subscriptionId: z.string().regex(/^[0-9a-fA-F-]{1,64}$/),
    /** The resource group of the clusters' load balancers, public IPs, NSG and route table (upstream: resourceGroup). */
    resourceGroup,
    /** Resource groups the nodes' VMs are in (default: resourceGroup). */
    nodeResourceGroups: z.array(resourceGroup).min(1).optional(),
    /** The network security group of a cluster's nodes (upstream: securityGroupName); absent: no NSG rules. */
    securityGroupName: template.optional(),
    /** The route table of a cluster (upstream: routeTableName). */
    routeTableName: template.default("{cluster}-routetable"),
    /** The subnet internal load balancers take their address from: `<vnet>/<subnet>` (the vnet is the cluster's network). */
    subnetName: z.string().min(1).max(80).default("nodes"),
    /** The resource group of the virtual network (upstream: vnetResourceGroup); default: resourceGroup. */
    vnetResourceGroup: resourceGroup.optional(),
    /** Entra ID's address (sovereign clouds, the fake); default https://login.microsoftonline.com. */
    authorityHost: z.string().url().optional(),
    /** Extra CA certificates (PEM) to trust for ARM and Entra ID (a private endpoint's CA, the fake's). */
    caCertificates: z.string().min(1).optional(),
    /**
     * How a new backend pool holds the nodes (upstream: loadBalancerBackendPoolConfigurationType):
     * `nodeIP` by address in the pool (one load-balancer write per node-set change), or
     * `nodeIPConfiguration` by each node NIC naming the pool (one NIC PUT per node that joins or
     * leaves; upstream's default). A pool that exists keeps the mode it is in.
     */
    backendPoolType: z.enum(["nodeIP", "nodeIPConfiguration"]).default("nodeIP"),
    /**
     * ARM's budgets of the subscription per second and bucket, by kind (default: the published
     * ones, quotas.ts ARM_LIMITS); only for a cloud that budgets otherwise (Azure Stack Hub, a
     * test's fake).
     */
    armLimits: z.object({ reads: budget, writes: budget, deletes: budget }).partial().strict().optional(),
    /** How long the hub waits before looking at a write still in `Updating`. */
    operationPollMs: z.number().int().min(0).max(60_000).default(2_000),
  })
  .strict();
export type AzureOptions = z.infer<typeof AzureOptionsSchema>;
