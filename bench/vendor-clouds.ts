/**
 * LocalCloud adapters for the vendor benchmarks (`--scenario digitalocean|hetzner|gcp|openstack|azure`): one
 * account (token, project) of the vendor's fake holds every cluster's machines, each cluster
 * scoped to its own by a tag or label. Kept in bench/ so they never collide with the demo's
 * adapters in cli/src; they add what a benchmark reads: the fake's call counts by operation,
 * the account's instance count and every fleet load balancer's backend count.
 */
import {
  AzureFake,
  DigitalOceanFake,
  type FakeNeutronNetwork,
  GcpComputeFake,
  HetznerFake,
  nodeName,
  OpenStackFake,
} from "@fleet-ccm/sim";
import type { LocalCloud } from "../cli/dist/local-fleet.js";

export interface BenchCloud extends LocalCloud {
  /** Calls the fake answered, by operation (the vendor's own API only: no OAuth token calls). */
  callsByOperation(): Record<string, number>;
  /** Machines in the account, as a per-cluster vendor CCM listing the account would page them. */
  instancesInAccount(): number;
  /** Backends of each load balancer the hub made (one entry per load balancer). */
  lbBackendCounts(): number[];
  /** Every load-balancing rule's frontend port (where a Service's port change shows: Azure). */
  lbFrontendPorts?(): number[];
  /**
   * How far back (real time) the provider's refresh asks for changes before its last one began
   * (OpenStack's `changes-since` slack for Nova's clock): the join's machines stay in its answers
   * that long, so the steady window opens only once they are.
   */
  readonly changesSlackMs?: number;
}

export interface BenchCloudOptions {
  /** The hub's rate limit for the account (calls per second): high, so the limiter is not what is measured. */
  readonly rateLimitPerSecond: number;
  /** The hub's per-call timeout. */
  readonly requestTimeoutMs: number;
}

export type Vendor = "digitalocean" | "hetzner" | "gcp" | "openstack" | "azure";
export const VENDORS: readonly Vendor[] = ["digitalocean", "hetzner", "gcp", "openstack", "azure"];

/** The vendor's fake with one account holding every cluster (run by bench/cloud-worker.ts). */
export function startBenchCloud(
  vendor: Vendor,
  opts: BenchCloudOptions,
  timeScale: number,
): Promise<BenchCloud> {
  switch (vendor) {
    case "digitalocean":
      return DigitalOceanBenchCloud.start(opts);
    case "hetzner":
      return HetznerBenchCloud.start(opts);
    case "gcp":
      return GcpBenchCloud.start(opts);
    case "openstack":
      return OpenStackBenchCloud.start(opts, timeScale);
    case "azure":
      return AzureBenchCloud.start(opts);
  }
}

function total(byOp: Record<string, number>): number {
  let n = 0;
  for (const v of Object.values(byOp)) n += v;
  return n;
}

// ---- DigitalOcean ---------------------------------------------------------------------------

const DO_REGION = "nyc3";
const DO_ACCOUNT = "do-bench";
const DO_VPC = "c33931f2-a26a-4e61-b85c-4e95a2ec431b";
/** DigitalOcean tags allow no dots or slashes: `key:value`, read by the provider as that key and value. */
const DO_TAG_KEY = "k8s-cluster";

export class DigitalOceanBenchCloud implements BenchCloud {
  readonly provider = "digitalocean";
  private constructor(
    readonly fake: DigitalOceanFake,
    private readonly token: string,
    private readonly opts: BenchCloudOptions,
  ) {}

  static async start(opts: BenchCloudOptions): Promise<DigitalOceanBenchCloud> {
    const fake = await DigitalOceanFake.start();
    const { token } = fake.createAccount(DO_ACCOUNT);
    return new DigitalOceanBenchCloud(fake, token, opts);
  }

  accountsConfig() {
    return {
      accounts: [
        {
          name: DO_ACCOUNT,
          provider: "digitalocean",
          region: DO_REGION,
          network: DO_VPC,
          endpoint: this.fake.url,
          credentials: { env: "FLEET_CCM_BENCH_DO_TOKEN" },
          rateLimit: { perSecond: this.opts.rateLimitPerSecond, burst: this.opts.rateLimitPerSecond },
          requestTimeoutMs: this.opts.requestTimeoutMs,
          // A new load balancer is looked at again after 15 s (the provider's and upstream's default).
        },
      ],
      env: { FLEET_CCM_BENCH_DO_TOKEN: this.token },
    };
  }

