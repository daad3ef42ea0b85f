/**
 * The one place a Service is measured against its provider's quotas (capabilities.quotas):
 * what the Service would use of each, before any cloud call for it.
 */
import type { Service } from "@fleet-ccm/proto";
import type { LbQuota, LoadBalancerCapabilities } from "../../cloud/provider.js";
import { sourceRanges } from "./predicates.js";

/** How much of `quota` the Service uses. */
export function quotaUse(svc: Readonly<Service>, quota: LbQuota): number {
  if (quota.counts === "annotations") return quota.used;
  const listeners = new Set(svc.ports.map((p) => p.port)).size;
  if (quota.counts === "listeners") return listeners;
  // No source ranges: one open range. Clouds count IPv4 and IPv6 rules apart.
  const ranges = sourceRanges(svc);
  const v6 = ranges.filter((r) => r.includes(":")).length;
  const sources = Math.max(1, ranges.length - v6, v6);
  return sources * (listeners + (quota.extraRulesPerSource ?? 0));
}

/** The refusal of a Service beyond one of its provider's quotas (the Event's message), or undefined. */
export function quotaRefusal(
  svc: Readonly<Service>,
  capabilities: LoadBalancerCapabilities,
  provider: string,
): string | undefined {
  for (const q of capabilities.quotas?.(svc.annotations) ?? []) {
    const used = quotaUse(svc, q);
    if (used > q.limit) {
      const how =
        q.counts === "listeners"
          ? "one per port"
          : q.counts === "sourceRules"
            ? "one per port and source range"
            : "as its annotations name them";
      return `the Service needs ${used} ${q.name} (${how}); provider ${provider} allows ${q.limit}`;
    }
  }
  return undefined;
}
