/**
 * Workload identity federation for the fake Compute Engine: Google's Security Token Service
 * (`POST /v1/token`, RFC 8693 token exchange as https://sts.googleapis.com/v1/token answers
 * it) and IAM Credentials `generateAccessToken` (`POST
 * /v1/projects/-/serviceAccounts/{email}:generateAccessToken`) for service-account
 * impersonation. Workload identity pools are made here; their external identity provider is
 * this module too: it issues the subject tokens an external-account file's credential source
 * holds, and can revoke them. Access tokens come from the fake's own store (TokenStore), so the
 * Compute API accepts them, and `expireTokens` expires them, like any other.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody, sendJson } from "../fake-kit/http.js";

export const STS_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange";
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** The subject token type of an OIDC provider (what the pools here accept). */
export const JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt";
const IMPERSONATION_PATH = /^\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/;
const MAX_BODY_BYTES = 64 * 1024;

/** What the fake Compute Engine lends this module: its access tokens and service accounts. */
export interface TokenStore {
  /** A new access token Compute accepts for `project`, and its lifetime. */
  issue(project: string): { readonly token: string; readonly expiresInSeconds: number };
  /** The project a live access token is for, or undefined (unknown or expired). */
  projectOf(token: string): string | undefined;
  /** The project whose service account this is, or undefined. */
  serviceAccountProject(email: string): string | undefined;
  now(): number;
}

interface Pool {
  readonly project: string;
  readonly audience: string;
  /** Service accounts the pool's identities may impersonate (roles/iam.workloadIdentityUser). */
  readonly impersonates: Set<string>;
  /** Subject tokens the pool's identity provider issued and has not revoked. */
  readonly subjectTokens: Set<string>;
}

export interface ExternalAccountFileOptions {
  /** The file the credential source reads (credential_source.file). */
  readonly subjectTokenFile?: string;
  /** The URL the credential source reads (credential_source.url, a JSON answer's `token` field with `json`). */
  readonly subjectTokenUrl?: string;
  readonly format?: "text" | "json";
  /** A service account of the pool's project to impersonate. */
  readonly impersonate?: string;
}

export class GcpStsFake {
  /** Token exchanges answered (successful ones). */
  exchanges = 0;
  /** generateAccessToken calls answered (successful ones). */
  impersonations = 0;
  private readonly pools = new Map<string, Pool>();
  /** Federated tokens (STS's own answers) → the pool they came from. */
  private readonly federated = new Map<string, Pool>();

  constructor(
    private readonly store: TokenStore,
    private readonly baseUrl: () => string,
  ) {}

  /** A workload identity pool with one OIDC provider in `project`; answers its STS audience. */
  createPool(project: string, poolId = "fleet-ccm", providerId = "oidc"): string {
    const audience = `//iam.googleapis.com/projects/${project}/locations/global/workloadIdentityPools/${poolId}/providers/${providerId}`;
    this.pools.set(audience, { project, audience, impersonates: new Set(), subjectTokens: new Set() });
    return audience;
  }

  /** Lets the pool's identities impersonate a service account (and so act as it). */
  allowImpersonation(audience: string, email: string): void {
    this.pool(audience).impersonates.add(email);
  }

  /** A new subject token from the pool's external identity provider (what a workload holds). */
  subjectToken(audience: string): string {
    const token = `eyJ.fake-oidc-${randomBytes(12).toString("hex")}`;
    this.pool(audience).subjectTokens.add(token);
    return token;
  }

  /** The identity provider revokes every subject token it issued for the pool (they expired, say). */
  revokeSubjectTokens(audience: string): void {
    this.pool(audience).subjectTokens.clear();
  }

  /** An external-account credential configuration, as `gcloud iam workload-identity-pools create-cred-config` writes it, with this fake's URLs. */
  externalAccountFile(audience: string, o: ExternalAccountFileOptions): string {
    this.pool(audience);
    const format = o.format === "json" ? { format: { type: "json", subject_token_field_name: "token" } } : {};
    return JSON.stringify({
      type: "external_account",
      audience,
      subject_token_type: JWT_TOKEN_TYPE,
      token_url: `${this.baseUrl()}/v1/token`,
      credential_source: {
        ...(o.subjectTokenFile !== undefined && { file: o.subjectTokenFile }),
        ...(o.subjectTokenUrl !== undefined && { url: o.subjectTokenUrl }),
        ...format,
      },
      ...(o.impersonate !== undefined && {
        service_account_impersonation_url: `${this.baseUrl()}/v1/projects/-/serviceAccounts/${o.impersonate}:generateAccessToken`,
      }),
    });
  }

