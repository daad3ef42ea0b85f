/**
 * Compute Engine errors (gax GoogleErrors over REST) mapped to the contract's. The vendor's
 * reason (notFound, alreadyExists, resourceInUseByAnotherResource, …) is kept on GcpApiError for
 * the callers that decide by it.
 */
import { CloudError, ForbiddenError, ThrottledError, TransientCloudError } from "../../errors.js";

export class GcpApiError extends CloudError {
  override name = "GcpApiError";
  constructor(
    readonly reason: string,
    readonly status: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const RAW_PAYLOAD = Symbol.for("google-gax.rawHttpResponsePayload");

interface GaxErrorShape {
  readonly message?: unknown;
  readonly code?: unknown;
  readonly httpStatusCode?: unknown;
  readonly statusDetails?: unknown;
}

/** Compute's own reason (`errors[0].reason`) from the raw JSON error the SDK keeps. */
function reasonOf(err: object): string | undefined {
  const raw = (err as Record<symbol, unknown>)[RAW_PAYLOAD] ?? rawBySymbolName(err);
  if (typeof raw !== "string") return undefined;
  try {
    const body = JSON.parse(raw) as { error?: { errors?: { reason?: unknown }[] } };
    const reason = body.error?.errors?.[0]?.reason;
    return typeof reason === "string" ? reason : undefined;
  } catch {
    return undefined;
  }
}

function rawBySymbolName(err: object): unknown {
  const sym = Object.getOwnPropertySymbols(err).find(
    (s) => s.description === "google-gax.rawHttpResponsePayload",
  );
  return sym === undefined ? undefined : (err as Record<symbol, unknown>)[sym];
}

/** RetryInfo's delay, as gax decodes it into statusDetails. */
function retryDelayMs(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const d of details as { retryDelay?: { seconds?: unknown; nanos?: unknown } }[]) {
    const seconds = Number(d?.retryDelay?.seconds ?? Number.NaN);
    if (Number.isFinite(seconds)) return seconds * 1000 + Math.round(Number(d.retryDelay?.nanos ?? 0) / 1e6);
  }
  return undefined;
}

/** The reasons Compute answers for rate and quota limits (403 or 429). */
const THROTTLE_REASONS = new Set([
  "rateLimitExceeded",
  "userRateLimitExceeded",
  "quotaExceeded",
  "RATE_LIMIT_EXCEEDED",
]);
const AUTH_REASONS = new Set([
  "authError",
  "forbidden",
  "accessNotConfigured",
  "insufficientPermissions",
  "accountDisabled",
]);

export function toContractError(
  err: unknown,
  call: {
    readonly op: string;
    readonly timedOut: boolean;
    readonly timeoutMs: number;
    readonly aborted: boolean;
  },
): Error {
  if (err instanceof CloudError) return err;
  if (call.timedOut)
    return new TransientCloudError(`${call.op}: no answer within ${call.timeoutMs} ms`, { cause: err });
  if (call.aborted) return new TransientCloudError(`${call.op}: aborted`, { cause: err });
  const e = (typeof err === "object" && err !== null ? err : {}) as GaxErrorShape;
  const message = typeof e.message === "string" ? e.message : String(err);
  const status = typeof e.httpStatusCode === "number" ? e.httpStatusCode : undefined;
  if (status === undefined)
    return new TransientCloudError(`${call.op}: request failed: ${message}`, { cause: err });
  const reason = (typeof err === "object" && err !== null ? reasonOf(err) : undefined) ?? `http${status}`;
  const text = `${call.op}: ${reason}: ${message}`;
  if (status === 429 || THROTTLE_REASONS.has(reason))
    return new ThrottledError(text, retryDelayMs(e.statusDetails), { cause: err });
  if (status === 401 || status === 403 || AUTH_REASONS.has(reason))
    return new ForbiddenError(text, { cause: err });
  if (status >= 500) return new TransientCloudError(text, { cause: err });
  return new GcpApiError(reason, status, text, { cause: err });
}

export function hasReason(err: unknown, ...reasons: string[]): boolean {
  return err instanceof GcpApiError && reasons.includes(err.reason);
}

export function isNotFound(err: unknown): boolean {
  return err instanceof GcpApiError && (err.status === 404 || err.reason === "notFound");
}
