/**
 * Node-port security groups as openstack-cloud-controller-manager's `manage-security-groups`
 * builds them (opt-in per account): one Neutron security group per load balancer, named
 * `lb-sg-<service uid>-<namespace>-<name>` as upstream names it, with an ingress rule per
 * Service port allowing its node port (and the health-check node port) from the member subnet's
 * CIDR, or, with the OVN provider (which keeps the clients' source addresses), from
 * `loadBalancerSourceRanges` (else everywhere), as upstream does. The group is added to the
 * nodes' member ports (those with port security), each port first tagged with the group's id so
 * every port that has it is found again (`GET /ports?tags=<id>`, and `?security_groups=<id>` for
 * the ports upstream gave it untagged), and taken off the ports of nodes that left. On delete it
 * comes off every such port, then the group goes (before the load balancer, whose name says
 * whose an untagged group is; upstream deletes it after).
 *
 * Ownership is in the group's tags (`fleet-ccm.io/cluster=`, `fleet-ccm.io/service-uid=`);
 * an untagged group with upstream's name is adopted (the name carries this Service's uid, so it
 * is this Service's group, upstream's or ours from a call cut short before its tags). Only
 * ingress rules are managed: Neutron's default egress rules of a new group stay.
 */
import { CloudError } from "../../errors.js";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import type { LbOwner, LoadBalancerSpec } from "../../provider.js";
import type { OpenStackClient } from "./client.js";
import { isAlreadyThere, isGone, isStaleRevision } from "./errors.js";
import type { WirePort } from "./instances.js";

export const SG_OPS = {
  list: "securitygroups.list",
  create: "securitygroup.create",
  delete: "securitygroup.delete",
  tag: "securitygroup.tags.create",
  rules: "securitygrouprules.list",
  ruleCreate: "securitygrouprule.create",
  ruleDelete: "securitygrouprule.delete",
  subnet: "subnet.get",
  ports: "ports.list",
  portUpdate: "port.update",
  portTag: "port.tags.create",
  portUntag: "port.tags.delete",
} as const;

/** Conditional writes of one port's groups before a call gives up (each 412 reads it again). */
const MAX_PORT_WRITES = 5;

/** A Neutron port with what security-group management reads. */
export interface SgPort extends WirePort {
  readonly security_groups?: readonly string[];
  readonly port_security_enabled?: boolean;
  readonly tags?: readonly string[];
  readonly revision_number?: number;
}

interface WireGroup {
  readonly id: string;
  readonly name: string;
  readonly tags?: readonly string[];
}

interface WireRule {
  readonly id: string;
  readonly direction: string;
  readonly ethertype: string;
  readonly protocol: string | null;
  readonly port_range_min: number | null;
  readonly port_range_max: number | null;
  readonly remote_ip_prefix: string | null;
}

interface Rule {
  readonly protocol: string;
  readonly port: number;
  readonly cidr: string;
}

/** Upstream's name: `lb-sg-<uid>-<namespace>-<name>`, cut at Neutron's 255. */
export function securityGroupName(serviceUid: string, serviceName: string | undefined): string {
  const [ns, name] =
    serviceName === undefined
      ? [undefined, undefined]
      : serviceName.includes("/")
        ? serviceName.split("/", 2)
        : ["default", serviceName];
  return (ns === undefined ? `lb-sg-${serviceUid}` : `lb-sg-${serviceUid}-${ns}-${name}`).slice(0, 255);
}

const ownerTags = (o: LbOwner) => [
  `${OWNER_TAG_CLUSTER}=${o.cluster}`,
  `${OWNER_TAG_SERVICE_UID}=${o.serviceUid}`,
];
const ruleKey = (r: Rule) => `${r.protocol}/${r.port}/${r.cidr}`;

export class NodeSecurityGroups {
  constructor(
    private readonly client: OpenStackClient,
    /** Rules from the Service's source ranges instead of the member subnet (Octavia's OVN provider). */
    private readonly fromSourceRanges: boolean,
  ) {}

  /** The Service's group, its rules, and on exactly the member ports given. */
  async ensure(
    owner: LbOwner,
    spec: LoadBalancerSpec,
    memberSubnet: string | undefined,
    memberPorts: readonly SgPort[],
    signal?: AbortSignal,
  ): Promise<void> {
    const group =
      (await this.find(owner, spec.serviceName, signal)) ?? (await this.create(owner, spec, signal));
    await this.rules(group, await this.wantedRules(spec, memberSubnet, signal), signal);
    await this.attach(group.id, memberPorts, signal);
  }

  /** The group on exactly these ports (a node change); false when the Service has no group yet. */
  async updatePorts(owner: LbOwner, memberPorts: readonly SgPort[], signal?: AbortSignal): Promise<boolean> {
    const group = await this.find(owner, undefined, signal);
    if (group === undefined) return false;
    await this.attach(group.id, memberPorts, signal);
    return true;
  }

