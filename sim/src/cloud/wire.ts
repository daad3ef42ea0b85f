/**
 * The public API's JSON shapes (snake_case, as most cloud REST APIs have them) and its
 * error bodies. The hub's `simulated` provider has its own copy of these shapes in its
 * convert.ts: the two sides share a wire format, never code.
 */
import type { ErrorRenderer } from "../fake-kit/errors.js";
import type {
  SimFirewallRule,
  SimHealthCheck,
  SimInstance,
  SimListener,
  SimLoadBalancer,
  SimNetwork,
  SimPool,
  SimRoute,
} from "./types.js";

export interface WireAddress {
  type: string;
  address: string;
}

export interface WireInstance {
  id: string;
  name: string;
  region: string;
  zone: string;
  instance_type: string;
  state: string;
  addresses: WireAddress[];
  network: string;
  tags: Record<string, string>;
  created_at: string;
}

export interface WireInstanceList {
  instances: WireInstance[];
  next_page_token?: string;
}

export interface WireError {
  error: {
    code: string;
    message: string;
    request_id: string;
    /** For NotFound: what was looked up. */
    resource?: { type: string; id: string };
  };
}

export function toWireInstance(i: SimInstance): WireInstance {
  return {
    id: i.id,
    name: i.name,
    region: i.region,
    zone: i.zone,
    instance_type: i.instanceType,
    state: i.state,
    addresses: i.addresses.map((a) => ({ type: a.type, address: a.address })),
    network: i.network,
    tags: { ...i.tags },
    created_at: i.createdAt,
  };
}

export interface WireLoadBalancer {
  id: string;
  name: string;
  region: string;
  /** PENDING_CREATE | ACTIVE | PENDING_DELETE | ERROR (see lb-store.ts: PENDING_* is immutable). */
  status: string;
  /** ERROR only: why. */
  status_message?: string;
  /** PENDING_* only: the delay the cloud suggests before reading it again. */
  poll_after_ms?: number;
  network: string;
  internal: boolean;
  ingress: { ip: string; hostname: string };
  listener_ids: string[];
  pool_ids: string[];
  health_check_ids: string[];
  firewall_ids: string[];
  tags: Record<string, string>;
  created_at: string;
}

export interface WireListener {
  id: string;
  name: string;
  region: string;
  lb_id: string;
  protocol: string;
  port: number;
  pool_id: string;
  proxy_protocol: boolean;
  idle_timeout_seconds: number;
  tags: Record<string, string>;
  created_at: string;
}

export interface WirePool {
  id: string;
  name: string;
  region: string;
  lb_id: string;
  protocol: string;
  target_port: number;
  members: string[];
  session_affinity: string;
  /** null when the pool has no health check. */
  health_check_id: string | null;
  tags: Record<string, string>;
  created_at: string;
}

export interface WireHealthCheck {
  id: string;
  name: string;
  region: string;
  protocol: string;
  port: number;
  path: string;
  interval_seconds: number;
  timeout_seconds: number;
  healthy_threshold: number;
  unhealthy_threshold: number;
  tags: Record<string, string>;
  created_at: string;
}

export interface WireFirewallRule {
  id: string;
  name: string;
  region: string;
  lb_id: string;
  protocol: string;
  port: number;
  source_cidrs: string[];
  tags: Record<string, string>;
  created_at: string;
}

export interface WireNetwork {
  id: string;
  region: string;
  is_default: boolean;
  route_table_id: string;
}

export interface WireRoute {
  id: string;
  region: string;
  network: string;
  route_table_id: string;
  destination_cidr: string;
  target_instance_id: string;
  description: string;
  blackhole: boolean;
  tags: Record<string, string>;
  created_at: string;
}

export interface WireLoadBalancerList {
  load_balancers: WireLoadBalancer[];
  next_page_token?: string;
}

export interface WireListenerList {
  listeners: WireListener[];
  next_page_token?: string;
}

export interface WirePoolList {
  pools: WirePool[];
  next_page_token?: string;
}

export interface WireHealthCheckList {
  health_checks: WireHealthCheck[];
  next_page_token?: string;
}

