/**
 * The fake AWS for `fleet-ccm demo --provider aws` and the end-to-end tests: two accounts,
 * one reached with its own keys (us-east-1), one through an assumed role (us-west-2), and per
 * cluster a VPC with two subnets tagged for load balancers, a node security group and a route
 * table tagged for the cluster, as a cluster made for cloud-provider-aws has them.
 */
import { randomBytes } from "node:crypto";
import { type AccountKeys, AwsFake } from "@fleet-ccm/sim";
import type { LocalCloud } from "./local-fleet.js";

const CLUSTER_TAG = (cluster: string) => `kubernetes.io/cluster/${cluster}`;

export interface AwsClusterWorld {
  readonly account: string;
  readonly accountId: string;
  readonly region: string;
  readonly vpcId: string;
  readonly subnets: readonly string[];
  readonly nodeGroup: string;
  readonly routeTable: string;
}

export class AwsLocalCloud implements LocalCloud {
  readonly provider = "aws";
  readonly worlds = new Map<string, AwsClusterWorld>();
  private readonly env: Record<string, string>;

  private constructor(
    readonly fake: AwsFake,
    readonly keys: AccountKeys,
    private readonly roleAccountId: string,
    roleArn: string,
    externalId: string,
    private readonly rateLimitPerSecond: number,
  ) {
    this.env = {
      FLEET_CCM_AWS_KEY_ID: keys.accessKeyId,
      FLEET_CCM_AWS_SECRET: keys.secretAccessKey,
      FLEET_CCM_AWS_ROLE_ARN: roleArn,
      FLEET_CCM_AWS_EXTERNAL_ID: externalId,
    };
  }

  /** Clusters alternate between the two accounts (and regions), the first on the keys' account. */
  static async start(
    clusters: readonly string[],
    opts: { rateLimitPerSecond?: number; latencyMs?: number } = {},
  ): Promise<AwsLocalCloud> {
    const fake = await AwsFake.start();
    if (opts.latencyMs) fake.setFaults({ latencyMs: opts.latencyMs });
    const keys = fake.createAccount("fleet-keys");
    const roleAccount = fake.createAccount("fleet-role");
    const externalId = randomBytes(9).toString("base64url");
    const roleArn = fake.createRole(roleAccount.accountId, "fleet-ccm", {
      externalId,
      trustedAccounts: [keys.accountId],
    });
    const cloud = new AwsLocalCloud(
      fake,
      keys,
      roleAccount.accountId,
      roleArn,
      externalId,
      opts.rateLimitPerSecond ?? 50,
    );
    clusters.forEach((c, i) => {
      cloud.addCluster(c, i % 2 === 0);
    });
    return cloud;
  }

  private addCluster(cluster: string, onKeys: boolean): void {
    const accountId = onKeys ? this.keys.accountId : this.roleAccountId;
    const region = onKeys ? "us-east-1" : "us-west-2";
    const f = this.fake;
    const vpcId = f.createVpc(accountId, region, {
      cidr: "10.0.0.0/16",
      tags: { [CLUSTER_TAG(cluster)]: "owned" },
    });
    const subnets = ["a", "b"].map((zone, n) =>
      f.createSubnet(accountId, region, {
        vpcId,
        az: `${region}${zone}`,
        cidr: `10.0.${n * 64}.0/18`,
        tags: { "kubernetes.io/role/elb": "1", [CLUSTER_TAG(cluster)]: "owned" },
      }),
    );
    const nodeGroup = f.createSecurityGroup(accountId, region, {
      vpcId,
      name: `${cluster}-nodes`,
      tags: { [CLUSTER_TAG(cluster)]: "owned" },
    });
    const routeTable = f.createRouteTable(accountId, region, {
      vpcId,
      tags: { [CLUSTER_TAG(cluster)]: "owned" },
    });
    this.worlds.set(cluster, {
      account: onKeys ? "aws-keys" : "aws-role",
      accountId,
      region,
      vpcId,
      subnets,
      nodeGroup,
      routeTable,
    });
  }

  world(cluster: string): AwsClusterWorld {
    const w = this.worlds.get(cluster);
    if (w === undefined) throw new Error(`no AWS world for cluster ${cluster}`);
    return w;
  }

  accountsConfig(): { accounts: Record<string, unknown>[]; env: Record<string, string> } {
    const common = {
      provider: "aws",
      endpoint: this.fake.url,
      rateLimit: { perSecond: this.rateLimitPerSecond, burst: this.rateLimitPerSecond * 2 },
      requestTimeoutMs: 5000,
    };
    const keyRefs = {
      accessKeyId: { env: "FLEET_CCM_AWS_KEY_ID" },
      secretAccessKey: { env: "FLEET_CCM_AWS_SECRET" },
    };
    return {
      accounts: [
        { ...common, name: "aws-keys", region: "us-east-1", credentials: keyRefs },
        {
          ...common,
          name: "aws-role",
          region: "us-west-2",
          credentials: {
            ...keyRefs,
            roleArn: { env: "FLEET_CCM_AWS_ROLE_ARN" },
            externalId: { env: "FLEET_CCM_AWS_EXTERNAL_ID" },
          },
          options: { sessionName: "fleet-ccm-demo", defaultLoadBalancerType: "nlb" },
        },
      ],
      env: { ...this.env },
    };
  }

  clusterConfig(cluster: string): { account: string; scope: Record<string, unknown> } {
    const w = this.world(cluster);
    return { account: w.account, scope: { network: w.vpcId, tags: { [CLUSTER_TAG(cluster)]: "owned" } } };
  }

  /** An instance in one of the cluster's subnets; its private DNS name is the node name, as kubelet on EC2 registers. */
  addMachine(cluster: string, index: number): string {
    const w = this.world(cluster);
    const i = this.fake.createInstance(w.accountId, w.region, w.subnets[index % w.subnets.length] ?? "", {
      securityGroupIds: [w.nodeGroup],
      tags: { [CLUSTER_TAG(cluster)]: "owned", Name: `${cluster}-${index}` },
    });
    return i.privateDns;
  }

  totalCalls(): number {
    return this.fake.log.stats().totalCalls;
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
