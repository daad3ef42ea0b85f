/**
 * Service ports without a node port: a LoadBalancer Service with
 * `spec.allocateLoadBalancerNodePorts: false` has none unless one was set by hand, and a port
 * added later gets none. Most clouds' load balancers reach the pods through the nodes' node
 * ports, so such a port cannot be built there: the AWS CCM leaves it out ("Ignoring port without
 * NodePort defined"), the other vendor CCMs send port 0 to their API and fail the whole Service.
 * The hub does as the AWS CCM on every such provider, and says so on the Service: the ports that
 * have a node port get their listeners, the others are named in a Warning Event, and a Service
 * with no port left is refused before any cloud call. A listener is never built to port 0.
 */
import type { Service } from "@fleet-ccm/proto";
import type { LoadBalancerCapabilities } from "../../cloud/provider.js";
import type { LbSettings } from "./annotations.js";
import { loadBalancerSpec } from "./predicates.js";

/** The Service's ports that its provider's load balancer cannot reach: none when every port has a node port. */
export function portsWithoutNodePort(
  svc: Readonly<Service>,
  settings: LbSettings,
  capabilities: LoadBalancerCapabilities,
): readonly Service["ports"][number][] {
  const missing = svc.ports.filter((p) => p.nodePort === 0);
  if (missing.length === 0) return missing;
  // The provider's answer can depend on the annotations and the health check (Azure with
  // floating IP and an HTTP probe): ask it about the spec the Service would get.
  if (capabilities.usesNodePorts?.(loadBalancerSpec(svc, settings, [])) === false) return [];
  return missing;
}

/** The refusal of a Service none of whose ports its provider can reach (the Event's message), or undefined. */
export function nodePortRefusal(
  svc: Readonly<Service>,
  missing: readonly Service["ports"][number][],
  provider: string,
): string | undefined {
  if (missing.length === 0 || missing.length < svc.ports.length) return undefined;
  return `no port of the Service has a node port (spec.allocateLoadBalancerNodePorts is false), and provider ${provider}'s load balancers send traffic to node ports`;
}

/** The Warning for the ports left out of a load balancer that still has others. */
export function skippedPortsMessage(missing: readonly Service["ports"][number][], provider: string): string {
  const ports = missing.map((p) => `${p.port}/${p.protocol}`).join(", ");
  return `port${missing.length === 1 ? "" : "s"} ${ports} left out of the load balancer: no node port (spec.allocateLoadBalancerNodePorts is false), and provider ${provider}'s load balancers send traffic to node ports`;
}

/** The Service as its load balancer is built: without the ports left out. */
export function builtPorts(
  svc: Readonly<Service>,
  missing: readonly Service["ports"][number][],
): Readonly<Service> {
  return missing.length === 0 ? svc : { ...svc, ports: svc.ports.filter((p) => !missing.includes(p)) };
}
