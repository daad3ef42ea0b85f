/**
 * EC2 instances as the contract's: providerIDs as cloud-provider-aws writes and reads them,
 * node names as private DNS names, addresses in upstream's order, and lookups of many
 * instances at once batched into one DescribeInstances.
 */
import {
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  type DescribeInstancesCommandOutput,
  type Filter,
  type Instance,
  paginateDescribeInstances,
} from "@aws-sdk/client-ec2";
import { ForbiddenError, InstanceNotFoundError, SuspectAnswerError } from "../../errors.js";
import {
  accountNetworks,
  type InstanceListPage,
  type InstanceMetadata,
  type InstanceState,
  type Instances,
  type NodeAddress,
  type ProviderContext,
} from "../../provider.js";
import { type AwsApi, allPages } from "./api.js";
import { hasCode } from "./errors.js";
import { LABEL_ZONE_ID, parseAwsProviderID, providerIDOf } from "./provider-id.js";

/** Values per EC2 filter. */
const BATCH_MAX = 200;

/**
 * EC2's states in the contract's terms, as upstream (aws.go InstanceExistsByProviderID,
 * InstanceShutdownByProviderID): `terminated` is gone, only `stopped` is shut down; `stopping`
 * and `shutting-down` are neither.
 */
function stateOf(name: string | undefined): InstanceState {
  switch (name) {
    case "pending":
    case "running":
    case "stopped":
    case "terminated":
      return name;
    default:
      return "unknown";
  }
}

/**
 * Upstream's extractNodeAddresses: every private IP of every in-use interface (by device
 * index), the public IP, the private DNS name as InternalDNS and Hostname, the public DNS name.
 */
export function addressesOf(i: Instance): NodeAddress[] {
  const out: NodeAddress[] = [];
  const enis = [...(i.NetworkInterfaces ?? [])]
    .filter((n) => n.Status === "in-use")
    .sort((a, b) => (a.Attachment?.DeviceIndex ?? 0) - (b.Attachment?.DeviceIndex ?? 0));
  for (const eni of enis)
    for (const ip of eni.PrivateIpAddresses ?? [])
      if (ip.PrivateIpAddress) out.push({ type: "InternalIP", address: ip.PrivateIpAddress });
  if (enis.length === 0 && i.PrivateIpAddress) out.push({ type: "InternalIP", address: i.PrivateIpAddress });
  if (i.PublicIpAddress) out.push({ type: "ExternalIP", address: i.PublicIpAddress });
  if (i.PrivateDnsName) {
    out.push({ type: "InternalDNS", address: i.PrivateDnsName });
    out.push({ type: "Hostname", address: i.PrivateDnsName });
  }
  if (i.PublicDnsName) out.push({ type: "ExternalDNS", address: i.PublicDnsName });
  return out;
}

interface Waiter {
  readonly id: string;
  resolve(meta: InstanceMetadata): void;
  reject(err: unknown): void;
}

