import { describe, expect, test } from "@jest/globals";
import { FakeClock } from "../../util/clock.js";
import {
  CloudError,
  ConflictError,
  ForbiddenError,
  isRetryable,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../errors.js";
import { HttpBodyError, HttpStatusError, HttpTransportError } from "./failures.js";
import { toContractError } from "./status-errors.js";

const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
const http = (status: number, retryAfter?: string) =>
  new HttpStatusError(status, retryAfter, `API GET /x: HTTP ${status}`);

describe("HTTP status to contract errors", () => {
  test.each([
    [400, CloudError],
    [401, ForbiddenError],
    [403, ForbiddenError],
    [404, SuspectAnswerError],
    [405, CloudError],
    [408, TransientCloudError],
    [409, ConflictError],
    [412, ConflictError],
    [422, CloudError],
    [429, ThrottledError],
    [500, TransientCloudError],
    [502, TransientCloudError],
    [503, TransientCloudError],
    [504, TransientCloudError],
    [301, SuspectAnswerError],
    [302, SuspectAnswerError],
  ])("HTTP %d is %p", (status, cls) => {
    const err = toContractError(http(status), clock.now());
    expect((err as Error).constructor).toBe(cls);
    expect((err as Error).cause).toBeInstanceOf(HttpStatusError);
    expect((err as Error).message).toBe(`API GET /x: HTTP ${status}`);
  });

  test("conflicts are retried, a plain 4xx and a refusal of credentials are not", () => {
    expect(isRetryable(toContractError(http(412), 0))).toBe(true);
    expect(isRetryable(toContractError(http(409), 0))).toBe(true);
    expect(isRetryable(toContractError(http(400), 0))).toBe(false);
    expect(isRetryable(toContractError(http(403), 0))).toBe(false);
  });

  test("429 carries Retry-After (seconds or an HTTP date on the injected clock), or none", () => {
    const secs = toContractError(http(429, "7"), clock.now()) as ThrottledError;
    expect(secs.retryAfterMs).toBe(7_000);
    const date = new Date(clock.now() + 12_000).toUTCString();
    expect((toContractError(http(429, date), clock.now()) as ThrottledError).retryAfterMs).toBe(12_000);
    expect((toContractError(http(429), clock.now()) as ThrottledError).retryAfterMs).toBeUndefined();
  });

  test("a 503 with Retry-After stays transient: the contract calls every 5xx transient", () => {
    expect((toContractError(http(503, "5"), clock.now()) as Error).constructor).toBe(TransientCloudError);
  });

  test("no answer is transient, a 2xx that is not JSON is suspect", () => {
    for (const failure of ["timeout", "aborted", "network"] as const)
      expect((toContractError(new HttpTransportError(failure, "x"), 0) as Error).constructor).toBe(
        TransientCloudError,
      );
    expect(toContractError(new HttpBodyError("x"), 0)).toBeInstanceOf(SuspectAnswerError);
  });

  test("a vendor refines the table; contract and foreign errors pass through unchanged", () => {
    const refined = toContractError(http(400), 0, (e, mapped) =>
      e.status === 400 ? new TransientCloudError("busy", { cause: e }) : mapped,
    );
    expect(refined).toBeInstanceOf(TransientCloudError);
    const kept = toContractError(http(404), 0, (_e, mapped) => mapped);
    expect(kept).toBeInstanceOf(SuspectAnswerError);
    const suspect = new SuspectAnswerError("x");
    expect(toContractError(suspect, 0)).toBe(suspect);
    const bug = new TypeError("bug");
    expect(toContractError(bug, 0)).toBe(bug);
  });
});
