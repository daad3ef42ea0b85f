/**
 * The public API's JSON shapes (snake_case, as most cloud REST APIs have them) and its
 * error bodies. The hub's `simulated` provider has its own copy of these shapes in its
 * convert.ts: the two sides share a wire format, never code.
 */
import type { SimInstance } from "./types.js";

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

/** Page tokens are opaque to clients: base64url of a small versioned JSON. */
export function encodePageToken(afterSeq: number): string {
  return Buffer.from(JSON.stringify({ v: 1, after: afterSeq }), "utf8").toString("base64url");
}

/** The seq to continue after, or undefined when the token is not one of ours. */
export function decodePageToken(token: string): number | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const { v, after } = parsed as { v?: unknown; after?: unknown };
    return v === 1 && typeof after === "number" && Number.isSafeInteger(after) && after >= 0
      ? after
      : undefined;
  } catch {
    return undefined;
  }
}
