import { agentInboxPrefix } from "@fleet-ccm/proto";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Backoff, type Clock, Retry, systemClock } from "./backoff.js";
import { FailureSummary } from "./log-summary.js";

export interface NatsOptions {
  readonly servers: readonly string[];
  readonly user?: string | undefined;
  readonly password?: string | undefined;
  /** A .creds file's content (NATS decentralized auth), instead of user and password. */
  readonly creds?: string | undefined;
  /**
   * How long credentials refused at the first connection are tried again before that is a
   * configuration error (NatsAuthError). A cluster registered moments ago is admitted only when
   * the hub next reads its configuration (its --reload-interval, 60 s by default).
   */
  readonly authWaitMs?: number | undefined;
}

/** The default of NatsOptions.authWaitMs: twice the hub's default --reload-interval. */
export const DEFAULT_AUTH_WAIT_MS = 120_000;

/** First connection and reconnections: 500 ms doubling to 30 s, jittered. */
const NATS_BACKOFF = { initialMs: 500, maxMs: 30_000 };
/** How long one connection attempt may take (TCP, TLS and the NATS handshake). */
const CONNECT_TIMEOUT_MS = 10_000;

const CREDENTIAL_FLAGS = "--nats-user and --nats-password-file (or FLEET_CCM_NATS_PASSWORD)";

/** NATS refused the agent's credentials: a configuration error, reported without a stack. */
export class NatsAuthError extends Error {
  constructor(
    readonly servers: readonly string[],
    readonly user: string | undefined,
    detail: string,
    /** The credential was a .creds file (decentralized auth). */
    readonly creds = false,
  ) {
    super(
      creds
        ? `NATS at ${servers.join(", ")} refused the agent's credentials from --nats-creds-file (${detail}): check that file (fleet-ccm register wrote it; an unregistered cluster's credential is refused)`
        : `NATS at ${servers.join(", ")} refused the agent's credentials${user === undefined ? " (no --nats-user given)" : ` for user "${user}"`} (${detail}): check ${CREDENTIAL_FLAGS}`,
    );
    this.name = "NatsAuthError";
  }
}

/**
 * nats-server's `auth_timeout`: the client's CONNECT came later than the server waits for it (a
 * loaded node or server). nats.js names it an AuthorizationError, but the credentials were not
 * even looked at: it is retried like any failed dial, not a configuration error.
 */
const LATE_CONNECT = /authentication timeout/i;

/** NATS refused the credentials (not: the CONNECT came too late, LATE_CONNECT). */
export function isAuthError(err: unknown): boolean {
  for (let e = err as { name?: unknown; message?: unknown; cause?: unknown } | undefined; e; ) {
    if (typeof e.message === "string" && LATE_CONNECT.test(e.message)) return false;
    if (e.name === "AuthorizationError" || e.name === "UserAuthenticationExpiredError") return true;
    if (typeof e.message === "string" && /authorization violation|authentication/i.test(e.message))
      return true;
    e = e.cause as typeof e;
  }
  return false;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The agent's NATS connection. The first connection is retried with backoff (a warning names
 * the servers and the --nats flag, then one summary per 30 s) until NATS answers; credentials
 * still refused after authWaitMs are a configuration error (NatsAuthError). Once connected, the
 * client reconnects by itself with the same backoff, and the log says when the link went down,
 * summarizes while it stays down, and says when it is back.
 */
export class NatsLink {
  private nc: NatsConnection | undefined;
  private stopped = false;
  private readonly connectRetry: Retry;
  private readonly refusedRetry: Retry;
  /** When NATS first refused the credentials of the first connection. */
  private refusedSince: number | undefined;
  private readonly reconnectBackoff: Backoff;
  private readonly down: FailureSummary;
  private wake: (() => void) | undefined;
  private readonly clock: Clock;
  private gap = 0;
  private dialDueAt = 0;

