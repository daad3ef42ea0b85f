/**
 * DigitalOcean's failures: its error body `{"id", "message", "request_id"}`, and the adapter on
 * the REST kit's status table. A 404 is never "not found" here: only a direct get of the
 * Droplet's own URL, answered with DigitalOcean's own `not_found` body, may say so
 * (instances.ts decides, with isNotFound).
 */
import { CloudError } from "../../errors.js";
import { HttpStatusError, type StatusAnswer } from "../../http/failures.js";
import { toContractError as httpToContractError } from "../../http/status-errors.js";

export const DO_LABEL = "DigitalOcean API";

export class DigitalOceanApiError extends HttpStatusError {
  override name = "DigitalOceanApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    status: number,
    /** DigitalOcean's error id ("not_found", "unprocessable_entity", ...); undefined: not its body. */
    readonly id: string | undefined,
    readonly detail: string | undefined,
    retryAfter: string | undefined,
  ) {
    super(
      status,
      retryAfter,
      `${DO_LABEL} ${method} ${path}: HTTP ${status}${id === undefined ? "" : ` ${id}`}: ${detail ?? "no message given"}`,
    );
  }

  /** The kit's status-error factory: reads DigitalOcean's error body. */
  static from(answer: StatusAnswer): DigitalOceanApiError {
    let id: string | undefined;
    let message: string | undefined;
    try {
      const body = JSON.parse(answer.text) as { id?: unknown; message?: unknown };
      if (typeof body.id === "string") id = body.id;
      if (typeof body.message === "string") message = body.message;
    } catch {
      // Not DigitalOcean's JSON (a proxy's page): the status alone decides.
    }
    return new DigitalOceanApiError(
      answer.method,
      answer.path,
      answer.status,
      id,
      message,
      answer.retryAfter,
    );
  }
}

/** Maps what the client throws to a contract error; anything else passes unchanged. */
export function toContractError(err: unknown, nowMs: number): unknown {
  return httpToContractError(err, nowMs);
}

/** DigitalOcean's own 404 (its body, id `not_found`) for the URL asked: the one "it is gone". */
export function isNotFound(err: unknown): boolean {
  const api = err instanceof CloudError && err.cause instanceof DigitalOceanApiError ? err.cause : err;
  return api instanceof DigitalOceanApiError && api.status === 404 && api.id === "not_found";
}