  /** Off every port that has it, then deleted; nothing when there is none. */
  async remove(owner: LbOwner, serviceName: string | undefined, signal?: AbortSignal): Promise<void> {
    const group = await this.find(owner, serviceName, signal);
    if (group === undefined) return;
    await this.attach(group.id, [], signal);
    try {
      await this.client.request("network", SG_OPS.delete, "DELETE", `/security-groups/${group.id}`, {
        signal,
      });
    } catch (err) {
      if (!isGone(err)) throw err;
    }
  }

  /** Ours by its owner tags, else (with the Service's name) upstream's by its name, adopted. */
  private async find(owner: LbOwner, serviceName: string | undefined, signal?: AbortSignal) {
    const tags = ownerTags(owner);
    const tagged = await this.client.list<WireGroup>(
      "network",
      SG_OPS.list,
      "/security-groups",
      "security_groups",
      {
        query: { tags: tags.join(",") },
        signal,
      },
    );
    const mine = tagged.filter((g) => tags.every((t) => g.tags?.includes(t)));
    if (mine.length > 1)
      throw new CloudError(
        `${mine.length} security groups carry the owner tags of ${owner.cluster}/${owner.serviceUid}`,
      );
    if (mine[0] !== undefined || serviceName === undefined) return mine[0];
    const name = securityGroupName(owner.serviceUid, serviceName);
    const named = (
      await this.client.list<WireGroup>("network", SG_OPS.list, "/security-groups", "security_groups", {
        query: { name },
        signal,
      })
    ).filter((g) => g.name === name);
    if (named.length > 1)
      throw new CloudError(`${named.length} security groups are named ${name}: not adopted`);
    const found = named[0];
    if (found === undefined) return undefined;
    if ((found.tags ?? []).some((t) => t.startsWith(`${OWNER_TAG_SERVICE_UID}=`)))
      throw new CloudError(
        `security group ${found.id} (${name}) belongs to another Service of this hub: refused`,
      );
    await this.tag(found.id, tags, signal);
    return found;
  }

  private async create(owner: LbOwner, spec: LoadBalancerSpec, signal?: AbortSignal): Promise<WireGroup> {
    const [ns, name] = (spec.serviceName ?? `default/${owner.serviceUid}`).split("/", 2);
    const created = (
      await this.client.request<{ security_group: WireGroup }>(
        "network",
        SG_OPS.create,
        "POST",
        "/security-groups",
        {
          body: {
            security_group: {
              name: securityGroupName(owner.serviceUid, spec.serviceName),
              description: `Security Group for ${ns}/${name} Service LoadBalancer in cluster ${owner.cluster}`,
            },
          },
          signal,
        },
      )
    ).security_group;
    // Neutron takes no tags on create: a call cut short here leaves it to be found by its name.
    await this.tag(created.id, ownerTags(owner), signal);
    return created;
  }

  private async tag(id: string, tags: readonly string[], signal?: AbortSignal): Promise<void> {
    for (const t of tags)
      await this.client.request(
        "network",
        SG_OPS.tag,
        "PUT",
        `/security-groups/${id}/tags/${encodeURIComponent(t)}`,
        { signal },
      );
  }

  private async wantedRules(
    spec: LoadBalancerSpec,
    memberSubnet: string | undefined,
    signal?: AbortSignal,
  ): Promise<Rule[]> {
    let subnetCidr: string | undefined;
    if (memberSubnet !== undefined)
      subnetCidr = (
        await this.client.get<{ subnet: { cidr: string } }>(
          "network",
          SG_OPS.subnet,
          `/subnets/${memberSubnet}`,
          {
            signal,
          },
        )
      ).subnet.cidr;
    if (subnetCidr === undefined)
      throw new CloudError("no member subnet: the node-port security group needs its CIDR");
    const sources = this.fromSourceRanges
      ? spec.sourceRanges.length > 0
        ? [...spec.sourceRanges]
        : ["0.0.0.0/0"]
      : [subnetCidr];
    const out = new Map<string, Rule>();
    const add = (r: Rule) => out.set(ruleKey(r), r);
    for (const l of spec.listeners)
      for (const cidr of sources)
        add({ protocol: l.protocol === "UDP" ? "udp" : "tcp", port: l.nodePort, cidr });
    // The health-check node port (externalTrafficPolicy: Local) is probed from the load balancer.
    add({ protocol: "tcp", port: spec.healthCheck.port, cidr: subnetCidr });
    return [...out.values()];
  }

