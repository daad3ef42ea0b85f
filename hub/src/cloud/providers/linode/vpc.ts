/**
 * A cluster's VPC (`clusters[].network`, else `accounts[].network`: a VPC label or id): its id,
 * and each Linode's VPC IPv4 addresses from one paged GET /vpcs/{id}/ips, kept a few seconds
 * per VPC so that a batch of lookups shares it. Without a network, no call at all.
 */
import { CloudError } from "../../errors.js";
import type { ProviderContext } from "../../provider.js";
import type { LinodeClient } from "./client.js";
import type { WireVpc, WireVpcIp } from "./wire.js";

const IPS_TTL_MS = 5_000;

export interface VpcAddress {
  readonly address: string;
  readonly subnetId: number;
}

export const VPC_OPS = { list: "vpcs.list", ips: "vpcs.ips.list", subnets: "vpcs.subnets.list" } as const;

/** A VPC a call names: the cluster's network (ClusterTarget.network), a label or an id; "" or absent is none. */
export type VpcName = string | undefined;

/** Whether `network` names a VPC. */
export function hasVpc(network: VpcName): network is string {
  return network !== undefined && network !== "";
}

export class VpcResolver {
  /** VPC id by label (a numeric network is the id itself). */
  private readonly ids = new Map<string, number>();
  private readonly ips = new Map<
    string,
    { atMs: number; byLinode: Map<number, string[]>; withSubnet: Map<number, VpcAddress[]> }
  >();

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: LinodeClient,
  ) {}

  /** The VPC's id (a numeric network is the id itself; a label is looked up once). */
  async id(network: VpcName, signal?: AbortSignal): Promise<number> {
    if (!hasVpc(network))
      throw new CloudError("this cluster names no VPC (clusters[].network or accounts[].network)");
    const known = this.ids.get(network);
    if (known !== undefined) return known;
    if (/^\d+$/.test(network)) return Number(network);
    const found = await this.client.list<WireVpc>(VPC_OPS.list, "/vpcs", {
      signal,
      filter: { label: network, region: this.ctx.account.region },
    });
    const vpc = found.find((v) => v.label === network && v.region === this.ctx.account.region);
    if (vpc === undefined)
      throw new CloudError(`VPC ${JSON.stringify(network)} not found in region ${this.ctx.account.region}`);
    this.ids.set(network, vpc.id);
    return vpc.id;
  }

  /**
   * A subnet by VPC and subnet label (`network`'s VPC and its first subnet where one is not
   * named), as the Linode CCM's backend-vpc-name and backend-subnet-name choose it.
   */
  async subnetByName(
    network: VpcName,
    vpcLabel: string | undefined,
    subnetLabel: string | undefined,
    signal?: AbortSignal,
  ): Promise<number> {
    const vpcId = await this.id(vpcLabel ?? network, signal);
    const subnets = await this.client.list<{ id: number; label: string }>(
      VPC_OPS.subnets,
      `/vpcs/${vpcId}/subnets`,
      { signal },
    );
    const subnet = subnetLabel === undefined ? subnets[0] : subnets.find((x) => x.label === subnetLabel);
    if (subnet === undefined)
      throw new CloudError(`subnet ${JSON.stringify(subnetLabel ?? "(any)")} not found in VPC ${vpcId}`);
    return subnet.id;
  }

  /** Every entry of GET /vpcs/{id}/ips (interface addresses and routed ranges), all pages. */
  async entries(network: VpcName, op: string, signal?: AbortSignal): Promise<WireVpcIp[]> {
    const id = await this.id(network, signal);
    return this.client.list<WireVpcIp>(op, `/vpcs/${id}/ips`, { signal });
  }

  /** Linode id -> its IPv4 addresses in `network`'s VPC; empty without a VPC. */
  async ipv4ByLinode(
    network: VpcName,
    signal?: AbortSignal,
  ): Promise<ReadonlyMap<number, readonly string[]>> {
    return (await this.load(network, signal)).byLinode;
  }

  /** Linode id -> its IPv4 addresses in `network`'s VPC with their subnets (VPC backends); empty without a VPC. */
  async addressesByLinode(
    network: VpcName,
    signal?: AbortSignal,
  ): Promise<ReadonlyMap<number, readonly VpcAddress[]>> {
    return (await this.load(network, signal)).withSubnet;
  }

  /**
   * Each Linode's VPC among `networks` (the account's clusters'), with its IPv4 addresses
   * there: the first of them it has an address in (a Linode has one VPC interface).
   */
  async membership(
    networks: readonly VpcName[],
    signal?: AbortSignal,
  ): Promise<ReadonlyMap<number, { readonly network: string; readonly ipv4: readonly string[] }>> {
    const out = new Map<number, { network: string; ipv4: readonly string[] }>();
    for (const network of networks) {
      if (!hasVpc(network)) continue;
      for (const [id, ipv4] of await this.ipv4ByLinode(network, signal))
        if (!out.has(id)) out.set(id, { network, ipv4 });
    }
    return out;
  }

  private async load(network: VpcName, signal?: AbortSignal) {
    if (!hasVpc(network))
      return { byLinode: new Map<number, string[]>(), withSubnet: new Map<number, VpcAddress[]>() };
    const now = this.ctx.clock.now();
    const cached = this.ips.get(network);
    if (cached !== undefined && now - cached.atMs < IPS_TTL_MS) return cached;
    const byLinode = new Map<number, string[]>();
    const withSubnet = new Map<number, VpcAddress[]>();
    for (const e of await this.entries(network, VPC_OPS.ips, signal)) {
      if (e.address === null || e.address === undefined) continue;
      byLinode.set(e.linode_id, [...(byLinode.get(e.linode_id) ?? []), e.address]);
      withSubnet.set(e.linode_id, [
        ...(withSubnet.get(e.linode_id) ?? []),
        { address: e.address, subnetId: e.subnet_id },
      ]);
    }
    const loaded = { atMs: now, byLinode, withSubnet };
    this.ips.set(network, loaded);
    return loaded;
  }
}
