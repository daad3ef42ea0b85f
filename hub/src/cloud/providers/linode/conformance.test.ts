// The conformance suite against the Linode provider through the fake Linode API, every
// request and answer checked against Linode's OpenAPI spec.
import { afterAll, expect } from "@jest/globals";
import { LinodeFake } from "../../../../../sim/src/linode/index.js";
import {
  type ConformanceFake,
  type ConformanceFixture,
  describeProviderConformance,
  type FakeResource,
  type VendorMode,
} from "../../conformance/conformance.testkit.js";
import type { LbOwner, LoadBalancerSpec } from "../../provider.js";
import { linodeProvider } from "./index.js";
import { ccmLabel, ccmNodeBalancer, sourceRangeRules } from "./linode-ccm.testkit.js";
import { ownerOfTags } from "./load-balancers.js";
import { LINODE_CSI_DRIVER } from "./volumes.js";

const REGION = "us-east";
const ELSEWHERE = "us-west";
const ACCOUNT = "acme";
let volumes = 0;
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

/** The Linode CCM's two ways of building a Service's NodeBalancer. */
const VENDOR_MODES = ["NodeBalancer with a Cloud Firewall", "NodeBalancer without a firewall"] as const;

/** Whether a firewall rule's ports ("80", "80,443", "30000-32767"; none: all) take `port`. */
function rulePortsTake(ports: string | null | undefined, port: number): boolean {
  if (ports === undefined || ports === null || ports.trim() === "") return true;
  return ports.split(",").some((part) => {
    const [from = "", to = from] = part.trim().split("-");
    return Number(from) <= port && port <= Number(to);
  });
}

/**
 * What the cloud lets reach the NodeBalancer now, as "<config port> <CIDR>", from the fake's
 * truth. Clients reach a NodeBalancer on its configs' ports, at its IPv4 and IPv6; only Cloud
 * Firewalls attached to it filter them. No firewall: every port from anywhere (0.0.0.0/0, ::/0).
 * A firewall whose inbound policy is DROP admits its ACCEPT rules' addresses on the ports they
 * name (protocol as the config's: UDP for udp, TCP otherwise); one whose policy is ACCEPT admits
 * all but what its DROP rules name, written here as the whole range (this form cannot carve
 * ranges out: it says more than is open, never less). Several firewalls: the union (the same
 * bias). The NodeBalancer gone, nothing of the Service is reached: [] (a firewall attached to
 * nothing admits nothing).
 */
function nodeBalancerExposure(fake: LinodeFake, account: string, nbId: number): string[] {
  const nb = fake.store.nodeBalancers.get(nbId);
  if (nb === undefined) return [];
  const anywhere = ["0.0.0.0/0", ...(nb.ipv6 ? ["::/0"] : [])];
  const firewalls = fake.store.firewallsOfDevice(account, "nodebalancer", nbId);
  const out = new Set<string>();
  for (const c of nb.configs) {
    const protocol = c.protocol === "udp" ? "UDP" : "TCP";
    if (firewalls.length === 0) for (const a of anywhere) out.add(`${c.port} ${a}`);
    for (const fw of firewalls) {
      if (fw.rules.inbound_policy === "ACCEPT") {
        for (const a of anywhere) out.add(`${c.port} ${a}`);
        continue;
      }
      for (const r of fw.rules.inbound)
        if (r.action === "ACCEPT" && r.protocol === protocol && rulePortsTake(r.ports, c.port))
          for (const a of [...(r.addresses.ipv4 ?? []), ...(r.addresses.ipv6 ?? [])])
            out.add(`${c.port} ${a}`);
    }
  }
  return [...out].sort();
}

/**
 * The Linode CCM's NodeBalancers for a Service, built through the API as it builds them
 * (linode-ccm.testkit.ts), tagged with its --cluster-name, on the nodes' private IPs. With a
 * Cloud Firewall: the Service had loadBalancerSourceRanges 0.0.0.0/0 and ::/0 (open to all,
 * filtered by a firewall the CCM made first, labelled like the NodeBalancer); without: it had
 * none. The Service carries no annotation either way (its source ranges are in its spec).
 */
function vendorModes(fake: LinodeFake, token: string): VendorMode[] {
  const build = async (owner: LbOwner, spec: LoadBalancerSpec, cluster: string, withFirewall: boolean) => {
    const made = await ccmNodeBalancer(
      { url: fake.url, token },
      {
        tags: [cluster],
        region: REGION,
        label: ccmLabel(`${owner.cluster}/${owner.serviceUid}`),
        ports: spec.listeners.map((l) => ({ port: l.port, nodePort: l.nodePort })),
        nodes: spec.backends.map((id) => {
          const l = fake.store.linodes.get(Number(id));
          return { privateIPv4: l?.privateIPv4 ?? "", name: l?.label ?? id };
        }),
        ...(withFirewall && {
          firewall: sourceRangeRules(
            spec.listeners.map((l) => l.port),
            ["0.0.0.0/0"],
            ["::/0"],
          ),
        }),
      },
    );
    return {
      // The Linode CCM's ingress: the IPv4 with the hostname.
      ingress: [{ ip: made.ipv4, hostname: made.hostname }],
      exposure: () => nodeBalancerExposure(fake, ACCOUNT, made.id),
    };
  };
  return [
    { mode: VENDOR_MODES[0], build: (o, sp, c) => build(o, sp, c, true) },
    { mode: VENDOR_MODES[1], build: (o, sp, c) => build(o, sp, c, false) },
  ];
}

/** `linodeInterfaces`: the Linodes use the newer Linode interfaces API (routes go through it). */
const fixture = (opts: { linodeInterfaces?: boolean } = {}): ConformanceFixture => ({
  vendorModes: VENDOR_MODES,
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
      disks: {
        zonal: false,
        create: ({ sizeGiB, inScope, ownerCluster, attachedTo }) => {
          const v = fake.createVolume(ACCOUNT, {
            label: `pvc-${++volumes}`,
            region: inScope ? REGION : ELSEWHERE,
            size: sizeGiB,
            ...(attachedTo !== undefined && { linodeId: Number(attachedTo) }),
            ...(ownerCluster !== undefined && { tags: [`kubernetes.io/cluster/${ownerCluster}`] }),
          });
          return {
            id: String(v.id),
            source: "csi",
            csiDriver: LINODE_CSI_DRIVER,
            handle: `${v.id}-${v.label}`,
          };
        },
        missing: () => ({
          id: "99999999",
          source: "csi",
          csiDriver: LINODE_CSI_DRIVER,
          handle: "99999999-pvc-gone",
        }),
      },
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
      vendorModes: vendorModes(fake, token),
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
