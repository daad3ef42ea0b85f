/**
 * Linode's failures as the client sees them, and their mapping to the contract errors. A 404
 * is never mapped to InstanceNotFoundError here: only a direct get of the Linode's own URL
 * may say "gone" (instances.ts decides, with isNotFound).
 */
import {
  CloudError,
  ForbiddenError,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { parseRetryAfterMs } from "../simulated/errors.js";

/** One entry of Linode's `{"errors": [{"reason", "field"}]}`. */
export interface LinodeErrorEntry {
  readonly reason: string;
  readonly field?: string;
}

/** The API answered with a non-2xx status (or a 2xx that is not its JSON). */
export class LinodeApiError extends Error {
  override name = "LinodeApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly errors: readonly LinodeErrorEntry[],
    /** Raw Retry-After header. */
    readonly retryAfter: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Linode API ${method} ${path.split("?")[0]}: HTTP ${status}: ${
        errors.map((e) => (e.field === undefined ? e.reason : `${e.field}: ${e.reason}`)).join("; ") ||
        "no reason given"
      }`,
      options,
    );
  }

  static from(method: string, path: string, status: number, headers: Headers, text: string): LinodeApiError {
    let errors: LinodeErrorEntry[] = [];
    try {
      const body = JSON.parse(text) as { errors?: unknown };
      if (Array.isArray(body.errors))
        errors = body.errors
          .filter((e): e is { reason: unknown; field?: unknown } => typeof e === "object" && e !== null)
          .map((e) => ({
            reason: typeof e.reason === "string" ? e.reason : String(e.reason),
            ...(typeof e.field === "string" && { field: e.field }),
          }));
    } catch {
      // Not Linode's JSON (a proxy's page): the status alone decides.
    }
    return new LinodeApiError(method, path, status, errors, headers.get("retry-after") ?? undefined);
  }

  /** The first error's reason (what Linode says went wrong). */
  get reason(): string | undefined {
    return this.errors[0]?.reason;
  }

  get field(): string | undefined {
    return this.errors.find((e) => e.field !== undefined)?.field;
  }
}

export type TransportFailure = "timeout" | "aborted" | "network";

export class LinodeTransportError extends Error {
  override name = "LinodeTransportError";
  constructor(
    readonly failure: TransportFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Linode's "try again" answers that are not 5xx (a Linode or NodeBalancer busy with another job). */
const BUSY = /busy|try again|please wait/i;

/** Maps what the client throws to a contract error; anything else passes unchanged. */
export function toContractError(err: unknown, nowMs: number): unknown {
  if (err instanceof CloudError) return err;
  if (err instanceof LinodeTransportError)
    return new TransientCloudError(`Linode API: ${err.message}`, { cause: err });
  if (!(err instanceof LinodeApiError)) return err;
  const { status } = err;
  if (status === 429)
    return new ThrottledError(err.message, parseRetryAfterMs(err.retryAfter, nowMs), { cause: err });
  if (status === 401 || status === 403) return new ForbiddenError(err.message, { cause: err });
  if (status === 408 || status >= 500) return new TransientCloudError(err.message, { cause: err });
  if (status >= 200 && status < 400) return new SuspectAnswerError(err.message, { cause: err });
  if (status === 404) return new SuspectAnswerError(err.message, { cause: err });
  if (err.errors.some((e) => BUSY.test(e.reason)))
    return new TransientCloudError(err.message, { cause: err });
  return new CloudError(err.message, { cause: err });
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
