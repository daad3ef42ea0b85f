// The conformance suite against the simulated provider through its fake, the simulated cloud,
// once synchronous and once on a cloud account whose load balancers are asynchronous
// (PENDING_CREATE / PENDING_DELETE for a few reads, the cloud's own setting).
import {
  type SimLbAsyncSettings,
  type SimulatedCloud,
  startSimulatedCloud,
} from "../../../../../sim/src/cloud/index.js";
import {
  type ConformanceFake,
  type ConformanceFixture,
  describeProviderConformance,
  type FakeResource,
} from "../../conformance/conformance.testkit.js";
import { OWNER_TAG_CLUSTER, OWNER_TAG_SERVICE_UID } from "../../naming.js";
import type { LbOwner } from "../../provider.js";
import { simulatedProvider } from "./index.js";
import { SIMULATED_CSI_DRIVER } from "./volumes.js";

const REGION = "sim-east-1";
const ELSEWHERE = "sim-west-1";
const ACCOUNT = "acme";

function lbOwner(tags: Readonly<Record<string, string>>): LbOwner | undefined {
  const cluster = tags[OWNER_TAG_CLUSTER];
  const serviceUid = tags[OWNER_TAG_SERVICE_UID];
  return cluster === undefined || serviceUid === undefined ? undefined : { cluster, serviceUid };
}

/** `lbAsync`: the cloud account's load-balancer timing (default synchronous). */
function simulatedFixture(lbAsync?: Partial<SimLbAsyncSettings>): ConformanceFixture {
  return {
    async start(): Promise<ConformanceFake> {
      const cloud: SimulatedCloud = await startSimulatedCloud({ seed: 5 });
      const { apiKey } = cloud.createAccount(ACCOUNT);
      cloud.setAccountRateLimit(ACCOUNT, 0);
      if (lbAsync !== undefined) cloud.setLoadBalancerAsync(ACCOUNT, lbAsync);
      let foreign = 0;
      const fake: ConformanceFake = {
        factory: simulatedProvider,
        account: () => ({
          name: ACCOUNT,
          provider: "simulated",
          region: REGION,
          endpoint: cloud.url,
          credential: apiKey,
          requestTimeoutMs: 2_000,
        }),
        isMutation: (op) => /\.(create|update|delete)$/.test(op),
        createInstance: ({ name, inScope }) => {
          const region = inScope ? REGION : ELSEWHERE;
          const i = cloud.createInstance(ACCOUNT, { name, region });
          return { instanceID: i.id, providerID: `simulated://${region}/${i.id}` };
        },
        terminateInstance: (id) => cloud.terminateInstance(id),
        disks: {
          zonal: true,
          create: ({ sizeGiB, zones, inScope, ownerCluster, attachedTo }) => {
            const region = inScope ? REGION : ELSEWHERE;
            const d = cloud.createDisk(ACCOUNT, {
              region,
              sizeGiB,
              zones: ["a", "b", "c"].slice(0, Math.max(1, zones)).map((z) => `${region}${z}`),
              ...(attachedTo !== undefined && { attachedTo }),
              ...(ownerCluster !== undefined && {
                tags: { [`kubernetes.io/cluster/${ownerCluster}`]: "owned" },
              }),
            });
            return { id: d.id, source: "csi", csiDriver: SIMULATED_CSI_DRIVER, handle: d.id };
          },
          missing: () => ({
            id: "disk-000000000000",
            source: "csi",
            csiDriver: SIMULATED_CSI_DRIVER,
            handle: "disk-000000000000",
          }),
        },
        missingProviderID: () => `simulated://${REGION}/i-000000000000`,
        instancePageSize: 500,
        throttle: (seconds) =>
          cloud.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, ACCOUNT),
        failWithServerErrors: () => cloud.setFaults({ errorRate: 1 }, ACCOUNT),
        clearFaults: () => cloud.resetFaults(),
        resources: () => {
          const inv = cloud.inventory(ACCOUNT);
          const out: FakeResource[] = [];
          const add = (
            kind: string,
            items: readonly { id: string; tags: Readonly<Record<string, string>> }[],
          ) => {
            for (const r of items) {
              const o = lbOwner(r.tags);
              out.push(o === undefined ? { kind, id: r.id } : { kind, id: r.id, lbOwner: o });
            }
          };
          add("load-balancer", inv.loadBalancers);
          add("listener", inv.listeners);
          add("pool", inv.pools);
          add("health-check", inv.healthChecks);
          add("firewall-rule", inv.firewallRules);
          for (const r of cloud.routes()) {
            if (r.account !== ACCOUNT) continue;
            const cluster = r.tags[OWNER_TAG_CLUSTER];
            out.push({
              kind: "route",
              id: r.id,
              destinationCIDR: r.destinationCidr,
              ...(cluster === undefined ? {} : { routeOwner: cluster }),
            });
          }
          return out;
        },
        backendPorts: (o) => {
          const mine = (tags: Readonly<Record<string, string>>) => {
            const owner = lbOwner(tags);
            return owner?.cluster === o.cluster && owner.serviceUid === o.serviceUid;
          };
          const ports = cloud
            .inventory(ACCOUNT)
            .pools.filter((p) => mine(p.tags) && p.members.length > 0)
            .map((p) => p.targetPort);
          return [...new Set(ports)].sort((a, b) => a - b);
        },
        otherNetwork: {
          network: "vpc-0ther0001",
          createInstance: (name) => {
            const i = cloud.createInstance(ACCOUNT, { name, region: REGION, network: "vpc-0ther0001" });
            return { instanceID: i.id, providerID: `simulated://${REGION}/${i.id}` };
          },
        },
        createForeignLoadBalancer: () => {
          const lb = cloud.createLoadBalancer(ACCOUNT, {
            name: `theirs-${++foreign}`,
            region: REGION,
            tags: { team: "x" },
          });
          cloud.createPool(ACCOUNT, {
            name: `theirs-${foreign}`,
            lbId: lb.id,
            protocol: "TCP",
            targetPort: 8080,
            tags: { team: "x" },
          });
        },
        createForeignRoute: (destinationCidr, targetInstanceId) => {
          cloud.createRoute(ACCOUNT, {
            region: REGION,
            destinationCidr,
            targetInstanceId,
            description: "vpn",
            tags: { owner: "someone-else" },
          });
        },
        /** The account's next n load-balancer creates end in ERROR, as the cloud reports it. */
        failNextCreates: (n) => cloud.failNextLoadBalancerCreates(ACCOUNT, n),
        close: () => cloud.close(),
      };
      return fake;
    },
  };
}

describeProviderConformance("simulated", simulatedFixture(), { digests: true });
describeProviderConformance("simulated (asynchronous cloud)", simulatedFixture({ polls: 2, pollMs: 5 }), {
  inProgress: true,
  digests: true,
});
