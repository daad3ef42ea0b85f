/**
 * A GCP account's credentials, as `google-auth-library` reads them: a service-account key (the
 * JWT-bearer flow) or an external-account file (workload identity federation: a subject token
 * from a file or URL exchanged at STS, optionally for a service account's token through
 * iamcredentials `generateAccessToken`). Either file is re-read per request and its client
 * rebuilt when the text changed, so a rotated file is used without a restart; the subject-token
 * file an external-account file names is read by the library at every exchange.
 */
import { type AuthClient, gaxios, IdentityPoolClient, JWT } from "google-auth-library";
import { ForbiddenError, TransientCloudError } from "../../errors.js";
import { type AccountBinding, AccountConfigError } from "../../provider.js";

/** The one scope the provider needs (Compute Engine read/write). */
export const COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute";
/** The token URL google-auth-library posts service-account assertions to. */
const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

/** The account's credential names (factory `credentials`): exactly one of them is given. */
export const SERVICE_ACCOUNT_KEY = "serviceAccountKey";
export const EXTERNAL_ACCOUNT = "externalAccount";

interface ServiceAccountKey {
  readonly client_email: string;
  readonly private_key: string;
  readonly private_key_id?: string;
  readonly project_id?: string;
  readonly token_uri?: string;
}

/** The fields of an external-account file the provider relies on (the library reads the rest). */
interface ExternalAccountConfig {
  readonly type: "external_account";
  readonly audience: string;
  readonly subject_token_type: string;
  readonly token_url?: string;
  readonly service_account_impersonation_url?: string;
  readonly credential_source: { readonly file?: string; readonly url?: string };
}

function parseJson(text: string, field: string, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new AccountConfigError(field, `is not JSON (${what})`);
}

export function parseKey(text: string): ServiceAccountKey {
  const field = `credentials.${SERVICE_ACCOUNT_KEY}`;
  const key = parseJson(text, field, "a service-account key file");
  if (key.type === "external_account")
    throw new AccountConfigError(
      field,
      `is an external-account file: give it as credentials.${EXTERNAL_ACCOUNT}`,
    );
  if (
    key.type !== "service_account" ||
    typeof key.client_email !== "string" ||
    typeof key.private_key !== "string"
  )
    throw new AccountConfigError(field, "is not a service-account key (type, client_email, private_key)");
  return key as unknown as ServiceAccountKey;
}

export function parseExternalAccount(text: string): ExternalAccountConfig {
  const field = `credentials.${EXTERNAL_ACCOUNT}`;
  const c = parseJson(text, field, "an external-account credential configuration");
  if (c.type === "service_account")
    throw new AccountConfigError(
      field,
      `is a service-account key: give it as credentials.${SERVICE_ACCOUNT_KEY}`,
    );
  if (
    c.type !== "external_account" ||
    typeof c.audience !== "string" ||
    typeof c.subject_token_type !== "string"
  )
    throw new AccountConfigError(
      field,
      "is not an external-account configuration (type external_account, audience, subject_token_type)",
    );
  const source = c.credential_source as Record<string, unknown> | undefined;
  // AWS- and executable-sourced configurations read the host's environment: not for a hub
  // serving many accounts, so only the file- and URL-sourced identity-pool kinds are taken.
  if (
    typeof source !== "object" ||
    source === null ||
    (typeof source.file !== "string") === (typeof source.url !== "string") ||
    "environment_id" in source ||
    "executable" in source
  )
    throw new AccountConfigError(
      `${field}.credential_source`,
      "must name exactly one of file or url (AWS- and executable-sourced credentials are not supported)",
    );
  return c as unknown as ExternalAccountConfig;
}

/**
 * What the SDK's clients hold as their auth client: headers and fetch of the current file's
 * client. A token endpoint's refusal is ForbiddenError; its silence or 5xx is transient.
 */
abstract class RotatingCredential<C extends AuthClient> {
  readonly universeDomain = "googleapis.com";
  private cached: { text: string; client: C } | undefined;

  constructor(private readonly read: () => string) {}

  protected abstract build(text: string): C;

  current(): C {
    const text = this.read();
    if (this.cached?.text === text) return this.cached.client;
    const client = this.build(text);
    this.cached = { text, client };
    return client;
  }

  /** Forgets the access token (and the client): the next request gets a new one. */
  dropToken(): void {
    this.cached = undefined;
  }

  async getRequestHeaders(url?: string | URL): Promise<Headers> {
    try {
      return await this.current().getRequestHeaders(url);
    } catch (err) {
      throw tokenError(err);
    }
  }

