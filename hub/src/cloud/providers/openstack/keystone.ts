/**
 * Keystone v3 authentication for one account: `POST /v3/auth/tokens` with an application
 * credential (id + secret) or a password (user, domain, project scope), the token taken from
 * `X-Subject-Token` and kept until shortly before its `expires_at` (a tenth of its life, at
 * most five minutes, before), renewed once for every caller at the same time (one request in
 * flight, all awaiting it), and dropped when a service refuses it (401) so the next caller
 * authenticates again. The token's service catalog says where each service is.
 */
import type { Clock } from "../../../util/clock.js";
import { ForbiddenError, SuspectAnswerError } from "../../errors.js";
import { type CalledRequestDeps, calledRequest } from "../../http/called-request.js";
import { type Fetch, RestClient } from "../../http/rest-client.js";
import type { CloudCallWrapper } from "../../provider.js";
import { OPENSTACK_LABEL, OpenStackApiError, toContractError } from "./errors.js";

export type KeystoneCredentials =
  | { readonly kind: "application_credential"; readonly id: string; readonly secret: () => string }
  | {
      readonly kind: "password";
      readonly username: string;
      readonly userDomainName: string;
      readonly password: () => string;
      readonly projectId?: string | undefined;
      readonly projectName?: string | undefined;
      readonly projectDomainName: string;
    };

export interface CatalogEndpoint {
  readonly interface: string;
  readonly region: string;
  readonly url: string;
}

export interface CatalogService {
  readonly type: string;
  readonly endpoints: readonly CatalogEndpoint[];
}

export interface KeystoneToken {
  readonly token: string;
  readonly expiresAtMs: number;
  /** When we received it (the injected clock). */
  readonly issuedAtMs: number;
  readonly projectId: string;
  readonly catalog: readonly CatalogService[];
}

export const KEYSTONE_OPS = { token: "keystone.tokens.create" } as const;
/** Renew this long before expiry at most (a token lives an hour by default). */
const MAX_RENEW_MARGIN_MS = 5 * 60_000;

export interface KeystoneConfig {
  /** The identity endpoint with its version, e.g. https://keystone.example:5000/v3. */
  readonly authUrl: string;
  readonly credentials: KeystoneCredentials;
  readonly clock: Clock;
  readonly call: CloudCallWrapper;
  readonly requestTimeoutMs: number;
  readonly userAgent?: string | undefined;
  /** Sends the requests (one trusting the account's CA bundle); absent: the global fetch. */
  readonly fetch?: Fetch | undefined;
}

export class KeystoneAuth {
  private current: KeystoneToken | undefined;
  private inFlight: Promise<KeystoneToken> | undefined;
  private readonly called: CalledRequestDeps;
  /** Tokens issued to this client (tests, logs). */
  issued = 0;

  constructor(private readonly config: KeystoneConfig) {
    const rest = new RestClient({
      baseUrl: config.authUrl,
      label: `${OPENSTACK_LABEL} (Keystone)`,
      token: () => "",
      authorization: "none",
      userAgent: config.userAgent ?? "fleet-ccm",
      timeoutMs: config.requestTimeoutMs,
      clock: config.clock,
      statusError: OpenStackApiError.from,
      fetch: config.fetch,
    });
    this.called = { rest, call: config.call, clock: config.clock, toContractError };
  }

  /** A valid token: the cached one, or the one being fetched, or a new one. */
  token(signal?: AbortSignal): Promise<KeystoneToken> {
    const now = this.config.clock.now();
    const t = this.current;
    if (t !== undefined && now < t.expiresAtMs - renewMargin(t)) return Promise.resolve(t);
    if (this.inFlight === undefined) {
      this.inFlight = this.authenticate(signal).finally(() => {
        this.inFlight = undefined;
      });
    }
    return this.inFlight;
  }

  /** A service refused `token`: forget it, so the next caller authenticates again. */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private async authenticate(signal: AbortSignal | undefined): Promise<KeystoneToken> {
    let subject: string | null = null;
    const body = await calledRequest<Record<string, unknown>>(
      this.called,
      KEYSTONE_OPS.token,
      {
        method: "POST",
        path: "/auth/tokens",
        body: this.requestBody(),
        onHeaders: (h) => {
          subject = h.get("x-subject-token");
        },
      },
      signal,
    ).catch((err: unknown) => {
      if (
        err instanceof OpenStackApiError ||
        (err instanceof Error && err.cause instanceof OpenStackApiError)
      ) {
        const api = (err instanceof OpenStackApiError ? err : err.cause) as OpenStackApiError;
        if (api.status === 401)
          throw new ForbiddenError(`Keystone refused the account's credentials: ${api.detail || "401"}`, {
            cause: api,
          });
      }
      throw err;
    });
    const token = parseToken(body, subject, this.config.clock.now());
    this.current = token;
    this.issued++;
    return token;
  }

  private requestBody(): unknown {
    const c = this.config.credentials;
    if (c.kind === "application_credential")
      return {
        auth: {
          identity: {
            methods: ["application_credential"],
            application_credential: { id: c.id, secret: c.secret() },
          },
        },
      };
    return {
      auth: {
        identity: {
          methods: ["password"],
          password: {
            user: { name: c.username, domain: { name: c.userDomainName }, password: c.password() },
          },
        },
        scope: {
          project:
            c.projectId !== undefined
              ? { id: c.projectId }
              : { name: c.projectName, domain: { name: c.projectDomainName } },
        },
      },
    };
  }
}

/** A tenth of the token's life, at most five minutes: renewed while the old one still works. */
function renewMargin(t: KeystoneToken): number {
  return Math.min(MAX_RENEW_MARGIN_MS, Math.max(0, (t.expiresAtMs - t.issuedAtMs) / 10));
}

function parseToken(body: Record<string, unknown>, subject: string | null, nowMs: number): KeystoneToken {
  const t = body["token"] as Record<string, unknown> | undefined;
  const expires = typeof t?.["expires_at"] === "string" ? Date.parse(t["expires_at"]) : Number.NaN;
  const catalog = t?.["catalog"];
  const project = (t?.["project"] as { id?: unknown } | undefined)?.id;
  if (subject === null || subject === "" || !Number.isFinite(expires) || !Array.isArray(catalog))
    throw new SuspectAnswerError("Keystone answered a token without X-Subject-Token, expires_at or catalog");
  return {
    token: subject,
    expiresAtMs: expires,
    issuedAtMs: nowMs,
    projectId: typeof project === "string" ? project : "",
    catalog: catalog.map((s: Record<string, unknown>) => ({
      type: String(s["type"]),
      endpoints: (Array.isArray(s["endpoints"]) ? s["endpoints"] : []).map((e: Record<string, unknown>) => ({
        interface: String(e["interface"]),
        region: String(e["region_id"] ?? e["region"]),
        url: String(e["url"]),
      })),
    })),
  };
}
