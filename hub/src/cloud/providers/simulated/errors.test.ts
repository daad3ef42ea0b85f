import { describe, expect, test } from "@jest/globals";
import {
  CloudError,
  ForbiddenError,
  InstanceNotFoundError,
  SuspectAnswerError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { HttpBodyError, HttpTransportError } from "../../http/failures.js";
import { type ErrorContext, isConflict, isNotFoundOf, SimulatedApiError, toContractError } from "./errors.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const get: ErrorContext = {
  lookup: { kind: "get", id: "i-0a1b2c3d4e5f", providerID: "simulated://r/i-0a1b2c3d4e5f" },
  nowMs: NOW,
};
const list: ErrorContext = { lookup: { kind: "list" }, nowMs: NOW };

function api(status: number, code?: string, opts: { retryAfter?: string; resourceId?: string } = {}) {
  const resource = opts.resourceId === undefined ? undefined : { type: "instance", id: opts.resourceId };
  return new SimulatedApiError(status, code, "msg", opts.retryAfter, resource);
}

describe("simulated toContractError", () => {
  test("errors - the cloud's NotFound for the id asked is InstanceNotFoundError on a get", () => {
    const err = toContractError(api(404, "NotFound", { resourceId: "i-0a1b2c3d4e5f" }), get);
    expect(err).toBeInstanceOf(InstanceNotFoundError);
    expect((err as InstanceNotFoundError).lookup).toBe("simulated://r/i-0a1b2c3d4e5f");
  });

  test.each([
    ["on a list", api(404, "NotFound", { resourceId: "i-0a1b2c3d4e5f" }), list],
    ["for another id", api(404, "NotFound", { resourceId: "i-ffffffffffff" }), get],
    ["without the cloud's body (proxy, wrong endpoint)", api(404), get],
    ["for an unknown route", api(404, "RouteNotFound"), get],
  ])("errors - a 404 %s is suspect, never not-found", (_name, err, ctx) => {
    expect(toContractError(err, ctx)).toBeInstanceOf(SuspectAnswerError);
  });

  test.each([
    [500, TransientCloudError],
    [502, TransientCloudError],
    [503, TransientCloudError],
    [504, TransientCloudError],
    [408, TransientCloudError],
    [401, ForbiddenError],
    [403, ForbiddenError],
    [302, SuspectAnswerError],
  ])("errors - HTTP %d maps to %p", (status, cls) => {
    expect(toContractError(api(status), get)).toBeInstanceOf(cls);
  });

  test("errors - 400 is a plain, non-retryable CloudError", () => {
    const err = toContractError(api(400, "InvalidPageToken"), list);
    expect(err).toBeInstanceOf(CloudError);
    expect(err).not.toBeInstanceOf(TransientCloudError);
    expect(err).not.toBeInstanceOf(SuspectAnswerError);
  });

  test("errors - 429 carries Retry-After in ms", () => {
    const err = toContractError(api(429, "Throttling", { retryAfter: "7" }), list);
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as ThrottledError).retryAfterMs).toBe(7_000);
    expect((toContractError(api(429), list) as ThrottledError).retryAfterMs).toBeUndefined();
  });

  test("errors - transport failures are transient, a non-JSON 200 is suspect", () => {
    for (const failure of ["timeout", "aborted", "network"] as const) {
      expect(toContractError(new HttpTransportError(failure, "x"), get)).toBeInstanceOf(TransientCloudError);
    }
    expect(toContractError(new HttpBodyError("x"), get)).toBeInstanceOf(SuspectAnswerError);
  });

  test("errors - contract errors and foreign errors pass through", () => {
    const suspect = new SuspectAnswerError("x");
    expect(toContractError(suspect, get)).toBe(suspect);
    const bug = new TypeError("bug");
    expect(toContractError(bug, get)).toBe(bug);
  });

  test("errors - 409 DependencyViolation and DuplicateListener are transient; other conflicts are not", () => {
    const call: ErrorContext = { lookup: { kind: "call" }, nowMs: NOW };
    expect(toContractError(api(409, "DependencyViolation"), call)).toBeInstanceOf(TransientCloudError);
    expect(toContractError(api(409, "DuplicateListener"), call)).toBeInstanceOf(TransientCloudError);
    const other = toContractError(api(409, "RouteAlreadyExists"), call);
    expect(other).toBeInstanceOf(CloudError);
    expect(other).not.toBeInstanceOf(TransientCloudError);
    expect(isConflict(api(409, "RouteAlreadyExists"), "RouteAlreadyExists")).toBe(true);
    expect(isConflict(api(400, "RouteAlreadyExists"), "RouteAlreadyExists")).toBe(false);
  });

  test("errors - a 404 on a call is suspect; isNotFoundOf only accepts the cloud's NotFound for that id", () => {
    const call: ErrorContext = { lookup: { kind: "call" }, nowMs: NOW };
    const gone = new SimulatedApiError(404, "NotFound", "m", undefined, { type: "pool", id: "pool-1" });
    expect(toContractError(gone, call)).toBeInstanceOf(SuspectAnswerError);
    expect(isNotFoundOf(gone, "pool", "pool-1")).toBe(true);
    expect(isNotFoundOf(gone, "pool", "pool-2")).toBe(false);
    expect(isNotFoundOf(gone, "listener", "pool-1")).toBe(false);
    expect(isNotFoundOf(api(404, "RouteNotFound"), "pool", "pool-1")).toBe(false);
    expect(isNotFoundOf(api(404), "pool", "pool-1")).toBe(false);
  });
});