  clusterConfig(cluster: string) {
    return { account: DO_ACCOUNT, network: DO_VPC, scope: { tags: { [DO_TAG_KEY]: cluster } } };
  }

  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createDroplet(DO_ACCOUNT, {
      name,
      region: DO_REGION,
      vpcUuid: DO_VPC,
      tags: [`${DO_TAG_KEY}:${cluster}`],
    });
    return name;
  }

  callsByOperation(): Record<string, number> {
    return { ...this.fake.log.stats().byOperation };
  }

  totalCalls(): number {
    return total(this.callsByOperation());
  }

  instancesInAccount(): number {
    return this.fake.store.dropletsOf(DO_ACCOUNT).length;
  }

  lbBackendCounts(): number[] {
    return this.fake.store
      .loadBalancersOf(DO_ACCOUNT)
      .filter((lb) => lb.name.startsWith("fccm-"))
      .map((lb) => lb.droplet_ids.length);
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}

// ---- Hetzner Cloud --------------------------------------------------------------------------

const HZ_LOCATION = "fsn1";
const HZ_PROJECT = "hz-bench";
const HZ_LABEL = "fleet-ccm.io/cluster";

export class HetznerBenchCloud implements BenchCloud {
  readonly provider = "hetzner";
  private constructor(
    readonly fake: HetznerFake,
    private readonly token: string,
    private readonly opts: BenchCloudOptions,
  ) {}

  static async start(opts: BenchCloudOptions): Promise<HetznerBenchCloud> {
    const fake = await HetznerFake.start();
    // Actions finish at once: what is counted is the calls, not how long Hetzner takes.
    fake.setActionPolls(0);
    const { token } = fake.createAccount(HZ_PROJECT);
    return new HetznerBenchCloud(fake, token, opts);
  }

  accountsConfig() {
    return {
      accounts: [
        {
          name: HZ_PROJECT,
          provider: "hetzner",
          region: HZ_LOCATION,
          endpoint: `${this.fake.url}/v1`,
          credentials: { env: "FLEET_CCM_BENCH_HZ_TOKEN" },
          rateLimit: { perSecond: this.opts.rateLimitPerSecond, burst: this.opts.rateLimitPerSecond },
          requestTimeoutMs: this.opts.requestTimeoutMs,
        },
      ],
      env: { FLEET_CCM_BENCH_HZ_TOKEN: this.token },
    };
  }

  clusterConfig(cluster: string) {
    return { account: HZ_PROJECT, scope: { tags: { [HZ_LABEL]: cluster } } };
  }

  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createServer(HZ_PROJECT, { name, location: HZ_LOCATION, labels: { [HZ_LABEL]: cluster } });
    return name;
  }

  callsByOperation(): Record<string, number> {
    return { ...this.fake.log.stats().byOperation };
  }

  totalCalls(): number {
    return total(this.callsByOperation());
  }

  instancesInAccount(): number {
    return this.fake.store.serversOf(HZ_PROJECT).length;
  }

  lbBackendCounts(): number[] {
    return this.fake.store
      .loadBalancersOf(HZ_PROJECT)
      .filter((lb) => lb.labels[HZ_LABEL] !== undefined)
      .map((lb) => lb.targets.length);
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}

// ---- Google Cloud ---------------------------------------------------------------------------

const GCP_PROJECT = "fleet-bench";
const GCP_REGION = "us-central1";
export const GCP_ZONES = [`${GCP_REGION}-a`, `${GCP_REGION}-b`, `${GCP_REGION}-c`] as const;
/** GCE label keys allow no dots or slashes. */
const GCP_LABEL = "fleet-ccm-cluster";

export class GcpBenchCloud implements BenchCloud {
  readonly provider = "gcp";
  private constructor(
    readonly fake: GcpComputeFake,
    private readonly key: string,
    private readonly opts: BenchCloudOptions,
  ) {}

