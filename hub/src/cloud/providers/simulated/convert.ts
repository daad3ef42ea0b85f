/**
 * Pure mapping between the simulated cloud's wire format (snake_case JSON, see the
 * cloud's public API) and the provider contract. The shapes are declared here again on
 * purpose: the hub never imports sim/, the two sides share only the wire format.
 */

import { SuspectAnswerError } from "../../errors.js";
import { OWNER_TAG_CLUSTER } from "../../naming.js";
import type { CloudRoute, InstanceMetadata, InstanceState, NodeAddress } from "../../provider.js";

export const PROVIDER_NAME = "simulated";
/** Where the simulated provider's own Service annotations live, as a vendor CCM's do. */
export const ANNOTATION_PREFIX = "service.beta.kubernetes.io/simulated-";

export interface WireAddress {
  readonly type: string;
  readonly address: string;
}

export interface WireInstance {
  readonly id: string;
  readonly name: string;
  readonly region: string;
  readonly zone: string;
  readonly instance_type: string;
  readonly state: string;
  readonly addresses: readonly WireAddress[];
  readonly network: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly created_at?: string;
}

export interface WireInstanceList {
  readonly instances: readonly WireInstance[];
  readonly next_page_token?: string;
}

export interface ProviderIDParts {
  readonly region: string;
  readonly id: string;
}

const REGION_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
const INSTANCE_ID_PATTERN = /^i-[0-9a-f]{8,32}$/;
const PROVIDER_ID_PATTERN = /^simulated:\/\/([^/]+)\/([^/]+)$/;

const STATES: ReadonlySet<string> = new Set<InstanceState>([
  "pending",
  "running",
  "stopping",
  "stopped",
  "terminated",
]);
const ADDRESS_TYPES: ReadonlySet<string> = new Set<NodeAddress["type"]>([
  "Hostname",
  "InternalIP",
  "ExternalIP",
  "InternalDNS",
  "ExternalDNS",
]);

/** `simulated://<region>/<instance id>`. */
export function formatProviderID(region: string, instanceID: string): string {
  return `${PROVIDER_NAME}://${region}/${instanceID}`;
}

/** Region and id of a well-formed simulated providerID, else undefined. */
export function parseProviderIDParts(providerID: string): ProviderIDParts | undefined {
  const m = PROVIDER_ID_PATTERN.exec(providerID);
  if (m === null) return undefined;
  const [, region = "", id = ""] = m;
  return REGION_PATTERN.test(region) && INSTANCE_ID_PATTERN.test(id) ? { region, id } : undefined;
}

/** Checks one instance from an answer; a malformed one makes the whole answer suspect. */
export function parseWireInstance(body: unknown): WireInstance {
  const o = asRecord(body, "instance");
  for (const field of ["id", "name", "region", "zone", "instance_type", "state", "network"] as const) {
    requireString(o, field, "instance");
  }
  const addresses = o["addresses"];
  if (!Array.isArray(addresses)) throw suspect("instance.addresses is not an array");
  for (const a of addresses) {
    const r = asRecord(a, "instance.addresses[]");
    requireString(r, "type", "address");
    requireString(r, "address", "address");
  }
  const tags = asRecord(o["tags"], "instance.tags");
  for (const [k, v] of Object.entries(tags)) {
    if (typeof v !== "string") throw suspect(`instance.tags.${k} is not a string`);
  }
  if (o["id"] === "") throw suspect("instance.id is empty");
  return o as unknown as WireInstance;
}

export function parseWireInstanceList(body: unknown): WireInstanceList {
  const o = asRecord(body, "instance list");
  const items = o["instances"];
  if (!Array.isArray(items)) throw suspect("instance list has no instances array");
  const token = o["next_page_token"];
  if (token !== undefined && token !== null && typeof token !== "string") {
    throw suspect("next_page_token is not a string");
  }
  const instances = items.map(parseWireInstance);
  return typeof token === "string" && token !== "" ? { instances, next_page_token: token } : { instances };
}

export function toInstanceMetadata(w: WireInstance): InstanceMetadata {
  return {
    providerID: formatProviderID(w.region, w.id),
    instanceID: w.id,
    name: w.name,
    instanceType: w.instance_type,
    region: w.region,
    zone: w.zone,
    // Address types the contract has no name for are left out: a node cannot carry them.
    addresses: w.addresses
      .filter((a) => ADDRESS_TYPES.has(a.type))
      .map((a) => ({ type: a.type as NodeAddress["type"], address: a.address })),
    state: STATES.has(w.state) ? (w.state as InstanceState) : "unknown",
    network: w.network,
    tags: { ...w.tags },
  };
}

function asRecord(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw suspect(`${what} is not an object`);
  return value as Record<string, unknown>;
}

function requireString(o: Record<string, unknown>, field: string, what: string): void {
  if (typeof o[field] !== "string") throw suspect(`${what}.${field} is not a string`);
}

