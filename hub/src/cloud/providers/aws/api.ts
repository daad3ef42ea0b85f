/**
 * The SDK clients of one account and region, and the one way to call them: through the hub's
 * CloudCallWrapper (rate limiter, metrics, shutdown signal), with the account's timeout on the
 * hub's clock, the caller's signal, and every error mapped to the contract's.
 *
 * The SDK's own retries are off (maxAttempts 1): the hub's one retry policy requeues, and a
 * retry inside the SDK would bypass the per-region rate limiter, which is the point on EC2.
 */
import { EC2Client, type EC2ClientConfig } from "@aws-sdk/client-ec2";
import { ElasticLoadBalancingClient } from "@aws-sdk/client-elastic-load-balancing";
import { ElasticLoadBalancingV2Client } from "@aws-sdk/client-elastic-load-balancing-v2";
import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts";
import { CallDeadline } from "../../call-deadline.js";
import { ForbiddenError, TransientCloudError } from "../../errors.js";
import type { ProviderContext } from "../../provider.js";
import { isExpiredToken, toContractError } from "./errors.js";

export interface AssumeRoleSettings {
  readonly roleArn: () => string;
  readonly externalId: (() => string) | undefined;
  readonly sessionName: string;
  readonly durationSeconds: number;
}

/** Refresh an assumed role's credentials this long before they expire (at most a fifth of their life). */
const REFRESH_BEFORE_MS = 5 * 60_000;

interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

type CredentialsProvider = Extract<
  NonNullable<EC2ClientConfig["credentials"]>,
  (...args: never[]) => unknown
>;

/**
 * The account's credentials: its keys read per request (so a rotated file is used at once), or
 * a role assumed with them, refreshed before expiry and on ExpiredToken.
 */
export class AccountCredentials {
  private assumed: { creds: Credentials; refreshAtMs: number } | undefined;
  private pending: Promise<Credentials> | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly keys: () => Credentials,
    private readonly role: AssumeRoleSettings | undefined,
    private readonly sts: () => STSClient,
  ) {}

  /** For the SDK: marked memoized, so the SDK asks for every request instead of caching forever. */
  readonly provider: CredentialsProvider = Object.assign(() => this.current(), { memoized: true });

  get assumesRole(): boolean {
    return this.role !== undefined;
  }

  async current(): Promise<Credentials> {
    if (this.role === undefined) return this.keys();
    const now = this.ctx.clock.now();
    if (this.assumed !== undefined && now < this.assumed.refreshAtMs) return this.assumed.creds;
    this.pending ??= this.assume(this.role).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The role's session ended early (ExpiredToken): assume it again on the next call. */
  invalidate(): void {
    this.assumed = undefined;
  }

  private async assume(role: AssumeRoleSettings): Promise<Credentials> {
    const { account } = this.ctx;
    const out = await callAws(this.ctx, "sts.AssumeRole", undefined, (abortSignal) =>
      this.sts().send(
        new AssumeRoleCommand({
          RoleArn: role.roleArn(),
          RoleSessionName: role.sessionName,
          DurationSeconds: role.durationSeconds,
          ...(role.externalId !== undefined && { ExternalId: role.externalId() }),
        }),
        { abortSignal },
      ),
    );
    const c = out.Credentials;
    if (c?.AccessKeyId === undefined || c.SecretAccessKey === undefined || c.Expiration === undefined)
      throw new TransientCloudError(`account ${account.name}: AssumeRole answered without credentials`);
    const creds: Credentials = {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      ...(c.SessionToken !== undefined && { sessionToken: c.SessionToken }),
      expiration: c.Expiration,
    };
    const now = this.ctx.clock.now();
    const lifeMs = Math.max(0, c.Expiration.getTime() - now);
    this.assumed = { creds, refreshAtMs: now + lifeMs - Math.min(REFRESH_BEFORE_MS, lifeMs / 5) };
    this.ctx.logger.info(
      { account: account.name, region: account.region, expiresAt: c.Expiration.toISOString() },
      "assumed role",
    );
    return creds;
  }
}

/**
 * One SDK call through the hub's wrapper: `op` names it (`ec2.DescribeInstances`), `send`
 * gets the signal to pass to the SDK (the wrapper's, the caller's and the timeout's).
 */