  static async start(opts: BenchCloudOptions): Promise<GcpBenchCloud> {
    const fake = await GcpComputeFake.start();
    // Operations are DONE at once: what is counted is the calls, not how long Compute takes.
    fake.operationMs = 0;
    const { key } = fake.createProject(GCP_PROJECT, { [GCP_REGION]: [...GCP_ZONES] });
    return new GcpBenchCloud(fake, key, opts);
  }

  accountsConfig() {
    return {
      accounts: [
        {
          name: GCP_PROJECT,
          provider: "gcp",
          region: GCP_REGION,
          network: "default",
          endpoint: this.fake.url,
          credentials: { env: "FLEET_CCM_BENCH_GCP_KEY" },
          rateLimit: { perSecond: this.opts.rateLimitPerSecond, burst: this.opts.rateLimitPerSecond },
          requestTimeoutMs: this.opts.requestTimeoutMs,
          options: { operationPollMs: 200 },
        },
      ],
      env: { FLEET_CCM_BENCH_GCP_KEY: this.key },
    };
  }

  clusterConfig(cluster: string) {
    return { account: GCP_PROJECT, network: "default", scope: { tags: { [GCP_LABEL]: cluster } } };
  }

  /** Nodes spread over the region's three zones, as a regional managed instance group does. */
  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createInstance(GCP_PROJECT, {
      name,
      zone: GCP_ZONES[index % GCP_ZONES.length] ?? GCP_ZONES[0],
      network: "default",
      tags: [`${cluster}-node`],
      labels: { [GCP_LABEL]: cluster },
    });
    return name;
  }

  /** Compute Engine calls only: the OAuth token endpoint is not the Compute API's quota. */
  callsByOperation(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [op, n] of Object.entries(this.fake.log.stats().byOperation))
      if (!op.startsWith("oauth")) out[op] = n;
    return out;
  }

  totalCalls(): number {
    return total(this.callsByOperation());
  }

  instancesInAccount(): number {
    return this.fake.list(GCP_PROJECT, "instances").length;
  }

  lbBackendCounts(): number[] {
    return this.fake
      .list(GCP_PROJECT, "targetPools")
      .map((p) => (Array.isArray(p["instances"]) ? (p["instances"] as unknown[]).length : 0));
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}

// ---- OpenStack ------------------------------------------------------------------------------

const OS_PROJECT = "bench";
const OS_REGION = "RegionOne";
const OS_APP_CREDENTIAL = "fleet-ccm-bench";
const OS_CLUSTER_KEY = "fleet-ccm-cluster";

/** The OpenStack service an operation of the fake belongs to (its op names start with it). */
export function openstackService(op: string): "keystone" | "nova" | "neutron" | "octavia" | undefined {
  const s = op.split(".")[0];
  return s === "keystone" || s === "nova" || s === "neutron" || s === "octavia" ? s : undefined;
}

/**
 * One project holds every cluster: a Neutron network per cluster (its nodes' ports, its load
 * balancers' VIPs; the cluster's scope), an external network for floating IPs. Octavia settles
 * at once: what is counted is the calls, not how long amphorae take.
 */
export class OpenStackBenchCloud implements BenchCloud {
  readonly provider = "openstack";
  /** The openstack provider's CHANGES_SINCE_SLACK_MS: a minute, in real time at any time scale. */
  readonly changesSlackMs = 60_000;
  private readonly networks = new Map<string, FakeNeutronNetwork>();

  private constructor(
    readonly fake: OpenStackFake,
    private readonly secret: string,
    private readonly external: FakeNeutronNetwork,
    private readonly opts: BenchCloudOptions,
    private readonly timeScale: number,
  ) {}

  /**
   * `timeScale`: the hub's periods are divided by it, and so is the provider's own full-listing
   * interval (600 s by default), so the steady window holds full listings as the default does.
   */
  static async start(opts: BenchCloudOptions, timeScale = 1): Promise<OpenStackBenchCloud> {
    const fake = await OpenStackFake.start({ pendingMs: 0 });
    fake.createProject(OS_PROJECT);
    const secret = "bench-secret";
    fake.createApplicationCredential(OS_PROJECT, OS_APP_CREDENTIAL, secret);
    const external = fake.createNetwork(OS_PROJECT, OS_REGION, {
      name: "public",
      cidr: "172.24.0.0/16",
      external: true,
    });
    return new OpenStackBenchCloud(fake, secret, external, opts, timeScale);
  }

