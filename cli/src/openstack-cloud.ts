/**
 * The fake OpenStack cloud for `fleet-ccm demo --provider openstack` and the end-to-end tests:
 * one project (one application credential) in RegionOne of a two-region catalog, an external
 * network for floating IPs, one router for every cluster's pod-CIDR routes, and per cluster a
 * Neutron network of its own (`<cluster>-net`: its nodes' ports and its load balancers' VIPs),
 * its servers carrying `fleet-ccm-cluster=<cluster>` in their Nova metadata (Nova's metadata keys
 * take no `/`). A cluster's scope is its network.
 */
import {
  type FakeNeutronNetwork,
  type FakeNovaServer,
  type FakeOctaviaLoadBalancer,
  nodeName,
  OpenStackFake,
} from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

export const OPENSTACK_DEMO_REGION = "RegionOne";
export const OPENSTACK_DEMO_ACCOUNT = "openstack-demo";
/** The demo project every cluster's servers, networks and volumes live in. */
export const OPENSTACK_DEMO_PROJECT = "demo";
const PROJECT = OPENSTACK_DEMO_PROJECT;
const APP_CREDENTIAL_ID = "fleet-ccm-demo";
const CLUSTER_KEY = "fleet-ccm-cluster";

export interface OpenStackLocalCloudOptions {
  readonly latencyMs?: number;
  /** How long each Octavia change stays PENDING_* (default 200 ms). */
  readonly pendingMs?: number;
  /** The hub's rate limit for the project (default 50/s). */
  readonly rateLimitPerSecond?: number;
  /** Check every exchange against the spec subsets (tests). */
  readonly spec?: boolean;
  /** Node-port security groups per load balancer (upstream's manage-security-groups). */
  readonly manageSecurityGroups?: boolean;
}

export class OpenStackLocalCloud implements LocalCloud {
  readonly provider = "openstack";
  /** Cluster → its network. */
  readonly networks = new Map<string, FakeNeutronNetwork>();

  private constructor(
    readonly fake: OpenStackFake,
    readonly secret: string,
    readonly external: FakeNeutronNetwork,
    readonly routerId: string,
    private readonly opts: OpenStackLocalCloudOptions,
  ) {}

  static async start(
    clusters: readonly string[],
    opts: OpenStackLocalCloudOptions = {},
  ): Promise<OpenStackLocalCloud> {
    const fake = await OpenStackFake.start({ pendingMs: opts.pendingMs ?? 200, spec: opts.spec ?? false });
    if (opts.latencyMs) fake.faults.set({ latencyMs: opts.latencyMs });
    fake.createProject(PROJECT);
    const secret = `demo-${Math.random().toString(36).slice(2)}`;
    fake.createApplicationCredential(PROJECT, APP_CREDENTIAL_ID, secret);
    const external = fake.createNetwork(PROJECT, OPENSTACK_DEMO_REGION, {
      name: "public",
      cidr: "172.24.4.0/24",
      external: true,
    });
    const router = fake.createRouter(PROJECT, OPENSTACK_DEMO_REGION, "k8s-router");
    const cloud = new OpenStackLocalCloud(fake, secret, external, router.id, opts);
    clusters.forEach((c, i) => {
      cloud.networks.set(
        c,
        fake.createNetwork(PROJECT, OPENSTACK_DEMO_REGION, {
          name: `${c}-net`,
          cidr: `10.${i % 250}.0.0/16`,
        }),
      );
    });
    return cloud;
  }

  network(cluster: string): FakeNeutronNetwork {
    const n = this.networks.get(cluster);
    if (n === undefined) throw new Error(`no OpenStack network for cluster ${cluster}`);
    return n;
  }

  accountsConfig() {
    const perSecond = this.opts.rateLimitPerSecond ?? 50;
    return {
      accounts: [
        {
          name: OPENSTACK_DEMO_ACCOUNT,
          provider: "openstack",
          region: OPENSTACK_DEMO_REGION,
          endpoint: `${this.fake.url}/v3`,
          credentials: { applicationCredentialSecret: { env: "FLEET_CCM_OPENSTACK_SECRET" } },
          options: {
            applicationCredentialId: APP_CREDENTIAL_ID,
            routerId: this.routerId,
            loadBalancer: {
              floatingNetworkId: this.external.id,
              ...(this.opts.manageSecurityGroups === true && { manageSecurityGroups: true }),
            },
          },
          rateLimit: { perSecond, burst: perSecond * 2 },
          requestTimeoutMs: 5000,
        },
      ],
      env: { FLEET_CCM_OPENSTACK_SECRET: this.secret },
    };
  }

  clusterConfig(cluster: string) {
    return {
      account: OPENSTACK_DEMO_ACCOUNT,
      scope: { network: this.network(cluster).id },
    };
  }

  /** A server with a port on the cluster's network; kubelet registers its name as the node's. */
  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createServer(PROJECT, OPENSTACK_DEMO_REGION, {
      name,
      networks: [this.network(cluster)],
      metadata: { [CLUSTER_KEY]: cluster },
      az: "nova",
      flavor: "m1.medium",
    });
    return name;
  }

  servers(cluster: string): FakeNovaServer[] {
    return [...this.fake.store.servers.values()].filter((s) => s.metadata[CLUSTER_KEY] === cluster);
  }

  /** The cluster's load balancers (their owner tags name it). */
  loadBalancers(cluster: string): FakeOctaviaLoadBalancer[] {
    return [...this.fake.store.loadBalancers.values()].filter(
      (l) => l.tags.includes(`fleet-ccm.io/cluster=${cluster}`) && this.fake.lbStatus(l.id) !== "DELETED",
    );
  }

  /** The router's extra routes, `destination -> nexthop`. */
  routes(): string[] {
    const r = this.fake.store.routers.get(this.routerId);
    return (r?.routes ?? []).map((x) => `${x.destination} -> ${x.nexthop}`).sort();
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
