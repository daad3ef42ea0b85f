/**
 * A fake AWS account set up the way a cluster's looks: a VPC with subnets in two zones tagged
 * for load balancers, the cluster's node security group and route table, an instance factory,
 * and every load-balancer and route resource with the owner its tags record (the fake's truth).
 */
import { nameOf } from "./elb.js";
import { AwsFake } from "./fake.js";
import type { Ec2Instance } from "./state.js";

const CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/";
const clusterTagKey = (cluster: string) => `${CLUSTER_TAG_PREFIX}${cluster}`;
const OWNED = "owned";
/** The descriptions of cloud-provider-aws's node-group rules for an NLB without security groups. */
const NLB_RULE_PREFIX = "kubernetes.io/rule/nlb/";
/** The hub's owner tags (hub/src/cloud/naming.ts). */
const OWNER_TAG_CLUSTER = "fleet-ccm.io/cluster";
const OWNER_TAG_SERVICE_UID = "fleet-ccm.io/service-uid";

/** One resource as the fake holds it (the conformance suite's FakeResource). */
export interface AwsResource {
  readonly kind: string;
  readonly id: string;
  readonly lbOwner?: { readonly cluster: string; readonly serviceUid: string };
  readonly routeOwner?: string;
  readonly destinationCIDR?: string;
}

/** What a provider account binding needs from the world (the hub's AccountBinding, structurally). */
export interface AwsBinding {
  readonly name: string;
  readonly provider: string;
  readonly region: string;
  readonly network?: string;
  readonly endpoint?: string;
  readonly credential: string;
  readonly secret?: (name?: string) => string;
  readonly credentialNames?: readonly string[];
  readonly requestTimeoutMs: number;
  readonly options?: Readonly<Record<string, unknown>>;
}

export interface AwsWorld {
  readonly fake: AwsFake;
  readonly accountId: string;
  readonly region: string;
  readonly vpcId: string;
  readonly subnets: readonly string[];
  readonly nodeGroup: string;
  readonly routeTable: string;
  /** A subnet in another region, for instances the account binding must not see. */
  readonly otherRegion: { readonly region: string; readonly subnet: string };
  keys: { accessKeyId: string; secretAccessKey: string };
  binding(overrides?: Partial<AwsBinding>): AwsBinding;
  instance(name: string, opts?: { inScope?: boolean; zone?: number }): Ec2Instance;
  /** Everything load-balancer and route related in the account, with the owner the fake's tags record. */
  resources(): AwsResource[];
}

