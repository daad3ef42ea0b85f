/**
 * ARM's throttling as it budgets a subscription: separate token buckets for reads, writes and
 * deletes (quotas.ts ARM_LIMITS), kept per bound account (and region) because the hub's one
 * bucket per account cannot tell them apart. Every HTTP request the SDK sends (pages and
 * operation polls included) takes a token of its kind first, in the SDK's pipeline; every answer's
 * `x-ms-ratelimit-remaining-subscription-reads|writes|deletes` lowers the bucket to what ARM says
 * is left (other clients of the subscription spend it too), and the sum reaches the hub's account
 * limiter (ProviderContext.rateBudget).
 */

import { TokenBucket } from "../../../util/rate-limiter.js";
import type { ProviderContext } from "../../provider.js";
import { ARM_LIMITS } from "./quotas.js";

export type ArmCallKind = keyof typeof ARM_LIMITS;
const KINDS = Object.keys(ARM_LIMITS) as ArmCallKind[];

/** The budget a request spends, by its method, as ARM counts it. */
export function kindOf(method: string): ArmCallKind {
  const m = method.toUpperCase();
  return m === "GET" || m === "HEAD" ? "reads" : m === "DELETE" ? "deletes" : "writes";
}

/** The parts of @azure/core-rest-pipeline's PipelinePolicy this uses. */
interface Request {
  readonly method: string;
  /** core-rest-pipeline's AbortSignalLike: what the bucket's take() uses of a signal. */
  readonly abortSignal?:
    | {
        readonly aborted: boolean;
        addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
        removeEventListener(type: "abort", listener: () => void): void;
      }
    | undefined;
}
interface Response {
  readonly headers: { get(name: string): string | undefined };
}
export interface ArmPolicy {
  readonly name: string;
  sendRequest<Q extends Request, S extends Response>(
    request: Q,
    next: (request: Q) => Promise<S>,
  ): Promise<S>;
}

export type ArmLimits = Readonly<
  Record<ArmCallKind, { readonly perSecond: number; readonly bucket: number }>
>;

export class ArmBudget {
  private readonly buckets: Readonly<Record<ArmCallKind, TokenBucket>>;
  private readonly limits: ArmLimits;

  constructor(
    private readonly ctx: Pick<ProviderContext, "clock" | "rateBudget">,
    limits: Partial<ArmLimits> = {},
  ) {
    const all: ArmLimits = { ...ARM_LIMITS, ...limits };
    this.limits = all;
    const make = (k: ArmCallKind) =>
      new TokenBucket({ ratePerSecond: all[k].perSecond, burst: all[k].bucket, clock: ctx.clock });
    this.buckets = { reads: make("reads"), writes: make("writes"), deletes: make("deletes") };
  }

  /** Waits for a token of the request's kind. */
  take(method: string, signal?: AbortSignal): Promise<void> {
    return this.buckets[kindOf(method)].take(signal);
  }

  /** What ARM's answer says is left of each budget. */
  observe(headers: Response["headers"]): void {
    const now = this.ctx.clock.now();
    let total = 0;
    let seen = false;
    for (const k of KINDS) {
      const value = headers.get(`x-ms-ratelimit-remaining-subscription-${k}`);
      const remaining = value === undefined ? Number.NaN : Number(value);
      if (!Number.isFinite(remaining)) {
        total += this.limits[k].bucket;
        continue;
      }
      seen = true;
      total += remaining;
      // ARM's bucket refills continuously from now, as ours does: no hold beyond the refill.
      this.buckets[k].observe(remaining, now);
    }
    if (seen) this.ctx.rateBudget?.({ remaining: total, nextFreeAtMs: now });
  }

  /** The SDK pipeline policy: a token before each request, the headers of each answer. */
  policy(): ArmPolicy {
    return {
      name: "fleetCcmArmBudget",
      sendRequest: async (request, next) => {
        await this.take(request.method, request.abortSignal as AbortSignal | undefined);
        const response = await next(request);
        this.observe(response.headers);
        return response;
      },
    };
  }
}
