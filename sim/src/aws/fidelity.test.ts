// Fidelity of the fake's answers: every member of an operation's output shape (the botocore
// models) that AWS always sends is in the fake's answer, for every Describe operation the fake
// serves and every write that answers with the resource. The allow-list names the members AWS
// sends only in some cases, each with the case.

import { DescribeInstancesCommand, DescribeRouteTablesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { afterAll, afterEach, beforeAll, expect, test } from "@jest/globals";
import { ec2Handlers, type Handler } from "./ec2.js";
import { elbHandlers } from "./elb.js";
import { elbv2Handlers } from "./elbv2.js";
import { AWS_MODEL_FILES, AwsFake } from "./fake.js";
import { AwsModel, type Decoded } from "./model.js";
import { AWS_DEFAULT_QUOTAS } from "./quotas.js";
import type { Caller } from "./state.js";

/** Member names (at any depth) AWS leaves out of an answer unless the case holds. */
const CONDITIONAL: Readonly<Record<string, string>> = {
  NextToken: "only when more items follow",
  NextMarker: "only when more items follow",
  // An Elastic IP: these only while it is associated, ServiceManaged only for a service's own.
  "Addresses[].InstanceId": "only while associated with an instance",
  "Addresses[].AssociationId": "only while associated",
  "Addresses[].NetworkInterfaceId": "only while associated",
  "Addresses[].NetworkInterfaceOwnerId": "only while associated",
  "Addresses[].PrivateIpAddress": "only while associated",
  "Addresses[].SubnetId": "only while associated",
  "Addresses[].ServiceManaged": "only for an address a service manages",
  // One route has one target: the member of its target kind alone.
  ...Object.fromEntries(
    [
      "DestinationIpv6CidrBlock",
      "DestinationPrefixListId",
      "EgressOnlyInternetGatewayId",
      "GatewayId",
      "InstanceId",
      "InstanceOwnerId",
      "NatGatewayId",
      "TransitGatewayId",
      "LocalGatewayId",
      "CarrierGatewayId",
      "NetworkInterfaceId",
      "VpcPeeringConnectionId",
      "CoreNetworkArn",
      "OdbNetworkArn",
      "IpAddress",
    ].map((m) => [m, "a route's target: only the member of its kind"]),
  ),
  // Only for resources carrying the feature, which the fake's inventory never has.
  ...Object.fromEntries(
    [
      "Ipv6Address",
      "Ipv6CidrBlockAssociationSet",
      "Ipv6Prefixes",
      "Ipv4Prefixes",
      "SourceNatIpv6Prefixes",
      "EnablePrefixForIpv6SourceNat",
    ].map((m) => [m, "IPv6 or prefix delegation, never set up in the fake"]),
  ),
  ...Object.fromEntries(
    [
      "OutpostArn",
      "OutpostId",
      "CustomerOwnedIpv4Pool",
      "CustomerOwnedIp",
      "CarrierIp",
      "ParentZoneName",
      "ParentZoneId",
      "EnableLniAtDeviceIndex",
    ].map((m) => [m, "Outposts, Local or Wavelength Zones only"]),
  ),
  ...Object.fromEntries(
    [
      "IamInstanceProfile",
      "KeyName",
      "KernelId",
      "RamdiskId",
      "Platform",
      "InstanceLifecycle",
      "SpotInstanceRequestId",
      "SriovNetSupport",
      "CapacityBlockId",
      "CapacityReservationId",
      "CapacityReservationTarget",
      "ElasticGpuAssociations",
      "ElasticInferenceAcceleratorAssociations",
      "Licenses",
      "BootMode",
      "TpmSupport",
      "StateReason",
      "RequesterId",
      "Operator",
      "SecondaryInterfaces",
      "ConnectionTrackingConfiguration",
      "NetworkPerformanceOptions",
      "EnaSrdSpecification",
      "EnaQueueCount",
      "AmdSevSnp",
      "NestedVirtualization",
      "AssociatedResource",
      "VolumeOwnerId",
      "EbsCardIndex",
      "Affinity",
      "PartitionNumber",
      "HostId",
      "SpreadDomain",
      "HostResourceGroupArn",
    ].map((m) => [m, "an instance with the option (profile, key pair, Spot, reservation, placement group…)"]),
  ),
  Association: "an interface or address with a public IP only",
  "Reservations[].Instances[].Placement.GroupId": "an instance in a placement group only",
  "RouteTables[].Associations[].SubnetId": "a subnet association only (not the main one)",
  PublicIpv4Pool: "a gateway association with a public IPv4 pool only",
  "SecurityGroups[].IpPermissionsEgress[].FromPort": "a rule with ports only (not all protocols)",
  "SecurityGroups[].IpPermissionsEgress[].ToPort": "a rule with ports only (not all protocols)",
  "SecurityGroups[].IpPermissionsEgress[].IpRanges[].Description": "a range with a description only",
  "SecurityGroups[].IpPermissions[].IpRanges[].Description": "a range with a description only",
  "SecurityGroups[].IpPermissions[].Ipv6Ranges[].Description": "a range with a description only",
  "Subnets[].Type": "Outposts subnets only",
  S3BucketName: "access logs enabled only",
  EmitInterval: "access logs enabled only",
  S3BucketPrefix: "access logs enabled only",
  AuthenticateOidcConfig: "an action of that type only (ALB)",
  AuthenticateCognitoConfig: "an action of that type only (ALB)",
  RedirectConfig: "an action of that type only (ALB)",
  FixedResponseConfig: "an action of that type only (ALB)",
  JwtValidationConfig: "an action of that type only (ALB)",
  "TargetHealthDescriptions[].Target.AvailabilityZone": "an IP target outside the VPC only",
  QuicServerId: "QUIC target groups only",
  "TargetHealthDescriptions[].TargetHealth.Description": "a target not healthy only",
  AnomalyDetection: "ALB target groups with anomaly mitigation only",
  EncryptionControl: "VPC encryption controls, when enabled",
  StatusMessage: "a failed association only",
  Reason: "a load balancer state with a reason (failed, impaired) only",
  SSLCertificateId: "an SSL/HTTPS listener only",
  EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic: "an NLB with security groups only",
  IpamPools: "IPAM pools, when configured",
  HealthCheckPath: "an HTTP(S) health check only",
  Matcher: "an HTTP(S) health check only",
  ProtocolVersion: "application load balancers only",
  TargetControlPort: "a target group with a control port only",
  Messages: "zone messages, when AWS has any",
  GroupLongName: "newer zone description members, absent from AWS's documented answers",
  Geography: "newer zone description members, absent from AWS's documented answers",
  SubGeography: "newer zone description members, absent from AWS's documented answers",
  SslPolicy: "a TLS listener only",
  AlpnPolicy: "a TLS listener only",
  MutualAuthentication: "an ALB HTTPS listener only",
  Weight: "a weighted forward only",
  TargetGroupStickinessConfig: "a forward with stickiness only",
  Order: "an ALB rule action only",
  "Volumes[].SourceVolumeId": "a volume copied from another only",
  "Volumes[].FastRestored": "a volume from a snapshot with fast snapshot restore only",
  "Volumes[].SseType": "a volume with server-side encryption settings only",
  "Volumes[].VolumeInitializationRate": "a volume from a snapshot with an initialization rate only",
  "Volumes[].KmsKeyId": "an encrypted volume only",
  "Volumes[].Attachments[].InstanceOwningService": "a volume attached to a service-managed instance only",
};

let fake: AwsFake;
beforeAll(async () => {
  fake = await AwsFake.start();
});
afterEach(() => fake.spec.assertClean());
afterAll(() => fake.close());

const REGION = "us-east-1";
const models = {
  ec2: AwsModel.load("ec2", AWS_MODEL_FILES.ec2),
  elb: AwsModel.load("elb", AWS_MODEL_FILES.elb),
  elbv2: AwsModel.load("elbv2", AWS_MODEL_FILES.elbv2),
};

test("the fake answers every member of the output shape AWS always sends", () => {
  const keys = fake.createAccount("fidelity");
  const caller: Caller = { account: keys.accountId, region: REGION, nowMs: Date.now(), staleReadMs: 0 };
  const vpcId = fake.createVpc(keys.accountId, REGION);
  const subnetId = fake.createSubnet(keys.accountId, REGION, { vpcId });
  fake.createRouteTable(keys.accountId, REGION, { vpcId, subnetIds: [subnetId] });
  const groupId = fake.createSecurityGroup(keys.accountId, REGION, { vpcId, name: "g" });
  const inst = fake.createInstance(keys.accountId, REGION, subnetId, { securityGroupIds: [groupId] });
  const quotas = () => AWS_DEFAULT_QUOTAS;
  const h = {
    ec2: ec2Handlers(fake.state, { quotas }),
    elb: elbHandlers(fake.state, { eniLingerMs: () => 0, quotas }),
    elbv2: elbv2Handlers(fake.state, { eniLingerMs: () => 0, provisioningMs: () => 0, quotas }),
  };
  const absent: Record<string, string[]> = {};
  const run = (svc: keyof typeof h, op: string, input: Decoded = {}) => {
    covered.add(`${svc}.${op}`);
    const out = (h[svc][op] as Handler)(input, caller);
    // The answer renders as the model's XML (a member of the wrong type throws).
    models[svc].renderResponse(op, out, "r-1");
    const missing = models[svc]
      .absentMembers(op, out)
      .filter(
        (path) =>
          (CONDITIONAL[path] ?? CONDITIONAL[path.slice(path.lastIndexOf(".") + 1).replace("[]", "")]) ===
          undefined,
      );
    if (missing.length > 0) absent[`${svc}.${op}`] = missing;
    return out;
  };
  fake.state.securityGroups.replace(
    {
      ...fake.state.securityGroups.get(groupId)!,
      ingress: [
        { protocol: "tcp", fromPort: 80, toPort: 80, cidr: "10.0.0.0/8" },
        { protocol: "tcp", fromPort: 80, toPort: 80, cidrIpv6: "2001:db8::/64", description: "v6" },
        { protocol: "icmp", fromPort: 3, toPort: 4, cidr: "10.0.0.0/8", description: "mtu" },
      ],
    },
    Date.now(),
  );
  for (const op of [
    "DescribeInstances",
    "DescribeSubnets",
    "DescribeVpcs",
    "DescribeSecurityGroups",
    "DescribeRouteTables",
    "DescribeAvailabilityZones",
  ])
    run("ec2", op);
  fake.createAddress(keys.accountId, REGION);
  run("ec2", "DescribeAddresses");
  fake.createVolume(keys.accountId, inst.az, { attachedTo: inst.id, tags: { Name: "data" } });
  run("ec2", "DescribeVolumes");
  const listeners = [{ Protocol: "TCP", LoadBalancerPort: 80, InstanceProtocol: "TCP", InstancePort: 30080 }];
  run("elb", "CreateLoadBalancer", { LoadBalancerName: "c", Subnets: [subnetId], Listeners: listeners });
  run("elb", "RegisterInstancesWithLoadBalancer", {
    LoadBalancerName: "c",
    Instances: [{ InstanceId: inst.id }],
  });
  run("elb", "DescribeLoadBalancers");
  run("elb", "DescribeLoadBalancerAttributes", { LoadBalancerName: "c" });
  run("elb", "DescribeTags", { LoadBalancerNames: ["c"] });
  const lb = run("elbv2", "CreateLoadBalancer", { Name: "n", Type: "network", Subnets: [subnetId] }) as {
    LoadBalancers: { LoadBalancerArn: string }[];
  };
  const lbArn = lb.LoadBalancers[0]!.LoadBalancerArn;
  const tg = run("elbv2", "CreateTargetGroup", { Name: "t", Protocol: "TCP", Port: 30080, VpcId: vpcId }) as {
    TargetGroups: { TargetGroupArn: string }[];
  };
  const tgArn = tg.TargetGroups[0]!.TargetGroupArn;
  run("elbv2", "RegisterTargets", { TargetGroupArn: tgArn, Targets: [{ Id: inst.id }] });
  run("elbv2", "CreateListener", {
    LoadBalancerArn: lbArn,
    Protocol: "TCP",
    Port: 80,
    DefaultActions: [{ Type: "forward", TargetGroupArn: tgArn }],
  });
  run("elbv2", "DescribeLoadBalancers");
  run("elbv2", "DescribeTargetGroups");
  run("elbv2", "DescribeListeners", { LoadBalancerArn: lbArn });
  run("elbv2", "DescribeTargetHealth", { TargetGroupArn: tgArn });
  run("elbv2", "DescribeLoadBalancerAttributes", { LoadBalancerArn: lbArn });
  run("elbv2", "DescribeTargetGroupAttributes", { TargetGroupArn: tgArn });
  run("elbv2", "DescribeTags", { ResourceArns: [lbArn] });
  expect(absent).toEqual({});
  // Every Describe operation the fake serves is covered here.
  const served = Object.entries(h).flatMap(([svc, ops]) =>
    Object.keys(ops)
      .filter((op) => op.startsWith("Describe"))
      .map((op) => `${svc}.${op}`),
  );
  expect(served.filter((op) => !covered.has(op))).toEqual([]);
});

const covered = new Set<string>();

test("route tables: the VPC's main association and subnet associations, by the association filters, through the SDK", async () => {
  const keys = fake.createAccount("associations");
  const ec2 = new EC2Client({ region: REGION, endpoint: fake.url, credentials: keys, maxAttempts: 1 });
  const vpcId = fake.createVpc(keys.accountId, REGION);
  const a = fake.createSubnet(keys.accountId, REGION, { vpcId });
  const own = fake.createRouteTable(keys.accountId, REGION, { vpcId, subnetIds: [a] });
  const bySubnet = await ec2.send(
    new DescribeRouteTablesCommand({ Filters: [{ Name: "association.subnet-id", Values: [a] }] }),
  );
  expect(bySubnet.RouteTables?.map((t) => t.RouteTableId)).toEqual([own]);
  expect(bySubnet.RouteTables?.[0]?.Associations).toEqual([
    {
      Main: false,
      SubnetId: a,
      RouteTableAssociationId: expect.stringMatching(/^rtbassoc-[0-9a-f]+$/),
      RouteTableId: own,
      AssociationState: { State: "associated" },
    },
  ]);
  const main = await ec2.send(
    new DescribeRouteTablesCommand({
      Filters: [
        { Name: "vpc-id", Values: [vpcId] },
        { Name: "association.main", Values: ["true"] },
      ],
    }),
  );
  expect(main.RouteTables?.map((t) => t.Associations?.map((x) => x.Main))).toEqual([[true]]);
  expect(main.RouteTables?.[0]?.RouteTableId).not.toBe(own);
  // A subnet moves to another table: its old explicit association goes.
  fake.associateRouteTable(main.RouteTables![0]!.RouteTableId!, a);
  const after = await ec2.send(new DescribeRouteTablesCommand({ RouteTableIds: [own] }));
  expect(after.RouteTables?.[0]?.Associations).toEqual([]);
});

test("instances through the SDK: the AMI, architecture, root volume and network interface AWS always reports", async () => {
  const keys = fake.createAccount("instances");
  const ec2 = new EC2Client({ region: REGION, endpoint: fake.url, credentials: keys, maxAttempts: 1 });
  const vpcId = fake.createVpc(keys.accountId, REGION);
  const subnetId = fake.createSubnet(keys.accountId, REGION, { vpcId });
  const inst = fake.createInstance(keys.accountId, REGION, subnetId, {
    architecture: "arm64",
    imageId: "ami-0123456789abcdef0",
  });
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [inst.id] }));
  const i = out.Reservations?.[0]?.Instances?.[0];
  expect(i).toMatchObject({
    ImageId: "ami-0123456789abcdef0",
    Architecture: "arm64",
    RootDeviceType: "ebs",
    BlockDeviceMappings: [
      { DeviceName: "/dev/xvda", Ebs: { Status: "attached", DeleteOnTermination: true } },
    ],
    Placement: { AvailabilityZone: inst.az, AvailabilityZoneId: expect.stringMatching(/-az\d$/) },
  });
  expect(i?.NetworkInterfaces?.[0]?.MacAddress).toMatch(/^02(:[0-9a-f]{2}){5}$/);
  expect(i?.NetworkInterfaces?.[0]?.Association?.PublicIp).toBe(inst.publicIp);
});
