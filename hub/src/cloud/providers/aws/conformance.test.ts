import { startAwsWorld } from "@fleet-ccm/sim";
import {
  type ConformanceFixture,
  describeProviderConformance,
} from "../../conformance/conformance.testkit.js";
import { awsProvider } from "./index.js";

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
