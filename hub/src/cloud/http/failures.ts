/**
 * What the REST kit throws before any mapping: the API answered a non-2xx status, answered a
 * 2xx that is not JSON, or did not answer at all. status-errors.ts maps them to the contract.
 */

/** A non-2xx answer. Vendors subclass it to carry what their error body says. */
export class HttpStatusError extends Error {
  override name = "HttpStatusError";
  constructor(
    readonly status: number,
    /** Raw Retry-After header. */
    readonly retryAfter: string | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** What a vendor's status-error factory gets to build its HttpStatusError from. */
export interface StatusAnswer {
  /** The kit's own description: `<label> <METHOD> <path>: HTTP <status>`. */
  readonly what: string;
  readonly method: string;
  /** The path asked, without its query. */
  readonly path: string;
  readonly status: number;
  readonly retryAfter: string | undefined;
  /** The body as text (may be a proxy's HTML). */
  readonly text: string;
}

/** A 2xx whose body is not JSON. */
export class HttpBodyError extends Error {
  override name = "HttpBodyError";
}

/** timeout: our one timeout fired; aborted: a caller's signal; network: no connection or it broke. */
export type TransportFailure = "timeout" | "aborted" | "network";

/** No answer. */
export class HttpTransportError extends Error {
  override name = "HttpTransportError";
  constructor(
    readonly failure: TransportFailure,
    message: string,
    options?: { cause?: unknown; code?: string | undefined },
  ) {
    super(message, options);
    this.code = options?.code;
  }

  /** The system error code when the socket failed (ECONNREFUSED, ECONNRESET, ...). */
  readonly code: string | undefined;
}
