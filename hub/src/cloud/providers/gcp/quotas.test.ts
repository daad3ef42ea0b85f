// The gcp factory's default rate limit keeps an account inside Compute Engine's per-project rate
// quota: no synchronized minute can see more calls than one quota group allows.
import { expect, test } from "@jest/globals";
import { gcpProvider } from "./index.js";
import { COMPUTE_QUOTA_PER_MINUTE, COMPUTE_RATE_LIMIT } from "./quotas.js";

test("the declared default: a full burst plus a minute of refill stays within 1,500 calls a minute", () => {
  expect(gcpProvider.defaultRateLimit).toEqual(COMPUTE_RATE_LIMIT);
  expect(gcpProvider.rateLimitScope).toBe("account");
  const { perSecond, burst } = COMPUTE_RATE_LIMIT;
  // The most a token bucket lets through in any 60-second window.
  expect(burst + perSecond * 60).toBeLessThanOrEqual(COMPUTE_QUOTA_PER_MINUTE);
  // And not needlessly below it (within a second's worth of calls).
  expect(burst + perSecond * 60).toBeGreaterThan(COMPUTE_QUOTA_PER_MINUTE - perSecond);
});
