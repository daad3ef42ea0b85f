/**
 * One account's Compute Engine clients (the official SDK over REST) with its rotating
 * credentials (credentials.ts), and the one way every call is made: through ctx.call, with the
 * SDK's retries off and the account's timeout, errors mapped to the contract's.
 */
import { createRequire } from "node:module";
import type * as Compute from "@google-cloud/compute";
import type { JWT } from "google-auth-library";
import { CallDeadline, endedBy } from "../../call-deadline.js";
import { ForbiddenError } from "../../errors.js";
import { AccountConfigError, type ProviderContext } from "../../provider.js";
import { accountCredential, type GcpCredential, tokenFailure } from "./credentials.js";
import { toContractError } from "./errors.js";

export type Operation = Compute.protos.google.cloud.compute.v1.IOperation;
/** What the SDK's calls take: retries off (the hub's policy decides), the account's timeout. */
export interface CallOpts {
  readonly retry: null;
  readonly timeout: number;
  readonly autoPaginate: false;
}

export class GcpApi {
  readonly project: string;
  readonly region: string;
  readonly auth: GcpCredential;
  private clients: Promise<Clients> | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    project: string | undefined,
  ) {
    const { account } = ctx;
    const credential = accountCredential(account);
    this.auth = credential.auth;
    const chosen = project ?? credential.project;
    if (chosen === undefined)
      throw new AccountConfigError(
        "options.project",
        "required: the credential names no project (a key names it in project_id; an external-account file never does)",
      );
    this.project = chosen;
    this.region = account.region;
  }

  /** The SDK's clients, made once per account (the SDK loads here). */
  sdk(): Promise<Clients> {
    this.clients ??= makeClients(this.ctx, this.auth);
    return this.clients;
  }

  /**
   * One API call through the hub's wrapper: retries off, the account's timeout, contract errors.
   * A 401 (the token expired or was revoked before its time) drops the token and repeats the
   * call once with a fresh one; a second 401 is the answer.
   */
  async call<T>(
    op: string,
    fn: (c: Clients, opts: CallOpts) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    try {
      return await this.callOnce(op, fn, signal);
    } catch (err) {
      if (!(err instanceof ForbiddenError) || !/\bauthError\b|http401/.test(err.message)) throw err;
      this.auth.dropToken();
      return this.callOnce(op, fn, signal);
    }
  }

  private async callOnce<T>(
    op: string,
    fn: (c: Clients, opts: CallOpts) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const clients = await this.sdk();
    const timeoutMs = this.ctx.account.requestTimeoutMs;
    return this.ctx.call(op, async (hubSignal) => {
      // The SDK takes no signal: the call is raced against its end.
      let stop!: (reason: Error) => void;
      const stopped = new Promise<never>((_, reject) => {
        stop = reject;
      });
      const deadline = new CallDeadline(this.ctx.clock, timeoutMs, [hubSignal, signal], (end) =>
        stop(new Error(end)),
      );
      try {
        return await Promise.race([
          fn(clients, { retry: null, timeout: timeoutMs, autoPaginate: false }),
          stopped,
        ]);
      } catch (err) {
        // A token request that failed inside the SDK's fetch (wrapped by gax): its own error.
        throw tokenFailure(err) ?? toContractError(err, { op, timeoutMs, ...endedBy(deadline) });
      } finally {
        deadline.dispose();
      }
    });
  }

  /** Every page of a list: `page` is called with each page's token (none for the first) until the last. */
  async listAll<T>(
    op: string,
    page: (
      c: Clients,
      opts: CallOpts,
      pageToken: string | undefined,
    ) => Promise<
      readonly [readonly T[], unknown, { readonly nextPageToken?: string | null } | null | undefined]
    >,
    signal?: AbortSignal,
  ): Promise<T[]> {
    const out: T[] = [];
    let pageToken: string | undefined;
    do {
      const token = pageToken;
      const [items, , raw] = await this.call(op, (c, o) => page(c, o, token), signal);
      out.push(...items);
      pageToken = raw?.nextPageToken || undefined;
    } while (pageToken !== undefined);
    return out;
  }

  /** A mutation: the Operation Compute answered (the SDK's own LRO polling is never used). */
  async mutate(
    op: string,
    fn: (c: Clients, opts: CallOpts) => Promise<readonly unknown[]>,
    signal?: AbortSignal,
  ): Promise<Operation> {
    const [lro] = await this.call(op, fn, signal);
    const latest = (lro as { latestResponse?: Operation } | undefined)?.latestResponse;
    return latest ?? (lro as Operation);
  }

  /**
   * A call the SDK cannot make: @google-cloud/compute 7.8 has no client for the legacy
   * `httpHealthChecks` target pools need, so those go as plain REST on the same endpoint, with
   * the same credentials (the auth client's fetch), through the same wrapper.
   */
  async rest<T>(
    op: string,
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<T> {
    const endpoint = this.ctx.account.endpoint ?? "https://compute.googleapis.com";
    const url = `${endpoint.replace(/\/$/, "")}/compute/v1/projects/${this.project}/${path}`;
    return this.call(
      op,
      async (_c, o) => {
        try {
          const res = await this.auth.fetch(url, {
            method,
            headers: { "content-type": "application/json" },
            ...(body !== undefined && { body: JSON.stringify(body) }),
            timeout: o.timeout,
          } as Parameters<JWT["fetch"]>[1]);
          return res.data as T;
        } catch (err) {
          const e = err as { status?: number; response?: { status?: number; data?: unknown } };
          const status = e.status ?? e.response?.status;
          if (status === undefined) throw err;
          // The same shape gax gives its errors, so toContractError reads both alike.
          const data = e.response?.data;
          throw Object.assign(
            new Error(String((data as { error?: { message?: string } })?.error?.message ?? `HTTP ${status}`)),
            {
              httpStatusCode: status,
              [Symbol.for("google-gax.rawHttpResponsePayload")]:
                typeof data === "string" ? data : JSON.stringify(data),
            },
          );
        }
      },
      signal,
    );
  }

  url(path: string): string {
    return `https://www.googleapis.com/compute/v1/projects/${this.project}/${path}`;
  }
}

