import type { Node, NodeDesired, Service, ServiceDesired } from "@fleet-ccm/proto";

type NodeFields = Partial<Omit<NodeDesired, "name" | "uid" | "generation">>;
type ServiceFields = Partial<Omit<ServiceDesired, "namespace" | "name" | "uid" | "generation">>;

/** A desired state for exactly this node (its uid), changing only `fields`. */
export function nodeDesired(node: Readonly<Node>, generation: number, fields: NodeFields): NodeDesired {
  return {
    name: node.name,
    uid: node.uid,
    generation,
    providerId: "",
    labels: {},
    addresses: undefined,
    addTaints: [],
    removeTaintKeys: [],
    delete: false,
    conditions: [],
    ...fields,
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
    addFinalizers: [],
    removeFinalizers: [],
    ingress: undefined,
    ...fields,
  };
}
