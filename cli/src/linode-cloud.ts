/**
 * The fake Linode API for `fleet-ccm demo --provider linode`, the end-to-end tests and the
 * bench: one or more Linode accounts (one token each), every cluster's Linodes in one region,
 * tagged `fleet-ccm.io/cluster=<cluster>` so each cluster's scope is its own Linodes.
 */
import { CLUSTER_TAG, LinodeFake, nodeName } from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

export const LINODE_DEMO_REGION = "us-east";
export const LINODE_DEMO_ACCOUNT = "linode-main";

export interface LinodeLocalCloudOptions {
  /** Each cluster's account, by cluster (default: one account for every cluster). */
  readonly accountOf?: (cluster: string) => string;
  readonly latencyMs?: number;
  /** The hub's rate limit per account (default 500/s). */
  readonly rateLimitPerSecond?: number;
  /** The hub's per-call timeout (default 5000 ms). */
  readonly requestTimeoutMs?: number;
  /** A cluster's clusters[].adoptFrom (migrating from the Linode CCM run with that cluster name). */
  readonly adoptFrom?: (cluster: string) => string | undefined;
}

export class LinodeLocalCloud implements LocalCloud {
  readonly provider = "linode";
  /** Account name → token. */
  private readonly tokens = new Map<string, string>();
  private readonly accountOf: (cluster: string) => string;

  private constructor(
    readonly fake: LinodeFake,
    private readonly opts: LinodeLocalCloudOptions,
  ) {
    this.accountOf = opts.accountOf ?? (() => LINODE_DEMO_ACCOUNT);
  }

  static async start(
    clusters: readonly string[],
    opts: LinodeLocalCloudOptions = {},
  ): Promise<LinodeLocalCloud> {
    const cloud = new LinodeLocalCloud(await LinodeFake.start(), opts);
    if (opts.latencyMs) cloud.fake.setFaults({ latencyMs: opts.latencyMs });
    for (const a of new Set(clusters.map(cloud.accountOf)))
      cloud.tokens.set(a, cloud.fake.createAccount(a).token);
    return cloud;
  }

  /** The account a cluster's Linodes and NodeBalancers are in. */
  account(cluster: string): string {
    return this.accountOf(cluster);
  }

  accountsConfig() {
    const env: Record<string, string> = {};
    const accounts = [...this.tokens].map(([name, token], i) => {
      const envName = `FLEET_CCM_LINODE_TOKEN_${i}`;
      env[envName] = token;
      return {
        name,
        provider: "linode",
        region: LINODE_DEMO_REGION,
        endpoint: this.fake.url,
        credentials: { env: envName },
        rateLimit: { perSecond: this.opts.rateLimitPerSecond ?? 500, burst: 500 },
        requestTimeoutMs: this.opts.requestTimeoutMs ?? 5000,
      };
    });
    return { accounts, env };
  }

  clusterConfig(cluster: string) {
    const adoptFrom = this.opts.adoptFrom?.(cluster);
    return {
      account: this.accountOf(cluster),
      scope: { tags: { [CLUSTER_TAG]: cluster } },
      ...(adoptFrom !== undefined && { adoptFrom: { vendorCcmClusterName: adoptFrom } }),
    };
  }

  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createLinode(this.accountOf(cluster), {
      label: name,
      region: LINODE_DEMO_REGION,
      tags: [`${CLUSTER_TAG}=${cluster}`],
    });
    return name;
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
