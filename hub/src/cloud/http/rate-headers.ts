/**
 * The `RateLimit-Limit` / `-Remaining` / `-Reset` headers DigitalOcean and Hetzner send on
 * every answer, read as the account's rate budget (ProviderContext.rateBudget), so the hub slows
 * down before the vendor refuses rather than after. The two vendors mean different things by
 * Reset, so the caller says which:
 * - "next-free": when the oldest counted request expires, i.e. one more call is free then
 *   (DigitalOcean: "the time when the oldest request will expire", Unix seconds;
 *   https://docs.digitalocean.com/reference/api/ → Rate limit).
 * - "full": when the budget is back to Limit, refilling evenly until then (Hetzner: "UNIX
 *   timestamp of when the remaining requests will be reset to the maximum"; the budget grows
 *   by one a second at 3,600 an hour; https://docs.hetzner.cloud/#rate-limiting).
 */
import type { RateBudget } from "../provider.js";

export type ResetMeaning = "next-free" | "full";

const INTEGER = /^\s*\d+\s*$/;

/** The budget the headers state, or undefined when they are absent or unreadable. */
export function rateBudgetFrom(
  headers: Pick<Headers, "get">,
  nowMs: number,
  reset: ResetMeaning,
): RateBudget | undefined {
  const remaining = integer(headers.get("ratelimit-remaining"));
  const resetS = integer(headers.get("ratelimit-reset"));
  if (remaining === undefined || resetS === undefined) return undefined;
  const resetMs = resetS * 1000;
  if (remaining > 0 || resetMs <= nowMs) return { remaining, nextFreeAtMs: nowMs };
  if (reset === "next-free") return { remaining, nextFreeAtMs: resetMs };
  // Nothing left and refilling evenly to Limit by resetMs: the first call is free Limit-th of the way.
  const limit = integer(headers.get("ratelimit-limit"));
  if (limit === undefined || limit === 0) return { remaining, nextFreeAtMs: resetMs };
  return { remaining, nextFreeAtMs: nowMs + Math.ceil((resetMs - nowMs) / limit) };
}

function integer(text: string | null): number | undefined {
  return text !== null && INTEGER.test(text) ? Number(text) : undefined;
}