  private network(cluster: string): FakeNeutronNetwork {
    let n = this.networks.get(cluster);
    if (n === undefined) {
      const i = this.networks.size;
      n = this.fake.createNetwork(OS_PROJECT, OS_REGION, {
        name: `${cluster}-net`,
        // A /16 per cluster (the fake numbers hosts from the subnet's base).
        cidr: `10.${i % 250}.0.0/16`,
      });
      this.networks.set(cluster, n);
    }
    return n;
  }

  accountsConfig() {
    return {
      accounts: [
        {
          name: OS_PROJECT,
          provider: "openstack",
          region: OS_REGION,
          endpoint: `${this.fake.url}/v3`,
          credentials: { applicationCredentialSecret: { env: "FLEET_CCM_BENCH_OS_SECRET" } },
          rateLimit: { perSecond: this.opts.rateLimitPerSecond, burst: this.opts.rateLimitPerSecond },
          requestTimeoutMs: this.opts.requestTimeoutMs,
          options: {
            applicationCredentialId: OS_APP_CREDENTIAL,
            pageSize: 1000,
            fullListIntervalSeconds: Math.max(1, Math.round(600 / this.timeScale)),
            loadBalancer: { floatingNetworkId: this.external.id },
          },
        },
      ],
      env: { FLEET_CCM_BENCH_OS_SECRET: this.secret },
    };
  }

  clusterConfig(cluster: string) {
    return { account: OS_PROJECT, scope: { network: this.network(cluster).id } };
  }

  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.fake.createServer(OS_PROJECT, OS_REGION, {
      name,
      networks: [this.network(cluster)],
      metadata: { [OS_CLUSTER_KEY]: cluster },
      az: "nova",
      flavor: "m1.medium",
    });
    return name;
  }

  callsByOperation(): Record<string, number> {
    return { ...this.fake.log.stats().byOperation };
  }

  totalCalls(): number {
    return total(this.callsByOperation());
  }

  /** Calls by OpenStack service (Keystone, Nova, Neutron, Octavia). */
  callsByService(byOp: Record<string, number>): Record<string, number> {
    const out: Record<string, number> = { keystone: 0, nova: 0, neutron: 0, octavia: 0 };
    for (const [op, n] of Object.entries(byOp)) {
      const s = openstackService(op);
      if (s !== undefined) out[s] = (out[s] ?? 0) + n;
    }
    return out;
  }

  instancesInAccount(): number {
    return this.fake.store.servers.size;
  }

  lbBackendCounts(): number[] {
    const out: number[] = [];
    for (const lb of this.fake.store.loadBalancers.values()) {
      if (
        !lb.tags.some((t) => t.startsWith("fleet-ccm.io/cluster=")) ||
        this.fake.lbStatus(lb.id) === "DELETED"
      )
        continue;
      const pool = [...this.fake.store.pools.values()].find((p) => p.lbId === lb.id);
      out.push(pool?.members.length ?? 0);
    }
    return out;
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}

// ---- Azure ----------------------------------------------------------------------------------

const AZ_SUB = "00000000-0000-0000-0000-00000000bea0";
const AZ_RG = "rg-bench";
const AZ_REGION = "eastus";
const AZ_VNET = "vnet-bench";
const AZ_TAG = "k8s-cluster";
/** Room enough that neither the fake's buckets nor the provider's are what is measured. */
const AZ_ROOMY = { perSecond: 100_000, bucket: 1_000_000 };

/** ARM's budget an operation spends, by the fake's operation name (its method). */
export function armKind(op: string): "reads" | "writes" | "deletes" {
  return op.endsWith(".createOrUpdate") ? "writes" : op.endsWith(".delete") ? "deletes" : "reads";
}

export class AzureBenchCloud implements BenchCloud {
  readonly provider = "azure";
  private ip = 3;
  private constructor(
    readonly fake: AzureFake,
    private readonly secret: string,
    private readonly opts: BenchCloudOptions,
  ) {}

