/**
 * EC2 calls per second for one AWS account and region holding `--clusters` × `--nodes` nodes:
 * fleet-ccm (one hub, the real aws provider, InstanceCache and InstanceLookups) against one
 * cloud-provider-aws per cluster, modelled as upstream behaves (one DescribeInstances per node
 * per node-status period, two per NotReady node per lifecycle period, one per joining node),
 * side by side against the fake AWS with AWS's published DescribeInstances bucket.
 *
 *   node bench/dist/aws.js [--clusters 100] [--nodes 50] [--join 10] [--not-ready-s 30] [--services 100]
 *
 * and, for a hub restart, the calls that find `--services` load balancers (half classic ELBs,
 * half NLBs) current: the account listing with its digests against an ensure per Service.
 *
 * prints one JSON object. Every count is a call the fake answered (or throttled); the upstream
 * join wave is run in full, its steady state on one cluster and multiplied (all clusters are
 * alike).
 */
import { parseArgs } from "node:util";
import { DescribeInstancesCommand, EC2Client } from "@aws-sdk/client-ec2";
import {
  awsProvider,
  backendsDigest,
  type CloudProvider,
  createProvider,
  InstanceCache,
  InstanceLookups,
  isInProgress,
  loadBalancerSpecDigest,
} from "@fleet-ccm/hub";
import { AwsFake } from "@fleet-ccm/sim";
import { pino } from "pino";

const { values } = parseArgs({
  options: {
    clusters: { type: "string", default: "100" },
    nodes: { type: "string", default: "50" },
    join: { type: "string", default: "10" },
    "not-ready-s": { type: "string", default: "30" },
    services: { type: "string", default: "100" },
  },
});
const CLUSTERS = Number(values.clusters);
const NODES = Number(values.nodes);
const JOIN = Number(values.join);
const NOT_READY_S = Number(values["not-ready-s"]);
const SERVICES = Number(values.services);
/** Upstream's node status update period and lifecycle monitor period; fleet-ccm's refresh and monitor periods. */
const STATUS_PERIOD_S = 300;
const MONITOR_PERIOD_S = 5;
/** AWS: non-mutating actions such as DescribeInstances, 100 tokens refilled at 20 per second. */
const BUCKET = { size: 100, refillPerSecond: 20 };
const REGION = "us-east-1";

const clock = {
  now: () => Date.now(),
  setTimeout: (fn: () => void, ms: number) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return { _timer: t };
  },
  clearTimeout: (h: { _timer: unknown }) => clearTimeout(h._timer as NodeJS.Timeout),
};

