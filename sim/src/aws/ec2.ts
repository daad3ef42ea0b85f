/**
 * EC2 operations of the fake, with EC2's rules: exact by-id lookups that fail with
 * InvalidInstanceID.NotFound, filters with wildcards, MaxResults/NextToken pages, tags,
 * security groups and their rules (DependencyViolation while something uses a group), route
 * tables with blackholed routes once their instance is gone.
 */
import { encodeSeqToken, parsePageSize, parseSeqToken } from "../fake-kit/index.js";
import type { Decoded } from "./model.js";
import {
  type AwsState,
  badRequest,
  type Caller,
  type Ec2Instance,
  type IngressRule,
  inScope,
  type SecurityGroup,
  STATE_CODES,
  tagList,
  tagsFrom,
  wildcard,
} from "./state.js";

export type Handler = (input: Decoded, caller: Caller) => Record<string, unknown>;

type Filters = ReadonlyMap<string, readonly RegExp[]>;

function filtersOf(input: Decoded, known: readonly string[]): Filters {
  const out = new Map<string, RegExp[]>();
  for (const f of (input.Filters ?? []) as Decoded[]) {
    const name = String(f.Name ?? "");
    if (!known.includes(name) && !name.startsWith("tag:") && name !== "tag-key")
      throw badRequest("InvalidParameterValue", `The filter '${name}' is invalid`);
    out.set(name, ((f.Values ?? []) as string[]).map(wildcard));
  }
  return out;
}

