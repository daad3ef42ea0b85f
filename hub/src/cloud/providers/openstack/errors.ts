/**
 * OpenStack's failures: each service's own error body (Nova `{"itemNotFound": {"code",
 * "message"}}`, Neutron `{"NeutronError": {"type", "message"}}`, Octavia `{"faultcode",
 * "faultstring"}`, Keystone `{"error": {"code", "message", "title"}}`), and the refinements of
 * the REST kit's status table: a 503 with Retry-After is throttling (OpenStack's rate-limit
 * middlewares and haproxy answer 503 so), and an Octavia 409 on an immutable (PENDING_*) load
 * balancer is "in progress" to the caller (load-balancers.ts reads isImmutable). Only a Nova
 * `itemNotFound` on the server's own URL says the server is gone (isNotFound).
 */
import { CloudError, ThrottledError } from "../../errors.js";
import { HttpStatusError, type StatusAnswer } from "../../http/failures.js";
import { parseRetryAfterMs } from "../../http/retry-after.js";
import { toContractError as httpToContractError } from "../../http/status-errors.js";

export const OPENSTACK_LABEL = "OpenStack API";

export class OpenStackApiError extends HttpStatusError {
  override name = "OpenStackApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    status: number,
    /** The service's error kind: Nova's key (`itemNotFound`), Neutron's type, Octavia's faultcode; "" if none. */
    readonly code: string,
    readonly detail: string,
    retryAfter: string | undefined,
  ) {
    super(
      status,
      retryAfter,
      `${OPENSTACK_LABEL} ${method} ${path.split("?")[0]}: HTTP ${status}${code === "" ? "" : ` ${code}`}: ${detail || "no message given"}`,
    );
  }

  static from(this: void, answer: StatusAnswer): OpenStackApiError {
    let code = "";
    let message = "";
    try {
      const body = JSON.parse(answer.text) as Record<string, unknown>;
      const neutron = body["NeutronError"] as { type?: unknown; message?: unknown } | undefined;
      if (typeof body["faultstring"] === "string") {
        code = typeof body["faultcode"] === "string" ? body["faultcode"] : "";
        message = body["faultstring"];
      } else if (neutron !== undefined && typeof neutron === "object") {
        code = typeof neutron.type === "string" ? neutron.type : "";
        message = typeof neutron.message === "string" ? neutron.message : "";
      } else {
        // Nova and Keystone: one key holding {code, message}.
        const [key, inner] = Object.entries(body)[0] ?? [];
        const m = (inner as { message?: unknown } | undefined)?.message;
        if (key !== undefined && typeof inner === "object" && inner !== null && typeof m === "string") {
          code = key;
          message = m;
        }
      }
    } catch {
      // Not OpenStack's JSON (a proxy's page): the status alone decides.
    }
    return new OpenStackApiError(answer.method, answer.path, answer.status, code, message, answer.retryAfter);
  }
}

export function toContractError(err: unknown, nowMs: number): unknown {
  return httpToContractError(err, nowMs, (api, mapped) => {
    if (api.status === 503 && api.retryAfter !== undefined)
      return new ThrottledError(mapped.message, parseRetryAfterMs(api.retryAfter, nowMs), { cause: api });
    return mapped;
  });
}

function apiError(err: unknown): OpenStackApiError | undefined {
  const e = err instanceof CloudError && err.cause instanceof OpenStackApiError ? err.cause : err;
  return e instanceof OpenStackApiError ? e : undefined;
}

/** Nova's own `itemNotFound` for the URL asked: the one "it is gone". */
export function isNotFound(err: unknown): boolean {
  const api = apiError(err);
  return api !== undefined && api.status === 404 && api.code === "itemNotFound";
}

/** Any 404 of the object asked (Neutron, Octavia: its own body says what was not found). */
export function isGone(err: unknown): boolean {
  const api = apiError(err);
  return api !== undefined && api.status === 404 && api.code !== "";
}

/** Octavia's 409: the load balancer (or an object of it) is PENDING_* and refuses changes for now. */
export function isImmutable(err: unknown): boolean {
  const api = apiError(err);
  return api !== undefined && api.status === 409 && /immutable/i.test(api.detail);
}

/** Neutron's 409 naming an object that already exists (a security-group rule made meanwhile). */
export function isAlreadyThere(err: unknown): boolean {
  const api = apiError(err);
  return api !== undefined && api.status === 409 && /Exists$/.test(api.code);
}

/** Neutron's 412: the object moved past the revision an `If-Match` named. */
export function isStaleRevision(err: unknown): boolean {
  return apiError(err)?.status === 412;
}

/** Keystone or a service refused the token (401): worth one re-authentication. */
export function isUnauthorized(err: unknown): boolean {
  return apiError(err)?.status === 401;
}
