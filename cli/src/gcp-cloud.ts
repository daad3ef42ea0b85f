/**
 * The fake Compute Engine for `fleet-ccm demo --provider gcp` and the end-to-end tests: one
 * project in us-central1 (zones a, b, c), its service account's key in a file of this run (its
 * `token_uri` is the fake's token endpoint, so google-auth-library's service-account flow runs
 * as against Google), and per cluster its instances in the `default` network with the network
 * tag `<cluster>-node` (the load balancers' firewalls target it) and the label
 * `k8s-cluster=<cluster>`, the cluster's scope.
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
const ZONES = ["a", "b", "c"].map((z) => `${GCP_DEMO_REGION}-${z}`);
/** The instance label naming its cluster (GCE labels allow no dots or slashes). */
const CLUSTER_LABEL = "k8s-cluster";

export interface GcpLocalCloudOptions {
  readonly latencyMs?: number;
  /** The hub's rate limit for the project (default 50/s). */
  readonly rateLimitPerSecond?: number;
  /** How soon the hub looks again at a running operation (default 100 ms). */
  readonly operationPollMs?: number;
}

export class GcpLocalCloud implements LocalCloud {
  readonly provider = "gcp";
  /** Every instance made, by node name: its zone. */
  readonly zones = new Map<string, string>();

  private constructor(
    readonly fake: GcpComputeFake,
    /** The service-account key file (JSON, as the console downloads it). */
    readonly keyFile: string,
    private readonly dir: string,
    private readonly opts: GcpLocalCloudOptions,
  ) {}

  static async start(_clusters: readonly string[], opts: GcpLocalCloudOptions = {}): Promise<GcpLocalCloud> {
    const fake = await GcpComputeFake.start();
    if (opts.latencyMs) fake.setFaults({ latencyMs: opts.latencyMs });
    const { key } = fake.createProject(GCP_DEMO_PROJECT, { [GCP_DEMO_REGION]: ZONES });
    const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-gcp-"));
    const keyFile = join(dir, "service-account.json");
    writeFileSync(keyFile, key, { mode: 0o600 });
    return new GcpLocalCloud(fake, keyFile, dir, opts);
  }

  accountsConfig() {
    const perSecond = this.opts.rateLimitPerSecond ?? 50;
    return {
      accounts: [
        {
          name: GCP_DEMO_ACCOUNT,
          provider: "gcp",
          region: GCP_DEMO_REGION,
          network: GCP_DEMO_NETWORK,
          endpoint: this.fake.url,
          credentials: { file: this.keyFile },
          rateLimit: { perSecond, burst: perSecond * 2 },
          requestTimeoutMs: 5000,
          options: { operationPollMs: this.opts.operationPollMs ?? 100 },
        },
      ],
      env: {},
    };
  }

  clusterConfig(cluster: string) {
    return {
      account: GCP_DEMO_ACCOUNT,
      scope: { network: GCP_DEMO_NETWORK, tags: { [CLUSTER_LABEL]: cluster } },
    };
  }

  /** An instance in one of the region's zones (by turns); kubelet on GCE registers its name as the node's. */
  addMachine(cluster: string, index: number): string {
    const name = nodeName(cluster, index);
    const zone = ZONES[index % ZONES.length] ?? "";
    this.fake.createInstance(GCP_DEMO_PROJECT, {
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
