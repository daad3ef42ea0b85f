// NodeBalancers built exactly as the Linode CCM builds them, through the Linode API v4 (the
// fake's, or any endpoint), for the tests that adopt them: as its EnsureLoadBalancer does, a
// Cloud Firewall first when the Service filters clients (labelled like the NodeBalancer and
// tagged like it), then one POST /nodebalancers labelled ccm-<12 hex digits>, tagged with its
// --cluster-name (and the tags annotation's), a TCP config per Service port with the nodes'
// private IPs on its nodePort, naming that firewall. Hub code, testkits included, never imports
// the simulators: this speaks the API.
import { createHash } from "node:crypto";
import type { WireFirewallRules } from "./wire.js";

/** Where the Linode CCM calls: the API's base URL (without /v4) and its token. */
export interface LinodeApiAccess {
  readonly url: string;
  readonly token: string;
}

/** One Service port as the Linode CCM sees it, and the nodes (private IPv4, node name) behind it. */
export interface CcmService {
  /** Its tags: the Linode CCM's --cluster-name first, then the tags annotation's. */
  readonly tags: readonly string[];
  readonly region: string;
  readonly ports: readonly { readonly port: number; readonly nodePort: number }[];
  readonly nodes: readonly { readonly privateIPv4: string; readonly name: string }[];
  /** The firewall the Service's source ranges (or ACL) made it build first; absent: none. */
  readonly firewall?: WireFirewallRules;
  /** The NodeBalancer's label (default: ccm-<hash of `seed`>, its GetLoadBalancerName's shape). */
  readonly label?: string;
  readonly seed?: string;
}

/** What the Linode CCM made: the NodeBalancer's id, label and addresses, its firewall's id. */
export interface CcmMade {
  readonly id: number;
  readonly label: string;
  readonly ipv4: string;
  readonly ipv6: string | null;
  readonly hostname: string;
  readonly firewallId?: number;
}

/** A label of the Linode CCM's form: "ccm-" and 12 hex digits (it takes them from the clock). */
export function ccmLabel(seed: string): string {
  return `ccm-${createHash("sha256").update(seed).digest("hex").slice(0, 12)}`;
}

/** Rules as the Linode CCM writes them for loadBalancerSourceRanges: those ranges on the Service's ports, all else dropped. */
export function sourceRangeRules(
  ports: readonly number[],
  ipv4: readonly string[],
  ipv6: readonly string[] = [],
): WireFirewallRules {
  return {
    inbound: [
      {
        action: "ACCEPT",
        protocol: "TCP",
        ports: ports.join(","),
        label: "ACCEPT-sourceranges",
        addresses: {
          ...(ipv4.length > 0 && { ipv4: [...ipv4] }),
          ...(ipv6.length > 0 && { ipv6: [...ipv6] }),
        },
      },
    ],
    inbound_policy: "DROP",
    outbound: [],
    outbound_policy: "ACCEPT",
  };
}

async function call<T>(api: LinodeApiAccess, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${api.url.replace(/\/+$/, "")}/v4${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** The Service's NodeBalancer (and its firewall, when it filters clients), as the Linode CCM builds it. */
export async function ccmNodeBalancer(api: LinodeApiAccess, svc: CcmService): Promise<CcmMade> {
  const label = svc.label ?? ccmLabel(svc.seed ?? JSON.stringify(svc.ports));
  const tags = [...svc.tags];
  const fw =
    svc.firewall === undefined
      ? undefined
      : await call<{ id: number }>(api, "/networking/firewalls", { label, tags, rules: svc.firewall });
  const nb = await call<CcmMade>(api, "/nodebalancers", {
    label,
    region: svc.region,
    tags,
    ...(fw !== undefined && { firewall_id: fw.id }),
    configs: svc.ports.map((p) => ({
      port: p.port,
      protocol: "tcp",
      nodes: svc.nodes.map((n) => ({
        address: `${n.privateIPv4}:${p.nodePort}`,
        label: n.name,
        weight: 100,
        mode: "accept",
      })),
    })),
  });
  return {
    id: nb.id,
    label: nb.label,
    ipv4: nb.ipv4,
    ipv6: nb.ipv6 ?? null,
    hostname: nb.hostname,
    ...(fw !== undefined && { firewallId: fw.id }),
  };
}

/** What an operator does by hand: attaches another device (a Linode, say) to a firewall, over the API. */
export async function attachFirewallDevice(
  api: LinodeApiAccess,
  firewallId: number,
  device: { readonly type: "linode" | "nodebalancer"; readonly id: number },
): Promise<void> {
  await call(api, `/networking/firewalls/${firewallId}/devices`, device);
}
