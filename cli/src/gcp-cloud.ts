/**
 * The fake Compute Engine for `fleet-ccm demo --provider gcp` and the end-to-end tests: by
 * default one project in us-central1 (zones a, b, c), its service account's key in a file of
 * this run (its `token_uri` is the fake's token endpoint, so google-auth-library's
 * service-account flow runs as against Google); with `sites`, several projects, each one hub
 * account over its regions, by key or by workload identity federation (the fake's STS). Per
 * cluster its instances in the `default` network with the network tag `<cluster>-node` (the
 * load balancers' firewalls target it) and the label `k8s-cluster=<cluster>`, the cluster's scope.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GcpComputeFake, nodeName } from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

export const GCP_DEMO_PROJECT = "fleet-ccm-demo";
export const GCP_DEMO_REGION = "us-central1";
export const GCP_DEMO_ACCOUNT = "gcp-main";
export const GCP_DEMO_NETWORK = "default";
/** The instance label naming its cluster (GCE labels allow no dots or slashes). */
const CLUSTER_LABEL = "k8s-cluster";

/** One project of the fake with the regions its clusters run in: one hub account. */
export interface GcpSite {
  readonly project: string;
  readonly regions: readonly string[];
  /** The account's credential: a service-account key (default) or workload identity federation. */
  readonly auth?: "serviceAccountKey" | "workloadIdentity";
}

export interface GcpLocalCloudOptions {
  readonly latencyMs?: number;
  /** The hub's rate limit for the project (default 50/s). */
  readonly rateLimitPerSecond?: number;
  /** How soon the hub looks again at a running operation (default 100 ms). */
  readonly operationPollMs?: number;
  /**
   * The projects (default one, GCP_DEMO_PROJECT in GCP_DEMO_REGION, by key); the clusters are
   * dealt to each project's regions in turn, in the order start() is given them.
   */
  readonly sites?: readonly GcpSite[];
}

/** Where a cluster runs: its project, region, zones and the hub account of the project. */
export interface GcpPlacement {
  readonly project: string;
  readonly region: string;
  readonly zones: readonly string[];
  readonly account: string;
}

const zonesOf = (region: string) => ["a", "b", "c"].map((z) => `${region}-${z}`);

export class GcpLocalCloud implements LocalCloud {
  readonly provider = "gcp";
  /** Every instance made, by node name: its zone. */
  readonly zones = new Map<string, string>();

  private constructor(
    readonly fake: GcpComputeFake,
    /** Per project: its account entry of the hub's configuration. */
    private readonly accounts: readonly Record<string, unknown>[],
    private readonly placements: ReadonlyMap<string, GcpPlacement>,
    private readonly dir: string,
  ) {}

  static async start(clusters: readonly string[], opts: GcpLocalCloudOptions = {}): Promise<GcpLocalCloud> {
    const sites = opts.sites ?? [{ project: GCP_DEMO_PROJECT, regions: [GCP_DEMO_REGION] }];
    const fake = await GcpComputeFake.start();
    if (opts.latencyMs) fake.setFaults({ latencyMs: opts.latencyMs });
    const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-gcp-"));
    const perSecond = opts.rateLimitPerSecond ?? 50;
    const accounts: Record<string, unknown>[] = [];
    const slots: GcpPlacement[] = [];
    for (const [i, site] of sites.entries()) {
      const { key } = fake.createProject(
        site.project,
        Object.fromEntries(site.regions.map((r) => [r, zonesOf(r)])),
      );
      const account = i === 0 ? GCP_DEMO_ACCOUNT : `gcp-${site.project}`;
      const credentials = GcpLocalCloud.credentials(fake, site, key, dir);
      accounts.push({
        name: account,
        provider: "gcp",
        ...(site.regions.length === 1 ? { region: site.regions[0] } : { regions: [...site.regions] }),
        network: GCP_DEMO_NETWORK,
        endpoint: fake.url,
        credentials,
        rateLimit: { perSecond, burst: perSecond * 2 },
        requestTimeoutMs: 5000,
        options: { project: site.project, operationPollMs: opts.operationPollMs ?? 100 },
      });
      for (const region of site.regions)
        slots.push({ project: site.project, region, zones: zonesOf(region), account });
    }
    const placements = new Map(clusters.map((c, i) => [c, slots[i % slots.length] as GcpPlacement]));
    return new GcpLocalCloud(fake, accounts, placements, dir);
  }

  /**
   * A key file, or for workload identity federation a pool whose identities may act as the
   * project's service account, its subject token in a file (what a projected token would be)
   * and the external-account configuration pointing at both.
   */
  private static credentials(fake: GcpComputeFake, site: GcpSite, key: string, dir: string) {
    if (site.auth !== "workloadIdentity") {
      const keyFile = join(dir, `${site.project}-service-account.json`);
      writeFileSync(keyFile, key, { mode: 0o600 });
      return { file: keyFile };
    }
    const audience = fake.sts.createPool(site.project);
    const email = (JSON.parse(key) as { client_email: string }).client_email;
    fake.sts.allowImpersonation(audience, email);
    const tokenFile = join(dir, `${site.project}-subject-token`);
    writeFileSync(tokenFile, fake.sts.subjectToken(audience), { mode: 0o600 });
    const configFile = join(dir, `${site.project}-external-account.json`);
    writeFileSync(
      configFile,
      fake.sts.externalAccountFile(audience, { subjectTokenFile: tokenFile, impersonate: email }),
      {
        mode: 0o600,
      },
    );
    return { externalAccount: { file: configFile } };
  }

  /** The project, region and account of a cluster start() was given. */
  placement(cluster: string): GcpPlacement {
    const p = this.placements.get(cluster);
    if (p === undefined) throw new Error(`gcp: cluster ${cluster} was not given to GcpLocalCloud.start`);
    return p;
  }

  accountsConfig() {
    return { accounts: [...this.accounts], env: {} };
  }

  clusterConfig(cluster: string) {
    const p = this.placement(cluster);
    return {
      account: p.account,
      region: p.region,
      scope: { network: GCP_DEMO_NETWORK, tags: { [CLUSTER_LABEL]: cluster } },
    };
  }

  /** An instance in one of the region's zones (by turns); kubelet on GCE registers its name as the node's. */
  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    const p = this.placement(cluster);
    const zone = p.zones[index % p.zones.length] ?? "";
    this.fake.createInstance(p.project, {
      name,
      zone,
      network: GCP_DEMO_NETWORK,
      tags: [`${cluster}-node`],
      labels: { [CLUSTER_LABEL]: cluster },
    });
    this.zones.set(name, zone);
    return name;
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  async close(): Promise<void> {
    await this.fake.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
