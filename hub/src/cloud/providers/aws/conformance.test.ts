import { startAwsWorld } from "@fleet-ccm/sim";
import {
  type ConformanceFixture,
  describeProviderConformance,
} from "../../conformance/conformance.testkit.js";
import { awsProvider } from "./index.js";

const fixture: ConformanceFixture = {
  async start() {
    const world = await startAwsWorld("conf");
    const { fake } = world;
    return {
      factory: awsProvider,
      account: () => world.binding(),
      isMutation: (op) =>
        /\.(create|delete|modify|configure|register|deregister|authorize|revoke|tag|apply)$/.test(op),
      createInstance: ({ name, inScope }) => {
        const i = world.instance(name, { inScope });
        return { instanceID: i.id, providerID: `aws:///${i.az}/${i.id}` };
      },
      terminateInstance: (id) => fake.setInstanceState(id, "terminated"),
      missingProviderID: () => `aws:///${world.region}a/i-${"f".repeat(17)}`,
      instancePageSize: 50,
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

describeProviderConformance("aws", fixture);
