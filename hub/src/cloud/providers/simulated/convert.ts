/**
 * Pure mapping between the simulated cloud's wire format (snake_case JSON, see the
 * cloud's public API) and the provider contract. The shapes are declared here again on
 * purpose: the hub never imports sim/, the two sides share only the wire format.
 */
import { SuspectAnswerError } from "../../errors.js";
import type { InstanceMetadata, InstanceState, NodeAddress } from "../../provider.js";

export const PROVIDER_NAME = "simulated";

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