  constructor(
    private readonly opts: NatsOptions & {
      readonly cluster: string;
      readonly logger: Logger;
      readonly clock?: Clock;
      /** After a reconnection (what was published meanwhile never arrived). */
      readonly onReconnect: () => void;
    },
  ) {
    const clock = opts.clock ?? systemClock;
    this.clock = clock;
    const fields = { servers: opts.servers, check: "--nats (the servers), and that they are reachable" };
    this.connectRetry = new Retry({
      what: "connecting to NATS",
      logger: opts.logger,
      clock,
      backoff: NATS_BACKOFF,
      fields,
    });
    this.refusedRetry = new Retry({
      what: "NATS accepting the agent's credentials",
      logger: opts.logger,
      clock,
      backoff: NATS_BACKOFF,
      fields: {
        servers: opts.servers,
        check: `${opts.creds === undefined ? CREDENTIAL_FLAGS : "--nats-creds-file"}; a cluster registered moments ago is admitted when the hub next reads its configuration (its --reload-interval)`,
      },
    });
    this.reconnectBackoff = new Backoff(NATS_BACKOFF);
    this.down = new FailureSummary(
      opts.logger,
      "NATS connection lost; reconnecting with backoff (desired state from the hub waits meanwhile)",
      clock,
    );
  }

  /** Connects, retrying until NATS answers; undefined if stopped first. Throws NatsAuthError. */
  async connect(): Promise<NatsConnection | undefined> {
    const { servers, user, password, creds, cluster, logger } = this.opts;
    while (!this.stopped) {
      let nc: NatsConnection;
      try {
        nc = await connect({
          servers: [...servers],
          ...(creds === undefined
            ? { user, pass: password }
            : { authenticator: credsAuthenticator(new TextEncoder().encode(`${creds}\n`)) }),
          name: `fleet-ccm-agent-${cluster}`,
          inboxPrefix: agentInboxPrefix(cluster),
          timeout: CONNECT_TIMEOUT_MS,
          maxReconnectAttempts: -1,
          reconnectDelayHandler: () => this.reconnectDelay(),
          // Credentials refused after a reconnection are retried like any failure (and logged).
          ignoreAuthErrorAbort: true,
          pingInterval: 10_000,
        });
      } catch (err) {
        const refused = isAuthError(err);
        if (refused) {
          const now = this.clock.now();
          this.refusedSince ??= now;
          if (now - this.refusedSince >= (this.opts.authWaitMs ?? DEFAULT_AUTH_WAIT_MS))
            throw new NatsAuthError(servers, user, errorText(err), creds !== undefined);
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          (refused ? this.refusedRetry : this.connectRetry).failed(err, resolve);
        });
        this.wake = undefined;
        continue;
      }
      if (this.stopped) {
        await nc.close().catch(() => undefined);
        return undefined;
      }
      this.connectRetry.succeeded();
      this.refusedRetry.succeeded();
      this.nc = nc;
      logger.info({ server: nc.getServer() }, "connected to NATS");
      void this.watchStatus(nc);
      return nc;
    }
    return undefined;
  }

  /**
   * The client asks for the wait before each turn of its dial loop, also while it waits: the
   * backoff advances only when a dial is due (the gap since the last one has passed).
   */
  private reconnectDelay(): number {
    const now = this.clock.now();
    if (now < this.dialDueAt) return this.gap;
    const due = this.gap;
    this.gap = this.reconnectBackoff.next();
    this.dialDueAt = now + this.gap;
    return due;
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    const { logger, servers, user } = this.opts;
    for await (const s of nc.status()) {
      switch (s.type) {
        case "disconnect":
        case "reconnecting":
          this.down.failed("nats", { servers, check: "--nats (the servers), and that they are reachable" });
          break;
        case "reconnect":
          this.reconnectBackoff.reset();
          this.gap = 0;
          this.dialDueAt = 0;
          this.down.stop();
          logger.info({ server: s.server }, "reconnected to NATS");
          this.opts.onReconnect();
          break;
        case "error":
          if (isAuthError(s.error))
            this.down.failed("nats", {
              servers,
              user,
              err: errorText(s.error),
              check: CREDENTIAL_FLAGS,
            });
          else logger.warn({ err: errorText(s.error) }, "NATS error");
          break;
        default:
          break;
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.connectRetry.cancel();
    this.refusedRetry.cancel();
    this.wake?.();
    this.down.stop();
    const nc = this.nc;
    this.nc = undefined;
    if (nc !== undefined && !nc.isClosed()) await nc.close();
  }
}
