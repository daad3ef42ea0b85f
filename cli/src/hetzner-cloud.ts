/**
 * The fake Hetzner Cloud API for `fleet-ccm demo --provider hetzner` and the end-to-end tests:
 * one project (one token) in fsn1, and per cluster a network of its own (`<cluster>-net`, its
 * nodes' private IPs and its routes), its servers labelled `fleet-ccm.io/cluster=<cluster>`.
 * A cluster's scope is its network and that label.
 */
import {
  CLUSTER_TAG,
  type FakeHetznerLoadBalancer,
  type FakeNetwork,
  type FakeServer,
  HetznerFake,
  nodeName,
} from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

export const HETZNER_DEMO_REGION = "fsn1";
export const HETZNER_DEMO_ACCOUNT = "hetzner-main";

export interface HetznerLocalCloudOptions {
  readonly latencyMs?: number;
  /** The hub's rate limit for the project (default 50/s). */
  readonly rateLimitPerSecond?: number;
}

export class HetznerLocalCloud implements LocalCloud {
  readonly provider = "hetzner";
  /** Cluster → its network. */
  readonly networks = new Map<string, FakeNetwork>();

  private constructor(
    readonly fake: HetznerFake,
    readonly token: string,
    private readonly opts: HetznerLocalCloudOptions,
  ) {}

  static async start(
    clusters: readonly string[],
    opts: HetznerLocalCloudOptions = {},
  ): Promise<HetznerLocalCloud> {
    const fake = await HetznerFake.start();
    if (opts.latencyMs) fake.faults.set({ latencyMs: opts.latencyMs });
    const cloud = new HetznerLocalCloud(fake, fake.createAccount(HETZNER_DEMO_ACCOUNT).token, opts);
    clusters.forEach((c, i) => {
      cloud.networks.set(
        c,
        fake.createNetwork(HETZNER_DEMO_ACCOUNT, { name: `${c}-net`, ipRange: `10.${i % 250}.0.0/16` }),
      );
    });
    return cloud;
  }

  network(cluster: string): FakeNetwork {
    const n = this.networks.get(cluster);
    if (n === undefined) throw new Error(`no Hetzner network for cluster ${cluster}`);
    return n;
  }

  accountsConfig() {
    const perSecond = this.opts.rateLimitPerSecond ?? 50;
    return {
      accounts: [
        {
          name: HETZNER_DEMO_ACCOUNT,
          provider: "hetzner",
          region: HETZNER_DEMO_REGION,
          endpoint: `${this.fake.url}/v1`,
          credentials: { env: "FLEET_CCM_HETZNER_TOKEN" },
          rateLimit: { perSecond, burst: perSecond * 2 },
          requestTimeoutMs: 5000,
        },
      ],
      env: { FLEET_CCM_HETZNER_TOKEN: this.token },
    };
  }

  clusterConfig(cluster: string) {
    return {
      account: HETZNER_DEMO_ACCOUNT,
      scope: { network: this.network(cluster).name, tags: { [CLUSTER_TAG]: cluster } },
    };
  }

  /** A server attached to the cluster's network; kubelet registers its name as the node's. */
  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createServer(HETZNER_DEMO_ACCOUNT, {
      name,
      location: HETZNER_DEMO_REGION,
      labels: { [CLUSTER_TAG]: cluster },
      networks: [this.network(cluster).id],
    });
    return name;
  }

  servers(cluster: string): FakeServer[] {
    return this.fake.store.serversOf(HETZNER_DEMO_ACCOUNT).filter((s) => s.labels[CLUSTER_TAG] === cluster);
  }

  loadBalancers(cluster: string): FakeHetznerLoadBalancer[] {
    return this.fake.store
      .loadBalancersOf(HETZNER_DEMO_ACCOUNT)
      .filter((l) => l.labels[CLUSTER_TAG] === cluster);
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
