// The conformance suite against the Hetzner provider through the fake Hetzner Cloud API, every
// request and answer checked against the spec subset: actions ending at once, and actions
// running across calls with load balancers on the cluster's network (use-private-ip).
import { afterAll, expect } from "@jest/globals";
import type { HetznerFake } from "../../../../../sim/src/hetzner/index.js";
import {
  ACCOUNT,
  ELSEWHERE,
  NETWORK,
  REGION,
  startHetznerWorld,
} from "../../../../../sim/src/hetzner/world.js";
import {
  type ConformanceFake,
  type ConformanceFixture,
  describeProviderConformance,
} from "../../conformance/conformance.testkit.js";
import { hetznerResources } from "./hetzner.testkit.js";
import { hetznerProvider } from "./index.js";
import { ownerOfLabels } from "./load-balancers.js";
import { CLUSTER_LABEL, HCLOUD_CSI_DRIVER } from "./volumes.js";

let volumes = 0;

const fakes: HetznerFake[] = [];

const fixture = (opts: { actionPolls: number; usePrivateIP: boolean }): ConformanceFixture => ({
  async start(): Promise<ConformanceFake> {
    const world = await startHetznerWorld(opts.actionPolls);
    const { fake } = world;
    fakes.push(fake);
    const other = fake.createNetwork(ACCOUNT, { name: "other-net", ipRange: "10.8.0.0/16" });
    const server = (name: string, location: string, network?: number) => {
      const s = fake.createServer(ACCOUNT, {
        name,
        location,
        ...(network !== undefined && { networks: [network] }),
      });
      return { instanceID: String(s.id), providerID: `hcloud://${s.id}` };
    };
    let foreign = 0;
    return {
      factory: hetznerProvider,
      account: world.account,
      options: { pageSize: 10, loadBalancers: { usePrivateIP: opts.usePrivateIP } },
      isMutation: (op) => /\.(create|update|delete)$/.test(op),
      createInstance: ({ name, inScope }) =>
        server(name, inScope ? REGION : ELSEWHERE, inScope ? world.networkId : undefined),
      terminateInstance: (id) => fake.deleteServer(Number(id)),
      disks: {
        zonal: false,
        create: ({ sizeGiB, inScope, ownerCluster, attachedTo }) => {
          const v = fake.createVolume(ACCOUNT, {
            name: `pvc-${++volumes}`,
            location: inScope ? REGION : ELSEWHERE,
            size: sizeGiB,
            ...(attachedTo !== undefined && { server: Number(attachedTo) }),
            ...(ownerCluster !== undefined && { labels: { [CLUSTER_LABEL]: ownerCluster } }),
          });
          return { id: String(v.id), source: "csi", csiDriver: HCLOUD_CSI_DRIVER, handle: String(v.id) };
        },
        missing: () => ({ id: "99999999", source: "csi", csiDriver: HCLOUD_CSI_DRIVER, handle: "99999999" }),
      },
      missingProviderID: () => "hcloud://999999999",
      instancePageSize: 10,
      throttle: (seconds) =>
        fake.faults.set({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, ACCOUNT),
      failWithServerErrors: () => fake.faults.set({ errorRate: 1 }, ACCOUNT),
      clearFaults: () => fake.faults.reset(),
      resources: () => hetznerResources(fake, ACCOUNT),
      backendPorts: (o) => {
        const lb = fake.store.loadBalancersOf(ACCOUNT).find((l) => {
          const owner = ownerOfLabels(l.labels);
          return owner?.cluster === o.cluster && owner.serviceUid === o.serviceUid;
        });
        return [...new Set((lb?.services ?? []).map((s) => s.destination_port))].sort((a, b) => a - b);
      },
      otherNetwork: { network: other.name, createInstance: (name) => server(name, REGION, other.id) },
      failNextCreates: (n) => fake.failNextActions("create_load_balancer", n),
      createForeignLoadBalancer: () => {
        foreign++;
        fake.putLoadBalancer({
          account: ACCOUNT,
          name: `theirs-${foreign}`,
          type: "lb11",
          location: REGION,
          algorithm: "round_robin",
          labels: { team: "x" },
          publicEnabled: true,
          privateNet: [],
          services: [],
          targets: [],
        });
      },
      createForeignRoute: (cidr, target) => {
        const s = fake.store.servers.get(Number(target));
        const ip = s?.privateNet.find((p) => p.network === world.networkId)?.ip;
        if (ip === undefined) throw new Error(`server ${target} is not in ${NETWORK}`);
        fake.addRoute(world.networkId, cidr, ip);
      },
      close: () => fake.close(),
    };
  },
});

describeProviderConformance("hetzner", fixture({ actionPolls: 0, usePrivateIP: false }), { digests: true });
// Every action runs for one poll: each call that starts one answers in progress (delete has no
// action on Hetzner, so in-progress answers are tolerated, not required, there).
describeProviderConformance(
  "hetzner (running actions, private network)",
  fixture({ actionPolls: 1, usePrivateIP: true }),
  {
    digests: true,
  },
);

afterAll(() => {
  for (const fake of fakes) expect(fake.specProblems()).toEqual([]);
});
