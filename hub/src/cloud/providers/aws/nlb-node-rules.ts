/**
 * cloud-provider-aws's node-group rules for an NLB that has no security group of ours to admit
 * (updateInstanceSecurityGroupsForNLB): an NLB made without security groups (upstream's
 * default mode: AWS cannot add any later) or one with only the groups the security-groups
 * annotation names. On each backend's cluster security group:
 * - client rules: the Service's source ranges (0.0.0.0/0 when none) on each nodePort, described
 *   `kubernetes.io/rule/nlb/client=<name>`;
 * - health rules: the load balancer's subnets' CIDRs on each health-check port (tcp),
 *   `kubernetes.io/rule/nlb/health=<name>`, unless a client rule from 0.0.0.0/0 covers the port;
 * - path-MTU rules: ICMP "fragmentation needed" (type 3, code 4) from every IPv4 range any NLB's
 *   client rule on the group admits, `kubernetes.io/rule/nlb/mtu` (no name: shared by every
 *   NLB of the group, revoked only once no client rule needs it). Upstream stops there; for an
 *   IPv6 range we also admit ICMPv6 "packet too big" (type 2, code 0), IPv6's equivalent.
 * The descriptions are upstream's, so either CCM recognises the other's rules. Rules described
 * for another load balancer, or undescribed, are never touched.
 */
import type { Instance, SecurityGroup } from "@aws-sdk/client-ec2";
import type { ClusterTarget } from "../../provider.js";
import { type LbNetwork, pathMtuRule, type Rule, ruleKey, rulesOf } from "./lb-network.js";
import { clusterTagKeys } from "./tags.js";

export const NLB_CLIENT_RULE = "kubernetes.io/rule/nlb/client";
export const NLB_HEALTH_RULE = "kubernetes.io/rule/nlb/health";
export const NLB_MTU_RULE = "kubernetes.io/rule/nlb/mtu";

export const clientRuleDescription = (lbName: string) => `${NLB_CLIENT_RULE}=${lbName}`;
export const healthRuleDescription = (lbName: string) => `${NLB_HEALTH_RULE}=${lbName}`;

const ANY_IPV4 = "0.0.0.0/0";

/** One listener as the node group sees it: its nodePort, and the port its health check uses. */
export interface NlbNodePort {
  readonly protocol: "tcp" | "udp";
  readonly nodePort: number;
  readonly healthPort: number;
}

/** The client and health rules one NLB wants on a backend's group (each EC2 rule once, client first). */
export function nlbNodeRules(
  lbName: string,
  ports: readonly NlbNodePort[],
  clientCidrs: readonly string[],
  healthCidrs: readonly string[],
): Rule[] {
  const client = clientRuleDescription(lbName);
  const health = healthRuleDescription(lbName);
  const out: Rule[] = [];
  for (const p of ports)
    for (const cidr of clientCidrs)
      out.push({ protocol: p.protocol, fromPort: p.nodePort, toPort: p.nodePort, cidr, description: client });
  // A client rule from anywhere on the port already lets the health checks in (upstream).
  const open = new Set(out.filter((r) => r.protocol === "tcp" && r.cidr === ANY_IPV4).map((r) => r.fromPort));
  for (const port of new Set(ports.map((p) => p.healthPort)))
    if (!open.has(port))
      for (const cidr of healthCidrs)
        out.push({ protocol: "tcp", fromPort: port, toPort: port, cidr, description: health });
  return uniqueBy(out, ruleKey);
}

function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The path-MTU rules a group's rules call for: one per range any NLB's client rule admits. */
function mtuRules(rules: readonly Rule[]): Rule[] {
  const cidrs = new Set(
    rules.flatMap((r) => (r.description?.startsWith(NLB_CLIENT_RULE) && r.cidr ? [r.cidr] : [])),
  );
  return [...cidrs].sort().map((cidr) => ({ ...pathMtuRule(cidr), description: NLB_MTU_RULE }));
}

/**
 * What the group should have of one NLB's rules: `want` on the backends' groups; "follow"
 * copies the rules the NLB has on any group to every backend's (after a backend change, when
 * the spec is not at hand), leaving them where they are while it has no backend group at all.
 */
export type NlbNodeWant = readonly Rule[] | "follow";

export class NlbNodeRules {
  constructor(private readonly net: LbNetwork) {}

  /**
   * One NLB's rules made `want` on its backends' groups (upstream's pick of each instance's
   * cluster group) and revoked from every other group tagged kubernetes.io/cluster/<cluster>
   * (as upstream, which looks no further; with adoptFrom, the vendor CCM's cluster tag too); then the path-MTU rules of each group touched, from
   * the client rules it has now.
   */
  async sync(
    lbName: string,
    cluster: ClusterTarget,
    backends: readonly Instance[],
    want: NlbNodeWant,
    signal?: AbortSignal,
  ): Promise<void> {
    const nodeGroups = await this.net.nodeGroups(cluster, backends, signal);
    const tagged = await this.net.securityGroups(
      [{ Name: "tag-key", Values: clusterTagKeys(cluster) }],
      signal,
    );
    const desired = new Set(nodeGroups.map((g) => g.GroupId ?? ""));
    const scan = new Map<string, SecurityGroup>();
    for (const g of [...nodeGroups, ...tagged]) if (g.GroupId !== undefined) scan.set(g.GroupId, g);
    const ours = new Set([clientRuleDescription(lbName), healthRuleDescription(lbName)]);
    const mineOf = (g: SecurityGroup) =>
      rulesOf(g.IpPermissions).filter((r) => ours.has(r.description ?? ""));
    let wanted: readonly Rule[];
    if (want === "follow") {
      // Nothing to follow onto: leave the rules where they are (no instance behind them).
      if (desired.size === 0) return;
      wanted = uniqueBy([...scan.values()].flatMap(mineOf), ruleKey);
    } else wanted = want;
    for (const [id, g] of [...scan].sort(([a], [b]) => a.localeCompare(b))) {
      const have = rulesOf(g.IpPermissions);
      const mine = have.filter((r) => ours.has(r.description ?? ""));
      // EC2 has one rule per source and ports: one another load balancer (or anyone) made already admits it.
      const others = new Set(have.filter((r) => !ours.has(r.description ?? "")).map(ruleKey));
      const wantHere = desired.has(id) ? wanted.filter((r) => !others.has(ruleKey(r))) : [];
      if (mine.length === 0 && wantHere.length === 0) continue;
      await this.net.syncRules(id, mine, wantHere, signal);
      const now = [...have.filter((r) => !ours.has(r.description ?? "")), ...wantHere];
      const mtuHave = have.filter((r) => r.description === NLB_MTU_RULE);
      const mtuOthers = new Set(now.filter((r) => r.description !== NLB_MTU_RULE).map(ruleKey));
      await this.net.syncRules(
        id,
        mtuHave,
        mtuRules(now).filter((r) => !mtuOthers.has(ruleKey(r))),
        signal,
      );
    }
  }
}
