// The conformance suite against the DigitalOcean provider through the fake DigitalOcean API,
// every request and answer checked against DigitalOcean's OpenAPI document.
import { afterAll, expect } from "@jest/globals";
import { DigitalOceanFake } from "../../../../../sim/src/digitalocean/index.js";
import {
  type ConformanceFake,
  type ConformanceFixture,
  describeProviderConformance,
  type FakeResource,
  type VendorMode,
} from "../../conformance/conformance.testkit.js";
import type { LbOwner, LoadBalancerSpec } from "../../provider.js";
import { ccmLoadBalancer } from "./do-ccm.testkit.js";
import { digitalOceanProvider } from "./index.js";
import { ownerOfName } from "./load-balancers.js";
import { CLUSTER_TAG_PREFIX, DO_CSI_DRIVER } from "./volumes.js";

export const REGION = "nyc3";
const ELSEWHERE = "sfo3";
let volumes = 0;
const ACCOUNT = "acme";
export const VPC = "c33931f2-a26a-4e61-b85c-4e95a2ec431b";
const OTHER_VPC = "5a4981aa-9653-4bd1-bef5-d6bff52042e4";

const fakes: DigitalOceanFake[] = [];

/** The fake's truth: each load balancer, with the owner its name records. */
export function doResources(fake: DigitalOceanFake, account: string): FakeResource[] {
  return fake.store.loadBalancersOf(account).map((lb) => {
    const o = ownerOfName(lb.name);
    return { kind: "load-balancer", id: lb.id, ...(o && { lbOwner: o }) };
  });
}

/**
 * What the cloud lets reach the load balancer, as "<entry port> <CIDR>": its firewall's allow
 * entries (ip:<a> as <a>/32 or /128) on every forwarding rule's port, or, with none, anywhere
 * (0.0.0.0/0, and ::/0 when it has an IPv6 address). Deny entries only narrow what is allowed:
 * this form leaves them out, so it says more than is open, never less. Gone: [].
 */
export function doExposure(fake: DigitalOceanFake, id: string): string[] {
  const lb = fake.store.loadBalancers.get(id);
  if (lb === undefined) return [];
  const allowed = lb.firewall.allow.map((e) => {
    const [kind, value = ""] = e.split(/:(.*)/s);
    return kind === "ip" ? `${value}/${value.includes(":") ? 128 : 32}` : value;
  });
  const from = allowed.length > 0 ? allowed : ["0.0.0.0/0", ...(lb.ipv6 !== "" ? ["::/0"] : [])];
  return [...new Set(lb.forwarding_rules.flatMap((r) => from.map((a) => `${r.entry_port} ${a}`)))].sort();
}

const VENDOR_MODES = [
  "open to all (no firewall entries)",
  "firewall from loadBalancerSourceRanges 0.0.0.0/0",
] as const;

function vendorModes(fake: DigitalOceanFake, token: string): VendorMode[] {
  const build = async (owner: LbOwner, spec: LoadBalancerSpec, ranges: readonly string[]) => {
    const made = await ccmLoadBalancer(
      { url: fake.url, token },
      {
        serviceUid: owner.serviceUid,
        region: REGION,
        vpcUuid: VPC,
        ports: spec.listeners.map((l) => ({ port: l.port, nodePort: l.nodePort })),
        dropletIds: spec.backends.map(Number),
        sourceRanges: ranges,
      },
    );
    return {
      ingress: [{ ip: made.ip }],
      // As upstream: the id written back on the Service.
      annotations: { "kubernetes.digitalocean.com/load-balancer-id": made.id },
      exposure: () => doExposure(fake, made.id),
    };
  };
  return [
    { mode: VENDOR_MODES[0], build: (o, sp) => build(o, sp, []) },
    { mode: VENDOR_MODES[1], build: (o, sp) => build(o, sp, ["0.0.0.0/0"]) },
  ];
}

const fixture = (): ConformanceFixture => ({
  vendorModes: VENDOR_MODES,
  async start(): Promise<ConformanceFake> {
    const fake = await DigitalOceanFake.start({ spec: true, seed: 7 });
    fakes.push(fake);
    const { token } = fake.createAccount(ACCOUNT);
    let foreign = 0;
    const instance = (name: string, region: string, vpcUuid: string) => {
      const d = fake.createDroplet(ACCOUNT, { name, region, vpcUuid });
      return { instanceID: String(d.id), providerID: `digitalocean://${d.id}` };
    };
    return {
      factory: digitalOceanProvider,
      account: () => ({
        name: ACCOUNT,
        provider: "digitalocean",
        region: REGION,
        network: VPC,
        endpoint: fake.url,
        credential: token,
        requestTimeoutMs: 2_000,
      }),
      options: { pageSize: 25, loadBalancerPollMs: 10 },
      isMutation: (op) => /\.(create|update|delete)$/.test(op),
      createInstance: ({ name, inScope }) => instance(name, inScope ? REGION : ELSEWHERE, VPC),
      terminateInstance: (id) => fake.deleteDroplet(Number(id)),
      disks: {
        zonal: false,
        create: ({ sizeGiB, inScope, ownerCluster, attachedTo }) => {
          const v = fake.createVolume(ACCOUNT, {
            name: `pvc-${++volumes}`,
            region: inScope ? REGION : ELSEWHERE,
            sizeGigabytes: sizeGiB,
            ...(attachedTo !== undefined && { dropletId: Number(attachedTo) }),
            ...(ownerCluster !== undefined && { tags: [`${CLUSTER_TAG_PREFIX}${ownerCluster}`] }),
          });
          return { id: v.id, source: "csi", csiDriver: DO_CSI_DRIVER, handle: v.id };
        },
        missing: () => {
          const id = "00000000-0000-4000-8000-000000000000";
          return { id, source: "csi", csiDriver: DO_CSI_DRIVER, handle: id };
        },
      },
      missingProviderID: () => "digitalocean://999999999",
      instancePageSize: 25,
      throttle: (seconds) => fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, ACCOUNT),
      failWithServerErrors: () => fake.setFaults({ errorRate: 1 }, ACCOUNT),
      clearFaults: () => fake.resetFaults(),
      resources: () => doResources(fake, ACCOUNT),
      backendPorts: (o) => {
        const lb = fake.store.loadBalancersOf(ACCOUNT).find((l) => {
          const owner = ownerOfName(l.name);
          return owner?.cluster === o.cluster && owner.serviceUid === o.serviceUid;
        });
        // Every Droplet of a DigitalOcean load balancer gets every forwarding rule's target port.
        if (lb === undefined || lb.droplet_ids.length === 0) return [];
        return [...new Set(lb.forwarding_rules.map((r) => r.target_port))].sort((a, b) => a - b);
      },
      otherNetwork: {
        network: OTHER_VPC,
        createInstance: (name) => instance(name, REGION, OTHER_VPC),
      },
      createForeignLoadBalancer: () => {
        foreign++;
        fake.createLoadBalancer(ACCOUNT, {
          name: `theirs-${foreign}`,
          region: REGION,
          forwarding_rules: [
            { entry_protocol: "tcp", entry_port: 80, target_protocol: "tcp", target_port: 80 },
          ],
          droplet_ids: [],
        });
      },
      failNextCreates: (n) => fake.failNextCreates(ACCOUNT, n),
      vendorModes: vendorModes(fake, token),
      close: () => fake.close(),
    };
  },
});

describeProviderConformance("digitalocean", fixture());

afterAll(() => {
  // Neither the provider's requests nor the fake's answers may drift from DigitalOcean's spec.
  for (const fake of fakes) expect(fake.specProblems()).toEqual([]);
});