async function main(): Promise<void> {
  const fake = await AwsFake.start();
  const acct = fake.createAccount("bench");
  const vpc = fake.createVpc(acct.accountId, REGION);
  const subnet = fake.createSubnet(acct.accountId, REGION, { vpcId: vpc, az: `${REGION}a` });
  const nodes = (cluster: number, count: number) =>
    Array.from({ length: count }, () =>
      fake.createInstance(acct.accountId, REGION, subnet, {
        tags: { [`kubernetes.io/cluster/c${cluster}`]: "owned" },
      }),
    );
  const fleet = Array.from({ length: CLUSTERS }, (_, c) => nodes(c, NODES));
  const describeCalls = (mark: number) =>
    fake.log.requests({ afterSeq: mark, operation: /^ec2\.Describe/ }).filter((r) => r.outcome !== "aborted");
  const binding = {
    name: "bench",
    provider: "aws",
    region: REGION,
    network: vpc,
    endpoint: fake.url,
    credential: acct.accessKeyId,
    secret: (n = "") => (n === "secretAccessKey" ? acct.secretAccessKey : acct.accessKeyId),
    credentialNames: ["accessKeyId", "secretAccessKey"],
    requestTimeoutMs: 30_000,
  };
  // Every call the provider makes, by op (the hub's call path).
  const ops = new Map<string, number>();
  const provider = await createProvider(
    awsProvider,
    {
      account: binding,
      logger: pino({ level: "silent" }),
      clock,
      call: (op, fn) => {
        ops.set(op, (ops.get(op) ?? 0) + 1);
        return fn(new AbortController().signal);
      },
    },
    {},
  );
  const logger = pino({ level: "silent" });

  // fleet-ccm, steady: one account-wide paged list per refresh period for every cluster.
  let mark = fake.log.mark();
  const cache = new InstanceCache(provider.instances, clock, STATUS_PERIOD_S * 1000, logger);
  await cache.fresh();
  const fleetSteadyCalls = describeCalls(mark).length;

  // upstream, steady: one cluster's CCM, one DescribeInstances per node per status period.
  const ec2 = new EC2Client({ region: REGION, endpoint: fake.url, credentials: acct, maxAttempts: 1 });
  mark = fake.log.mark();
  for (const i of fleet[0] ?? []) await ec2.send(new DescribeInstancesCommand({ InstanceIds: [i.id] }));
  const upstreamSteadyCallsPerCluster = describeCalls(mark).length;

  // The join wave: JOIN nodes per cluster at once, under AWS's bucket for DescribeInstances.
  fake.setRateLimit(acct.accountId, REGION, BUCKET.refillPerSecond, BUCKET.size, "ec2.DescribeInstances");
  const joined = Array.from({ length: CLUSTERS }, (_, c) => nodes(c, JOIN));
  const joinedAll = joined.flat();

  // fleet-ccm: node-init lookups by name, coalesced (one list answers the storm); then the
  // lifecycle checks of the NotReady newcomers, batched by the provider.
  mark = fake.log.mark();
  const lookups = new InstanceLookups(
    provider.instances,
    new InstanceCache(provider.instances, clock, 0, logger),
    clock,
  );
  const t0 = Date.now();
  const found = await Promise.all(
    joinedAll.map((i) => lookups.byName(i.privateDns, () => true).catch((e: unknown) => e)),
  );
  const fleetJoinInitMs = Date.now() - t0;
  const fleetJoinInit = describeCalls(mark);
  const fleetInitialized = found.filter((f) => Array.isArray(f) && f.length === 1).length;
  mark = fake.log.mark();
  const checks = Math.ceil(NOT_READY_S / MONITOR_PERIOD_S);
  for (let n = 0; n < checks; n++)
    await Promise.all(
      joinedAll.map((i) =>
        provider.instances.getByProviderID(`aws:///${i.az}/${i.id}`).catch(() => undefined),
      ),
    );
  const fleetJoinLifecycle = describeCalls(mark);

  // upstream: every CCM initializes its joiners at once (one DescribeInstances each), then
  // checks each NotReady node twice (shutdown, exists) per monitor period.
  mark = fake.log.mark();
  const t1 = Date.now();
  await Promise.all(
    joinedAll.map((i) =>
      ec2.send(new DescribeInstancesCommand({ InstanceIds: [i.id] })).catch(() => undefined),
    ),
  );
  const upstreamJoinInitMs = Date.now() - t1;
  const upstreamJoinInit = describeCalls(mark);
  fake.setRateLimit(acct.accountId, REGION, 0, 0, "ec2.DescribeInstances");
  mark = fake.log.mark();
  for (const i of joined[0] ?? [])
    for (let n = 0; n < 2 * checks; n++)
      await ec2.send(new DescribeInstancesCommand({ InstanceIds: [i.id] }));
  const upstreamLifecyclePerCluster = describeCalls(mark).length;

  const restart = await measureRestart(fake, provider, vpc, fleet[0] ?? [], ops);

  const totalNodes = CLUSTERS * NODES;
  const throttled = (calls: ReturnType<typeof describeCalls>) =>
    calls.filter((r) => r.outcome === "503").length;
  const result = {
    scenario: "aws-ec2-calls",
    clusters: CLUSTERS,
    nodes: totalNodes,
    joinPerCluster: JOIN,
    notReadySeconds: NOT_READY_S,
    awsBucket: { action: "DescribeInstances", ...BUCKET },
    steady: {
      fleetCcmCallsPerPeriod: fleetSteadyCalls,
      fleetCcmCallsPerSecond: fleetSteadyCalls / STATUS_PERIOD_S,
      upstreamCallsPerPeriod: upstreamSteadyCallsPerCluster * CLUSTERS,
      upstreamCallsPerSecond: (upstreamSteadyCallsPerCluster * CLUSTERS) / STATUS_PERIOD_S,
      ratio: (upstreamSteadyCallsPerCluster * CLUSTERS) / Math.max(1, fleetSteadyCalls),
      periodSeconds: STATUS_PERIOD_S,
    },
    joinWave: {
      joiningNodes: joinedAll.length,
      fleetCcm: {
        initCalls: fleetJoinInit.length,
        initThrottled: throttled(fleetJoinInit),
        initialized: fleetInitialized,
        initMs: fleetJoinInitMs,
        lifecycleCallsPerMonitorPeriod: fleetJoinLifecycle.length / checks,
        lifecycleCallsPerSecond: fleetJoinLifecycle.length / checks / MONITOR_PERIOD_S,
      },
      upstream: {
        initCalls: upstreamJoinInit.length,
        initThrottled: throttled(upstreamJoinInit),
        initMs: upstreamJoinInitMs,
        lifecycleCallsPerMonitorPeriod: (upstreamLifecyclePerCluster * CLUSTERS) / checks,
        lifecycleCallsPerSecond: (upstreamLifecyclePerCluster * CLUSTERS) / checks / MONITOR_PERIOD_S,
      },
    },
    restart,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  ec2.destroy();
  await fake.close();
}

/**
 * SERVICES load balancers of one cluster ensured, then what a restarted hub spends to find them
 * current: every page of listOwned (their digests match), against one ensure per Service (what
 * a restart costs without the listing). Cloud calls by the provider, by op.
 */
async function measureRestart(
  fake: AwsFake,
  provider: CloudProvider,
  vpc: string,
  backends: readonly { id: string }[],
  ops: Map<string, number>,
) {
  fake.nlbProvisioningMs = 0;
  const lbs = provider.loadBalancers;
  if (lbs?.listOwned === undefined) throw new Error("the aws provider lists no load balancers");
  const ids = backends
    .slice(0, 3)
    .map((b) => b.id)
    .sort();
  const services = Array.from({ length: SERVICES }, (_, n) => ({
    owner: {
      cluster: "c0",
      network: vpc,
      scope: {},
      serviceUid: `${String(n).padStart(8, "0")}-0000-4000-8000-000000000000`,
    },
    spec: {
      listeners: [{ protocol: "TCP" as const, port: 80, nodePort: 30080, proxyProtocol: false }],
      backends: ids,
      healthCheck: {
        protocol: "TCP" as const,
        port: 30080,
        path: "",
        intervalSeconds: 10,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 6,
      },
      sourceRanges: [],
      sessionAffinity: "None" as const,
      idleTimeoutSeconds: 60,
      internal: false,
      serviceName: `default/s${n}`,
      ...(n % 2 === 1 && { annotations: { "service.beta.kubernetes.io/aws-load-balancer-type": "nlb" } }),
    },
  }));
  const ensureAll = async () => {
    for (const s of services)
      for (let n = 0; isInProgress(await lbs.ensure(s.owner, s.spec)); n++)
        if (n > 50) throw new Error(`load balancer of ${s.owner.serviceUid} still in progress`);
  };
  const counted = async (run: () => Promise<void>) => {
    ops.clear();
    await run();
    const byOp = Object.fromEntries([...ops].sort(([a], [b]) => a.localeCompare(b)));
    return { calls: [...ops.values()].reduce((a, b) => a + b, 0), byOp };
  };
  const created = await counted(ensureAll);
  const listing = await counted(async () => {
    let token: string | undefined;
    let current = 0;
    do {
      const page = await lbs.listOwned!(token);
      for (const item of page.items) {
        const s = services.find((x) => x.owner.serviceUid === item.owner.serviceUid);
        if (
          s &&
          item.specDigest === loadBalancerSpecDigest(s.spec) &&
          item.backendsDigest === backendsDigest(ids)
        )
          current++;
      }
      token = page.nextPageToken;
    } while (token !== undefined);
    if (current !== SERVICES)
      throw new Error(`the listing vouched for ${current} of ${SERVICES} load balancers`);
  });
  const ensureEach = await counted(ensureAll);
  for (const s of services) await lbs.ensureDeleted(s.owner);
  return {
    loadBalancers: SERVICES,
    createCalls: created.calls,
    listOwned: listing,
    ensureEach,
    ratio: ensureEach.calls / Math.max(1, listing.calls),
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