export class AwsInstances implements Instances {
  private zoneIds: Promise<ReadonlyMap<string, string>> | undefined;
  private queue: Waiter[] = [];
  private scheduled = false;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: AwsApi,
    private readonly pageSize: number,
  ) {}

  parseProviderID(providerID: string): string | undefined {
    return parseAwsProviderID(providerID, this.ctx.account.region);
  }

  /**
   * Lookups arriving together are answered by one DescribeInstances filtered by their ids;
   * an id the filtered answer lacks is asked on its own, by InstanceIds, whose
   * InvalidInstanceID.NotFound is the only "not found" there is.
   */
  getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      return Promise.reject(
        new ForbiddenError(
          `providerID ${providerID} is not an AWS instance of region ${this.ctx.account.region}`,
        ),
      );
    return new Promise<InstanceMetadata>((resolve, reject) => {
      const onAbort = () => reject(signal?.reason ?? new Error("aborted"));
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => signal?.removeEventListener("abort", onAbort);
      this.queue.push({
        id,
        resolve: (m) => {
          done();
          // The node's own form (aws:////<id>, a bare id) is its identity: answered as asked.
          resolve(m.providerID === providerID ? m : { ...m, providerID });
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      if (!this.scheduled) {
        this.scheduled = true;
        // Everything asked in this turn of the event loop goes into one call.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.queue;
    this.queue = [];
    const byId = new Map<string, Waiter[]>();
    for (const w of waiting) byId.set(w.id, [...(byId.get(w.id) ?? []), w]);
    const ids = [...byId.keys()];
    for (let n = 0; n < ids.length; n += BATCH_MAX) void this.lookup(ids.slice(n, n + BATCH_MAX), byId);
  }

  private async lookup(ids: readonly string[], waiters: ReadonlyMap<string, Waiter[]>): Promise<void> {
    const settle = (id: string, r: { meta: InstanceMetadata } | { err: unknown }) => {
      for (const w of waiters.get(id) ?? []) {
        if ("meta" in r) w.resolve(r.meta);
        else w.reject(r.err);
      }
    };
    let found = new Map<string, InstanceMetadata>();
    if (ids.length > 1) {
      try {
        const all = await this.describe("instances.batch", [{ Name: "instance-id", Values: [...ids] }]);
        found = new Map(all.map((m) => [m.instanceID, m]));
      } catch (err) {
        for (const id of ids) settle(id, { err });
        return;
      }
    }
    await Promise.all(
      ids.map(async (id) => {
        const hit = found.get(id);
        if (hit !== undefined) return settle(id, { meta: hit });
        try {
          settle(id, { meta: await this.direct(id) });
        } catch (err) {
          settle(id, { err });
        }
      }),
    );
  }

  /** DescribeInstances(InstanceIds=[id]): exact, and authoritative when it says NotFound. */
  private async direct(id: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    let out: DescribeInstancesCommandOutput;
    try {
      out = await this.api.call("instances.get", signal, (abortSignal) =>
        this.api.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }), { abortSignal }),
      );
    } catch (err) {
      if (hasCode(err, "InvalidInstanceID.NotFound")) throw new InstanceNotFoundError(id, { cause: err });
      throw err;
    }
    const instances = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    const hit = instances.find((i) => i.InstanceId === id);
    if (hit === undefined || instances.length !== 1)
      throw new SuspectAnswerError(`DescribeInstances(${id}) answered ${instances.length} other instance(s)`);
    return this.toMetadata(hit, await this.zones(signal));
  }

  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    // A name with EC2's wildcards is no private DNS name: nothing can match it exactly.
    if (/[*?\\]/.test(name)) return [];
    const found = await this.describe(
      "instances.findByName",
      [{ Name: "private-dns-name", Values: [name] }],
      signal,
    );
    return found.filter((m) => m.name === name);
  }

  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    // The VPCs of every cluster of the account; a cluster without one: no filter at all.
    const networks = accountNetworks(this.ctx);
    const vpcs = networks.every((n) => n !== undefined) ? (networks as string[]) : [];
    const out = await this.api.onePage(
      paginateDescribeInstances,
      this.api.ec2,
      "instances.list",
      vpcs.length > 0 ? { Filters: [{ Name: "vpc-id", Values: vpcs }] } : {},
      { pageSize: this.pageSize, token: pageToken, signal },
    );
    const zones = await this.zones(signal);
    return {
      instances: (out.Reservations ?? []).flatMap((r) =>
        (r.Instances ?? []).map((i) => this.toMetadata(i, zones)),
      ),
      ...(out.NextToken !== undefined && out.NextToken !== "" && { nextPageToken: out.NextToken }),
    };
  }

  /** Every page of a filtered DescribeInstances. */
  private async describe(op: string, filters: Filter[], signal?: AbortSignal): Promise<InstanceMetadata[]> {
    const reservations = await allPages(
      paginateDescribeInstances(
        { client: this.api.paged(this.api.ec2, op, signal), pageSize: this.pageSize },
        { Filters: filters },
      ),
      (page) => page.Reservations,
    );
    const zones = await this.zones(signal);
    return reservations.flatMap((r) => (r.Instances ?? []).map((i) => this.toMetadata(i, zones)));
  }

  /** Zone name → zone id of the region, asked once (zone ids are fixed for an account). */
  private zones(signal?: AbortSignal): Promise<ReadonlyMap<string, string>> {
    this.zoneIds ??= this.api
      .call("zones.list", signal, (abortSignal) =>
        this.api.ec2.send(new DescribeAvailabilityZonesCommand({}), { abortSignal }),
      )
      .then(
        (out) =>
          new Map(
            (out.AvailabilityZones ?? []).flatMap((z) =>
              z.ZoneName && z.ZoneId ? [[z.ZoneName, z.ZoneId] as const] : [],
            ),
          ),
      )
      .catch((err: unknown) => {
        this.zoneIds = undefined;
        throw err;
      });
    return this.zoneIds;
  }

  private toMetadata(i: Instance, zones: ReadonlyMap<string, string>): InstanceMetadata {
    const id = i.InstanceId ?? "";
    const zone = i.Placement?.AvailabilityZone ?? "";
    const zoneId = zones.get(zone);
    const tags = Object.fromEntries(
      (i.Tags ?? []).flatMap((t) => (t.Key === undefined ? [] : [[t.Key, t.Value ?? ""]])),
    );
    return {
      providerID: providerIDOf(zone, id),
      instanceID: id,
      name: i.PrivateDnsName ?? "",
      instanceType: i.InstanceType ?? "",
      region: this.ctx.account.region,
      zone,
      addresses: addressesOf(i),
      state: stateOf(i.State?.Name),
      ...(i.VpcId !== undefined && { network: i.VpcId }),
      tags,
      ...(zoneId !== undefined && { additionalLabels: { [LABEL_ZONE_ID]: zoneId } }),
    };
  }
}
