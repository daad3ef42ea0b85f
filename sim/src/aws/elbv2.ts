/**
 * Elastic Load Balancing v2 (2015-12-01) operations of the fake: network load balancers,
 * target groups, listeners, targets, attributes, tags.
 */
import type { Handler } from "./ec2.js";
import type { AwsState } from "./state.js";

export function elbv2Handlers(
  _state: AwsState,
  _opts: { readonly eniLingerMs: () => number; readonly provisioningMs: () => number },
): Record<string, Handler> {
  return {};
}
