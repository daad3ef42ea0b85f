/**
 * The simulated cloud's failures as client.ts sees them, and `toContractError`, which maps
 * each one to the contract errors in ../../errors.ts. Reconcilers only ever see the latter.
 */
import {
  CloudError,
  ForbiddenError,
  InstanceNotFoundError,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";

/** The cloud answered with a non-2xx status. */
export class SimulatedApiError extends Error {
  override name = "SimulatedApiError";
  constructor(
    readonly status: number,
    /** `error.code` of the body, when the body was the cloud's error JSON. */
    readonly code: string | undefined,
    message: string,
    /** Raw Retry-After header. */
    readonly retryAfter: string | undefined,
    /** `error.resource` of a NotFound body: what the cloud says it did not find. */
    readonly resource: { readonly type: string; readonly id: string } | undefined,
  ) {
    super(message);
  }
}

export type TransportFailure = "timeout" | "aborted" | "network";

/** No answer: our timeout, the caller's abort, or a connection error. */
export class SimulatedTransportError extends Error {
  override name = "SimulatedTransportError";
  constructor(
    readonly failure: TransportFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A 2xx whose body is not JSON. */
export class SimulatedMalformedBodyError extends Error {
  override name = "SimulatedMalformedBodyError";
}

export interface ErrorContext {
  /**
   * What was asked. Only a direct get-by-id may turn a 404 into InstanceNotFoundError;
   * a 404 anywhere else is not an answer about any instance.
   */
  readonly lookup:
    | { readonly kind: "get"; readonly id: string; readonly providerID: string }
    | { readonly kind: "list" }
    /** Any other call (load balancers, routes): a 404 here is never InstanceNotFoundError. */
    | { readonly kind: "call" };
  readonly nowMs: number;
}

/** Maps anything client.ts throws to a contract error. Errors that are not the cloud's pass through unchanged. */
export function toContractError(err: unknown, ctx: ErrorContext): unknown {
  if (err instanceof CloudError) return err;
  if (err instanceof SimulatedTransportError) {
    return new TransientCloudError(`simulated cloud: ${err.message}`, { cause: err });
  }
  if (err instanceof SimulatedMalformedBodyError) {
    return new SuspectAnswerError(`simulated cloud: ${err.message}`, { cause: err });
  }
  if (!(err instanceof SimulatedApiError)) return err;

  const what = `simulated cloud: HTTP ${err.status}${err.code === undefined ? "" : ` ${err.code}`}: ${err.message}`;
  const { status } = err;
  if (status === 404) {
    const { lookup } = ctx;
    // A 404 says "instance gone" only when it is the cloud's own NotFound for the very id
    // we asked for; a 404 from a wrong endpoint or a proxy must never justify a deletion.
    if (
      lookup.kind === "get" &&
      err.code === "NotFound" &&
      err.resource?.type === "instance" &&
      err.resource.id === lookup.id
    ) {
      return new InstanceNotFoundError(lookup.providerID, { cause: err });
    }
    return new SuspectAnswerError(what, { cause: err });
  }
  if (status === 429)
    return new ThrottledError(what, parseRetryAfterMs(err.retryAfter, ctx.nowMs), { cause: err });
  if (status === 401 || status === 403) return new ForbiddenError(what, { cause: err });
  if (status === 408 || status >= 500) return new TransientCloudError(what, { cause: err });
  if (status >= 300 && status < 400) return new SuspectAnswerError(what, { cause: err });
  // Something we did not see holds the thing (a dependent a dropped list item hid, the
  // listener of an earlier attempt whose answer was lost): the next attempt lists again.
  if (status === 409 && err.code !== undefined && RETRYABLE_CONFLICTS.has(err.code))
    return new TransientCloudError(what, { cause: err });
  // 400, 405, 409, ...: our request is wrong (bad region, bad page token). Retrying the
  // same request will not help, so this is the plain, non-retryable CloudError.
  return new CloudError(what, { cause: err });
}

const RETRYABLE_CONFLICTS: ReadonlySet<string> = new Set(["DependencyViolation", "DuplicateListener"]);

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

/** Retry-After as delta-seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function parseRetryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const dateMs = Date.parse(text);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}
