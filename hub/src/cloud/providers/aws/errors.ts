/**
 * AWS SDK errors mapped to the contract's errors. The vendor's code is kept on AwsApiError
 * for the callers that decide by it (DependencyViolation, InvalidPermission.Duplicate, …).
 */
import { CloudError, ForbiddenError, ThrottledError, TransientCloudError } from "../../errors.js";

/** A refusal by AWS that retrying will not change by itself. */
export class AwsApiError extends CloudError {
  override name = "AwsApiError";
  constructor(
    readonly code: string,
    readonly status: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** EC2's RequestLimitExceeded, the query services' Throttling, and their cousins. */
const THROTTLE_CODES = new Set([
  "RequestLimitExceeded",
  "Throttling",
  "ThrottlingException",
  "ThrottledException",
  "RequestThrottled",
  "RequestThrottledException",
  "TooManyRequestsException",
  "SlowDown",
]);

const AUTH_CODES = new Set([
  "AuthFailure",
  "UnauthorizedOperation",
  "InvalidClientTokenId",
  "SignatureDoesNotMatch",
  "AccessDenied",
  "AccessDeniedException",
  "MissingAuthenticationToken",
  "OptInRequired",
  "Blocked",
  "PendingVerification",
  "ExpiredToken",
]);

interface SdkErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly Code?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: number };
  readonly $response?: { readonly headers?: Readonly<Record<string, string | undefined>> };
}

/** The vendor's error code of an SDK error (modeled errors carry it as Code, unmodeled as name). */
export function awsErrorCode(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as SdkErrorShape;
  if (e.$metadata === undefined) return undefined;
  if (typeof e.Code === "string") return e.Code;
  return typeof e.name === "string" ? e.name : undefined;
}

export function isExpiredToken(err: unknown): boolean {
  return awsErrorCode(err) === "ExpiredToken" || awsErrorCode(err) === "RequestExpired";
}

/** One SDK error as the contract's: never leaks a credential (SDK messages carry none). */
export function toContractError(
  err: unknown,
  call: { readonly op: string; readonly timedOut: boolean; readonly timeoutMs: number },
): Error {
  if (err instanceof CloudError) return err;
  if (call.timedOut)
    return new TransientCloudError(`${call.op}: no answer within ${call.timeoutMs} ms`, { cause: err });
  const e = (typeof err === "object" && err !== null ? err : {}) as SdkErrorShape;
  const message = typeof e.message === "string" ? e.message : String(err);
  if (e.$metadata === undefined) {
    const aborted = typeof e.name === "string" && e.name === "AbortError";
    return new TransientCloudError(`${call.op}: ${aborted ? "aborted" : `request failed: ${message}`}`, {
      cause: err,
    });
  }
  const code = awsErrorCode(err) ?? "Unknown";
  const status = e.$metadata.httpStatusCode;
  const text = `${call.op}: ${code}: ${message}`;
  if (THROTTLE_CODES.has(code) || status === 429) {
    // AWS sends no Retry-After; honour one where a proxy or endpoint does.
    const header = e.$response?.headers?.["retry-after"];
    const seconds = header === undefined ? Number.NaN : Number(header);
    return new ThrottledError(text, Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined, {
      cause: err,
    });
  }
  if (AUTH_CODES.has(code) || status === 401 || status === 403)
    return new ForbiddenError(text, { cause: err });
  if (status !== undefined && status >= 500) return new TransientCloudError(text, { cause: err });
  return new AwsApiError(code, status, text, { cause: err });
}

export function hasCode(err: unknown, ...codes: string[]): boolean {
  return err instanceof AwsApiError && codes.includes(err.code);
}