function suspect(reason: string): SuspectAnswerError {
  return new SuspectAnswerError(`malformed answer from the simulated cloud: ${reason}`);
}

// ---- load balancers, networks, routes ----------------------------------------------------------

export interface WireLbIngress {
  readonly ip: string;
  readonly hostname: string;
}

interface WireLbResource {
  readonly id: string;
  readonly name: string;
  readonly region: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly created_at: string;
}

/** A load balancer's provisioning state; PENDING_* ones refuse every write (409 LoadBalancerBusy). */
export type WireLbStatus = "PENDING_CREATE" | "ACTIVE" | "PENDING_DELETE" | "ERROR";
const LB_STATUSES: ReadonlySet<string> = new Set<WireLbStatus>([
  "PENDING_CREATE",
  "ACTIVE",
  "PENDING_DELETE",
  "ERROR",
]);

export interface WireLoadBalancer extends WireLbResource {
  readonly status: WireLbStatus;
  /** ERROR: why, as the cloud says it. */
  readonly status_message?: string;
  /** PENDING_*: the delay the cloud suggests before the next read. */
  readonly poll_after_ms?: number;
  readonly network: string;
  readonly internal: boolean;
  readonly ingress: WireLbIngress;
  readonly listener_ids: readonly string[];
  readonly pool_ids: readonly string[];
  readonly health_check_ids: readonly string[];
  readonly firewall_ids: readonly string[];
}

export interface WireListener extends WireLbResource {
  readonly lb_id: string;
  readonly protocol: string;
  readonly port: number;
  readonly pool_id: string;
  readonly proxy_protocol: boolean;
  readonly idle_timeout_seconds: number;
}

export interface WirePool extends WireLbResource {
  readonly lb_id: string;
  readonly protocol: string;
  readonly target_port: number;
  readonly members: readonly string[];
  readonly session_affinity: string;
  readonly health_check_id: string | null;
}

export interface WireHealthCheck extends WireLbResource {
  readonly protocol: string;
  readonly port: number;
  readonly path: string;
  readonly interval_seconds: number;
  readonly timeout_seconds: number;
  readonly healthy_threshold: number;
  readonly unhealthy_threshold: number;
}

export interface WireFirewallRule extends WireLbResource {
  readonly lb_id: string;
  readonly protocol: string;
  readonly port: number;
  readonly source_cidrs: readonly string[];
}

export interface WireNetwork {
  readonly id: string;
  readonly is_default: boolean;
  readonly route_table_id: string;
}

export interface WireRoute {
  readonly id: string;
  readonly network: string;
  readonly destination_cidr: string;
  readonly target_instance_id: string;
  readonly description: string;
  readonly blackhole: boolean;
  readonly tags: Readonly<Record<string, string>>;
}

export interface WirePage<T> {
  readonly items: readonly T[];
  readonly next_page_token?: string;
}

type FieldType = "string" | "number" | "boolean" | "string[]" | "tags" | "string?" | "number?" | "ingress";
type Shape = Readonly<Record<string, FieldType>>;

const RESOURCE_SHAPE: Shape = {
  id: "string",
  name: "string",
  region: "string",
  tags: "tags",
  created_at: "string",
};

const LB_SHAPE: Shape = {
  ...RESOURCE_SHAPE,
  status: "string",
  status_message: "string?",
  poll_after_ms: "number?",
  network: "string",
  internal: "boolean",
  ingress: "ingress",
  listener_ids: "string[]",
  pool_ids: "string[]",
  health_check_ids: "string[]",
  firewall_ids: "string[]",
};
const LISTENER_SHAPE: Shape = {
  ...RESOURCE_SHAPE,
  lb_id: "string",
  protocol: "string",
  port: "number",
  pool_id: "string",
  proxy_protocol: "boolean",
  idle_timeout_seconds: "number",
};
const POOL_SHAPE: Shape = {
  ...RESOURCE_SHAPE,
  lb_id: "string",
  protocol: "string",
  target_port: "number",
  members: "string[]",
  session_affinity: "string",
  health_check_id: "string?",
};
const HC_SHAPE: Shape = {
  ...RESOURCE_SHAPE,
  protocol: "string",
  port: "number",
  path: "string",
  interval_seconds: "number",
  timeout_seconds: "number",
  healthy_threshold: "number",
  unhealthy_threshold: "number",
};
const FW_SHAPE: Shape = {
  ...RESOURCE_SHAPE,
  lb_id: "string",
  protocol: "string",
  port: "number",
  source_cidrs: "string[]",
};
const NETWORK_SHAPE: Shape = { id: "string", is_default: "boolean", route_table_id: "string" };
const ROUTE_SHAPE: Shape = {
  id: "string",
  network: "string",
  destination_cidr: "string",
  target_instance_id: "string",
  description: "string",
  blackhole: "boolean",
  tags: "tags",
};

