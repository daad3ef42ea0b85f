/**
 * Linode's failures: its error body `{"errors": [{"reason", "field"}]}`, and the adapter that
 * refines the REST kit's status table with what only Linode says (a busy reason). A 404 is
 * never mapped to InstanceNotFoundError here: only a direct get of the Linode's own URL may
 * say "gone" (instances.ts decides, with isNotFound).
 */
import { CloudError, TransientCloudError } from "../../errors.js";
import { HttpStatusError, type StatusAnswer } from "../../http/failures.js";
import { toContractError as httpToContractError } from "../../http/status-errors.js";

export const LINODE_LABEL = "Linode API";

/** One entry of Linode's `{"errors": [{"reason", "field"}]}`. */
export interface LinodeErrorEntry {
  readonly reason: string;
  readonly field?: string;
}

/** The API answered with a non-2xx status. */
export class LinodeApiError extends HttpStatusError {
  override name = "LinodeApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    status: number,
    readonly errors: readonly LinodeErrorEntry[],
    retryAfter: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      status,
      retryAfter,
      `${LINODE_LABEL} ${method} ${path.split("?")[0]}: HTTP ${status}: ${
        errors.map((e) => (e.field === undefined ? e.reason : `${e.field}: ${e.reason}`)).join("; ") ||
        "no reason given"
      }`,
      options,
    );
  }

  /** The kit's status-error factory: reads Linode's error body. */
  static from(answer: StatusAnswer): LinodeApiError {
    return new LinodeApiError(
      answer.method,
      answer.path,
      answer.status,
      readErrors(answer.text),
      answer.retryAfter,
    );
  }

  /** The first error's reason (what Linode says went wrong). */
  get reason(): string | undefined {
    return this.errors[0]?.reason;
  }

  get field(): string | undefined {
    return this.errors.find((e) => e.field !== undefined)?.field;
  }
}

function readErrors(text: string): LinodeErrorEntry[] {
  try {
    const body = JSON.parse(text) as { errors?: unknown };
    if (!Array.isArray(body.errors)) return [];
    return body.errors
      .filter((e): e is { reason: unknown; field?: unknown } => typeof e === "object" && e !== null)
      .map((e) => ({
        reason: typeof e.reason === "string" ? e.reason : String(e.reason),
        ...(typeof e.field === "string" && { field: e.field }),
      }));
  } catch {
    // Not Linode's JSON (a proxy's page): the status alone decides.
    return [];
  }
}

/** Linode's "try again" answers that are not 5xx (a Linode or NodeBalancer busy with another job). */
const BUSY = /busy|try again|please wait/i;

/** Maps what the client throws to a contract error; anything else passes unchanged. */
export function toContractError(err: unknown, nowMs: number): unknown {
  return httpToContractError(err, nowMs, (api, mapped) =>
    // Only a plain refusal can be a busy answer: the table's other classes already say more.
    mapped.constructor === CloudError &&
    api instanceof LinodeApiError &&
    api.errors.some((e) => BUSY.test(e.reason))
      ? new TransientCloudError(mapped.message, { cause: api })
      : mapped,
  );
}

/** Linode's own 404 (its envelope, reason "Not found") for the URL asked: the one "it is gone". */
export function isNotFound(err: unknown): boolean {
  const api = err instanceof CloudError && err.cause instanceof LinodeApiError ? err.cause : err;
  return (
    api instanceof LinodeApiError &&
    api.status === 404 &&
    api.errors.some((e) => /^not found$/i.test(e.reason))
  );
}