  static async start(opts: BenchCloudOptions): Promise<AzureBenchCloud> {
    const roomy = { size: AZ_ROOMY.bucket, perSecond: AZ_ROOMY.perSecond };
    // The swagger check of every exchange is the fake's own tests' job, not the bench's.
    const fake = await AzureFake.start({
      spec: false,
      armBuckets: { reads: roomy, writes: roomy, deletes: roomy },
    });
    const secret = "bench-secret";
    fake.createSubscription(AZ_SUB, "bench-tenant", "bench-app", secret);
    fake.createResourceGroup(AZ_SUB, AZ_RG);
    return new AzureBenchCloud(fake, secret, opts);
  }

  accountsConfig() {
    return {
      accounts: [
        {
          name: "azure-bench",
          provider: "azure",
          region: AZ_REGION,
          network: AZ_VNET,
          endpoint: this.fake.url,
          credentials: { env: "FLEET_CCM_BENCH_AZ_SECRET" },
          rateLimit: { perSecond: this.opts.rateLimitPerSecond, burst: this.opts.rateLimitPerSecond },
          requestTimeoutMs: this.opts.requestTimeoutMs,
          options: {
            tenantId: "bench-tenant",
            clientId: "bench-app",
            subscriptionId: AZ_SUB,
            resourceGroup: AZ_RG,
            securityGroupName: "{cluster}-nsg",
            authorityHost: this.fake.entra.url,
            caCertificates: this.fake.certificate.cert,
            operationPollMs: 200,
            armLimits: { reads: AZ_ROOMY, writes: AZ_ROOMY, deletes: AZ_ROOMY },
          },
        },
      ],
      env: { FLEET_CCM_BENCH_AZ_SECRET: this.secret },
    };
  }

  /** The cluster's scope, and its nodes' network security group (the Services' allow rules go there). */
  clusterConfig(cluster: string) {
    this.fake.put(AZ_SUB, AZ_RG, "networkSecurityGroups", `${cluster}-nsg`, {
      location: AZ_REGION,
      properties: { securityRules: [] },
    });
    return { account: "azure-bench", network: AZ_VNET, scope: { tags: { [AZ_TAG]: cluster } } };
  }

  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    this.ip++;
    this.fake.createVm(AZ_SUB, {
      resourceGroup: AZ_RG,
      name,
      location: AZ_REGION,
      zone: String((index % 3) + 1),
      subnetId: `/subscriptions/${AZ_SUB}/resourceGroups/${AZ_RG}/providers/Microsoft.Network/virtualNetworks/${AZ_VNET}/subnets/nodes`,
      privateIp: `10.${Math.floor(this.ip / 65_536) % 256}.${Math.floor(this.ip / 256) % 256}.${this.ip % 256}`,
      tags: { [AZ_TAG]: cluster },
    });
    return name;
  }

  /** ARM calls only (the token endpoint is Entra ID's, another fake). */
  callsByOperation(): Record<string, number> {
    return { ...this.fake.log.stats().byOperation };
  }

  totalCalls(): number {
    return total(this.callsByOperation());
  }

  instancesInAccount(): number {
    return this.fake.list(AZ_SUB, "virtualMachines").length;
  }

  /** Per Service (frontend), the addresses of its load balancer's pool. */
  lbBackendCounts(): number[] {
    return this.fake.list(AZ_SUB, "loadBalancers").flatMap((lb) => {
      const p = lb.body["properties"] as {
        frontendIPConfigurations?: unknown[];
        backendAddressPools?: { properties?: { loadBalancerBackendAddresses?: unknown[] } }[];
      };
      const n = p.backendAddressPools?.[0]?.properties?.loadBalancerBackendAddresses?.length ?? 0;
      return (p.frontendIPConfigurations ?? []).map(() => n);
    });
  }

  lbFrontendPorts(): number[] {
    return this.fake.list(AZ_SUB, "loadBalancers").flatMap((lb) => {
      const p = lb.body["properties"] as {
        loadBalancingRules?: { properties?: { frontendPort?: number } }[];
      };
      return (p.loadBalancingRules ?? []).map((r) => r.properties?.frontendPort ?? 0);
    });
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