  async fetch(...args: Parameters<JWT["fetch"]>): Promise<Awaited<ReturnType<JWT["fetch"]>>> {
    const client = this.current();
    // The token first, so a refused credential is told apart from the API's own answer.
    try {
      await client.getRequestHeaders();
    } catch (err) {
      throw tokenError(err);
    }
    return client.fetch(...(args as Parameters<C["fetch"]>)) as Promise<Awaited<ReturnType<JWT["fetch"]>>>;
  }
}

/** The contract errors a failed token request becomes (marked, so the SDK's wrapping is undone). */
const TOKEN_FAILURES = new WeakSet<Error>();

/**
 * A failed token request: a refusal (a 4xx from the token endpoint, STS or iamcredentials: a
 * retired key, an expired or revoked subject token, a denied impersonation) is ForbiddenError;
 * no answer, a 5xx or a 429 is transient. A bad file is the AccountConfigError naming it.
 */
function tokenError(err: unknown): Error {
  if (err instanceof AccountConfigError) return err;
  const e = err as { status?: unknown; response?: { status?: unknown }; message?: unknown };
  const status = Number(e.status ?? e.response?.status ?? Number.NaN);
  const message = `token request failed: ${typeof e.message === "string" ? e.message : String(err)}`;
  const out =
    Number.isFinite(status) && status >= 400 && status < 500 && status !== 429
      ? new ForbiddenError(message, { cause: err })
      : new TransientCloudError(message, { cause: err });
  TOKEN_FAILURES.add(out);
  return out;
}

/** The token failure behind an error the SDK raised (gax wraps what fetch threw as `cause`), if any. */
export function tokenFailure(err: unknown): Error | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (TOKEN_FAILURES.has(e) || e instanceof AccountConfigError) return e;
  }
  return undefined;
}

/**
 * A service-account key: the JWT-bearer flow. The assertion goes to the key's `token_uri`
 * (Google's for a real key; the fake's in tests).
 */
export class RotatingServiceAccount extends RotatingCredential<JWT> {
  protected build(text: string): JWT {
    const key = parseKey(text);
    const transporter = new gaxios.Gaxios();
    const tokenUri = key.token_uri;
    if (tokenUri !== undefined && tokenUri !== GOOGLE_TOKEN_URL)
      transporter.interceptors.request.add({
        resolved: async (opts) => {
          if (String(opts.url) === GOOGLE_TOKEN_URL) opts.url = new URL(tokenUri);
          return opts;
        },
      });
    return new JWT({
      email: key.client_email,
      key: key.private_key,
      ...(key.private_key_id !== undefined && { keyId: key.private_key_id }),
      scopes: [COMPUTE_SCOPE],
      transporter,
      // No refresh-and-repeat of its own on a 401: GcpApi.call repeats once with a new token,
      // alike for both kinds of credential, through the rate limiter.
    });
  }
}

/**
 * An external-account file (workload identity federation): the library's IdentityPoolClient
 * reads the subject token (file or URL) at each exchange, posts it to the file's `token_url`
 * (default `https://sts.googleapis.com/v1/token`) and, with `service_account_impersonation_url`,
 * trades the federated token for the service account's. Those URLs are the file's: a test's
 * file names the fake's loopback address.
 */
export class RotatingExternalAccount extends RotatingCredential<IdentityPoolClient> {
  protected build(text: string): IdentityPoolClient {
    const config = parseExternalAccount(text);
    // Built directly (not ExternalAccountClient.fromJSON): the kind is checked above, and the
    // configuration is the operator's own file, not untrusted input.
    return new IdentityPoolClient({
      ...(config as unknown as ConstructorParameters<typeof IdentityPoolClient>[0]),
      scopes: [COMPUTE_SCOPE],
    });
  }
}

export type GcpCredential = RotatingServiceAccount | RotatingExternalAccount;

/**
 * The account's credential (exactly one is given: the factory declares it) and the project its
 * file names, if any (a key's `project_id`; an external-account file names none).
 */
export function accountCredential(account: AccountBinding): {
  readonly auth: GcpCredential;
  readonly project: string | undefined;
} {
  const names = account.credentialNames ?? [SERVICE_ACCOUNT_KEY];
  const federated = names.includes(EXTERNAL_ACCOUNT);
  const name = federated ? EXTERNAL_ACCOUNT : SERVICE_ACCOUNT_KEY;
  const read = () => account.secret?.(name) ?? account.credential;
  if (federated) {
    parseExternalAccount(read());
    return { auth: new RotatingExternalAccount(read), project: undefined };
  }
  return { auth: new RotatingServiceAccount(read), project: parseKey(read()).project_id };
}