  handles(method: string, pathname: string): boolean {
    return method === "POST" && (pathname === "/v1/token" || IMPERSONATION_PATH.test(pathname));
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const body = (await readBody(req, MAX_BODY_BYTES)).toString("utf8");
    if (pathname === "/v1/token") return this.exchange(new URLSearchParams(body), res);
    const email = decodeURIComponent(IMPERSONATION_PATH.exec(pathname)?.[1] ?? "");
    return this.generateAccessToken(email, req, body, res);
  }

  /** STS: an OAuth 2.0 token exchange (RFC 8693); errors are OAuth's `{error, error_description}`. */
  private exchange(form: URLSearchParams, res: ServerResponse): void {
    const refuse = (status: number, error: string, description: string) =>
      sendJson(res, status, { error, error_description: description });
    if (form.get("grant_type") !== STS_GRANT_TYPE)
      return refuse(400, "unsupported_grant_type", `Unsupported grant_type: ${form.get("grant_type") ?? ""}`);
    if (form.get("requested_token_type") !== ACCESS_TOKEN_TYPE)
      return refuse(400, "invalid_request", "Invalid requested_token_type");
    const subject = form.get("subject_token") ?? "";
    if (subject === "") return refuse(400, "invalid_request", "Missing subject_token");
    if (form.get("subject_token_type") !== JWT_TOKEN_TYPE)
      return refuse(400, "invalid_request", "Invalid subject_token_type");
    const pool = this.pools.get(form.get("audience") ?? "");
    if (pool === undefined)
      return refuse(
        400,
        "invalid_target",
        'The target service indicated by the "audience" parameters is invalid.',
      );
    if (!pool.subjectTokens.has(subject))
      return refuse(400, "invalid_grant", "The token has been revoked or is expired.");
    const { token, expiresInSeconds } = this.store.issue(pool.project);
    this.federated.set(token, pool);
    this.exchanges++;
    sendJson(res, 200, {
      access_token: token,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: "Bearer",
      expires_in: expiresInSeconds,
    });
  }

  /** IAM Credentials: a federated identity's token traded for a service account's (Google's JSON errors). */
  private generateAccessToken(email: string, req: IncomingMessage, body: string, res: ServerResponse): void {
    const bearer = /^Bearer\s+(\S+)$/i.exec((req.headers.authorization ?? "").trim())?.[1] ?? "";
    const pool = this.federated.get(bearer);
    const fail = (code: number, status: string, message: string) =>
      sendJson(res, code, { error: { code, message, status } });
    if (pool === undefined || this.store.projectOf(bearer) === undefined)
      return fail(
        401,
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token.",
      );
    let request: { scope?: unknown; lifetime?: unknown };
    try {
      request = JSON.parse(body) as typeof request;
    } catch {
      return fail(400, "INVALID_ARGUMENT", "Invalid JSON payload received.");
    }
    if (!Array.isArray(request.scope) || request.scope.length === 0)
      return fail(400, "INVALID_ARGUMENT", "Scope is required.");
    const project = this.store.serviceAccountProject(email);
    if (project === undefined || !pool.impersonates.has(email))
      return fail(
        403,
        "PERMISSION_DENIED",
        "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
      );
    const { token, expiresInSeconds } = this.store.issue(project);
    this.impersonations++;
    sendJson(res, 200, {
      accessToken: token,
      expireTime: new Date(this.store.now() + expiresInSeconds * 1000)
        .toISOString()
        .replace(/\.\d{3}Z$/, "Z"),
    });
  }

  private pool(audience: string): Pool {
    const p = this.pools.get(audience);
    if (p === undefined) throw new Error(`no workload identity pool ${audience}`);
    return p;
  }
}
