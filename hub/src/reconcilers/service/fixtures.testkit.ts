// Test-only: the LoadBalancer Service the service controller's tests start from.
import { Service } from "@fleet-ccm/proto";
import { InstanceNotFoundError } from "../../cloud/errors.js";
import type { CloudProvider, InstanceMetadata } from "../../cloud/provider.js";

export const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

/** default/web, one TCP port on node port 30080, our finalizer already on it; `over` replaces fields. */
export function lbService(over: Partial<Service> = {}): Service {
  return Service.fromPartial({
    namespace: "default",
    name: "web",
    uid: "svc-uid",
    resourceVersion: "1",
    type: "LoadBalancer",
    ports: [{ name: "http", protocol: "TCP", port: 80, nodePort: 30080 }],
    externalTrafficPolicy: "Cluster",
    ipFamilies: ["IPv4"],
    finalizers: [FINALIZER],
    sessionAffinity: "None",
    ...over,
  });
}

/** A running instance of the simulated cloud's region r1: `simulated://r1/<id>`, named `name`. */
export function simulatedInstance(id: string, name = id): InstanceMetadata {
  return {
    providerID: `simulated://r1/${id}`,
    instanceID: id,
    name,
    instanceType: "t",
    region: "r1",
    zone: "r1a",
    addresses: [],
    state: "running",
    tags: {},
  };
}

/**
 * Region r1 of the simulated cloud where every name has its running instance `i-<name>`;
 * `lookups` records each providerID looked up directly.
 */
export function simulatedInstances(lookups: string[] = []): CloudProvider["instances"] {
  const instance = (name: string) => simulatedInstance(`i-${name}`, name);
  return {
    async getByProviderID(id) {
      lookups.push(id);
      const name = /^simulated:\/\/r1\/i-(.+)$/.exec(id)?.[1];
      if (name === undefined) throw new InstanceNotFoundError(id);
      return instance(name);
    },
    async findByName(name) {
      return [instance(name)];
    },
    async listPage() {
      return { instances: [] };
    },
    parseProviderID: (id) => (id.startsWith("simulated://r1/") ? id.slice(15) : undefined),
  };
}
