/**
 * ARM errors (the SDK's RestError: HTTP status, ARM's `error.code`, headers) and Entra ID's
 * token failures mapped to the contract's. ARM's code is kept on AzureApiError for the callers
 * that decide by it (PublicIPAddressInUse, ResourceNotFound, ...).
 */
import {
  CloudError,
  ConflictError,
  ForbiddenError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";

export class AzureApiError extends CloudError {
  override name = "AzureApiError";
  constructor(
    readonly code: string,
    readonly status: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

interface RestErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly statusCode?: unknown;
  readonly response?: { readonly headers?: { get(name: string): string | undefined } };
}

/** ARM's Retry-After (seconds, or an HTTP date), in ms. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined || value === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** ARM's codes for a shared object changed or busy under the write: retried at once with fresh state. */
const CONFLICT_CODES = new Set(["PreconditionFailed", "AnotherOperationInProgress", "RetryableError"]);

export function toContractError(
  err: unknown,
  call: {
    readonly op: string;
    readonly timedOut: boolean;
    readonly timeoutMs: number;
    readonly aborted: boolean;
    readonly nowMs: number;
  },
): Error {
  if (err instanceof CloudError) return err;
  if (call.timedOut)
    return new TransientCloudError(`${call.op}: no answer within ${call.timeoutMs} ms`, { cause: err });
  if (call.aborted) return new TransientCloudError(`${call.op}: aborted`, { cause: err });
  const e = (typeof err === "object" && err !== null ? err : {}) as RestErrorShape;
  const message = typeof e.message === "string" ? e.message : String(err);
  // @azure/identity: the token endpoint refused the credential, or could not be reached.
  if (
    e.name === "AuthenticationError" ||
    e.name === "AuthenticationRequiredError" ||
    e.name === "CredentialUnavailableError"
  ) {
    // Entra ID's own refusal (AADSTS codes, OAuth errors) is final until the config changes;
    // anything else (no answer, a 5xx) is transient.
    const refused = /AADSTS\d+|invalid_client|unauthorized_client|invalid_grant|invalid_scope/.test(message);
    return refused
      ? new ForbiddenError(
          `${call.op}: Entra ID refused the credential: ${(/AADSTS\d+: [^.]*/.exec(message) ?? [message.split("\n")[0]])[0]}`,
          { cause: err },
        )
      : new TransientCloudError(`${call.op}: Entra ID: ${message.split("\n")[0]}`, { cause: err });
  }
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  if (status === undefined)
    return new TransientCloudError(`${call.op}: request failed: ${message}`, { cause: err });
  const code = typeof e.code === "string" ? e.code : `http${status}`;
  const text = `${call.op}: ${code}: ${message}`;
  const after = retryAfterMs(e.response?.headers?.get("retry-after"), call.nowMs);
  if (status === 429 || code === "TooManyRequests") return new ThrottledError(text, after, { cause: err });
  if (status === 412 || (status === 409 && CONFLICT_CODES.has(code)) || code === "PreconditionFailed")
    return new ConflictError(text, { cause: err });
  if (status === 401 || status === 403) return new ForbiddenError(text, { cause: err });
  if (status >= 500 || code === "RetryableError") return new TransientCloudError(text, { cause: err });
  return new AzureApiError(code, status, text, { cause: err });
}

export function isNotFound(err: unknown): boolean {
  return (
    err instanceof AzureApiError &&
    err.status === 404 &&
    (err.code === "ResourceNotFound" || err.code === "NotFound" || err.code === "ResourceGroupNotFound")
  );
}

export function hasCode(err: unknown, ...codes: string[]): boolean {
  return err instanceof AzureApiError && codes.includes(err.code);
}
