import type { Node, NodeDesired, Service, ServiceDesired } from "@fleet-ccm/proto";

type NodeFields = Partial<Omit<NodeDesired, "name" | "uid" | "generation">>;
type ServiceFields = Partial<Omit<ServiceDesired, "namespace" | "name" | "uid" | "generation">>;

// Built as literals, not with fromPartial: every caller hands over fresh values, so its deep
// copy (a new object per label, taint and address) is garbage the publisher never needed.

/** A desired state for exactly this node (its uid), changing only `fields`. */
export function nodeDesired(node: Readonly<Node>, generation: number, fields: NodeFields): NodeDesired {
  return {
    name: node.name,
    uid: node.uid,
    generation,
    providerId: fields.providerId ?? "",
    labels: fields.labels ?? {},
    addresses: fields.addresses,
    addTaints: fields.addTaints ?? [],
    removeTaintKeys: fields.removeTaintKeys ?? [],
    delete: fields.delete ?? false,
    conditions: fields.conditions ?? [],
    podCidrs: fields.podCidrs ?? [],
  };
}

/** A desired state for exactly this Service (its uid), changing only `fields`. */
export function serviceDesired(
  svc: Readonly<Service>,
  generation: number,
  fields: ServiceFields,
): ServiceDesired {
  return {
    namespace: svc.namespace,
    name: svc.name,
    uid: svc.uid,
    generation,
    addFinalizers: fields.addFinalizers ?? [],
    removeFinalizers: fields.removeFinalizers ?? [],
    ingress: fields.ingress,
    setAnnotations: fields.setAnnotations ?? {},
  };
}
