/**
 * Hetzner Cloud's failures: its error body `{"error": {"code", "message", "details"}}`, and the
 * adapter refining the REST kit's status table with what only Hetzner's codes say. A 404 is
 * never "not found" here: only a get of the server's own URL answering Hetzner's `not_found`
 * may say the server is gone (instances.ts decides, with isNotFound).
 */
import { CloudError, ConflictError } from "../../errors.js";
import { HttpStatusError, type StatusAnswer } from "../../http/failures.js";
import { toContractError as httpToContractError } from "../../http/status-errors.js";

export const HETZNER_LABEL = "Hetzner Cloud API";

/** The API answered with a non-2xx status. */
export class HetznerApiError extends HttpStatusError {
  override name = "HetznerApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    status: number,
    /** Hetzner's error code (`not_found`, `locked`, `rate_limit_exceeded`, ...); "" when the body had none. */
    readonly code: string,
    detail: string,
    retryAfter: string | undefined,
  ) {
    super(
      status,
      retryAfter,
      `${HETZNER_LABEL} ${method} ${path.split("?")[0]}: HTTP ${status}${code === "" ? "" : ` ${code}`}: ${detail || "no message given"}`,
    );
  }

  /** The kit's status-error factory: reads Hetzner's error body. */
  static from(this: void, answer: StatusAnswer): HetznerApiError {
    let code = "";
    let message = "";
    try {
      const body = JSON.parse(answer.text) as { error?: { code?: unknown; message?: unknown } };
      if (typeof body.error?.code === "string") code = body.error.code;
      if (typeof body.error?.message === "string") message = body.error.message;
    } catch {
      // Not Hetzner's JSON (a proxy's page): the status alone decides.
    }
    return new HetznerApiError(answer.method, answer.path, answer.status, code, message, answer.retryAfter);
  }
}

/**
 * Maps what the client throws to a contract error. Hetzner's own codes say more than the
 * status: `locked` (423, an action of the resource still runs) and `conflict` are a busy
 * object, retried at once with fresh state. (A throttle's RateLimit-Reset header does not reach
 * us: the REST kit hands on Retry-After alone; without it the hub's own backoff applies.)
 */
export function toContractError(err: unknown, nowMs: number): unknown {
  return httpToContractError(err, nowMs, (api, mapped) => {
    if (!(api instanceof HetznerApiError)) return mapped;
    if (api.code === "locked" || api.status === 423 || api.code === "conflict")
      return new ConflictError(mapped.message, { cause: api });
    // A quota, not a credential: the same request will not pass, whoever sends it.
    if (api.code === "resource_limit_exceeded") return new CloudError(mapped.message, { cause: api });
    return mapped;
  });
}

/** Hetzner's own `not_found` for the URL asked: the one "it is gone". */
export function isNotFound(err: unknown): boolean {
  const api = err instanceof CloudError && err.cause instanceof HetznerApiError ? err.cause : err;
  return api instanceof HetznerApiError && api.status === 404 && api.code === "not_found";
}