export async function callAws<T>(
  ctx: ProviderContext,
  op: string,
  signal: AbortSignal | undefined,
  send: (abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeoutMs = ctx.account.requestTimeoutMs;
  return ctx.call(op, async (callSignal) => {
    const controller = new AbortController();
    const deadline = new CallDeadline(ctx.clock, timeoutMs, [callSignal, signal], () => controller.abort());
    try {
      return await send(controller.signal);
    } catch (err) {
      throw toContractError(err, { op, timedOut: deadline.ended === "timeout", timeoutMs });
    } finally {
      deadline.dispose();
    }
  });
}

/** Every item of every page a paginator yields. */
export async function allPages<P, T>(
  pages: AsyncIterable<P>,
  items: (page: P) => readonly T[] | undefined,
): Promise<T[]> {
  const out: T[] = [];
  for await (const page of pages) out.push(...(items(page) ?? []));
  return out;
}

/** The first page a paginator yields (one page of a listing resumed at a token). */
export async function firstPage<P>(pages: AsyncIterable<P>): Promise<P> {
  for await (const page of pages) return page;
  throw new Error("the paginator yielded no page");
}

export class AwsApi {
  readonly ec2: EC2Client;
  readonly elb: ElasticLoadBalancingClient;
  readonly elbv2: ElasticLoadBalancingV2Client;
  readonly credentials: AccountCredentials;

  constructor(
    private readonly ctx: ProviderContext,
    keys: () => Credentials,
    role: AssumeRoleSettings | undefined,
  ) {
    const { account } = ctx;
    const common = {
      region: account.region,
      maxAttempts: 1,
      useFipsEndpoint: false,
      useDualstackEndpoint: false,
      ...(account.endpoint !== undefined && account.endpoint !== "" && { endpoint: account.endpoint }),
    };
    let sts: STSClient | undefined;
    this.credentials = new AccountCredentials(ctx, keys, role, () => {
      sts ??= new STSClient({
        ...common,
        credentials: Object.assign(async () => keys(), { memoized: true }),
      });
      return sts;
    });
    const config = { ...common, credentials: this.credentials.provider };
    this.ec2 = new EC2Client(config);
    this.elb = new ElasticLoadBalancingClient(config);
    this.elbv2 = new ElasticLoadBalancingV2Client(config);
  }

  /** One call; an assumed role's ExpiredToken drops its credentials so the retry assumes it again. */
  async call<T>(
    op: string,
    signal: AbortSignal | undefined,
    send: (abortSignal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    try {
      return await callAws(this.ctx, op, signal, send);
    } catch (err) {
      if (err instanceof ForbiddenError && this.credentials.assumesRole && isExpiredToken(err.cause)) {
        this.credentials.invalidate();
        throw new TransientCloudError(`${op}: the assumed role's credentials expired; assuming it again`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  /**
   * A view of `client` for the SDK's paginators (which insist on an instance of the client's
   * class): every page it sends goes through `call` as `op`, on the hub's rate limiter,
   * timeout and error mapping, with the caller's signal.
   */
  paged<C extends object>(client: C & { send: unknown }, op: string, signal: AbortSignal | undefined): C {
    const send = client.send as (command: unknown, options: { abortSignal: AbortSignal }) => Promise<unknown>;
    return Object.create(client, {
      send: {
        value: (command: unknown) =>
          this.call(op, signal, (abortSignal) => send.call(client, command, { abortSignal })),
      },
    }) as C;
  }

  /** One page of a listing resumed at `token` (absent: the first), through `paged`. */
  async onePage<C extends object, I, P>(
    paginate: (
      config: { client: C; pageSize?: number; startingToken?: string },
      input: I,
    ) => AsyncIterable<P>,
    client: C & { send: unknown },
    op: string,
    input: I,
    o: { pageSize: number; token: string | undefined; signal: AbortSignal | undefined },
  ): Promise<P> {
    return firstPage(
      paginate(
        {
          client: this.paged(client, op, o.signal),
          pageSize: o.pageSize,
          ...(o.token !== undefined && { startingToken: o.token }),
        },
        input,
      ),
    );
  }

  destroy(): void {
    this.ec2.destroy();
    this.elb.destroy();
    this.elbv2.destroy();
  }
}
