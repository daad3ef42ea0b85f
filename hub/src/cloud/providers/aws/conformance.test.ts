import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import {
  type ConformanceFixture,
  describeProviderConformance,
} from "../../conformance/conformance.testkit.js";
import { awsProvider } from "./index.js";
import { awsLoadBalancerName } from "./lb-network.js";
import { clusterTagKey } from "./tags.js";

/** A second VPC of the account: its subnets, nodes' group and route table tagged for a cluster as upstream wants them. */
function otherNetwork(world: AwsWorld) {
  const { fake, accountId, region } = world;
  const vpcId = fake.createVpc(accountId, region, { cidr: "10.8.0.0/16" });
  const subnets: string[] = [];
  let group = "";
  return {
    network: vpcId,
    prepareCluster(cluster: string) {
      for (const n of [0, 1])
        subnets.push(
          fake.createSubnet(accountId, region, {
            vpcId,
            az: `${region}${"ab"[n]}`,
            cidr: `10.8.${n}.0/24`,
            tags: { "kubernetes.io/role/elb": "1", [clusterTagKey(cluster)]: "shared" },
          }),
        );
      group = fake.createSecurityGroup(accountId, region, {
        vpcId,
        name: `${cluster}-nodes`,
        tags: { [clusterTagKey(cluster)]: "owned" },
      });
      fake.createRouteTable(accountId, region, {
        vpcId,
        tags: { [clusterTagKey(cluster)]: "owned" },
        subnetIds: subnets,
      });
    },
    createInstance(name: string) {
      const i = fake.createInstance(accountId, region, subnets[0]!, {
        privateDnsName: name,
        securityGroupIds: [group],
      });
      return { instanceID: i.id, providerID: `aws:///${i.az}/${i.id}` };
    },
  };
}

function fixture(
  options: Record<string, unknown> = {},
  fakeOptions: { nlbProvisioningMs?: number; eniLingerMs?: number } = {},
): ConformanceFixture {
  return {
    async start() {
      const world = await startAwsWorld("conf");
      world.fake.nlbProvisioningMs = fakeOptions.nlbProvisioningMs ?? 0;
      world.fake.eniLingerMs = fakeOptions.eniLingerMs ?? 0;
      const { fake } = world;
      return {
        factory: awsProvider,
        account: () => world.binding(),
        options: { ...world.binding().options, ...options },
        isMutation: (op) =>
          /\.(create|delete|modify|configure|register|deregister|authorize|revoke|tag|apply)$/.test(op),
        createInstance: ({ name, inScope }) => {
          const i = world.instance(name, { inScope });
          return { instanceID: i.id, providerID: `aws:///${i.az}/${i.id}` };
        },
        terminateInstance: (id) => fake.setInstanceState(id, "terminated"),
        missingProviderID: () => `aws:///${world.region}a/i-${"f".repeat(17)}`,
        instancePageSize: 50,
        // DescribeLoadBalancers (400 a page), then DescribeTags by 20.
        listOwnedReadsPerPage: 21,
        throttle: (seconds) =>
          fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, world.accountId),
        failWithServerErrors: () => fake.setFaults({ errorRate: 1 }, world.accountId),
        clearFaults: () => fake.faults.reset(),
        resources: () => world.resources(),
        backendPorts: (o) => {
          const name = awsLoadBalancerName(o.serviceUid);
          const classic = fake.classicLoadBalancers(world.accountId).find((lb) => lb.id.endsWith(`/${name}`));
          const nlb = fake.networkLoadBalancers(world.accountId).find((lb) => lb.name === name);
          const groups = new Set(
            fake.state.listeners
              .all(world.accountId)
              .filter((l) => l.lbArn === nlb?.id)
              .map((l) => l.targetGroupArn),
          );
          const ports = [
            ...(classic !== undefined && classic.instances.length > 0
              ? classic.listeners.map((l) => l.instancePort)
              : []),
            ...fake.state.targetGroups
              .all(world.accountId)
              .filter((tg) => groups.has(tg.id) && tg.targets.length > 0)
              .map((tg) => tg.port),
          ];
          return [...new Set(ports)].sort((a, b) => a - b);
        },
        otherNetwork: otherNetwork(world),
        createForeignRoute: (cidr) =>
          fake.addRoute(world.routeTable, { cidr, gatewayId: "igw-0a1b2c3d4e5f60718" }),
        close: async () => {
          fake.spec.assertClean();
          await fake.close();
        },
      };
    },
  };
}

describeProviderConformance("aws (classic ELB)", fixture());
describeProviderConformance("aws (NLB)", fixture({ defaultLoadBalancerType: "nlb" }));
describeProviderConformance(
  "aws (NLB provisioning, security groups held after delete)",
  fixture({ defaultLoadBalancerType: "nlb" }, { nlbProvisioningMs: 400, eniLingerMs: 200 }),
  { inProgress: true },
);
