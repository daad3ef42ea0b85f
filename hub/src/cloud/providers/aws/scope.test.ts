// Cluster scope of what a Service's annotations name, against the fake AWS with the SDK: two
// clusters (blue, red) in one account, red in the same VPC and in a VPC of its own. Blue's
// Service naming red's groups or red's subnets is refused before any write; red's Service
// still deletes.

import { type AwsWorld, startAwsWorld } from "@fleet-ccm/sim";
import { afterAll, afterEach, beforeAll, expect, test } from "@jest/globals";
import { AnnotationError } from "../../annotation-bounds.js";
import { sampleLoadBalancerSpec, settle } from "../../conformance/conformance.testkit.js";
import type { CloudProvider, ServiceTarget } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { AWS_ANNOTATION_PREFIX as A, awsProvider } from "./index.js";
import { awsLoadBalancerName, securityGroupName } from "./lb-network.js";

let world: AwsWorld;
let p: CloudProvider;
beforeAll(async () => {
  world = await startAwsWorld("blue");
  const account = world.binding();
  ({ provider: p } = await bindRecorded(awsProvider, account, account.options));
});
afterEach(() => {
  world.fake.faults.reset();
  world.fake.spec.assertClean();
});
afterAll(() => world.fake.close());

let uid = 0;
/** A Service of `cluster`, in the account's VPC as the hub passes it (ClusterTarget.network). */
const owner = (cluster: string): ServiceTarget => ({
  cluster,
  network: world.vpcId,
  scope: {},
  serviceUid: `${String(++uid).padStart(8, "0")}-5c0e-4b1d-9a2f-5f0c1a2b3c4d`,
});
const lbs = () => p.loadBalancers!;

/** Every call since `mark` that changes the inventory (not a Describe*). */
const writesSince = (mark: number) =>
  world.fake.log
    .requests({ account: world.accountId, afterSeq: mark })
    .filter((r) => !/\.Describe/.test(r.operation))
    .map((r) => r.operation);

async function refused(
  o: ServiceTarget,
  annotations: Record<string, string>,
  problem: RegExp,
): Promise<void> {
  const node = world.instance(`scope-${o.serviceUid.slice(0, 8)}`);
  const mark = world.fake.log.mark();
  const err = await lbs()
    .ensure(o, { ...sampleLoadBalancerSpec([node.id]), annotations })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(AnnotationError);
  expect((err as AnnotationError).message).toMatch(problem);
  expect(writesSince(mark)).toEqual([]);
}

test("another cluster's managed group (security-groups, extra-security-groups): refused, and its Service still deletes", async () => {
  for (const type of ["classic", "nlb"]) {
    const red = owner("red");
    const node = world.instance(`red-${type}`);
    await settle(() =>
      lbs().ensure(red, {
        ...sampleLoadBalancerSpec([node.id]),
        annotations: { [`${A}type`]: type },
      }),
    );
    const [redGroup] = world.fake.state.securityGroups
      .all(world.accountId)
      .filter((g) => g.name === securityGroupName(awsLoadBalancerName(red.serviceUid)));
    expect(redGroup).toBeDefined();
    for (const key of ["security-groups", "extra-security-groups"])
      await refused(
        owner("blue"),
        { [`${A}type`]: type, [`${A}${key}`]: redGroup!.id },
        new RegExp(`${A}${key}.*${redGroup!.id} is owned by another Service \\(cluster red\\)`),
      );
    await settle(() => lbs().ensureDeleted(red));
    expect(world.fake.state.securityGroups.get(redGroup!.id)).toBeUndefined();
  }
});

test("the same cluster's other Service's managed group is refused too: it would hold that Service's delete up", async () => {
  const other = owner("blue");
  const node = world.instance("blue-other");
  await settle(() => lbs().ensure(other, sampleLoadBalancerSpec([node.id])));
  const [group] = world.fake.state.securityGroups
    .all(world.accountId)
    .filter((g) => g.name === securityGroupName(awsLoadBalancerName(other.serviceUid)));
  await refused(
    owner("blue"),
    { [`${A}extra-security-groups`]: group!.id },
    /is owned by another Service \(cluster blue\)/,
  );
  await settle(() => lbs().ensureDeleted(other));
});

test("a vendor-CCM group of another cluster, a group of another VPC, an unknown group: refused", async () => {
  const vendorRed = world.fake.createSecurityGroup(world.accountId, world.region, {
    vpcId: world.vpcId,
    name: "k8s-elb-a0123456789abcdef0123456789abcd",
    tags: { "kubernetes.io/cluster/red": "owned" },
  });
  await refused(
    owner("blue"),
    { [`${A}security-groups`]: vendorRed },
    new RegExp(`${vendorRed} is tagged for cluster red, not blue`),
  );
  const redVpc = world.fake.createVpc(world.accountId, world.region, { cidr: "10.9.0.0/16" });
  const elsewhere = world.fake.createSecurityGroup(world.accountId, world.region, {
    vpcId: redVpc,
    name: "red-office",
  });
  await refused(
    owner("blue"),
    { [`${A}extra-security-groups`]: elsewhere },
    new RegExp(`${elsewhere} is in ${redVpc}, not the cluster's VPC ${world.vpcId}`),
  );
  const unknown = `sg-${"0".repeat(17)}`;
  await refused(owner("blue"), { [`${A}security-groups`]: unknown }, new RegExp(`${unknown} is not found`));
});

