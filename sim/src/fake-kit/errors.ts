/**
 * One error type for every vendor fake. Handlers and the kit throw FakeError with an HTTP
 * status and a code in the fake's own vocabulary; the fake's ErrorRenderer turns it into the
 * vendor's wire shape (a JSON envelope, an XML <Response><Errors>, a status and headers).
 */

/** What produced the error, so that a renderer can pick the vendor's own shape for it. */
export type FakeErrorKind =
  | "request" // the caller's fault: a bad parameter, a missing resource, a conflict
  | "auth"
  | "throttled"
  | "internal"
  | "unavailable"
  | "timeout";

export class FakeError extends Error {
  override name = "FakeError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: {
      readonly kind?: FakeErrorKind;
      readonly headers?: Readonly<Record<string, string>>;
      /** The request field at fault, where the vendor reports one (Linode: `field`). */
      readonly field?: string;
      /** For a not-found: what was looked up. */
      readonly resource?: { readonly type: string; readonly id: string };
    } = {},
  ) {
    super(message);
  }

  get kind(): FakeErrorKind {
    return this.extra.kind ?? (this.status >= 500 ? "internal" : "request");
  }
}

/** A rendered answer: status, headers and a body (text, or a value sent as JSON). */
export interface WireAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** A string is sent as is with `contentType`; anything else as JSON. */
  readonly body?: unknown;
  readonly contentType?: string;
}

/** Turns an error into the vendor's wire shape. */
export interface ErrorRenderer {
  render(
    error: {
      readonly status: number;
      readonly code: string;
      readonly message: string;
      readonly kind: FakeErrorKind;
      readonly headers?: Readonly<Record<string, string>>;
      readonly field?: string;
      readonly resource?: { readonly type: string; readonly id: string };
    },
    call: { readonly requestId: string; readonly operation: string },
  ): WireAnswer;
}

/** The fields a renderer sees, from any thrown FakeError (or a look-alike with status and code). */
export function errorFields(err: FakeError): Parameters<ErrorRenderer["render"]>[0] {
  return {
    status: err.status,
    code: err.code,
    message: err.message,
    kind: err.kind,
    ...(err.extra.headers !== undefined && { headers: err.extra.headers }),
    ...(err.extra.field !== undefined && { field: err.extra.field }),
    ...(err.extra.resource !== undefined && { resource: err.extra.resource }),
  };
}

/**
 * The vendor's word for an error of this kind (its code, reason or message for a throttle, a
 * 5xx, a timeout, a refused token), or `otherwise` (usually the error's own code or message).
 */
export function byKind(
  error: { readonly kind: FakeErrorKind },
  words: Partial<Record<FakeErrorKind, string>>,
  otherwise: string,
): string {
  return words[error.kind] ?? otherwise;
}
