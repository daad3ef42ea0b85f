/**
 * The fake DigitalOcean API for `fleet-ccm demo --provider digitalocean` and the end-to-end
 * tests: one account (one token) in nyc3, and per cluster a VPC of its own, its Droplets tagged
 * `k8s:<cluster>` as DOKS tags a cluster's Droplets. A cluster's scope is its VPC and that tag.
 * DigitalOcean has no route table API: these clusters get no routes.
 */
import { randomUUID } from "node:crypto";
import { DigitalOceanFake, type FakeDoLoadBalancer, type FakeDroplet, nodeName } from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

export const DO_DEMO_REGION = "nyc3";
export const DO_DEMO_ACCOUNT = "do-main";
/** The Droplet tag naming a cluster (`k8s:<cluster>`), read as the scope tag `k8s=<cluster>`. */
const CLUSTER_TAG_KEY = "k8s";

export interface DigitalOceanLocalCloudOptions {
  readonly latencyMs?: number;
  /** The hub's rate limit for the account (default 50/s). */
  readonly rateLimitPerSecond?: number;
  /** How soon the hub looks again at a load balancer still `new` (default 200 ms; upstream waits 15 s). */
  readonly loadBalancerPollMs?: number;
}

export class DigitalOceanLocalCloud implements LocalCloud {
  readonly provider = "digitalocean";
  /** Cluster → its VPC's uuid. */
  readonly vpcs = new Map<string, string>();

  private constructor(
    readonly fake: DigitalOceanFake,
    readonly token: string,
    private readonly opts: DigitalOceanLocalCloudOptions,
  ) {}

  static async start(
    clusters: readonly string[],
    opts: DigitalOceanLocalCloudOptions = {},
  ): Promise<DigitalOceanLocalCloud> {
    const fake = await DigitalOceanFake.start();
    if (opts.latencyMs) fake.setFaults({ latencyMs: opts.latencyMs });
    const cloud = new DigitalOceanLocalCloud(fake, fake.createAccount(DO_DEMO_ACCOUNT).token, opts);
    for (const c of clusters) cloud.vpcs.set(c, randomUUID());
    return cloud;
  }

  vpc(cluster: string): string {
    const v = this.vpcs.get(cluster);
    if (v === undefined) throw new Error(`no DigitalOcean VPC for cluster ${cluster}`);
    return v;
  }

  accountsConfig() {
    const perSecond = this.opts.rateLimitPerSecond ?? 50;
    return {
      accounts: [
        {
          name: DO_DEMO_ACCOUNT,
          provider: "digitalocean",
          region: DO_DEMO_REGION,
          endpoint: this.fake.url,
          credentials: { env: "FLEET_CCM_DO_TOKEN" },
          rateLimit: { perSecond, burst: perSecond * 2 },
          requestTimeoutMs: 5000,
          options: { loadBalancerPollMs: this.opts.loadBalancerPollMs ?? 200 },
        },
      ],
      env: { FLEET_CCM_DO_TOKEN: this.token },
    };
  }

  clusterConfig(cluster: string) {
    return {
      account: DO_DEMO_ACCOUNT,
      scope: { network: this.vpc(cluster), tags: { [CLUSTER_TAG_KEY]: cluster } },
    };
  }

  /** A Droplet in the cluster's VPC; kubelet registers its name (the Droplet's name) as the node's. */
  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createDroplet(DO_DEMO_ACCOUNT, {
      name,
      region: DO_DEMO_REGION,
      vpcUuid: this.vpc(cluster),
      tags: [`${CLUSTER_TAG_KEY}:${cluster}`],
    });
    return name;
  }

  droplets(cluster: string): FakeDroplet[] {
    const vpc = this.vpc(cluster);
    return this.fake.store.dropletsOf(DO_DEMO_ACCOUNT).filter((d) => d.vpcUuid === vpc);
  }

  loadBalancers(cluster: string): FakeDoLoadBalancer[] {
    const vpc = this.vpc(cluster);
    return this.fake.store.loadBalancersOf(DO_DEMO_ACCOUNT).filter((l) => l.vpc_uuid === vpc);
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