test("a subnet of another VPC: refused before the load balancer is built in it", async () => {
  const redVpc = world.fake.createVpc(world.accountId, world.region, { cidr: "10.8.0.0/16" });
  const redSubnet = world.fake.createSubnet(world.accountId, world.region, {
    vpcId: redVpc,
    az: `${world.region}a`,
    cidr: "10.8.0.0/24",
    tags: { "kubernetes.io/cluster/red": "owned" },
  });
  for (const type of ["classic", "nlb"])
    await refused(
      owner("blue"),
      { [`${A}type`]: type, [`${A}subnets`]: `${world.subnets[0]},${redSubnet}` },
      new RegExp(`${A}subnets.*subnet ${redSubnet} is in ${redVpc}, not the cluster's VPC`),
    );
});

test("Elastic IP allocations for a new NLB: associated elsewhere, another cluster's, unknown: refused; a free one used", async () => {
  const nlb = { [`${A}type`]: "nlb" };
  const free = () => world.fake.createAddress(world.accountId, world.region);
  const associated = world.fake.createAddress(world.accountId, world.region, {
    associationId: "eipassoc-0123456789abcdef0",
  });
  const reds = world.fake.createAddress(world.accountId, world.region, {
    tags: { "kubernetes.io/cluster/red": "owned" },
  });
  const unknown = `eipalloc-${"0".repeat(17)}`;
  for (const [bad, problem] of [
    [associated, /is associated \(eipassoc-/],
    [reds, /is tagged for cluster red, not blue/],
    [unknown, /is not found/],
  ] as const)
    await refused(
      owner("blue"),
      { ...nlb, [`${A}eip-allocations`]: `${free()},${bad}` },
      new RegExp(`${A}eip-allocations.*Elastic IP allocation ${bad} ${problem.source}`),
    );
  const o = owner("blue");
  const node = world.instance("blue-eip");
  const mine = [free(), free()];
  await settle(() =>
    lbs().ensure(o, {
      ...sampleLoadBalancerSpec([node.id]),
      annotations: { ...nlb, [`${A}eip-allocations`]: mine.join(",") },
    }),
  );
  const lb = world.fake.state.v2Lbs
    .all(world.accountId)
    .find((l) => l.tags["fleet-ccm.io/service-uid"] === o.serviceUid);
  expect(lb?.subnets.map((x) => x.allocationId)).toEqual(mine);
  // Ensured again: the NLB's own allocations are not checked again.
  await settle(() =>
    lbs().ensure(o, {
      ...sampleLoadBalancerSpec([node.id]),
      annotations: { ...nlb, [`${A}eip-allocations`]: mine.join(",") },
    }),
  );
  await settle(() => lbs().ensureDeleted(o));
});

test("in scope: a hand-made group of the VPC, a group shared with the cluster, the cluster's subnets", async () => {
  const office = world.fake.createSecurityGroup(world.accountId, world.region, {
    vpcId: world.vpcId,
    name: "office",
  });
  const shared = world.fake.createSecurityGroup(world.accountId, world.region, {
    vpcId: world.vpcId,
    name: "shared",
    tags: { "kubernetes.io/cluster/red": "owned", "kubernetes.io/cluster/blue": "shared" },
  });
  const o = owner("blue");
  const node = world.instance("blue-in-scope");
  const ingress = await settle(() =>
    lbs().ensure(o, {
      ...sampleLoadBalancerSpec([node.id]),
      annotations: {
        [`${A}extra-security-groups`]: `${office},${shared}`,
        [`${A}subnets`]: world.subnets[1]!,
      },
    }),
  );
  expect(ingress.length).toBe(1);
  const lb = world.fake.state.classicLbs
    .all(world.accountId)
    .find((l) => l.tags["fleet-ccm.io/service-uid"] === o.serviceUid);
  expect(lb?.securityGroups).toEqual(expect.arrayContaining([office, shared]));
  await settle(() => lbs().ensureDeleted(o));
});

test("a group tagged for the vendor CCM's cluster name: another cluster's without adoptFrom, the cluster's own with it", async () => {
  const vendor = world.fake.createSecurityGroup(world.accountId, world.region, {
    vpcId: world.vpcId,
    name: "web-office",
    tags: { "kubernetes.io/cluster/blue-legacy": "owned" },
  });
  await refused(
    owner("blue"),
    { [`${A}extra-security-groups`]: vendor },
    new RegExp(`${vendor} is tagged for cluster blue-legacy, not blue`),
  );
  const o: ServiceTarget = {
    ...owner("blue"),
    scope: { adoptFrom: { vendorCcmClusterName: "blue-legacy" } },
  };
  const node = world.instance("blue-legacy");
  await settle(() =>
    lbs().ensure(o, {
      ...sampleLoadBalancerSpec([node.id]),
      annotations: { [`${A}extra-security-groups`]: vendor },
    }),
  );
  const lb = world.fake.state.classicLbs
    .all(world.accountId)
    .find((l) => l.tags["fleet-ccm.io/service-uid"] === o.serviceUid);
  expect(lb?.securityGroups).toContain(vendor);
  await settle(() => lbs().ensureDeleted(o));
});
