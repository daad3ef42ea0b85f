/**
 * EC2 operations of the fake, with EC2's rules: exact by-id lookups that fail with
 * InvalidInstanceID.NotFound, filters with wildcards, MaxResults/NextToken pages, tags,
 * security groups and their rules (DependencyViolation while something uses a group), route
 * tables with blackholed routes once their instance is gone.
 */
import {
  encodeSeqToken,
  type FakeError,
  parsePageSize,
  parseSeqToken,
  type ResourceTable,
  type TablePage,
} from "../fake-kit/index.js";
import type { Decoded } from "./model.js";
import type { AwsQuotas } from "./quotas.js";
import {
  type AwsState,
  badRequest,
  type Caller,
  type Ec2Instance,
  type ElasticIp,
  type IngressRule,
  inScope,
  type Regional,
  type RouteTable,
  type SecurityGroup,
  STATE_CODES,
  type Subnet,
  scopeOf,
  tagList,
  tagsFrom,
  type Vpc,
  wildcard,
} from "./state.js";

export type Handler = (input: Decoded, caller: Caller) => Record<string, unknown>;

/** EC2's protocol names by number: a rule given the number is stored (and described) by name. */
const PROTOCOL_NAMES: Readonly<Record<string, string>> = {
  "1": "icmp",
  "6": "tcp",
  "17": "udp",
  "58": "icmpv6",
};
const NAMED_PROTOCOLS = new Set(Object.values(PROTOCOL_NAMES));
/** The characters and length EC2 takes in a rule's description. */
const RULE_DESCRIPTION = /^[a-zA-Z0-9. _\-:/()#,@[\]+=&;{}!$*]{0,255}$/;

/** tcp, udp, icmp, icmpv6 by name (or number), -1 for all, else a protocol number 0..255. */
function protocolOf(value: unknown): string {
  const given = String(value ?? "").toLowerCase();
  if (given === "") throw badRequest("InvalidParameterValue", "IpProtocol is required");
  const named = PROTOCOL_NAMES[given] ?? given;
  if (named === "-1" || NAMED_PROTOCOLS.has(named)) return named;
  if (/^\d+$/.test(named) && Number(named) <= 255) return named;
  throw badRequest("InvalidParameterValue", `Invalid value '${given}' for IP protocol. Unknown protocol.`);
}

/**
 * The port range EC2 keeps: tcp and udp ports; for icmp and icmpv6 the type (FromPort) and
 * code (ToPort), -1 for any (icmpv6 may leave both out: every type); none for the others,
 * which admit every port whatever the request says.
 */
function portsOf(protocol: string, p: Decoded): { fromPort?: number; toPort?: number } {
  if (!NAMED_PROTOCOLS.has(protocol)) return {};
  if (protocol === "icmpv6" && p.FromPort === undefined && p.ToPort === undefined)
    return { fromPort: -1, toPort: -1 };
  return {
    ...(p.FromPort !== undefined && { fromPort: Number(p.FromPort) }),
    ...(p.ToPort !== undefined && { toPort: Number(p.ToPort) }),
  };
}

/** The filters an operation takes, each with the values of an item it matches against. */
type FilterFields<T> = Readonly<Record<string, (item: T) => readonly string[]>>;

/**
 * The request's Filters as a predicate: every filter matches (AND), within one any value (OR),
 * values with EC2's wildcards; `tag:<key>` and `tag-key` on every operation.
 */
function filterOf<T extends Regional>(input: Decoded, fields: FilterFields<T>): (item: T) => boolean {
  const filters: Array<[string, RegExp[]]> = [];
  for (const f of (input.Filters ?? []) as Decoded[]) {
    const name = String(f.Name ?? "");
    if (fields[name] === undefined && !name.startsWith("tag:") && name !== "tag-key")
      throw badRequest("InvalidParameterValue", `The filter '${name}' is invalid`);
    filters.push([name, ((f.Values ?? []) as string[]).map(wildcard)]);
  }
  return (item) =>
    filters.every(([name, values]) => {
      let have: readonly string[];
      if (name.startsWith("tag:")) {
        const v = item.tags[name.slice(4)];
        have = v === undefined ? [] : [v];
      } else if (name === "tag-key") have = Object.keys(item.tags);
      else have = fields[name]!(item);
      return have.some((h) => values.some((re) => re.test(h)));
    });
}

function pageParams(input: Decoded, max = 1000): { size: number; after: number | undefined } {
  const raw = input.MaxResults;
  const size = parsePageSize(raw === undefined ? null : String(raw), {
    param: "MaxResults",
    defaultSize: max,
    min: 5,
    max,
    overMax: "refuse",
    code: "InvalidParameterValue",
  });
  const token = input.NextToken;
  return {
    size,
    after: parseSeqToken(token === undefined ? null : String(token), "NextToken", "InvalidNextToken"),
  };
}

/** A lookup by id in the caller's account and region; `notFound` when it is not there. */
function finder<T extends Regional>(
  table: ResourceTable<T>,
  notFound: (id: string) => FakeError,
): (id: string, caller: Caller) => T {
  return (id, caller) => {
    const item = inScope(table.get(id), caller);
    if (item === undefined) throw notFound(id);
    return item;
  };
}

/** A page's answer: its items under `key`, and NextToken when more follow. */
function pageAnswer<T>(
  key: string,
  page: TablePage<T>,
  render: (item: T) => unknown,
): Record<string, unknown> {
  return {
    [key]: page.items.map(render),
    ...(page.nextAfterSeq !== undefined && { NextToken: encodeSeqToken(page.nextAfterSeq) }),
  };
}

/**
 * The shape of EC2's Describe* operations: ids asked for must each exist (else `notFound`),
 * then one MaxResults/NextToken page of the caller's account and region, by ids and filters.
 */
function describe<T extends Regional>(d: {
  readonly table: ResourceTable<T>;
  /** The request member listing ids, e.g. VpcIds. */
  readonly ids: string;
  readonly notFound: (id: string) => FakeError;
  readonly filters: FilterFields<T>;
  /** The answer member listing the items, e.g. Vpcs. */
  readonly result: string;
  readonly render: (item: T) => unknown;
  readonly maxResults?: number;
}): Handler {
  return (input, caller) => {
    const ids = (input[d.ids] ?? []) as string[];
    const find = finder(d.table, d.notFound);
    for (const id of ids) find(id, caller);
    const keep = filterOf(input, d.filters);
    const { size, after } = pageParams(input, d.maxResults);
    const page = d.table.page(
      `${caller.account}/${caller.region}`,
      (item) => (ids.length === 0 || ids.includes(item.id)) && keep(item),
      size,
      after,
    );
    return pageAnswer(d.result, page, d.render);
  };
}

const INSTANCE_ID = /^i-[0-9a-f]{8,17}$/;

/** A locally administered MAC address, stable per instance. */
function macOf(id: string): string {
  const hex = id.slice(-10).padStart(10, "0");
  return `02:${hex.match(/../g)!.join(":")}`;
}

function association(i: Ec2Instance) {
  return { IpOwnerId: "amazon", PublicDnsName: i.publicDns ?? "", PublicIp: i.publicIp ?? "" };
}

export function ec2Handlers(
  state: AwsState,
  opts: { readonly quotas: () => AwsQuotas },
): Record<string, Handler> {
  const groupsOf = (i: Ec2Instance) =>
    i.securityGroupIds.map((id) => ({ GroupId: id, GroupName: state.securityGroups.get(id)?.name ?? id }));
  /** An instance as DescribeInstances answers for one launched from an EBS-backed HVM AMI (what AWS always sends). */
  const instanceXml = (i: Ec2Instance) => ({
    InstanceId: i.id,
    ImageId: i.imageId,
    AmiLaunchIndex: 0,
    Architecture: i.architecture,
    ClientToken: "",
    EbsOptimized: false,
    EnaSupport: true,
    Hypervisor: "xen",
    RootDeviceName: "/dev/xvda",
    RootDeviceType: "ebs",
    VirtualizationType: "hvm",
    BlockDeviceMappings:
      i.state === "terminated"
        ? []
        : [
            {
              DeviceName: "/dev/xvda",
              Ebs: {
                AttachTime: i.launchTime,
                DeleteOnTermination: true,
                Status: "attached",
                VolumeId: `vol-${i.id.slice(2)}`,
              },
            },
          ],
    CpuOptions: { CoreCount: 1, ThreadsPerCore: 2 },
    CapacityReservationSpecification: { CapacityReservationPreference: "open" },
    HibernationOptions: { Configured: false },
    MetadataOptions: {
      State: "applied",
      HttpTokens: "required",
      HttpPutResponseHopLimit: 2,
      HttpEndpoint: "enabled",
      HttpProtocolIpv6: "disabled",
      InstanceMetadataTags: "disabled",
    },
    EnclaveOptions: { Enabled: false },
    MaintenanceOptions: { AutoRecovery: "default", RebootMigration: "default" },
    PrivateDnsNameOptions: {
      HostnameType: "ip-name",
      EnableResourceNameDnsARecord: false,
      EnableResourceNameDnsAAAARecord: false,
    },
    PlatformDetails: "Linux/UNIX",
    UsageOperation: "RunInstances",
    UsageOperationUpdateTime: i.launchTime,
    CurrentInstanceBootMode: "legacy-bios",
    Monitoring: { State: "disabled" },
    ProductCodes: [],
    StateTransitionReason: "",
    InstanceType: i.type,
    LaunchTime: i.launchTime,
    Placement: {
      AvailabilityZone: i.az,
      AvailabilityZoneId: zonesOf(i.region).find((z) => z.name === i.az)?.id ?? i.az,
      GroupName: "",
      Tenancy: "default",
    },
    PrivateDnsName: i.privateDns,
    PrivateIpAddress: i.privateIp,
    ...(i.publicDns !== undefined ? { PublicDnsName: i.publicDns } : { PublicDnsName: "" }),
    ...(i.publicIp !== undefined && { PublicIpAddress: i.publicIp }),
    State: { Code: STATE_CODES[i.state], Name: i.state },
    ...(i.state !== "terminated" && { SubnetId: i.subnetId, VpcId: i.vpcId }),
    SecurityGroups: groupsOf(i),
    SourceDestCheck: i.sourceDestCheck,
    Tags: tagList(i.tags),
    NetworkInterfaces:
      i.state === "terminated"
        ? []
        : [
            {
              NetworkInterfaceId: `eni-${i.id.slice(2)}`,
              Description: "",
              InterfaceType: "interface",
              MacAddress: macOf(i.id),
              OwnerId: i.account,
              Groups: groupsOf(i),
              Ipv6Addresses: [],
              ...(i.publicIp !== undefined && { Association: association(i) }),
              Status: "in-use",
              SubnetId: i.subnetId,
              VpcId: i.vpcId,
              PrivateIpAddress: i.privateIp,
              PrivateDnsName: i.privateDns,
              SourceDestCheck: i.sourceDestCheck,
              Attachment: {
                AttachmentId: `eni-attach-${i.id.slice(2)}`,
                AttachTime: i.launchTime,
                DeleteOnTermination: true,
                DeviceIndex: 0,
                NetworkCardIndex: 0,
                Status: "attached",
              },
              PrivateIpAddresses: [
                {
                  Primary: true,
                  PrivateIpAddress: i.privateIp,
                  PrivateDnsName: i.privateDns,
                  ...(i.publicIp !== undefined && { Association: association(i) }),
                },
              ],
            },
          ],
  });
  const reservation = (i: Ec2Instance) => ({
    ReservationId: `r-${i.id.slice(2)}`,
    OwnerId: i.account,
    Groups: [],
    Instances: [instanceXml(i)],
  });
  const instanceFilters: FilterFields<Ec2Instance> = {
    "instance-id": (i) => [i.id],
    "private-dns-name": (i) => [i.privateDns],
    "instance-state-name": (i) => [i.state],
    "vpc-id": (i) => [i.vpcId],
    "subnet-id": (i) => [i.subnetId],
    "availability-zone": (i) => [i.az],
    "private-ip-address": (i) => [i.privateIp],
  };

  const groupNotFound = (id: string) =>
    badRequest("InvalidGroup.NotFound", `The security group '${id}' does not exist`);
  const group = finder(state.securityGroups, groupNotFound);
  const routeTableNotFound = (id: string) =>
    badRequest("InvalidRouteTableID.NotFound", `The routeTable ID '${id}' does not exist`);
  const routeTable = finder(state.routeTables, routeTableNotFound);
  type Taggable = Ec2Instance | Vpc | Subnet | SecurityGroup | RouteTable;
  /** The resources a CreateTags or DeleteTags names, each with its table; an unknown id fails all. */
  const tagged = (input: Decoded, caller: Caller): Array<[ResourceTable<Taggable>, Taggable]> =>
    ((input.Resources ?? []) as string[]).map((id) => {
      const table = state.taggable(id);
      const item = table === undefined ? undefined : inScope(table.get(id), caller);
      if (table === undefined || item === undefined)
        throw badRequest("InvalidID", `The ID '${id}' is not valid`);
      return [table, item];
    });

  /** IpPermissions flattened into EC2's one-source rules. */
  const rulesOf = (input: Decoded): IngressRule[] => {
    const out: IngressRule[] = [];
    for (const p of (input.IpPermissions ?? []) as Decoded[]) {
      const protocol = protocolOf(p.IpProtocol);
      const ports = portsOf(protocol, p);
      const noted = (d: Decoded) => {
        if (d.Description === undefined) return {};
        const description = String(d.Description);
        if (!RULE_DESCRIPTION.test(description))
          throw badRequest(
            "InvalidParameterValue",
            "Invalid rule description. Valid descriptions are strings less than 256 characters from the following set:  a-zA-Z0-9. _-:/()#,@[]+=&;{}!$*",
          );
        return { description };
      };
      for (const r of (p.IpRanges ?? []) as Decoded[])
        out.push({ protocol, ...ports, cidr: String(r.CidrIp), ...noted(r) });
      for (const r of (p.Ipv6Ranges ?? []) as Decoded[])
        out.push({ protocol, ...ports, cidrIpv6: String(r.CidrIpv6), ...noted(r) });
      for (const g of (p.UserIdGroupPairs ?? []) as Decoded[])
        out.push({ protocol, ...ports, groupId: String(g.GroupId), ...noted(g) });
    }
    return out;
  };
  /** EC2 knows a rule by protocol, ports and source; its description is not part of it. */
  const sameRule = (a: IngressRule, b: IngressRule) =>
    a.protocol === b.protocol &&
    a.fromPort === b.fromPort &&
    a.toPort === b.toPort &&
    a.cidr === b.cidr &&
    a.cidrIpv6 === b.cidrIpv6 &&
    a.groupId === b.groupId;
  const peerOf = (r: IngressRule) => r.cidr ?? r.cidrIpv6 ?? r.groupId;
  /** As DescribeSecurityGroups answers: one permission per protocol and port range, its sources together. */
  const permissionsXml = (rules: readonly IngressRule[], account: string) => {
    const byPorts = new Map<string, IngressRule[]>();
    for (const r of rules) {
      const key = `${r.protocol}|${r.fromPort ?? ""}|${r.toPort ?? ""}`;
      byPorts.set(key, [...(byPorts.get(key) ?? []), r]);
    }
    const note = (r: IngressRule) => (r.description === undefined ? {} : { Description: r.description });
    return [...byPorts.values()].map((same) => {
      const r = same[0]!;
      return {
        IpProtocol: r.protocol,
        ...(r.fromPort !== undefined && { FromPort: r.fromPort }),
        ...(r.toPort !== undefined && { ToPort: r.toPort }),
        IpRanges: same.flatMap((x) => (x.cidr === undefined ? [] : [{ CidrIp: x.cidr, ...note(x) }])),
        Ipv6Ranges: same.flatMap((x) =>
          x.cidrIpv6 === undefined ? [] : [{ CidrIpv6: x.cidrIpv6, ...note(x) }],
        ),
        PrefixListIds: [],
        UserIdGroupPairs: same.flatMap((x) =>
          x.groupId === undefined ? [] : [{ GroupId: x.groupId, UserId: account, ...note(x) }],
        ),
      };
    });
  };

  return {
    DescribeInstances(input, caller) {
      const ids = (input.InstanceIds ?? []) as string[];
      const keep = filterOf(input, instanceFilters);
      if (ids.length > 0) {
        if (input.MaxResults !== undefined)
          throw badRequest(
            "InvalidParameterCombination",
            "The parameter instancesSet cannot be used with the parameter maxResults",
          );
        const bad = ids.filter((id) => !INSTANCE_ID.test(id));
        if (bad.length > 0) throw badRequest("InvalidInstanceID.Malformed", `Invalid id: "${bad[0]}"`);
        const view = { nowMs: caller.nowMs, staleReadMs: caller.staleReadMs };
        const found = ids.map((id) => inScope(state.instances.read(id, view), caller));
        const missing = ids.filter((_, n) => found[n] === undefined);
        if (missing.length > 0)
          throw badRequest(
            "InvalidInstanceID.NotFound",
            `The instance ID${missing.length > 1 ? "s" : ""} '${missing.join(", ")}' do${missing.length > 1 ? "" : "es"} not exist`,
          );
        const list = [...new Map(found.map((i) => [i!.id, i!])).values()];
        return { Reservations: list.filter(keep).map(reservation) };
      }
      const { size, after } = pageParams(input);
      const view = { nowMs: caller.nowMs, staleReadMs: caller.staleReadMs, listStaleMs: caller.staleReadMs };
      const filters = (input.Filters ?? []) as Decoded[];
      const only = filters.length === 1 ? filters[0]! : undefined;
      const dnsValues = only?.Name === "private-dns-name" ? ((only.Values ?? []) as string[]) : [];
      const exactValue = dnsValues.length === 1 ? String(dnsValues[0]) : undefined;
      const page =
        exactValue !== undefined && !/[*?]/.test(exactValue)
          ? state.instances.pageIndex(
              "dns",
              `${caller.account}/${caller.region}/${exactValue}`,
              keep,
              size,
              after,
              view,
            )
          : state.instances.page(`${caller.account}/${caller.region}`, keep, size, after, view);
      return pageAnswer("Reservations", page, reservation);
    },

    ModifyInstanceAttribute(input, caller) {
      const id = String(input.InstanceId ?? "");
      const i = inScope(state.instances.get(id), caller);
      if (i === undefined)
        throw badRequest("InvalidInstanceID.NotFound", `The instance ID '${id}' does not exist`);
      const sdc = input.SourceDestCheck as Decoded | undefined;
      if (sdc?.Value === undefined)
        throw badRequest("InvalidParameterCombination", "only SourceDestCheck is supported by this fake");
      state.instances.replace({ ...i, sourceDestCheck: sdc.Value === true }, caller.nowMs);
      return {};
    },

    DescribeAvailabilityZones(_input, caller) {
      return {
        AvailabilityZones: zonesOf(caller.region).map((z) => ({
          ZoneName: z.name,
          ZoneId: z.id,
          RegionName: caller.region,
          State: "available",
          ZoneType: "availability-zone",
          OptInStatus: "opt-in-not-required",
          GroupName: caller.region,
          NetworkBorderGroup: caller.region,
          Messages: [],
        })),
      };
    },

    // Filtered lookups never fail on a missing id; VolumeIds do, for the whole call (as AWS's).
    DescribeVolumes: describe({
      table: state.volumes,
      ids: "VolumeIds",
      notFound: (id) => badRequest("InvalidVolume.NotFound", `The volume '${id}' does not exist.`),
      filters: {
        "volume-id": (v) => [v.id],
        "availability-zone": (v) => [v.az],
        status: (v) => [v.state],
        "attachment.instance-id": (v) => (v.attachedTo === undefined ? [] : [v.attachedTo.instanceId]),
      },
      result: "Volumes",
      maxResults: 500,
      render: (v) => ({
        Attachments:
          v.attachedTo === undefined
            ? []
            : [
                {
                  AttachTime: v.attachedTo.at,
                  Device: v.attachedTo.device,
                  InstanceId: v.attachedTo.instanceId,
                  State: "attached",
                  VolumeId: v.id,
                  DeleteOnTermination: false,
                },
              ],
        AvailabilityZone: v.az,
        AvailabilityZoneId: zonesOf(v.region).find((z) => z.name === v.az)?.id ?? "",
        CreateTime: v.createdAt,
        Encrypted: false,
        Size: v.sizeGiB,
        SnapshotId: "",
        State: v.state,
        VolumeId: v.id,
        Iops: 3000,
        Tags: tagList(v.tags),
        VolumeType: v.volumeType,
        MultiAttachEnabled: false,
        Throughput: 125,
      }),
    }),

    DescribeVpcs: describe({
      table: state.vpcs,
      ids: "VpcIds",
      notFound: (id) => badRequest("InvalidVpcID.NotFound", `The vpc ID '${id}' does not exist`),
      filters: { "vpc-id": (v) => [v.id] },
      result: "Vpcs",
      render: (v) => ({
        VpcId: v.id,
        CidrBlock: v.cidr,
        CidrBlockAssociationSet: [
          {
            AssociationId: `vpc-cidr-assoc-${v.id.slice(4)}`,
            CidrBlock: v.cidr,
            CidrBlockState: { State: "associated" },
          },
        ],
        DhcpOptionsId: `dopt-${v.id.slice(4)}`,
        InstanceTenancy: "default",
        IsDefault: false,
        BlockPublicAccessStates: { InternetGatewayBlockMode: "off" },
        State: "available",
        OwnerId: v.account,
        Tags: tagList(v.tags),
      }),
    }),

    // Not paged (AWS answers every allocation at once); by id or the allocation-id filter.
    DescribeAddresses(input, caller) {
      const ids = (input.AllocationIds ?? []) as string[];
      const find = finder(state.addresses, (id) =>
        badRequest("InvalidAllocationID.NotFound", `The allocation ID '${id}' does not exist`),
      );
      for (const id of ids) find(id, caller);
      const keep = filterOf(input, { "allocation-id": (a: ElasticIp) => [a.id] });
      const all = state.addresses
        .inScope(`${caller.account}/${caller.region}`)
        .filter((a) => (ids.length === 0 || ids.includes(a.id)) && keep(a));
      return {
        Addresses: all.map((a) => ({
          AllocationId: a.id,
          PublicIp: a.publicIp,
          Domain: "vpc",
          // AWS sends both for every allocation: a region's own border group, Amazon's pool.
          NetworkBorderGroup: a.region,
          PublicIpv4Pool: "amazon",
          ...(a.associationId !== undefined && { AssociationId: a.associationId }),
          Tags: tagList(a.tags),
        })),
      };
    },

    DescribeSubnets: describe({
      table: state.subnets,
      ids: "SubnetIds",
      notFound: (id) => badRequest("InvalidSubnetID.NotFound", `The subnet ID '${id}' does not exist`),
      filters: {
        "vpc-id": (s) => [s.vpcId],
        "subnet-id": (s) => [s.id],
        "availability-zone": (s) => [s.az],
      },
      result: "Subnets",
      render: (s) => ({
        SubnetId: s.id,
        VpcId: s.vpcId,
        AvailabilityZone: s.az,
        AvailabilityZoneId: zonesOf(s.region).find((z) => z.name === s.az)?.id ?? s.az,
        CidrBlock: s.cidr,
        // The block less AWS's five reserved addresses and the instances' own.
        AvailableIpAddressCount:
          2 ** (32 - Number(s.cidr.split("/")[1] ?? 32)) -
          5 -
          state.instances.inScope(scopeOf(s)).filter((i) => i.subnetId === s.id && i.state !== "terminated")
            .length,
        DefaultForAz: false,
        MapPublicIpOnLaunch: false,
        MapCustomerOwnedIpOnLaunch: false,
        AssignIpv6AddressOnCreation: false,
        Ipv6CidrBlockAssociationSet: [],
        EnableDns64: false,
        Ipv6Native: false,
        PrivateDnsNameOptionsOnLaunch: {
          HostnameType: "ip-name",
          EnableResourceNameDnsARecord: false,
          EnableResourceNameDnsAAAARecord: false,
        },
        BlockPublicAccessStates: { InternetGatewayBlockMode: "off" },
        SubnetArn: `arn:aws:ec2:${s.region}:${s.account}:subnet/${s.id}`,
        State: "available",
        OwnerId: s.account,
        Tags: tagList(s.tags),
      }),
    }),

    DescribeSecurityGroups: describe({
      table: state.securityGroups,
      ids: "GroupIds",
      notFound: groupNotFound,
      filters: {
        "group-id": (g) => [g.id],
        "group-name": (g) => [g.name],
        "vpc-id": (g) => [g.vpcId],
        "ip-permission.group-id": (g) =>
          g.ingress.flatMap((r) => (r.groupId === undefined ? [] : [r.groupId])),
      },
      result: "SecurityGroups",
      render: (g) => ({
        GroupId: g.id,
        GroupName: g.name,
        Description: g.description,
        VpcId: g.vpcId,
        OwnerId: g.account,
        IpPermissions: permissionsXml(g.ingress, g.account),
        IpPermissionsEgress: permissionsXml([{ protocol: "-1", cidr: "0.0.0.0/0" }], g.account),
        SecurityGroupArn: `arn:aws:ec2:${g.region}:${g.account}:security-group/${g.id}`,
        Tags: tagList(g.tags),
      }),
    }),

    CreateSecurityGroup(input, caller) {
      const name = String(input.GroupName ?? "");
      const vpcId = String(input.VpcId ?? "");
      if (inScope(state.vpcs.get(vpcId), caller) === undefined)
        throw badRequest("InvalidVpcID.NotFound", `The vpc ID '${vpcId}' does not exist`);
      const scope = `${caller.account}/${caller.region}`;
      if (state.securityGroups.inScope(scope).some((g) => g.vpcId === vpcId && g.name === name))
        throw badRequest(
          "InvalidGroup.Duplicate",
          `The security group '${name}' already exists for VPC '${vpcId}'`,
        );
      const tags: Record<string, string> = {};
      for (const spec of (input.TagSpecifications ?? []) as Decoded[])
        if (spec.ResourceType === "security-group") Object.assign(tags, tagsFrom(spec.Tags));
      const g: SecurityGroup = {
        id: state.hexId("sg"),
        account: caller.account,
        region: caller.region,
        tags,
        vpcId,
        name,
        description: String(input.Description ?? ""),
        ingress: [],
      };
      state.securityGroups.insert(g, caller.nowMs);
      return { GroupId: g.id, Tags: tagList(tags) };
    },

    DeleteSecurityGroup(input, caller) {
      const g = group(String(input.GroupId ?? ""), caller);
      const scope = `${caller.account}/${caller.region}`;
      const dependent =
        state.securityGroups.inScope(scope).some((o) => o.ingress.some((r) => r.groupId === g.id)) ||
        state.instances
          .inScope(scope)
          .some((i) => i.state !== "terminated" && i.securityGroupIds.includes(g.id)) ||
        state.classicLbs.inScope(scope).some((lb) => lb.securityGroups.includes(g.id)) ||
        state.v2Lbs.inScope(scope).some((lb) => lb.securityGroups.includes(g.id)) ||
        (state.lingeringEnis.get(g.id) ?? 0) > caller.nowMs;
      if (dependent) throw badRequest("DependencyViolation", `resource ${g.id} has a dependent object`);
      state.lingeringEnis.delete(g.id);
      state.securityGroups.remove(g.id, caller.nowMs);
      return { Return: true, GroupId: g.id };
    },

    AuthorizeSecurityGroupIngress(input, caller) {
      const g = group(String(input.GroupId ?? ""), caller);
      const rules = rulesOf(input);
      for (const [n, r] of rules.entries()) {
        if (r.groupId !== undefined) group(r.groupId, caller);
        // A rule the group has, or one the request names twice, whatever the descriptions.
        if (g.ingress.some((have) => sameRule(have, r)) || rules.slice(0, n).some((o) => sameRule(o, r)))
          throw badRequest(
            "InvalidPermission.Duplicate",
            `the specified rule "peer: ${peerOf(r)}, ${r.protocol}, ALLOW" already exists`,
          );
      }
      // Each source (CIDR or group) of a permission is one rule of the quota.
      const max = opts.quotas().inboundRulesPerSecurityGroup;
      if (g.ingress.length + rules.length > max)
        throw badRequest(
          "RulesPerSecurityGroupLimitExceeded",
          `The maximum number of rules per security group has been reached (${max} inbound rules per security group).`,
        );
      state.securityGroups.replace({ ...g, ingress: [...g.ingress, ...rules] }, caller.nowMs);
      return { Return: true };
    },

    RevokeSecurityGroupIngress(input, caller) {
      const g = group(String(input.GroupId ?? ""), caller);
      const rules = rulesOf(input);
      for (const r of rules)
        if (!g.ingress.some((have) => sameRule(have, r)))
          throw badRequest(
            "InvalidPermission.NotFound",
            "The specified rule does not exist in this security group.",
          );
      state.securityGroups.replace(
        { ...g, ingress: g.ingress.filter((have) => !rules.some((r) => sameRule(have, r))) },
        caller.nowMs,
      );
      return { Return: true };
    },

    CreateTags(input, caller) {
      const tags = tagsFrom(input.Tags);
      for (const [table, item] of tagged(input, caller)) {
        table.replace({ ...item, tags: { ...item.tags, ...tags } }, caller.nowMs);
      }
      return {};
    },

    DeleteTags(input, caller) {
      const tags = tagsFrom(input.Tags);
      for (const [table, item] of tagged(input, caller)) {
        const left = Object.fromEntries(Object.entries(item.tags).filter(([k]) => !(k in tags)));
        table.replace({ ...item, tags: left }, caller.nowMs);
      }
      return {};
    },

    DescribeRouteTables: describe({
      table: state.routeTables,
      ids: "RouteTableIds",
      notFound: routeTableNotFound,
      filters: {
        "route-table-id": (t) => [t.id],
        "vpc-id": (t) => [t.vpcId],
        "association.main": (t) => (t.main ? ["true"] : []),
        "association.subnet-id": (t) => t.subnetIds,
      },
      result: "RouteTables",
      maxResults: 100,
      render: (t) => ({
        RouteTableId: t.id,
        VpcId: t.vpcId,
        OwnerId: t.account,
        // The VPC's main table, then one association per subnet given this table.
        Associations: [
          ...(t.main ? [{ Main: true }] : []),
          ...t.subnetIds.map((SubnetId) => ({ Main: false, SubnetId })),
        ].map((a, n) => ({
          ...a,
          RouteTableAssociationId: `rtbassoc-${t.id.slice(4, -2)}${n.toString(16).padStart(2, "0")}`,
          RouteTableId: t.id,
          AssociationState: { State: "associated" },
        })),
        PropagatingVgws: [],
        Tags: tagList(t.tags),
        Routes: t.routes.map((r) => {
          const target = r.instanceId === undefined ? undefined : state.instances.get(r.instanceId);
          const live = r.instanceId === undefined || (target !== undefined && target.state !== "terminated");
          return {
            DestinationCidrBlock: r.cidr,
            ...(r.gatewayId !== undefined && { GatewayId: r.gatewayId }),
            ...(r.instanceId !== undefined && {
              InstanceId: r.instanceId,
              InstanceOwnerId: t.account,
              NetworkInterfaceId: `eni-${r.instanceId.slice(2)}`,
            }),
            Origin: r.origin,
            State: live ? "active" : "blackhole",
          };
        }),
      }),
    }),

    CreateRoute(input, caller) {
      const t = routeTable(String(input.RouteTableId ?? ""), caller);
      const cidr = String(input.DestinationCidrBlock ?? "");
      const instanceId = input.InstanceId === undefined ? undefined : String(input.InstanceId);
      const gatewayId = input.GatewayId === undefined ? undefined : String(input.GatewayId);
      if (instanceId !== undefined) {
        const i = inScope(state.instances.get(instanceId), caller);
        if (i === undefined || i.state === "terminated")
          throw badRequest("InvalidInstanceID.NotFound", `The instance ID '${instanceId}' does not exist`);
        if (i.vpcId !== t.vpcId)
          throw badRequest("InvalidParameterValue", `instance ${instanceId} is not in the route table's VPC`);
      } else if (gatewayId === undefined) throw badRequest("MissingParameter", "a route target is required");
      if (t.routes.some((r) => r.cidr === cidr))
        throw badRequest("RouteAlreadyExists", `The route identified by ${cidr} already exists.`);
      state.routeTables.replace(
        {
          ...t,
          routes: [
            ...t.routes,
            {
              cidr,
              origin: "CreateRoute",
              ...(instanceId !== undefined && { instanceId }),
              ...(gatewayId !== undefined && { gatewayId }),
            },
          ],
        },
        caller.nowMs,
      );
      return { Return: true };
    },

    DeleteRoute(input, caller) {
      const t = routeTable(String(input.RouteTableId ?? ""), caller);
      const cidr = String(input.DestinationCidrBlock ?? "");
      const route = t.routes.find((r) => r.cidr === cidr);
      if (route === undefined)
        throw badRequest(
          "InvalidRoute.NotFound",
          `no route with destination-cidr-block ${cidr} in route table ${t.id}`,
        );
      if (route.origin === "CreateRouteTable")
        throw badRequest("InvalidParameterValue", `cannot remove local route ${cidr} in route table ${t.id}`);
      state.routeTables.replace({ ...t, routes: t.routes.filter((r) => r !== route) }, caller.nowMs);
      return {};
    },
  };
}

/** Three zones per region, named and numbered as AWS does (zone ids differ per account upstream; here per region). */
export function zonesOf(region: string): { name: string; id: string }[] {
  const short = region.replace(
    /^(\w\w)-(\w)\w*-(\d+)$/,
    (_, a: string, b: string, n: string) => `${a}${b}${n}`,
  );
  return ["a", "b", "c"].map((letter, n) => ({ name: `${region}${letter}`, id: `${short}-az${n + 1}` }));
}
