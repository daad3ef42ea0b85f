// The one ProviderContext of provider tests: it records every cloud call's op, and lets a test
// refuse a call, lose its answer or change it, as a crash, a fault or a lying cloud would.
// Providers are created through the hub's own binding (bind-provider.ts), options parsed.
import { pino } from "pino";
import { type Clock, systemClock } from "../util/clock.js";
import { createProvider } from "./bind-provider.js";
import type { AccountBinding, CloudProvider, ProviderContext, ProviderFactory } from "./provider.js";

export interface RecordingOptions {
  /**
   * Runs before each call (`n`: its 1-based number), awaited: throwing refuses the call, as a
   * crash before it; it may change the cloud first (a resource vanishing mid-listing).
   */
  readonly before?: (op: string, n: number) => void | Promise<void>;
  /**
   * Runs after each call with its answer; throwing loses the answer (the cloud did it, the
   * caller never hears), returning a value replaces it. Absent: the answer as it came.
   */
  readonly after?: (op: string, answer: unknown, n: number) => unknown;
  /** The signal every call gets (aborting it ends calls in flight). */
  readonly signal?: AbortSignal;
  readonly clock?: Clock;
  /** ProviderContext.clusterNetworks: the networks of the account's clusters. */
  readonly clusterNetworks?: readonly (string | undefined)[];
}

export interface Recorded {
  readonly ctx: ProviderContext;
  /** Every call's op, in order, refused ones included. */
  readonly ops: string[];
}

export function recordingContext(account: AccountBinding, opts: RecordingOptions = {}): Recorded {
  const ops: string[] = [];
  const ctx: ProviderContext = {
    account,
    logger: pino({ level: "silent" }),
    clock: opts.clock ?? systemClock,
    ...(opts.clusterNetworks !== undefined && { clusterNetworks: () => opts.clusterNetworks ?? [] }),
    call: async (op, fn) => {
      ops.push(op);
      const n = ops.length;
      await opts.before?.(op, n);
      const answer = await fn(opts.signal ?? new AbortController().signal);
      return (opts.after === undefined ? answer : opts.after(op, answer, n)) as typeof answer;
    },
  };
  return { ctx, ops };
}

/** A provider bound as the hub binds it (endpoint and options checked), on a recording context. */
export async function bindRecorded<O>(
  factory: ProviderFactory<O>,
  account: AccountBinding,
  options?: unknown,
  opts: RecordingOptions = {},
): Promise<{ readonly provider: CloudProvider; readonly ops: string[] }> {
  const { ctx, ops } = recordingContext(account, opts);
  return { provider: await createProvider(factory, ctx, options), ops };
}
