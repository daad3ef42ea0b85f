import { type Node, NodeDesired, type Service, ServiceDesired } from "@fleet-ccm/proto";

type NodeFields = Partial<Omit<NodeDesired, "name" | "uid" | "generation">>;
type ServiceFields = Partial<Omit<ServiceDesired, "namespace" | "name" | "uid" | "generation">>;

/** A desired state for exactly this node (its uid), changing only `fields`. */
export function nodeDesired(node: Readonly<Node>, generation: number, fields: NodeFields): NodeDesired {
  return NodeDesired.fromPartial({ ...fields, name: node.name, uid: node.uid, generation });
}

/** A desired state for exactly this Service (its uid), changing only `fields`. */
export function serviceDesired(
  svc: Readonly<Service>,
  generation: number,
  fields: ServiceFields,
): ServiceDesired {
  return ServiceDesired.fromPartial({
    ...fields,
    namespace: svc.namespace,
    name: svc.name,
    uid: svc.uid,
    generation,
  });
}
