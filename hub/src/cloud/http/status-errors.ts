/**
 * The one table from HTTP answers to the contract errors of ../errors.ts, for every provider
 * that speaks REST through this kit. A vendor refines a mapped error where its body says more
 * (a busy reason, a code that is not a conflict, a not-found it can vouch for).
 */
import {
  CloudError,
  ConflictError,
  ForbiddenError,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../errors.js";
import { HttpBodyError, HttpStatusError, HttpTransportError } from "./failures.js";
import { parseRetryAfterMs } from "./retry-after.js";

/**
 * A status to its contract error. A 404 is suspect, never "not found": only a provider's direct
 * lookup of the very object may say it is gone (it checks the vendor's own body). A 503 stays
 * transient with or without Retry-After: the contract calls every 5xx transient, and only a
 * ThrottledError's delay is honoured by the retry policy.
 */
export function statusToContractError(err: HttpStatusError, nowMs: number): CloudError {
  const { status, message } = err;
  const cause = { cause: err };
  if (status === 429) return new ThrottledError(message, parseRetryAfterMs(err.retryAfter, nowMs), cause);
  if (status === 401 || status === 403) return new ForbiddenError(message, cause);
  if (status === 409 || status === 412) return new ConflictError(message, cause);
  if (status === 408 || status >= 500) return new TransientCloudError(message, cause);
  // A redirect (never followed: it could carry the token elsewhere) or a 404 is not an answer.
  if (status < 400 || status === 404) return new SuspectAnswerError(message, cause);
  // 400, 405, 422, ...: our request is wrong; the same request again will not help.
  return new CloudError(message, cause);
}

/** Lets a vendor replace the table's answer for a status error (return `mapped` to keep it). */
export type RefineStatusError = (err: HttpStatusError, mapped: CloudError) => CloudError;

/** Maps anything the kit throws to a contract error; contract and foreign errors pass unchanged. */
export function toContractError(err: unknown, nowMs: number, refine?: RefineStatusError): unknown {
  if (err instanceof CloudError) return err;
  if (err instanceof HttpTransportError) return new TransientCloudError(err.message, { cause: err });
  if (err instanceof HttpBodyError) return new SuspectAnswerError(err.message, { cause: err });
  if (err instanceof HttpStatusError) {
    const mapped = statusToContractError(err, nowMs);
    return refine === undefined ? mapped : refine(err, mapped);
  }
  return err;
}
