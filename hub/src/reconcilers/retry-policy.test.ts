import { describe, expect, test } from "@jest/globals";
import {
  ForbiddenError,
  InstanceNotFoundError,
  ThrottledError,
  TransientCloudError,
} from "../cloud/errors.js";
import { inProgress } from "../cloud/provider.js";
import { classifyRetry, periodicOutcome, retryOutcome } from "./retry-policy.js";

describe("retry policy", () => {
  test("throttled with Retry-After waits for the vendor's delay", () => {
    expect(retryOutcome(new ThrottledError("429", 7_500)).requeue).toEqual({ kind: "after", ms: 7_500 });
  });

  test("throttled without Retry-After, transient, not found and others back off per key", () => {
    for (const err of [
      new ThrottledError("429", undefined),
      new TransientCloudError("503"),
      new InstanceNotFoundError("i-1"),
      new ForbiddenError("no"),
      new Error("boom"),
    ]) {
      expect(retryOutcome(err).requeue).toEqual({ kind: "backoff", error: err });
    }
  });

  test("in progress is the provider's delay, never a backoff", () => {
    const answer = inProgress(1_234.2, "provisioning");
    expect(retryOutcome(answer).requeue).toEqual({ kind: "after", ms: 1_235 });
    expect(classifyRetry(answer)).toBe("in-progress");
  });

  test("a periodic controller keeps its period unless the cloud asked for sooner", () => {
    expect(retryOutcome(new TransientCloudError("x"), {}, { otherwise: "done" }).requeue).toEqual({
      kind: "done",
    });
    expect(periodicOutcome(10_000, [new TransientCloudError("x")]).requeue).toEqual({
      kind: "after",
      ms: 10_000,
    });
    expect(
      periodicOutcome(10_000, [new ThrottledError("429", 3_000), new ThrottledError("429", 2_000)]).requeue,
    ).toEqual({ kind: "after", ms: 2_000 });
  });

  test("events and patches ride along", () => {
    const events = [{ reason: "X" }] as never;
    expect(retryOutcome(new TransientCloudError("x"), { events }).events).toBe(events);
  });

  test("classes", () => {
    expect(classifyRetry(new ThrottledError("t", 1))).toBe("throttled");
    expect(classifyRetry(new TransientCloudError("t"))).toBe("transient");
    expect(classifyRetry(new InstanceNotFoundError("t"))).toBe("not-found");
    expect(classifyRetry(new Error("t"))).toBe("failed");
  });
});
