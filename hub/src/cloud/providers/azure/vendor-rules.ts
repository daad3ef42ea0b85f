/**
 * cloud-provider-azure's own NSG rules (pkg/provider/securitygroup): `k8s-azure-lb_allow_<IPv4|IPv6>_
 * <md5>` shared by every Service with the same protocol, sources and ports, each Service's
 * address one of their destinations, and `k8s-azure-lb_deny-all_<family>`. A Service the hub took
 * over keeps its own rules; its addresses are taken out of these as upstream's
 * CleanSecurityGroup (RemoveDestinationFromRules) does, so they allow nothing more than its own.
 */
import { createHash } from "node:crypto";
import { isIP } from "node:net";
import type { SecurityRule } from "@azure/arm-network";

/** NSG rule priorities upstream takes (consts.LoadBalancerMinimumPriority .. Maximum). */
export const MIN_PRIORITY = 500;
export const MAX_PRIORITY = 4096;
/** securitygroup.SecurityRuleNamePrefix. */
const VENDOR_PREFIX = "k8s-azure-lb";

/** What a Service takes out of upstream's rules. */
export interface Withdrawal {
  readonly addresses: readonly string[];
  /**
   * Protocol (`Tcp`, `Udp`) → the Service's ports at these addresses, when other Services share
   * them (the backends' addresses with floating IP off: node ports are unique in a cluster);
   * absent: the addresses are the Service's alone, every port goes.
   */
  readonly ports?: ReadonlyMap<string, readonly number[]>;
}

/** Upstream's IsManagedSecurityRule: its prefix, in its priority range. */
function isVendorRule(r: SecurityRule): boolean {
  const p = r.priority ?? 0;
  return r.name?.startsWith(VENDOR_PREFIX) === true && p >= MIN_PRIORITY && p <= MAX_PRIORITY;
}

export function destinationsOf(r: SecurityRule): string[] {
  return [
    ...(r.destinationAddressPrefix ? [r.destinationAddressPrefix] : []),
    ...(r.destinationAddressPrefixes ?? []),
  ];
}

/** One destination as a prefix, several as prefixes (upstream's SetDestinationPrefixes). */
export function withDestinations(r: SecurityRule, prefixes: readonly string[]): SecurityRule {
  const ps = [...new Set(prefixes)].sort();
  const { destinationAddressPrefix: _one, destinationAddressPrefixes: _many, ...rest } = r;
  return ps.length === 1
    ? { ...rest, destinationAddressPrefix: ps[0] }
    : { ...rest, destinationAddressPrefixes: ps };
}

/** The rule's ports, undefined for `*` or a range (upstream never makes allow rules of those). */
function portsOf(r: SecurityRule): number[] | undefined {
  const all = [
    ...(r.destinationPortRange ? [r.destinationPortRange] : []),
    ...(r.destinationPortRanges ?? []),
  ];
  return all.every((p) => /^\d+$/.test(p)) ? all.map(Number) : undefined;
}

/**
 * The rules with the withdrawal applied: its addresses leave every upstream rule that holds them
 * (a Deny only when they are the Service's alone), a rule left without destination goes, and the
 * ports of other Services at shared addresses stay allowed by a rule upstream would name.
 */
export function withdrawFromVendorRules(rules: readonly SecurityRule[], w: Withdrawal): SecurityRule[] {
  const byName = new Map(rules.map((r) => [r.name ?? "", r]));
  const gone = new Set(w.addresses);
  for (const r of rules) {
    const dsts = destinationsOf(r);
    const hit = dsts.filter((d) => gone.has(d));
    if (!isVendorRule(r) || hit.length === 0) continue;
    const left = dsts.filter((d) => !gone.has(d));
    if (r.access === "Deny") {
      if (w.ports === undefined) byName.set(r.name ?? "", withDestinations(r, left));
      continue;
    }
    const ports = portsOf(r);
    if (ports === undefined) continue;
    const mine = new Set(w.ports === undefined ? ports : (w.ports.get(r.protocol ?? "") ?? []));
    const kept = ports.filter((p) => !mine.has(p));
    if (kept.length === ports.length) continue;
    byName.set(r.name ?? "", withDestinations(r, left));
    if (kept.length > 0) keepOthers(byName, r, hit, kept);
  }
  return [...byName.values()].filter(
    (r) =>
      !isVendorRule(r) ||
      destinationsOf(r).length > 0 ||
      (r.destinationApplicationSecurityGroups?.length ?? 0) > 0,
  );
}

/** Other Services' ports at the shared addresses, in the rule upstream would make for them (addAllowRule). */
function keepOthers(
  byName: Map<string, SecurityRule>,
  from: SecurityRule,
  addresses: readonly string[],
  ports: readonly number[],
): void {
  const sources = [
    ...(from.sourceAddressPrefix ? [from.sourceAddressPrefix] : []),
    ...(from.sourceAddressPrefixes ?? []),
  ];
  const name = allowRuleName(
    from.protocol ?? "",
    isIP(addresses[0] ?? "") === 6 ? "IPv6" : "IPv4",
    sources,
    ports,
  );
  const existing = byName.get(name);
  const used = new Set([...byName.values()].map((r) => r.priority));
  let priority = existing?.priority ?? MIN_PRIORITY;
  while (existing === undefined && used.has(priority) && priority < MAX_PRIORITY) priority++;
  const rule: SecurityRule = {
    name,
    protocol: from.protocol,
    access: "Allow",
    direction: "Inbound",
    priority,
    sourcePortRange: "*",
    ...(sources.length === 1 ? { sourceAddressPrefix: sources[0] } : { sourceAddressPrefixes: sources }),
    destinationPortRanges: ports.map(String).sort(),
  };
  byName.set(name, withDestinations(rule, [...(existing ? destinationsOf(existing) : []), ...addresses]));
}

/** securitygroup.GenerateAllowSecurityRuleName. */
function allowRuleName(
  protocol: string,
  family: string,
  sources: readonly string[],
  ports: readonly number[],
) {
  const id = [protocol, [...sources].sort().join(","), ports.map(String).sort().join(",")].join("_");
  return [VENDOR_PREFIX, "allow", family, createHash("md5").update(id).digest("hex")].join("_");
}