  /** The group's ingress rules made exactly `wanted` (its egress rules untouched). */
  private async rules(group: WireGroup, wanted: readonly Rule[], signal?: AbortSignal): Promise<void> {
    const have = (
      await this.client.list<WireRule>(
        "network",
        SG_OPS.rules,
        "/security-group-rules",
        "security_group_rules",
        {
          query: { security_group_id: group.id },
          signal,
        },
      )
    ).filter((r) => r.direction === "ingress");
    const keyOf = (r: WireRule) =>
      r.protocol === null || r.port_range_min === null || r.port_range_min !== r.port_range_max
        ? `other/${r.id}`
        : ruleKey({
            protocol: r.protocol.toLowerCase(),
            port: r.port_range_min,
            cidr: r.remote_ip_prefix ?? "",
          });
    const haveKeys = new Set(have.map(keyOf));
    for (const r of wanted) {
      if (haveKeys.has(ruleKey(r))) continue;
      try {
        await this.client.request("network", SG_OPS.ruleCreate, "POST", "/security-group-rules", {
          body: {
            security_group_rule: {
              security_group_id: group.id,
              direction: "ingress",
              ethertype: r.cidr.includes(":") ? "IPv6" : "IPv4",
              protocol: r.protocol,
              port_range_min: r.port,
              port_range_max: r.port,
              remote_ip_prefix: r.cidr,
            },
          },
          signal,
        });
      } catch (err) {
        // 409: the rule exists (another writer made it meanwhile), as upstream reads it.
        if (!isAlreadyThere(err)) throw err;
      }
    }
    const wantedKeys = new Set(wanted.map(ruleKey));
    for (const r of have) {
      if (wantedKeys.has(keyOf(r))) continue;
      try {
        await this.client.request("network", SG_OPS.ruleDelete, "DELETE", `/security-group-rules/${r.id}`, {
          signal,
        });
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
  }

  /**
   * The group on exactly `ports` (those with port security): each tagged with the group's id
   * before the group is added (so it is found again whatever happens next), and the group taken
   * off every other port tagged with it or holding it, tag (if any) last.
   */
  private async attach(groupId: string, ports: readonly SgPort[], signal?: AbortSignal): Promise<void> {
    let wanted = ports.filter((p) => p.port_security_enabled !== false);
    const untagged = wanted.filter((p) => !p.tags?.includes(groupId));
    for (const p of untagged)
      await this.client.request("network", SG_OPS.portTag, "PUT", `/ports/${p.id}/tags/${groupId}`, {
        signal,
      });
    // A tag moves a port's revision on: read them again for the conditional writes below.
    if (untagged.length > 0) wanted = await this.reread(wanted, signal);
    for (const p of wanted)
      await this.changeGroups(p, (gs) => (gs.includes(groupId) ? undefined : [...gs, groupId]), signal);
    const keep = new Set(wanted.map((p) => p.id));
    for (const p of await this.holders(groupId, signal)) {
      if (keep.has(p.id)) continue;
      await this.changeGroups(
        p,
        (gs) => (gs.includes(groupId) ? gs.filter((g) => g !== groupId) : undefined),
        signal,
      );
      if (!p.tags?.includes(groupId)) continue;
      try {
        await this.client.request("network", SG_OPS.portUntag, "DELETE", `/ports/${p.id}/tags/${groupId}`, {
          signal,
        });
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
  }

  /**
   * Every port tagged with the group (ours) or holding it: upstream tags no port with its group
   * (loadbalancer_sg.go lists them by `security_groups`), so an adopted group's ports are found so.
   */
  private async holders(groupId: string, signal?: AbortSignal): Promise<SgPort[]> {
    const byId = new Map<string, SgPort>();
    for (const query of [{ tags: groupId }, { security_groups: groupId }])
      for (const p of await this.client.list<SgPort>("network", SG_OPS.ports, "/ports", "ports", {
        query,
        signal,
      }))
        byId.set(p.id, p);
    return [...byId.values()];
  }

  /** The same ports as Neutron has them now (by their servers, 40 a call). */
  private async reread(ports: readonly SgPort[], signal?: AbortSignal): Promise<SgPort[]> {
    const ids = new Set(ports.map((p) => p.id));
    const devices = [...new Set(ports.map((p) => p.device_id))];
    const out: SgPort[] = [];
    for (let i = 0; i < devices.length; i += 40) {
      const now = await this.client.list<SgPort>("network", SG_OPS.ports, "/ports", "ports", {
        query: { device_id: devices.slice(i, i + 40) },
        signal,
      });
      out.push(...now.filter((p) => ids.has(p.id)));
    }
    return out;
  }

  /**
   * The port's whole list of groups as `change` makes it (undefined: as it is), written only if
   * the port is still the revision read (`If-Match`, Neutron's revision-if-match): Neutron has no
   * atomic add, and two Services changing one node's port at once must not undo each other's
   * change (upstream's own TODO). On a 412 the port is read again and the change made anew, a
   * few times; past that the call fails and a later one starts over.
   */
  private async changeGroups(
    port: SgPort,
    change: (groups: readonly string[]) => readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    let current = port;
    for (let attempt = 1; ; attempt++) {
      const groups = change(current.security_groups ?? []);
      if (groups === undefined) return;
      try {
        await this.client.request("network", SG_OPS.portUpdate, "PUT", `/ports/${current.id}`, {
          body: { port: { security_groups: [...new Set(groups)] } },
          ...(current.revision_number !== undefined && {
            headers: { "if-match": `revision_number=${current.revision_number}` },
          }),
          signal,
        });
        return;
      } catch (err) {
        if (!isStaleRevision(err) || attempt >= MAX_PORT_WRITES) throw err;
      }
      const [fresh] = await this.reread([current], signal);
      if (fresh === undefined) return; // the port is gone: nothing to change on it
      current = fresh;
    }
  }
}