/** Checks one object against a shape; any mismatch makes the whole answer suspect. */
function parseShape<T>(body: unknown, what: string, shape: Shape): T {
  const o = asRecord(body, what);
  for (const [field, type] of Object.entries(shape)) {
    const v = o[field];
    const bad = (expected: string): SuspectAnswerError => suspect(`${what}.${field} is not ${expected}`);
    switch (type) {
      case "string":
        if (typeof v !== "string") throw bad("a string");
        break;
      case "string?":
        if (v !== null && v !== undefined && typeof v !== "string") throw bad("a string or null");
        break;
      case "number":
        if (typeof v !== "number" || !Number.isFinite(v)) throw bad("a number");
        break;
      case "number?":
        if (v !== null && v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < 0))
          throw bad("a non-negative number or null");
        break;
      case "boolean":
        if (typeof v !== "boolean") throw bad("a boolean");
        break;
      case "string[]":
        if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw bad("an array of strings");
        break;
      case "tags": {
        const tags = asRecord(v, `${what}.${field}`);
        for (const [k, t] of Object.entries(tags)) {
          if (typeof t !== "string") throw suspect(`${what}.${field}.${k} is not a string`);
        }
        break;
      }
      case "ingress": {
        const ingress = asRecord(v, `${what}.${field}`);
        requireString(ingress, "ip", `${what}.${field}`);
        requireString(ingress, "hostname", `${what}.${field}`);
        break;
      }
    }
  }
  if (o["id"] === "") throw suspect(`${what}.id is empty`);
  return o as unknown as T;
}

function parsePage<T>(body: unknown, what: string, key: string, item: (b: unknown) => T): WirePage<T> {
  const o = asRecord(body, `${what} list`);
  const items = o[key];
  if (!Array.isArray(items)) throw suspect(`${what} list has no ${key} array`);
  const token = o["next_page_token"];
  if (token !== undefined && token !== null && typeof token !== "string") {
    throw suspect("next_page_token is not a string");
  }
  const parsed = items.map(item);
  return typeof token === "string" && token !== ""
    ? { items: parsed, next_page_token: token }
    : { items: parsed };
}

/** A status this provider does not know could mean anything: acting on it is not safe. */
export function parseWireLoadBalancer(b: unknown): WireLoadBalancer {
  const lb = parseShape<WireLoadBalancer>(b, "load balancer", LB_SHAPE);
  if (!LB_STATUSES.has(lb.status))
    throw suspect(`load balancer.status ${JSON.stringify(lb.status)} is unknown`);
  return lb;
}
export const parseWireListener = (b: unknown): WireListener => parseShape(b, "listener", LISTENER_SHAPE);
export const parseWirePool = (b: unknown): WirePool => parseShape(b, "pool", POOL_SHAPE);
export const parseWireHealthCheck = (b: unknown): WireHealthCheck => parseShape(b, "health check", HC_SHAPE);
export const parseWireFirewallRule = (b: unknown): WireFirewallRule =>
  parseShape(b, "firewall rule", FW_SHAPE);
export const parseWireNetwork = (b: unknown): WireNetwork => parseShape(b, "network", NETWORK_SHAPE);
export const parseWireRoute = (b: unknown): WireRoute => parseShape(b, "route", ROUTE_SHAPE);

export const parseWireLoadBalancerPage = (b: unknown): WirePage<WireLoadBalancer> =>
  parsePage(b, "load balancer", "load_balancers", parseWireLoadBalancer);
export const parseWireListenerPage = (b: unknown): WirePage<WireListener> =>
  parsePage(b, "listener", "listeners", parseWireListener);
export const parseWirePoolPage = (b: unknown): WirePage<WirePool> =>
  parsePage(b, "pool", "pools", parseWirePool);
export const parseWireHealthCheckPage = (b: unknown): WirePage<WireHealthCheck> =>
  parsePage(b, "health check", "health_checks", parseWireHealthCheck);
export const parseWireFirewallRulePage = (b: unknown): WirePage<WireFirewallRule> =>
  parsePage(b, "firewall rule", "firewall_rules", parseWireFirewallRule);
export const parseWireNetworkList = (b: unknown): WirePage<WireNetwork> =>
  parsePage(b, "network", "networks", parseWireNetwork);
export const parseWireRoutePage = (b: unknown): WirePage<WireRoute> =>
  parsePage(b, "route", "routes", parseWireRoute);

export function toCloudRoute(w: WireRoute): CloudRoute {
  return {
    id: w.id,
    destinationCIDR: w.destination_cidr,
    targetInstanceID: w.target_instance_id,
    ...(w.tags[OWNER_TAG_CLUSTER] !== undefined && { ownerCluster: w.tags[OWNER_TAG_CLUSTER] }),
  };
}
