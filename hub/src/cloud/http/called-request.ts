/**
 * One request of a provider's REST client as the hub needs it made: inside the provider's
 * ctx.call (rate limit, metrics, shutdown signal), with the vendor's mapping of the kit's
 * failures to contract errors. No body (204) is an empty object, which every answer check
 * refuses where one was due.
 */
import type { Clock } from "../../util/clock.js";
import type { CloudCallWrapper } from "../provider.js";
import type { RestClient, RestRequest } from "./rest-client.js";

export interface CalledRequestDeps {
  readonly rest: RestClient;
  readonly call: CloudCallWrapper;
  readonly clock: Clock;
  /** The vendor's mapping of what the kit throws to contract errors (status-errors.ts refined). */
  readonly toContractError: (err: unknown, nowMs: number) => unknown;
}

export function calledRequest<T>(
  deps: CalledRequestDeps,
  op: string,
  req: Omit<RestRequest, "signals">,
  signal: AbortSignal | undefined,
): Promise<T> {
  return deps.call(op, async (callSignal) => {
    try {
      const answer = await deps.rest.request({ ...req, signals: [callSignal, signal] });
      return (answer ?? {}) as T;
    } catch (err) {
      throw deps.toContractError(err, deps.clock.now());
    }
  });
}
