/**
 * The account's VPC (`accounts[].network`: a VPC label or id): its id, and each Linode's VPC
 * IPv4 addresses from one paged GET /vpcs/{id}/ips, kept a few seconds so that a batch of
 * lookups shares it. Without a network, no call at all.
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

export class VpcResolver {
  private vpcId: number | undefined;
  private ips:
    | { atMs: number; byLinode: Map<number, string[]>; withSubnet: Map<number, VpcAddress[]> }
    | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: LinodeClient,
  ) {}

  get configured(): boolean {
    return this.ctx.account.network !== undefined && this.ctx.account.network !== "";
  }

  /** The VPC's id (a numeric network is the id itself; a label is looked up once). */
  async id(signal?: AbortSignal): Promise<number> {
    const network = this.ctx.account.network ?? "";
    if (network === "") throw new CloudError(`account ${this.ctx.account.name} names no VPC (network)`);
    if (this.vpcId !== undefined) return this.vpcId;
    if (/^\d+$/.test(network)) {
      this.vpcId = Number(network);
      return this.vpcId;
    }
    const found = await this.client.list<WireVpc>(VPC_OPS.list, "/vpcs", {
      signal,
      filter: { label: network, region: this.ctx.account.region },
    });
    const vpc = found.find((v) => v.label === network && v.region === this.ctx.account.region);
    if (vpc === undefined)
      throw new CloudError(`VPC ${JSON.stringify(network)} not found in region ${this.ctx.account.region}`);
    this.vpcId = vpc.id;
    return vpc.id;
  }

  /**
   * A subnet by VPC and subnet label (the account's VPC and its first subnet where one is not
   * named), as the Linode CCM's backend-vpc-name and backend-subnet-name choose it.
   */
  async subnetByName(
    vpcLabel: string | undefined,
    subnetLabel: string | undefined,
    signal?: AbortSignal,
  ): Promise<number> {
    let vpcId: number;
    if (vpcLabel === undefined) vpcId = await this.id(signal);
    else {
      const found = await this.client.list<WireVpc>(VPC_OPS.list, "/vpcs", {
        signal,
        filter: { label: vpcLabel, region: this.ctx.account.region },
      });
      const vpc = found.find((v) => v.label === vpcLabel);
      if (vpc === undefined)
        throw new CloudError(`VPC ${JSON.stringify(vpcLabel)} not found in ${this.ctx.account.region}`);
      vpcId = vpc.id;
    }
    const subnets = await this.client.list<{ id: number; label: string }>(
      VPC_OPS.subnets,
      `/vpcs/${vpcId}/subnets`,
      {
        signal,
      },
    );
    const subnet = subnetLabel === undefined ? subnets[0] : subnets.find((x) => x.label === subnetLabel);
    if (subnet === undefined)
      throw new CloudError(`subnet ${JSON.stringify(subnetLabel ?? "(any)")} not found in VPC ${vpcId}`);
    return subnet.id;
  }

  /** Every entry of GET /vpcs/{id}/ips (interface addresses and routed ranges), all pages. */
  async entries(op: string, signal?: AbortSignal): Promise<WireVpcIp[]> {
    const id = await this.id(signal);
    return this.client.list<WireVpcIp>(op, `/vpcs/${id}/ips`, { signal });
  }

  /** Linode id -> its VPC IPv4 addresses; empty without a VPC. */
  async ipv4ByLinode(signal?: AbortSignal): Promise<ReadonlyMap<number, readonly string[]>> {
    return (await this.load(signal)).byLinode;
  }

  /** Linode id -> its VPC IPv4 addresses with their subnets (VPC backends); empty without a VPC. */
  async addressesByLinode(signal?: AbortSignal): Promise<ReadonlyMap<number, readonly VpcAddress[]>> {
    return (await this.load(signal)).withSubnet;
  }

  private async load(signal?: AbortSignal) {
    if (!this.configured)
      return { byLinode: new Map<number, string[]>(), withSubnet: new Map<number, VpcAddress[]>() };
    const now = this.ctx.clock.now();
    if (this.ips !== undefined && now - this.ips.atMs < IPS_TTL_MS) return this.ips;
    const byLinode = new Map<number, string[]>();
    const withSubnet = new Map<number, VpcAddress[]>();
    for (const e of await this.entries(VPC_OPS.ips, signal)) {
      if (e.address === null || e.address === undefined) continue;
      byLinode.set(e.linode_id, [...(byLinode.get(e.linode_id) ?? []), e.address]);
      withSubnet.set(e.linode_id, [
        ...(withSubnet.get(e.linode_id) ?? []),
        { address: e.address, subnetId: e.subnet_id },
      ]);
    }
    this.ips = { atMs: now, byLinode, withSubnet };
    return this.ips;
  }
}