export interface Clients {
  readonly instances: Compute.InstancesClient;
  readonly disks: Compute.DisksClient;
  readonly regionDisks: Compute.RegionDisksClient;
  readonly zones: Compute.ZonesClient;
  readonly addresses: Compute.AddressesClient;
  readonly firewalls: Compute.FirewallsClient;
  readonly targetPools: Compute.TargetPoolsClient;
  readonly forwardingRules: Compute.ForwardingRulesClient;
  readonly routes: Compute.RoutesClient;
  readonly healthChecks: Compute.HealthChecksClient;
  readonly regionHealthChecks: Compute.RegionHealthChecksClient;
  readonly regionBackendServices: Compute.RegionBackendServicesClient;
  readonly instanceGroups: Compute.InstanceGroupsClient;
  readonly subnetworks: Compute.SubnetworksClient;
  readonly regionOperations: Compute.RegionOperationsClient;
  readonly globalOperations: Compute.GlobalOperationsClient;
  readonly zoneOperations: Compute.ZoneOperationsClient;
}

/** What of google-gax the clients' constructors are handed (their documented `gaxInstance`). */
interface Gax {
  readonly fallback: { readonly GrpcClient: new (...args: never[]) => GaxGrpcClient };
}
interface GaxGrpcClient {
  loadProtoJSON(json: object, ignoreCache?: boolean): unknown;
}

let sharedGax: Gax | undefined;

/**
 * The SDK's own google-gax, whose REST client keeps each proto root it loaded for the same
 * JSON object. gax caches roots by a hash of the whole JSON: every client's constructor
 * stringified and hashed the SDK's 12 MB of protos, ~0.6 s of CPU for an account's 17 clients
 * (~13 ms with this: bench/gcp-bind.ts).
 */
function gaxSharingRoots(): Gax {
  if (sharedGax !== undefined) return sharedGax;
  const fromSdk = createRequire(createRequire(import.meta.url).resolve("@google-cloud/compute"));
  const gax = fromSdk("google-gax") as Gax;
  const roots = new WeakMap<object, unknown>();
  class GrpcClient extends gax.fallback.GrpcClient {
    override loadProtoJSON(json: object, ignoreCache = false): unknown {
      if (ignoreCache) return super.loadProtoJSON(json, true);
      if (!roots.has(json)) roots.set(json, super.loadProtoJSON(json));
      return roots.get(json);
    }
  }
  sharedGax = { ...gax, fallback: { ...gax.fallback, GrpcClient } };
  return sharedGax;
}

async function makeClients(ctx: ProviderContext, auth: GcpCredential): Promise<Clients> {
  const sdk = await import("@google-cloud/compute");
  const gax = gaxSharingRoots() as unknown as ConstructorParameters<typeof sdk.InstancesClient>[1];
  const endpoint = ctx.account.endpoint;
  // The endpoint override: plain HTTP on loopback reaches a fake (gax honours `protocol`).
  const at =
    endpoint === undefined
      ? {}
      : (() => {
          const u = new URL(endpoint);
          const protocol = u.protocol.replace(":", "");
          return {
            apiEndpoint: u.hostname,
            port: Number(u.port || (protocol === "http" ? 80 : 443)),
            protocol,
          };
        })();
  // The SDK's option types know neither `protocol` nor an auth client of our own shape.
  const opts = { authClient: auth, ...at, fallback: true } as unknown as ConstructorParameters<
    typeof sdk.InstancesClient
  >[0];
  return {
    instances: new sdk.InstancesClient(opts, gax),
    disks: new sdk.DisksClient(opts, gax),
    regionDisks: new sdk.RegionDisksClient(opts, gax),
    zones: new sdk.ZonesClient(opts, gax),
    addresses: new sdk.AddressesClient(opts, gax),
    firewalls: new sdk.FirewallsClient(opts, gax),
    targetPools: new sdk.TargetPoolsClient(opts, gax),
    forwardingRules: new sdk.ForwardingRulesClient(opts, gax),
    routes: new sdk.RoutesClient(opts, gax),
    healthChecks: new sdk.HealthChecksClient(opts, gax),
    regionHealthChecks: new sdk.RegionHealthChecksClient(opts, gax),
    regionBackendServices: new sdk.RegionBackendServicesClient(opts, gax),
    instanceGroups: new sdk.InstanceGroupsClient(opts, gax),
    subnetworks: new sdk.SubnetworksClient(opts, gax),
    regionOperations: new sdk.RegionOperationsClient(opts, gax),
    globalOperations: new sdk.GlobalOperationsClient(opts, gax),
    zoneOperations: new sdk.ZoneOperationsClient(opts, gax),
  };
}
