/**
 * The simulated cloud's error body (`{"error": {"code", "message", "resource"}}`), and
 * `toContractError`, which maps what client.ts throws to the contract errors in ../../errors.ts
 * through the REST kit's status table, refined by what only this cloud's body says. Reconcilers
 * only ever see the contract errors.
 */
import { CloudError, DiskNotFoundError, InstanceNotFoundError } from "../../errors.js";
import { HttpStatusError, type StatusAnswer } from "../../http/failures.js";
import { toContractError as httpToContractError } from "../../http/status-errors.js";

export const SIMULATED_LABEL = "simulated cloud";

/** The cloud answered with a non-2xx status. */
export class SimulatedApiError extends HttpStatusError {
  override name = "SimulatedApiError";
  constructor(
    status: number,
    /** `error.code` of the body, when the body was the cloud's error JSON. */
    readonly code: string | undefined,
    /** `error.message` of the body (else the body's start). */
    readonly detail: string,
    retryAfter: string | undefined,
    /** `error.resource` of a NotFound body: what the cloud says it did not find. */
    readonly resource: { readonly type: string; readonly id: string } | undefined,
  ) {
    super(
      status,
      retryAfter,
      `${SIMULATED_LABEL}: HTTP ${status}${code === undefined ? "" : ` ${code}`}: ${detail}`,
    );
  }

  /** The kit's status-error factory: reads the cloud's error body. */
  static from(answer: StatusAnswer): SimulatedApiError {
    const { status, text, retryAfter } = answer;
    let code: string | undefined;
    let detail = text.slice(0, 200);
    let resource: { type: string; id: string } | undefined;
    try {
      const body = JSON.parse(text) as unknown;
      const error =
        typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined;
      if (typeof error === "object" && error !== null) {
        const e = error as { code?: unknown; message?: unknown; resource?: unknown };
        if (typeof e.code === "string") code = e.code;
        if (typeof e.message === "string") detail = e.message;
        const r = e.resource as { type?: unknown; id?: unknown } | undefined;
        if (typeof r?.type === "string" && typeof r.id === "string") resource = { type: r.type, id: r.id };
      }
    } catch {
      // Not the cloud's JSON (a proxy page, say): the status alone decides.
    }
    return new SimulatedApiError(status, code, detail, retryAfter, resource);
  }
}

export interface ErrorContext {
  /**
   * What was asked. Only a direct get-by-id may turn a 404 into InstanceNotFoundError;
   * a 404 anywhere else is not an answer about any instance.
   */
  readonly lookup:
    | { readonly kind: "get"; readonly id: string; readonly providerID: string }
    | { readonly kind: "list" }
    /** A direct disk read: its 404 alone says the disk is not in the account's region. */
    | { readonly kind: "disk"; readonly id: string }
    /** Any other call (load balancers, routes): a 404 here is never InstanceNotFoundError. */
    | { readonly kind: "call" };
  readonly nowMs: number;
}

/** Maps anything client.ts throws to a contract error. Errors that are not the cloud's pass through unchanged. */
export function toContractError(err: unknown, ctx: ErrorContext): unknown {
  return httpToContractError(err, ctx.nowMs, (api, mapped) => {
    if (!(api instanceof SimulatedApiError)) return mapped;
    const { lookup } = ctx;
    // A 404 says "instance gone" only when it is the cloud's own NotFound for the very id
    // we asked for; a 404 from a wrong endpoint or a proxy must never justify a deletion.
    if (lookup.kind === "get" && isNotFoundOf(api, "instance", lookup.id))
      return new InstanceNotFoundError(lookup.providerID, { cause: api });
    if (lookup.kind === "disk" && isNotFoundOf(api, "disk", lookup.id))
      return new DiskNotFoundError(lookup.id, { cause: api });
    // A 409 is a conflict to retry only when something we did not see holds the thing (a
    // dependent a dropped list item hid, the listener of an earlier attempt whose answer was
    // lost): the next attempt lists again. Any other 409 (RouteAlreadyExists, ...) says our
    // request is wrong, and the same request again will not help.
    if (api.status === 409 && (api.code === undefined || !RETRYABLE_CONFLICTS.has(api.code)))
      return new CloudError(mapped.message, { cause: api });
    return mapped;
  });
}

// LoadBalancerBusy: the load balancer went PENDING_* under the call (another replica's delete);
// the next attempt reads its status and answers in progress.
const RETRYABLE_CONFLICTS: ReadonlySet<string> = new Set([
  "DependencyViolation",
  "DuplicateListener",
  "LoadBalancerBusy",
]);

/**
 * The cloud's own NotFound for exactly this resource: the one 404 that says "it is gone".
 * A 404 from a wrong endpoint or a proxy (no code, another resource) is not such an answer.
 */
export function isNotFoundOf(err: unknown, type: string, id: string): boolean {
  return (
    err instanceof SimulatedApiError &&
    err.status === 404 &&
    err.code === "NotFound" &&
    err.resource?.type === type &&
    err.resource.id === id
  );
}

/** A 409 with this error code. */
export function isConflict(err: unknown, code: string): boolean {
  return err instanceof SimulatedApiError && err.status === 409 && err.code === code;
}
