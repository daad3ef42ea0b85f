import { expect, test } from "@jest/globals";
import { errors } from "@nats-io/transport-node";
import { pino } from "pino";
import type { Clock } from "./backoff.js";
import { isAuthError, NatsAuthError, NatsLink } from "./nats.js";

test("reconnect delays advance once per dial, however often the client asks while it waits", () => {
  let now = 1_000_000;
  const clock: Clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => undefined };
  const link = new NatsLink({
    servers: ["nats://nats:4222"],
    cluster: "c1",
    logger: pino({ level: "silent" }),
    clock,
    onReconnect: () => undefined,
  });
  const ask = () => (link as unknown as { reconnectDelay(): number }).reconnectDelay();
  // nats.js: wait = handler(); dial if lastDial + wait <= now, else sleep the rest and ask again.
  let lastDial = 0;
  const dials: number[] = [];
  for (let turn = 0; turn < 200 && dials.length < 8; turn++) {
    const wait = ask();
    if (lastDial + wait <= now) {
      dials.push(now);
      lastDial = now;
      now += 5; // the dial fails quickly
    } else now = lastDial + wait;
  }
  const gaps = dials.slice(1).map((t, i) => t - (dials[i] ?? 0));
  expect(dials).toHaveLength(8);
  // Jittered exponential growth to the 30 s cap: each gap at least the previous base's half.
  expect(gaps[0]).toBeLessThanOrEqual(505);
  for (let i = 1; i < gaps.length; i++)
    expect(gaps[i] ?? 0).toBeGreaterThanOrEqual(Math.min(30_000, 500 * 2 ** i) / 2);
  expect(Math.max(...gaps)).toBeLessThanOrEqual(30_005);
});

test("the credentials error names the servers, the user and what to check", () => {
  const e = new NatsAuthError(["nats://a:4222", "nats://b:4222"], "agent-c1", "Authorization Violation");
  expect(e.message).toBe(
    'NATS at nats://a:4222, nats://b:4222 refused the agent\'s credentials for user "agent-c1" (Authorization Violation): check --nats-user and --nats-password-file (or FLEET_CCM_NATS_PASSWORD)',
  );
  const c = new NatsAuthError(["nats://a:4222"], undefined, "Authorization Violation", true);
  expect(c.message).toBe(
    "NATS at nats://a:4222 refused the agent's credentials from --nats-creds-file (Authorization Violation): check that file (fleet-ccm register wrote it; an unregistered cluster's credential is refused)",
  );
});

test("an authentication timeout (the CONNECT came late: a loaded node) is retried, not taken for refused credentials", () => {
  // What nats.js makes of nats-server's -ERR lines (its own parser), as the agent receives them.
  const late = errors.AuthorizationError.parse("'Authentication Timeout'");
  const refused = errors.AuthorizationError.parse("'Authorization Violation'");
  expect(late?.name).toBe("AuthorizationError");
  expect(isAuthError(late)).toBe(false);
  expect(isAuthError(new Error("connection failed", { cause: late }))).toBe(false);
  expect(isAuthError(refused)).toBe(true);
  expect(isAuthError(new Error("connection failed", { cause: refused }))).toBe(true);
});
