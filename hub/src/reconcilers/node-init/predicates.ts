import { isIP } from "node:net";
import type { Node, NodeAddress } from "@fleet-ccm/proto";
import type { InstanceMetadata } from "../../cloud/provider.js";
import {
  ANNOTATION_PROVIDED_NODE_IP,
  LABEL_INSTANCE_TYPE,
  LABEL_INSTANCE_TYPE_BETA,
  LABEL_REGION,
  LABEL_REGION_BETA,
  LABEL_ZONE,
  LABEL_ZONE_BETA,
  RESERVED_LABEL_NAMESPACE,
  TAINT_UNINITIALIZED,
} from "../../k8s/well-known.js";

/** A node the cloud node controller still has to initialize. */
export function needsInit(node: Readonly<Node>): boolean {
  return node.taints.some((t) => t.key === TAINT_UNINITIALIZED);
}

/** The cloud-owned fields one initialization writes (getNodeModifiersFromCloudProvider). */
export interface InitFields {
  /** Empty when the node already has one: providerID is never changed once set. */
  readonly providerID: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Undefined when the cloud returned no addresses (upstream then leaves them alone). */
  readonly addresses: readonly NodeAddress[] | undefined;
}

export class InitError extends Error {
  override name = "InitError";
}

/** Computes the initialization fields, or throws InitError with a message for the node's Event. */
export function initFields(node: Readonly<Node>, meta: InstanceMetadata): InitFields {
  const providerID = node.providerId === "" ? meta.providerID : "";
  if (node.providerId === "" && meta.providerID === "")
    throw new InitError(`cloud provider does not set node provider ID for node ${node.name}`);
  const labels: Record<string, string> = {};
  if (meta.instanceType !== "") {
    labels[LABEL_INSTANCE_TYPE] = meta.instanceType;
    labels[LABEL_INSTANCE_TYPE_BETA] = meta.instanceType;
  }
  if (meta.zone !== "") {
    labels[LABEL_ZONE] = meta.zone;
    labels[LABEL_ZONE_BETA] = meta.zone;
  }
  if (meta.region !== "") {
    labels[LABEL_REGION] = meta.region;
    labels[LABEL_REGION_BETA] = meta.region;
  }
  for (const [k, v] of Object.entries(meta.additionalLabels ?? {})) {
    // Upstream discards provider labels in the kubernetes namespaces and never overwrites.
    if (RESERVED_LABEL_NAMESPACE.test(k) || k in node.labels) continue;
    labels[k] = v;
  }
  return { providerID, labels, addresses: nodeAddresses(node, meta.addresses) };
}

/**
 * updateNodeAddress / GetNodeAddressesFromNodeIP: the cloud's addresses, with
 * the kubelet's Hostname kept when the cloud has none, and, when the node has
 * alpha.kubernetes.io/provided-node-ip, only that IP kept for its address type
 * (listed first).
 */
export function nodeAddresses(
  node: Readonly<Node>,
  cloud: readonly { type: string; address: string }[],
): NodeAddress[] | undefined {
  if (cloud.length === 0) return undefined;
  let out: NodeAddress[] = cloud.map((a) => ({ type: a.type, address: a.address }));
  if (!out.some((a) => a.type === "Hostname"))
    out.push(...node.addresses.filter((a) => a.type === "Hostname").map((a) => ({ ...a })));
  const provided = node.annotations[ANNOTATION_PROVIDED_NODE_IP];
  if (provided !== undefined) out = withProvidedNodeIPs(provided, out);
  return out;
}

function withProvidedNodeIPs(annotation: string, addresses: NodeAddress[]): NodeAddress[] {
  const ips = annotation.split(",").map((s) => s.trim());
  const families = ips.map((ip) => isIP(ip));
  const valid =
    families.every((f) => f !== 0) &&
    !ips.some((ip) => ip === "0.0.0.0" || ip === "::") &&
    (ips.length === 1 || (ips.length === 2 && families[0] !== families[1]));
  if (!valid) throw new InitError(`provided node ip "${annotation}" is not valid`);
  const first: NodeAddress[] = [];
  const markedTypes = new Set<string>();
  for (const ip of ips) {
    const matches = addresses.filter((a) => a.address === ip);
    if (matches.length === 0)
      throw new InitError(`failed to get node address from cloud provider that matches ip: ${ip}`);
    for (const m of matches) {
      first.push(m);
      markedTypes.add(m.type);
    }
  }
  return [...first, ...addresses.filter((a) => !markedTypes.has(a.type))];
}
