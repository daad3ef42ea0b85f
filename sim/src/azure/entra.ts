/**
 * A fake Microsoft Entra ID (login.microsoftonline.com) for @azure/identity's MSAL: the
 * tenant's OpenID configuration (`GET /{tenant}/v2.0/.well-known/openid-configuration`) and the
 * v2.0 token endpoint (`POST /{tenant}/oauth2/v2.0/token`, form-encoded) with the two
 * client-credentials grants an app registration has: a client secret, and a client assertion
 * (workload identity federation: the assertion is a token the federated identity's issuer made,
 * `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer`). Errors are
 * the AADSTS envelope (`{error, error_description, error_codes}`). Served over HTTPS: MSAL
 * refuses an authority that is not.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { FakeHttpServer, readBody, sendJson, startFake } from "../fake-kit/http.js";

export const JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

interface App {
  readonly tenant: string;
  readonly clientId: string;
  /** The subscription its tokens act in (the ARM fake's account). */
  readonly subscription: string;
  secrets: Set<string>;
  /** Federated assertions the app trusts (what a projected service-account token file holds). */
  readonly assertions: Set<string>;
}

/** What the ARM fake accepts: tokens this endpoint issued, until they expire. */
export interface IssuedToken {
  readonly subscription: string;
  readonly expiresAtMs: number;
}

export class EntraFake {
  readonly server: FakeHttpServer;
  /** Token requests answered with a token. */
  issued = 0;
  readonly tokens = new Map<string, IssuedToken>();
  /** Lifetime of a new token (seconds). */
  tokenLifetimeSeconds = 3599;
  private readonly apps = new Map<string, App>();

  private constructor(
    tls: { readonly cert: string; readonly key: string },
    private readonly now: () => number,
  ) {
    this.server = new FakeHttpServer((req, res) => this.handle(req, res), undefined, tls);
  }

  static start(tls: { readonly cert: string; readonly key: string }, now: () => number): Promise<EntraFake> {
    const fake = new EntraFake(tls, now);
    return startFake(fake, fake.server);
  }

  get url(): string {
    return this.server.url;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  /** An app registration (service principal) of `tenant` with a client secret, acting in `subscription`. */
  registerApp(tenant: string, clientId: string, subscription: string, secret?: string): void {
    this.apps.set(`${tenant}/${clientId}`, {
      tenant,
      clientId,
      subscription,
      secrets: new Set(secret === undefined ? [] : [secret]),
      assertions: new Set(),
    });
  }

  /** Replaces the app's secrets (a rotation: the old one is refused from now on). */
  rotateSecret(tenant: string, clientId: string, secret: string): void {
    this.app(tenant, clientId).secrets = new Set([secret]);
  }

  /** A federated assertion the app now trusts (as a federated identity credential does). */
  issueAssertion(tenant: string, clientId: string): string {
    const assertion = `eyJ.fake-assertion.${randomBytes(12).toString("hex")}`;
    this.app(tenant, clientId).assertions.add(assertion);
    return assertion;
  }

  /** Every token issued so far expires now (the ARM fake then answers 401 ExpiredAuthenticationToken). */
  expireTokens(): void {
    for (const [t, v] of this.tokens) this.tokens.set(t, { ...v, expiresAtMs: this.now() - 1 });
  }

  private app(tenant: string, clientId: string): App {
    const app = this.apps.get(`${tenant}/${clientId}`);
    if (app === undefined) throw new Error(`no app ${clientId} in tenant ${tenant}`);
    return app;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://fake.invalid");
    const config = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(url.pathname);
    if (req.method === "GET" && config !== null) {
      const tenant = config[1] as string;
      const base = `${this.url}/${tenant}`;
      sendJson(res, 200, {
        token_endpoint: `${base}/oauth2/v2.0/token`,
        authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
        end_session_endpoint: `${base}/oauth2/v2.0/logout`,
        issuer: `${base}/v2.0`,
        jwks_uri: `${base}/discovery/v2.0/keys`,
        response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
        token_endpoint_auth_methods_supported: [
          "client_secret_post",
          "private_key_jwt",
          "client_secret_basic",
        ],
      });
      return;
    }
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (req.method !== "POST" || token === null) {
      sendJson(res, 404, { error: "invalid_request", error_description: "AADSTS90002: no such endpoint." });
      return;
    }
    const tenant = token[1] as string;
    const form = new URLSearchParams((await readBody(req, 64 * 1024)).toString("utf8"));
    const refuse = (status: number, error: string, code: number, text: string) =>
      sendJson(res, status, {
        error,
        error_description: `AADSTS${code}: ${text}`,
        error_codes: [code],
        timestamp: new Date(this.now()).toISOString(),
      });
    if (form.get("grant_type") !== "client_credentials") {
      refuse(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.");
      return;
    }
    const scope = form.get("scope") ?? "";
    if (!scope.split(" ").some((s) => s.endsWith("/.default"))) {
      refuse(400, "invalid_scope", 1002012, "The provided value for scope is not valid.");
      return;
    }
    const app = this.apps.get(`${tenant}/${form.get("client_id") ?? ""}`);
    if (app === undefined) {
      refuse(400, "unauthorized_client", 700016, "Application not found in the directory.");
      return;
    }
    const secret = form.get("client_secret");
    const assertion = form.get("client_assertion");
    const ok =
      (secret !== null && app.secrets.has(secret)) ||
      (assertion !== null &&
        form.get("client_assertion_type") === JWT_BEARER &&
        app.assertions.has(assertion));
    if (!ok) {
      refuse(
        401,
        "invalid_client",
        assertion !== null ? 700213 : 7000215,
        assertion !== null
          ? "No matching federated identity record found."
          : "Invalid client secret provided.",
      );
      return;
    }
    const access = `eyJ0eXAiOiJKV1QifQ.fake-arm.${randomBytes(18).toString("hex")}`;
    this.tokens.set(access, {
      subscription: app.subscription,
      expiresAtMs: this.now() + this.tokenLifetimeSeconds * 1000,
    });
    this.issued++;
    sendJson(res, 200, {
      token_type: "Bearer",
      expires_in: this.tokenLifetimeSeconds,
      ext_expires_in: this.tokenLifetimeSeconds,
      access_token: access,
    });
  }
}