export async function startAwsWorld(
  cluster: string,
  opts: { fake?: AwsFake; region?: string } = {},
): Promise<AwsWorld> {
  const fake = opts.fake ?? (await AwsFake.start());
  const acct = fake.createAccount(`acct-${cluster}`);
  const region = opts.region ?? "us-east-1";
  const vpcId = fake.createVpc(acct.accountId, region, { cidr: "10.0.0.0/16" });
  const subnets = [0, 1].map((n) =>
    fake.createSubnet(acct.accountId, region, {
      vpcId,
      az: `${region}${"ab"[n]}`,
      cidr: `10.0.${n}.0/24`,
      tags: { "kubernetes.io/role/elb": "1", [clusterTagKey(cluster)]: "shared" },
    }),
  );
  const nodeGroup = fake.createSecurityGroup(acct.accountId, region, {
    vpcId,
    name: `${cluster}-nodes`,
    tags: { [clusterTagKey(cluster)]: OWNED },
  });
  // The cluster's subnets use its route table (explicit associations; the VPC's main one stays).
  const routeTable = fake.createRouteTable(acct.accountId, region, {
    vpcId,
    tags: { [clusterTagKey(cluster)]: OWNED },
    subnetIds: subnets,
  });
  const otherRegionName = region === "us-west-2" ? "eu-west-1" : "us-west-2";
  const otherVpc = fake.createVpc(acct.accountId, otherRegionName);
  const otherSubnet = fake.createSubnet(acct.accountId, otherRegionName, {
    vpcId: otherVpc,
    az: `${otherRegionName}a`,
  });
  const world: AwsWorld = {
    fake,
    accountId: acct.accountId,
    region,
    vpcId,
    subnets,
    nodeGroup,
    routeTable,
    otherRegion: { region: otherRegionName, subnet: otherSubnet },
    keys: { accessKeyId: acct.accessKeyId, secretAccessKey: acct.secretAccessKey },
    binding(overrides = {}) {
      return {
        name: `acct-${cluster}`,
        provider: "aws",
        region,
        network: vpcId,
        endpoint: fake.url,
        credential: world.keys.accessKeyId,
        secret: (name = "") =>
          name === "secretAccessKey" ? world.keys.secretAccessKey : world.keys.accessKeyId,
        credentialNames: ["accessKeyId", "secretAccessKey"],
        requestTimeoutMs: 5_000,
        options: { instancePageSize: 50, dependencyRetryMs: 20 },
        ...overrides,
      };
    },
    instance(name, o = {}) {
      if (o.inScope === false)
        return fake.createInstance(acct.accountId, otherRegionName, otherSubnet, { privateDnsName: name });
      return fake.createInstance(acct.accountId, region, subnets[o.zone ?? 0]!, {
        privateDnsName: name,
        securityGroupIds: [nodeGroup],
      });
    },
    resources() {
      const s = fake.state;
      const ownerOf = (tags: Readonly<Record<string, string>>) => {
        const uid = tags[OWNER_TAG_SERVICE_UID];
        const c = tags[OWNER_TAG_CLUSTER];
        return uid !== undefined && c !== undefined ? { cluster: c, serviceUid: uid } : undefined;
      };
      const out: AwsResource[] = [];
      const add = (kind: string, id: string, tags: Readonly<Record<string, string>>) => {
        const lbOwner = ownerOf(tags);
        out.push({ kind, id, ...(lbOwner !== undefined && { lbOwner }) });
      };
      for (const lb of s.classicLbs.all(acct.accountId)) {
        // A classic ELB is known by its name (it has no ARN).
        add("elb", nameOf(lb), lb.tags);
        for (const l of lb.listeners) add("elb-listener", `${lb.id}:${l.port}`, lb.tags);
      }
      for (const lb of s.v2Lbs.all(acct.accountId)) add("nlb", lb.id, lb.tags);
      for (const tg of s.targetGroups.all(acct.accountId)) add("target-group", tg.id, tg.tags);
      for (const l of s.listeners.all(acct.accountId)) {
        const lb = s.v2Lbs.get(l.lbArn);
        add("nlb-listener", l.id, lb?.tags ?? {});
      }
      const groups = s.securityGroups.all(acct.accountId);
      for (const g of groups) {
        if (g.id === nodeGroup) continue;
        if (g.name.startsWith("k8s-") || ownerOf(g.tags) !== undefined) {
          add("security-group", g.id, g.tags);
          for (let n = 0; n < g.ingress.length; n++) add("sg-ingress", `${g.id}#${n}`, g.tags);
        }
      }
      for (const g of groups)
        for (const r of g.ingress) {
          const from = r.groupId === undefined ? undefined : s.securityGroups.get(r.groupId);
          if (from !== undefined && g.id !== from.id) add("node-sg-rule", `${g.id}<-${from.id}`, from.tags);
        }
      // cloud-provider-aws's rules for an NLB without security groups, on any group: the client
      // and health rules name their load balancer (the owner its tags record while it exists);
      // the path-MTU rules name none.
      const v2ByName = new Map(s.v2Lbs.all(acct.accountId).map((lb) => [lb.name, lb]));
      for (const g of groups)
        for (const r of g.ingress) {
          const d = r.description ?? "";
          if (!d.startsWith(NLB_RULE_PREFIX)) continue;
          const id = `${g.id}/${r.protocol}/${r.fromPort ?? ""}-${r.toPort ?? ""}/${r.cidr ?? r.cidrIpv6 ?? r.groupId}/${d}`;
          const lbName = d.includes("=") ? d.slice(d.indexOf("=") + 1) : undefined;
          add(
            lbName === undefined ? "nlb-mtu-rule" : "nlb-node-rule",
            id,
            (lbName === undefined ? undefined : v2ByName.get(lbName)?.tags) ?? {},
          );
        }
      for (const t of s.routeTables.all(acct.accountId)) {
        const clusters = Object.keys(t.tags).filter((k) => k.startsWith(CLUSTER_TAG_PREFIX));
        for (const r of t.routes) {
          if (r.origin === "CreateRouteTable") continue;
          const owner =
            r.instanceId !== undefined && clusters.length === 1
              ? clusters[0]!.slice(CLUSTER_TAG_PREFIX.length)
              : undefined;
          out.push({
            kind: "route",
            id: `${t.id}/${r.cidr}`,
            destinationCIDR: r.cidr,
            ...(owner !== undefined && { routeOwner: owner }),
          });
        }
      }
      return out;
    },
  };
  return world;
}