export interface WireFirewallRuleList {
  firewall_rules: WireFirewallRule[];
  next_page_token?: string;
}

export interface WireNetworkList {
  networks: WireNetwork[];
}

export interface WireRouteList {
  routes: WireRoute[];
  next_page_token?: string;
}

export function toWireLoadBalancer(lb: SimLoadBalancer): WireLoadBalancer {
  return {
    id: lb.id,
    name: lb.name,
    region: lb.region,
    status: lb.status,
    ...(lb.statusMessage !== undefined && { status_message: lb.statusMessage }),
    ...(lb.pollAfterMs !== undefined && { poll_after_ms: lb.pollAfterMs }),
    network: lb.network,
    internal: lb.internal,
    ingress: { ip: lb.ingress.ip, hostname: lb.ingress.hostname },
    listener_ids: [...lb.listenerIds],
    pool_ids: [...lb.poolIds],
    health_check_ids: [...lb.healthCheckIds],
    firewall_ids: [...lb.firewallIds],
    tags: { ...lb.tags },
    created_at: lb.createdAt,
  };
}

export function toWireListener(l: SimListener): WireListener {
  return {
    id: l.id,
    name: l.name,
    region: l.region,
    lb_id: l.lbId,
    protocol: l.protocol,
    port: l.port,
    pool_id: l.poolId,
    proxy_protocol: l.proxyProtocol,
    idle_timeout_seconds: l.idleTimeoutSeconds,
    tags: { ...l.tags },
    created_at: l.createdAt,
  };
}

export function toWirePool(p: SimPool): WirePool {
  return {
    id: p.id,
    name: p.name,
    region: p.region,
    lb_id: p.lbId,
    protocol: p.protocol,
    target_port: p.targetPort,
    members: [...p.members],
    session_affinity: p.sessionAffinity,
    health_check_id: p.healthCheckId ?? null,
    tags: { ...p.tags },
    created_at: p.createdAt,
  };
}

export function toWireHealthCheck(h: SimHealthCheck): WireHealthCheck {
  return {
    id: h.id,
    name: h.name,
    region: h.region,
    protocol: h.protocol,
    port: h.port,
    path: h.path,
    interval_seconds: h.intervalSeconds,
    timeout_seconds: h.timeoutSeconds,
    healthy_threshold: h.healthyThreshold,
    unhealthy_threshold: h.unhealthyThreshold,
    tags: { ...h.tags },
    created_at: h.createdAt,
  };
}

export function toWireFirewallRule(f: SimFirewallRule): WireFirewallRule {
  return {
    id: f.id,
    name: f.name,
    region: f.region,
    lb_id: f.lbId,
    protocol: f.protocol,
    port: f.port,
    source_cidrs: [...f.sourceCidrs],
    tags: { ...f.tags },
    created_at: f.createdAt,
  };
}

export function toWireNetwork(n: SimNetwork): WireNetwork {
  return { id: n.id, region: n.region, is_default: n.isDefault, route_table_id: n.routeTableId };
}

export function toWireRoute(r: SimRoute): WireRoute {
  return {
    id: r.id,
    region: r.region,
    network: r.network,
    route_table_id: r.routeTableId,
    destination_cidr: r.destinationCidr,
    target_instance_id: r.targetInstanceId,
    description: r.description,
    blackhole: r.blackhole,
    tags: { ...r.tags },
    created_at: r.createdAt,
  };
}

/** Page tokens are opaque to clients (the kit's seq tokens). */
export {
  decodeSeqToken as decodePageToken,
  encodeSeqToken as encodePageToken,
} from "../fake-kit/pagination.js";

/** Errors as the public API answers them: `{ error: { code, message, request_id, resource? } }`. */
export const simErrorRenderer: ErrorRenderer = {
  render(error, call) {
    const body: WireError = {
      error: { code: error.code, message: error.message, request_id: call.requestId },
    };
    if (error.resource !== undefined) body.error.resource = { ...error.resource };
    return { status: error.status, body, ...(error.headers !== undefined && { headers: error.headers }) };
  },
};
