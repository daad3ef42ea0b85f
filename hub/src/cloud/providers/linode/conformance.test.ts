// The conformance suite against the Linode provider through the fake Linode API, every
// request and answer checked against Linode's OpenAPI spec.
import { afterAll, expect } from "@jest/globals";
import { LinodeFake } from "../../../../../sim/src/linode/index.js";
import {
  type ConformanceFake,
  type ConformanceFixture,
  describeProviderConformance,
  type FakeResource,
} from "../../conformance/conformance.testkit.js";
import { linodeProvider } from "./index.js";
import { ownerOfTags } from "./load-balancers.js";

const REGION = "us-east";
const ELSEWHERE = "us-west";
const ACCOUNT = "acme";
const VPC = "fleet-vpc";

const fakes: LinodeFake[] = [];

/** The fake's truth: NodeBalancers, configs and firewalls with the owner their tags record, VPC ranges with their claims. */
export function linodeResources(fake: LinodeFake, account: string): FakeResource[] {
  const out: FakeResource[] = [];
  for (const nb of fake.store.nodeBalancersOf(account)) {
    const o = ownerOfTags(nb.tags);
    out.push({ kind: "nodebalancer", id: String(nb.id), ...(o && { lbOwner: o }) });
    for (const c of nb.configs) out.push({ kind: "config", id: `c${c.id}`, ...(o && { lbOwner: o }) });
  }
  for (const fw of fake.store.firewallsOf(account)) {
    const o = ownerOfTags(fw.tags);
    out.push({ kind: "firewall", id: `f${fw.id}`, ...(o && { lbOwner: o }) });
  }
  for (const l of fake.store.linodesOf(account))
    for (const i of l.interfaces)
      for (const range of i.ipRanges) {
        const claim = l.tags.find((t) => t.startsWith("fccm-r:") && t.endsWith(`:${range}`));
        const owner = claim?.slice("fccm-r:".length, claim.length - range.length - 1);
        out.push({
          kind: "route",
          id: `${l.id}/${range}`,
          destinationCIDR: range,
          ...(owner !== undefined && { routeOwner: owner }),
        });
      }
  return out;
}

/** `linodeInterfaces`: the Linodes use the newer Linode interfaces API (routes go through it). */
const fixture = (opts: { linodeInterfaces?: boolean } = {}): ConformanceFixture => ({
  async start(): Promise<ConformanceFake> {
    const fake = await LinodeFake.start({ spec: true, seed: 7 });
    fakes.push(fake);
    const { token } = fake.createAccount(ACCOUNT);
    const vpc = fake.createVpc(ACCOUNT, {
      label: VPC,
      region: REGION,
      subnets: [{ label: "nodes", ipv4: "10.0.0.0/16" }],
    });
    const subnet = vpc.subnets[0]!.id;
    let foreign = 0;
    return {
      factory: linodeProvider,
      account: () => ({
        name: ACCOUNT,
        provider: "linode",
        region: REGION,
        network: VPC,
        endpoint: fake.url,
        credential: token,
        requestTimeoutMs: 2_000,
      }),
      options: { pageSize: 25 },
      isMutation: (op) => /\.(create|update|delete|rebuild)$/.test(op),
      createInstance: ({ name, inScope }) => {
        const l = fake.createLinode(ACCOUNT, {
          label: name,
          region: inScope ? REGION : ELSEWHERE,
          ...(inScope && { vpcSubnetId: subnet }),
          ...(opts.linodeInterfaces && { linodeInterfaces: true }),
        });
        return { instanceID: String(l.id), providerID: `linode://${l.id}` };
      },
      terminateInstance: (id) => fake.deleteLinode(Number(id)),
      missingProviderID: () => "linode://999999999",
      instancePageSize: 25,
      throttle: (seconds) => fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, ACCOUNT),
      failWithServerErrors: () => fake.setFaults({ errorRate: 1 }, ACCOUNT),
      clearFaults: () => fake.resetFaults(),
      resources: () => linodeResources(fake, ACCOUNT),
      backendPorts: (o) => {
        const nb = fake.store.nodeBalancersOf(ACCOUNT).find((n) => n.tags.includes(`fccm:u=${o.serviceUid}`));
        const ports = (nb?.configs ?? []).flatMap((c) =>
          c.nodes.map((n) => Number(n.address.split(":").at(-1))),
        );
        return [...new Set(ports)].sort((a, b) => a - b);
      },
      otherNetwork: (() => {
        const other = fake.createVpc(ACCOUNT, {
          label: "other-vpc",
          region: REGION,
          subnets: [{ label: "nodes", ipv4: "10.8.0.0/16" }],
        });
        const subnetId = other.subnets[0]!.id;
        return {
          network: "other-vpc",
          createInstance: (name: string) => {
            const l = fake.createLinode(ACCOUNT, {
              label: name,
              region: REGION,
              vpcSubnetId: subnetId,
              ...(opts.linodeInterfaces && { linodeInterfaces: true }),
            });
            return { instanceID: String(l.id), providerID: `linode://${l.id}` };
          },
        };
      })(),
      createForeignLoadBalancer: () => {
        foreign++;
        fake.createNodeBalancer(ACCOUNT, {
          label: `theirs-${foreign}`,
          region: REGION,
          tags: ["team-x"],
          ports: [80],
        });
        fake.createFirewall(ACCOUNT, `theirs-${foreign}`, {
          inbound: [],
          inbound_policy: "ACCEPT",
          outbound: [],
          outbound_policy: "ACCEPT",
        });
      },
      createForeignRoute: (cidr, target) => {
        const l = fake.store.linodes.get(Number(target));
        l?.interfaces.find((i) => i.purpose === "vpc")?.ipRanges.push(cidr);
      },
      close: () => fake.close(),
    };
  },
});

describeProviderConformance("linode", fixture(), { digests: true });
describeProviderConformance("linode (Linode interfaces API)", fixture({ linodeInterfaces: true }), {
  digests: true,
});

afterAll(() => {
  // Neither the provider's requests nor the fake's answers may drift from Linode's spec.
  for (const fake of fakes) expect(fake.specProblems()).toEqual([]);
});
