/**
 * The default rate limit of an Azure account (one subscription), from Azure Resource Manager's
 * published throttling limits ("Understand how Azure Resource Manager throttles requests",
 * https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling):
 * ARM's token buckets per subscription and region allow reads at 25 a second (bucket 250), writes
 * at 10 a second (bucket 200) and deletes at 10 a second (bucket 200); a call past them answers
 * 429 with Retry-After. The hub's one bucket per account covers reads and writes together, so it
 * takes the tighter budget, the writes': 10 a second with a burst of 200. A subscription whose
 * reads dominate may raise the account's `rateLimit` towards 25 a second.
 */
export const ARM_RATE_LIMIT = { perSecond: 10, burst: 200 } as const;
/** ARM's published per-subscription budgets (per second, bucket), for the docs and the bench. */
export const ARM_LIMITS = {
  reads: { perSecond: 25, bucket: 250 },
  writes: { perSecond: 10, bucket: 200 },
  deletes: { perSecond: 10, bucket: 200 },
} as const;
