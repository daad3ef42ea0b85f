/**
 * Compute Engine's published quotas the provider declares.
 *
 * The default rate limit of a GCP account (one project), from Compute Engine's published
 * per-project rate quotas ("Compute Engine rate quotas",
 * https://cloud.google.com/compute/docs/api-rate-limits): each quota group is counted over a
 * synchronized minute and an exceeded one answers 403 `rateLimitExceeded`; the default of the
 * Queries group (global mutations, `compute.googleapis.com/default`) is 1,500 requests a minute
 * per project, and of the Read requests group (`*.get`, `compute.googleapis.com/read_requests`)
 * 1,500 a minute. The hub's one bucket covers every group together, so neither can be run past
 * its quota whatever the mix: at 24 a second with a burst of 60, no 60-second window holds more
 * than 60 + 24 × 60 = 1,500 calls. A project with raised quotas sets the account's `rateLimit`.
 */
export const COMPUTE_RATE_LIMIT = { perSecond: 24, burst: 60 } as const;

/** The per-project, per-minute quota the default stays within (the smallest group's default). */
export const COMPUTE_QUOTA_PER_MINUTE = 1_500;
