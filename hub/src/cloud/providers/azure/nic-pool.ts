/**
 * A NIC-based backend pool (cloud-provider-azure's `nodeIPConfiguration`, its default): the pool
 * holds no addresses; each node's primary NIC names it in its primary IP configuration's
 * `loadBalancerBackendAddressPools`, changed by a PUT of that NIC with `If-Match`. A node-set
 * change costs one NIC PUT per node that joins or leaves (upstream's EnsureHostsInPool and
 * EnsureBackendPoolDeleted do the same), never one for a NIC already right.
 *
 * Scale-set VMs are left out: their NICs are the scale set's and change through its model
 * (upstream updates the VMSS), which this provider does not write.
 */
import type { BackendAddressPool, NetworkInterface } from "@azure/arm-network";
import type { AzureApi } from "./api.js";
import { type AzureInstances, primaryIpConfig } from "./instances.js";
import { parseVmId } from "./names.js";

export type PoolMode = "nodeIP" | "nodeIPConfiguration";

const lower = (s: string | undefined) => (s ?? "").toLowerCase();

/**
 * The mode a pool is in: NIC-based when NICs name it, IP-based when it holds addresses, else
 * the account's choice. A pool cloud-provider-azure built keeps its mode (ARM takes a pool of
 * one kind only), so adopting it needs no option.
 */
export function poolMode(pool: BackendAddressPool | undefined, configured: PoolMode): PoolMode {
  if ((pool?.backendIPConfigurations ?? []).length > 0) return "nodeIPConfiguration";
  if ((pool?.loadBalancerBackendAddresses ?? []).length > 0) return "nodeIP";
  return configured;
}

export class NicPools {
  constructor(
    private readonly api: AzureApi,
    private readonly instances: AzureInstances,
  ) {}

  /**
   * Makes the NICs that name `poolId` exactly the primary NICs of `backends` (instance ids; none:
   * every NIC leaves): one PUT per NIC to change. `pending` while a NIC write is still running.
   */
  async sync(
    poolId: string,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ pending: boolean }> {
    const want = new Set(backends.filter((b) => parseVmId(b)?.scaleSet === undefined).map(lower));
    let pending = false;
    for (const rg of this.instances.groups)
      for (const nic of (await this.instances.nicsOf(rg, signal)).values()) {
        const vm = nic.virtualMachine?.id;
        const id = vm === undefined ? undefined : this.instances.parseProviderID(`azure://${vm}`);
        if (id !== undefined && parseVmId(id)?.scaleSet !== undefined) continue;
        const member = id !== undefined && want.has(lower(id)) && nic.primary !== false;
        const next = withPool(nic, poolId, member);
        if (next === undefined) continue;
        if (nic.provisioningState === "Updating") {
          pending = true;
          continue;
        }
        pending = (await this.put(rg, next, nic.etag, signal)) || pending;
      }
    return { pending };
  }

  /** Writes a NIC with If-Match; whether the write is still running. */
  private async put(rg: string, nic: NetworkInterface, etag: string | undefined, signal?: AbortSignal) {
    const name = nic.name ?? "";
    return this.api.call(
      "networkInterfaces.createOrUpdate",
      async (c, o) => {
        const poller = await c.network.networkInterfaces.beginCreateOrUpdate(rg, name, nic, {
          ...o,
          ...(etag !== undefined && { requestOptions: { customHeaders: { "If-Match": etag } } }),
        });
        return !poller.isDone();
      },
      signal,
    );
  }
}

/**
 * The NIC with its primary IP configuration naming the pool (`member`) or no IP configuration
 * naming it; undefined when it already is so.
 */
function withPool(nic: NetworkInterface, poolId: string, member: boolean): NetworkInterface | undefined {
  const primary = primaryIpConfig(nic);
  let changed = false;
  const ipConfigurations = (nic.ipConfigurations ?? []).map((ipc) => {
    const refs = ipc.loadBalancerBackendAddressPools ?? [];
    const has = refs.some((r) => lower(r.id) === lower(poolId));
    const should = member && ipc === primary;
    if (has === should) return ipc;
    changed = true;
    return {
      ...ipc,
      loadBalancerBackendAddressPools: should
        ? [...refs, { id: poolId }]
        : refs.filter((r) => lower(r.id) !== lower(poolId)),
    };
  });
  return changed ? { ...(JSON.parse(JSON.stringify(nic)) as NetworkInterface), ipConfigurations } : undefined;
}
