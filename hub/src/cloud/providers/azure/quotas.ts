/**
 * The default rate limit of an Azure account (one subscription), from Azure Resource Manager's
 * published throttling limits ("Understand how Azure Resource Manager throttles requests",
 * https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling):
 * ARM's token buckets per subscription allow reads at 25 a second (bucket 250), writes at 10 a
 * second (bucket 200) and deletes at 10 a second (bucket 200); a call past them answers 429 with
 * Retry-After, and every answer carries `x-ms-ratelimit-remaining-subscription-<kind>`. The
 * provider keeps the three buckets itself (arm-budget.ts); the hub's one bucket per account is
 * their sum, an outer cap on the account's calls.
 */
export const ARM_RATE_LIMIT = { perSecond: 45, burst: 650 } as const;
/** ARM's published per-subscription budgets (per second, bucket): arm-budget.ts, the docs, the bench. */
export const ARM_LIMITS = {
  reads: { perSecond: 25, bucket: 250 },
  writes: { perSecond: 10, bucket: 200 },
  deletes: { perSecond: 10, bucket: 200 },
} as const;
