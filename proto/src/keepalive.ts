/**
 * Liveness of an agent's connection to the hub: HTTP/2 PINGs, which the peer's HTTP/2 layer
 * answers without running any of its stream code, so a ping costs the answering side a fraction
 * of what a heartbeat message does. An answer still needs the peer's event loop: a frozen
 * process or a dead path is found within one interval and the timeout.
 */

/** How long a ping may go unanswered before the connection is closed (at most one interval). */
export function pingTimeoutMs(intervalMs: number): number {
  return Math.min(PING_TIMEOUT_MS, intervalMs);
}

const PING_TIMEOUT_MS = 10_000;

/** How often an agent pings the hub unless told otherwise. */
export const AGENT_PING_INTERVAL_MS = 60_000;

/** The grpc-js channel or server options that ping the peer every `intervalMs`. */
export function keepaliveOptions(intervalMs: number): Record<string, number> {
  return {
    "grpc.keepalive_time_ms": intervalMs,
    "grpc.keepalive_timeout_ms": pingTimeoutMs(intervalMs),
    "grpc.keepalive_permit_without_calls": 1,
  };
}