/** Every filter matches (AND); within one, any value (OR). */
function matches(
  filters: Filters,
  tags: Readonly<Record<string, string>>,
  field: (name: string) => readonly string[],
): boolean {
  for (const [name, values] of filters) {
    let have: readonly string[];
    if (name.startsWith("tag:")) {
      const v = tags[name.slice(4)];
      have = v === undefined ? [] : [v];
    } else if (name === "tag-key") have = Object.keys(tags);
    else have = field(name);
    if (!have.some((h) => values.some((re) => re.test(h)))) return false;
  }
  return true;
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

const INSTANCE_ID = /^i-[0-9a-f]{8,17}$/;

export function ec2Handlers(state: AwsState): Record<string, Handler> {
  const instanceXml = (i: Ec2Instance) => ({
    InstanceId: i.id,
    InstanceType: i.type,
    LaunchTime: i.launchTime,
    Placement: { AvailabilityZone: i.az, Tenancy: "default" },
    PrivateDnsName: i.privateDns,
    PrivateIpAddress: i.privateIp,
    ...(i.publicDns !== undefined ? { PublicDnsName: i.publicDns } : { PublicDnsName: "" }),
    ...(i.publicIp !== undefined && { PublicIpAddress: i.publicIp }),
    State: { Code: STATE_CODES[i.state], Name: i.state },
    ...(i.state !== "terminated" && { SubnetId: i.subnetId, VpcId: i.vpcId }),
    SecurityGroups: i.securityGroupIds.map((id) => ({
      GroupId: id,
      GroupName: state.securityGroups.get(id)?.name ?? id,
    })),
    SourceDestCheck: i.sourceDestCheck,
    Tags: tagList(i.tags),
    NetworkInterfaces:
      i.state === "terminated"
        ? []
        : [
            {
              NetworkInterfaceId: `eni-${i.id.slice(2)}`,
              Status: "in-use",
              SubnetId: i.subnetId,
              VpcId: i.vpcId,
              PrivateIpAddress: i.privateIp,
              PrivateDnsName: i.privateDns,
              SourceDestCheck: i.sourceDestCheck,
              Attachment: { DeviceIndex: 0, Status: "attached" },
              PrivateIpAddresses: [
                { Primary: true, PrivateIpAddress: i.privateIp, PrivateDnsName: i.privateDns },
              ],
            },
          ],
  });
  const reservation = (i: Ec2Instance) => ({
    ReservationId: `r-${i.id.slice(2)}`,
    OwnerId: i.account,
    Instances: [instanceXml(i)],
  });
  const INSTANCE_FILTERS = [
    "instance-id",
    "private-dns-name",
    "instance-state-name",
    "vpc-id",
    "subnet-id",
    "availability-zone",
    "private-ip-address",
  ];
  const instanceField = (i: Ec2Instance) => (name: string) =>
    ({
      "instance-id": [i.id],
      "private-dns-name": [i.privateDns],
      "instance-state-name": [i.state],
      "vpc-id": [i.vpcId],
      "subnet-id": [i.subnetId],
      "availability-zone": [i.az],
      "private-ip-address": [i.privateIp],
    })[name] ?? [];

  const group = (id: string, caller: Caller): SecurityGroup => {
    const g = inScope(state.securityGroups.get(id), caller);
    if (g === undefined)
      throw badRequest("InvalidGroup.NotFound", `The security group '${id}' does not exist`);
    return g;
  };

  /** IpPermissions flattened into EC2's one-source rules. */
  const rulesOf = (input: Decoded): IngressRule[] => {
    const out: IngressRule[] = [];
    for (const p of (input.IpPermissions ?? []) as Decoded[]) {
      const protocol = String(p.IpProtocol ?? "");
      if (protocol === "") throw badRequest("InvalidParameterValue", "IpProtocol is required");
      const ports =
        protocol === "-1"
          ? {}
          : {
              ...(p.FromPort !== undefined && { fromPort: Number(p.FromPort) }),
              ...(p.ToPort !== undefined && { toPort: Number(p.ToPort) }),
            };
      for (const r of (p.IpRanges ?? []) as Decoded[])
        out.push({ protocol, ...ports, cidr: String(r.CidrIp) });
      for (const g of (p.UserIdGroupPairs ?? []) as Decoded[])
        out.push({ protocol, ...ports, groupId: String(g.GroupId) });
    }
    return out;
  };
  const sameRule = (a: IngressRule, b: IngressRule) =>
    a.protocol === b.protocol &&
    a.fromPort === b.fromPort &&
    a.toPort === b.toPort &&
    a.cidr === b.cidr &&
    a.groupId === b.groupId;
  const permissionsXml = (rules: readonly IngressRule[]) =>
    rules.map((r) => ({
      IpProtocol: r.protocol,
      ...(r.fromPort !== undefined && { FromPort: r.fromPort }),
      ...(r.toPort !== undefined && { ToPort: r.toPort }),
      IpRanges: r.cidr === undefined ? [] : [{ CidrIp: r.cidr }],
      UserIdGroupPairs: r.groupId === undefined ? [] : [{ GroupId: r.groupId }],
    }));

  return {
    DescribeInstances(input, caller) {
      const ids = (input.InstanceIds ?? []) as string[];
      const filters = filtersOf(input, INSTANCE_FILTERS);
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
        return {
          Reservations: list.filter((i) => matches(filters, i.tags, instanceField(i))).map(reservation),
        };
      }
      const { size, after } = pageParams(input);
      const view = { nowMs: caller.nowMs, staleReadMs: caller.staleReadMs, listStaleMs: caller.staleReadMs };
      const keep = (i: Ec2Instance) => matches(filters, i.tags, instanceField(i));
      const dns = filters.get("private-dns-name");
      const exactDns = filters.size === 1 && dns?.length === 1 ? (input.Filters as Decoded[])[0] : undefined;
      const exactValue = exactDns ? String(((exactDns.Values ?? []) as string[])[0]) : undefined;
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
      return {
        Reservations: page.items.map(reservation),
        ...(page.nextAfterSeq !== undefined && { NextToken: encodeSeqToken(page.nextAfterSeq) }),
      };
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
        })),
      };
    },

    DescribeVpcs(input, caller) {
      const ids = (input.VpcIds ?? []) as string[];
      for (const id of ids)
        if (inScope(state.vpcs.get(id), caller) === undefined)
          throw badRequest("InvalidVpcID.NotFound", `The vpc ID '${id}' does not exist`);
      const filters = filtersOf(input, ["vpc-id"]);
      const vpcs = state.vpcs
        .inScope(`${caller.account}/${caller.region}`)
        .filter((v) => (ids.length === 0 || ids.includes(v.id)) && matches(filters, v.tags, () => [v.id]));
      return {
        Vpcs: vpcs.map((v) => ({
          VpcId: v.id,
          CidrBlock: v.cidr,
          State: "available",
          OwnerId: v.account,
          Tags: tagList(v.tags),
        })),
      };
    },

    DescribeSubnets(input, caller) {
      const ids = (input.SubnetIds ?? []) as string[];
      for (const id of ids)
        if (inScope(state.subnets.get(id), caller) === undefined)
          throw badRequest("InvalidSubnetID.NotFound", `The subnet ID '${id}' does not exist`);
      const filters = filtersOf(input, ["vpc-id", "subnet-id", "availability-zone"]);
      const { size, after } = pageParams(input);
      const page = state.subnets.page(
        `${caller.account}/${caller.region}`,
        (s) =>
          (ids.length === 0 || ids.includes(s.id)) &&
          matches(
            filters,
            s.tags,
            (n) => ({ "vpc-id": [s.vpcId], "subnet-id": [s.id], "availability-zone": [s.az] })[n] ?? [],
          ),
        size,
        after,
      );
      return {
        Subnets: page.items.map((s) => ({
          SubnetId: s.id,
          VpcId: s.vpcId,
          AvailabilityZone: s.az,
          AvailabilityZoneId: zonesOf(caller.region).find((z) => z.name === s.az)?.id ?? s.az,
          CidrBlock: s.cidr,
          State: "available",
          OwnerId: s.account,
          Tags: tagList(s.tags),
        })),
        ...(page.nextAfterSeq !== undefined && { NextToken: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

    DescribeSecurityGroups(input, caller) {
      const ids = (input.GroupIds ?? []) as string[];
      for (const id of ids) group(id, caller);
      const filters = filtersOf(input, ["group-id", "group-name", "vpc-id", "ip-permission.group-id"]);
      const { size, after } = pageParams(input);
      const page = state.securityGroups.page(
        `${caller.account}/${caller.region}`,
        (g) =>
          (ids.length === 0 || ids.includes(g.id)) &&
          matches(
            filters,
            g.tags,
            (n) =>
              ({
                "group-id": [g.id],
                "group-name": [g.name],
                "vpc-id": [g.vpcId],
                "ip-permission.group-id": g.ingress.flatMap((r) =>
                  r.groupId === undefined ? [] : [r.groupId],
                ),
              })[n] ?? [],
          ),
        size,
        after,
      );
      return {
        SecurityGroups: page.items.map((g) => ({
          GroupId: g.id,
          GroupName: g.name,
          Description: g.description,
          VpcId: g.vpcId,
          OwnerId: g.account,
          IpPermissions: permissionsXml(g.ingress),
          IpPermissionsEgress: permissionsXml([{ protocol: "-1", cidr: "0.0.0.0/0" }]),
          Tags: tagList(g.tags),
        })),
        ...(page.nextAfterSeq !== undefined && { NextToken: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

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
      for (const r of rules) {
        if (r.groupId !== undefined) group(r.groupId, caller);
        if (g.ingress.some((have) => sameRule(have, r)))
          throw badRequest(
            "InvalidPermission.Duplicate",
            `the specified rule "peer: ${r.cidr ?? r.groupId}, ${r.protocol}, ALLOW" already exists`,
          );
      }
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
      for (const id of (input.Resources ?? []) as string[]) {
        const table = state.taggable(id);
        const item = table === undefined ? undefined : inScope(table.get(id), caller);
        if (table === undefined || item === undefined)
          throw badRequest("InvalidID", `The ID '${id}' is not valid`);
        table.replace({ ...item, tags: { ...item.tags, ...tags } }, caller.nowMs);
      }
      return {};
    },

    DeleteTags(input, caller) {
      const tags = tagsFrom(input.Tags);
      for (const id of (input.Resources ?? []) as string[]) {
        const table = state.taggable(id);
        const item = table === undefined ? undefined : inScope(table.get(id), caller);
        if (table === undefined || item === undefined)
          throw badRequest("InvalidID", `The ID '${id}' is not valid`);
        const left = Object.fromEntries(Object.entries(item.tags).filter(([k]) => !(k in tags)));
        table.replace({ ...item, tags: left }, caller.nowMs);
      }
      return {};
    },

    DescribeRouteTables(input, caller) {
      const ids = (input.RouteTableIds ?? []) as string[];
      for (const id of ids)
        if (inScope(state.routeTables.get(id), caller) === undefined)
          throw badRequest("InvalidRouteTableID.NotFound", `The routeTable ID '${id}' does not exist`);
      const filters = filtersOf(input, ["route-table-id", "vpc-id"]);
      const { size, after } = pageParams(input, 100);
      const page = state.routeTables.page(
        `${caller.account}/${caller.region}`,
        (t) =>
          (ids.length === 0 || ids.includes(t.id)) &&
          matches(filters, t.tags, (n) => ({ "route-table-id": [t.id], "vpc-id": [t.vpcId] })[n] ?? []),
        size,
        after,
      );
      return {
        RouteTables: page.items.map((t) => ({
          RouteTableId: t.id,
          VpcId: t.vpcId,
          OwnerId: t.account,
          Tags: tagList(t.tags),
          Routes: t.routes.map((r) => {
            const target = r.instanceId === undefined ? undefined : state.instances.get(r.instanceId);
            const live =
              r.instanceId === undefined || (target !== undefined && target.state !== "terminated");
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
        })),
        ...(page.nextAfterSeq !== undefined && { NextToken: encodeSeqToken(page.nextAfterSeq) }),
      };
    },

    CreateRoute(input, caller) {
      const t = inScope(state.routeTables.get(String(input.RouteTableId ?? "")), caller);
      if (t === undefined)
        throw badRequest(
          "InvalidRouteTableID.NotFound",
          `The routeTable ID '${String(input.RouteTableId)}' does not exist`,
        );
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
      const t = inScope(state.routeTables.get(String(input.RouteTableId ?? "")), caller);
      if (t === undefined)
        throw badRequest(
          "InvalidRouteTableID.NotFound",
          `The routeTable ID '${String(input.RouteTableId)}' does not exist`,
        );
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
