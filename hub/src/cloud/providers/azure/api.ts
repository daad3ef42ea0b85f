/**
 * One account's ARM clients (the official @azure/arm-network and @azure/arm-compute) with its
 * rotating Entra ID credential, and the one way every call is made: through ctx.call, with the
 * SDK's retries off (the hub's policy decides, ARM's Retry-After reaches it as ThrottledError),
 * the account's timeout and abort signals, errors mapped to the contract's.
 */
import type { ComputeManagementClient } from "@azure/arm-compute";
import type { NetworkManagementClient } from "@azure/arm-network";
import type { AccessToken, GetTokenOptions, TokenCredential } from "@azure/identity";
import { CallDeadline, endedBy } from "../../call-deadline.js";
import { ForbiddenError } from "../../errors.js";
import { AccountConfigError, type ProviderContext } from "../../provider.js";
import { ArmBudget } from "./arm-budget.js";
import { toContractError } from "./errors.js";
import type { AzureOptions } from "./options.js";

export interface Clients {
  readonly network: NetworkManagementClient;
  readonly compute: ComputeManagementClient;
  /** A listing page's nextLink (the SDK keeps it beside the page, not on it). */
  readonly continuationOf: (page: unknown) => string | undefined;
}

/** What every SDK call takes: the combined abort signal. */
export interface CallOpts {
  readonly abortSignal: AbortSignal;
}

type Identity = typeof import("@azure/identity");

/** The credential kinds an account may give (accounts[].credentials). */
export const CREDENTIALS = {
  clientSecret: "clientSecret",
  clientCertificate: "clientCertificate",
  federatedToken: "federatedToken",
} as const;

/**
 * A TokenCredential that re-reads the account's credential per token request: a rotated client
 * secret or certificate (a changed file) makes a new inner credential, a federated token file is
 * read each time Entra ID is asked (as the projected service-account token rotates under it).
 */
class RotatingCredential implements TokenCredential {
  private inner: { readonly material: string; readonly credential: TokenCredential } | undefined;

  constructor(
    private readonly sdk: Identity,
    private readonly ctx: ProviderContext,
    private readonly options: AzureOptions,
    private readonly kind: keyof typeof CREDENTIALS,
  ) {}

  getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken | null> {
    const material = this.read();
    if (this.inner?.material !== material) this.inner = { material, credential: this.make(material) };
    return this.inner.credential.getToken(scopes, options);
  }

  private read(): string {
    const { account } = this.ctx;
    return this.kind === "federatedToken" ? "federated" : (account.secret?.(this.kind) ?? account.credential);
  }

  private make(material: string): TokenCredential {
    const o = this.options;
    const common = {
      ...(o.authorityHost !== undefined && {
        authorityHost: o.authorityHost,
        disableInstanceDiscovery: true,
      }),
      ...(o.caCertificates !== undefined && { tlsOptions: { ca: o.caCertificates } }),
      retryOptions: { maxRetries: 0 },
    };
    switch (this.kind) {
      case "clientSecret":
        return new this.sdk.ClientSecretCredential(o.tenantId, o.clientId, material, common);
      case "clientCertificate":
        return new this.sdk.ClientCertificateCredential(
          o.tenantId,
          o.clientId,
          { certificate: material },
          common,
        );
      case "federatedToken": {
        const account = this.ctx.account;
        return new this.sdk.ClientAssertionCredential(
          o.tenantId,
          o.clientId,
          async () => (account.secret?.("federatedToken") ?? account.credential).trim(),
          common,
        );
      }
    }
  }
}

export class AzureApi {
  readonly subscription: string;
  readonly region: string;
  /** ARM's read, write and delete budgets of the subscription, spent by every request. */
  readonly budget: ArmBudget;
  private clients: Promise<Clients> | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    readonly options: AzureOptions,
  ) {
    this.subscription = options.subscriptionId;
    this.region = ctx.account.region;
    this.budget = new ArmBudget(ctx, options.armLimits);
  }

  /** The SDK's clients, made once per account (the SDK loads here). */
  sdk(): Promise<Clients> {
    this.clients ??= this.makeClients();
    return this.clients;
  }

  private credentialKind(): keyof typeof CREDENTIALS {
    const names = this.ctx.account.credentialNames ?? [CREDENTIALS.clientSecret];
    const given = (Object.keys(CREDENTIALS) as (keyof typeof CREDENTIALS)[]).filter((k) => names.includes(k));
    if (given.length > 1)
      throw new AccountConfigError(
        "credentials",
        `one of clientSecret, clientCertificate, federatedToken, not ${given.join(" and ")}`,
      );
    return given[0] ?? "clientSecret";
  }

  private async makeClients(): Promise<Clients> {
    const [identity, network, compute] = await Promise.all([
      import("@azure/identity"),
      import("@azure/arm-network"),
      import("@azure/arm-compute"),
    ]);
    const credential = new RotatingCredential(identity, this.ctx, this.options, this.credentialKind());
    const endpoint = this.ctx.account.endpoint;
    const opts = {
      ...(endpoint !== undefined && { endpoint: endpoint.replace(/\/$/, "") }),
      // The hub's retry policy, never the SDK's (ARM's Retry-After reaches the hub as ThrottledError).
      retryOptions: { maxRetries: 0 },
      additionalPolicies: [{ policy: this.budget.policy(), position: "perRetry" as const }],
      ...(this.options.caCertificates !== undefined && { tlsOptions: { ca: this.options.caCertificates } }),
      ...(this.ctx.account.userAgent !== undefined && {
        userAgentOptions: { userAgentPrefix: this.ctx.account.userAgent },
      }),
    };
    return {
      network: new network.NetworkManagementClient(credential, this.subscription, opts),
      compute: new compute.ComputeManagementClient(credential, this.subscription, opts),
      continuationOf: (page) => compute.getContinuationToken(page),
    };
  }

  /**
   * One API call through the hub's wrapper: the account's timeout, every abort signal, contract
   * errors. A 401 (a token ARM no longer takes before its time: revoked, or expired early) drops
   * the clients, whose pipelines cache the token, and repeats the call once with fresh ones.
   */
  async call<T>(
    op: string,
    fn: (c: Clients, opts: CallOpts) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    try {
      return await this.callOnce(op, fn, signal);
    } catch (err) {
      if (
        !(err instanceof ForbiddenError) ||
        !/\b(InvalidAuthenticationToken|ExpiredAuthenticationToken)\b/.test(err.message)
      )
        throw err;
      this.clients = this.makeClients();
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
      const controller = new AbortController();
      const deadline = new CallDeadline(this.ctx.clock, timeoutMs, [hubSignal, signal], () =>
        controller.abort(),
      );
      try {
        return await fn(clients, { abortSignal: controller.signal });
      } catch (err) {
        throw toContractError(err, { op, timeoutMs, ...endedBy(deadline), nowMs: this.ctx.clock.now() });
      } finally {
        deadline.dispose();
      }
    });
  }

  /** The injected clock's time (ms). */
  now(): number {
    return this.ctx.clock.now();
  }

  /** The id of a resource of the account's subscription. */
  id(resourceGroup: string, type: string, name: string): string {
    return `/subscriptions/${this.subscription}/resourceGroups/${resourceGroup}/providers/${type}/${name}`;
  }
}
