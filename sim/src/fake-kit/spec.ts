/**
 * The spec hook: every request a fake receives and every answer it gives, checked against
 * the vendor's own machine-readable description (OpenAPI, a botocore model, a discovery
 * document). A fake calls checkRequest once it knows the operation and checkResponse for
 * each answer (Exchange does that); problems are collected, and a test asserts none.
 */

export interface SpecRequest {
  readonly method: string;
  /** The path without the query, e.g. "/v4/linode/instances/123". */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed body (JSON value, or form parameters for query APIs); undefined when none. */
  readonly body?: unknown;
}

export interface SpecResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** A JSON value, or the text of an XML or other body. */
  readonly body?: unknown;
  readonly contentType?: string;
}

export interface SpecProblem {
  /** The fake's operation name (as logged) and the spec's, when one was found. */
  readonly operation: string;
  readonly specOperation?: string;
  readonly where: "request" | "response";
  readonly method: string;
  readonly path: string;
  /** E.g. "/data/0/ipv4: must be array", "no operation for GET /v4/nope". */
  readonly message: string;
}

export interface SpecHook {
  checkRequest(operation: string, request: SpecRequest): void;
  checkResponse(
    operation: string,
    response: SpecResponse,
    request: { readonly method: string; readonly path: string },
  ): void;
  /** Every problem seen so far. */
  problems(): readonly SpecProblem[];
  /** Throws SpecViolationError listing the problems, if any. */
  assertClean(): void;
  reset(): void;
}

export class SpecViolationError extends Error {
  override name = "SpecViolationError";
  constructor(readonly problems: readonly SpecProblem[]) {
    super(
      `${problems.length} spec problem(s):\n${problems
        .slice(0, 20)
        .map((p) => `  ${p.where} ${p.method} ${p.path} (${p.operation}): ${p.message}`)
        .join("\n")}`,
    );
  }
}

/**
 * The checks a spec format implements: each returns the problems of one request or answer.
 * Wrap one in `specHook()` to collect them.
 */
export interface SpecChecker {
  checkRequest(request: SpecRequest): { specOperation?: string; problems: string[] };
  checkResponse(
    request: { readonly method: string; readonly path: string },
    response: SpecResponse,
  ): { specOperation?: string; problems: string[] };
}

/** A hook that collects the checker's problems (and passes `onProblem` each as it comes). */
export function specHook(checker: SpecChecker, onProblem?: (p: SpecProblem) => void): SpecHook {
  const seen: SpecProblem[] = [];
  const add = (
    operation: string,
    where: SpecProblem["where"],
    method: string,
    path: string,
    result: { specOperation?: string; problems: string[] },
  ): void => {
    for (const message of result.problems) {
      const p: SpecProblem = {
        operation,
        where,
        method,
        path,
        message,
        ...(result.specOperation !== undefined && { specOperation: result.specOperation }),
      };
      seen.push(p);
      onProblem?.(p);
    }
  };
  return {
    checkRequest(operation, request) {
      add(operation, "request", request.method, request.path, checker.checkRequest(request));
    },
    checkResponse(operation, response, request) {
      const path = stripQuery(request.path);
      add(operation, "response", request.method, path, checker.checkResponse({ ...request, path }, response));
    },
    problems: () => seen,
    assertClean() {
      if (seen.length > 0) throw new SpecViolationError([...seen]);
    },
    reset() {
      seen.length = 0;
    },
  };
}

function stripQuery(path: string): string {
  const q = path.indexOf("?");
  return q < 0 ? path : path.slice(0, q);
}
