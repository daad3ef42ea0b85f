/**
 * A fake AWS on the fake kit: one loopback endpoint that speaks EC2's query protocol, the
 * awsQuery protocol of ELB, ELBv2 and STS (the service is told by `Version`), verifies
 * Signature Version 4 with the account's keys (the region is the signature's), answers XML
 * rendered from the botocore models and AWS's XML error envelopes, and injects faults per
 * account. In-process methods set up accounts, roles, VPCs and instances for tests.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type ErrorRenderer,
  Exchange,
  FakeError,
  FakeHttpServer,
  type FaultConfig,
  FaultInjector,
  RequestLog,
  readBody,
  type SpecHook,
  seededRandom,
  specHook,
  startFake,
  TokenBucket,
} from "../fake-kit/index.js";
import { ec2Handlers, type Handler, zonesOf } from "./ec2.js";
import { elbHandlers } from "./elb.js";
import { elbv2Handlers } from "./elbv2.js";
import { AwsModel, escapeXml, ModelChecker } from "./model.js";
import { AWS_DEFAULT_QUOTAS, type AwsQuotas } from "./quotas.js";
import {
  type AccessKey,
  AwsState,
  type Caller,
  type ClassicLb,
  type EbsVolume,
  type Ec2Instance,
  type InstanceStateName,
  type RouteTable,
  type SecurityGroup,
  type Subnet,
  type V2Lb,
} from "./state.js";
import { stsHandlers } from "./sts.js";

export const EC2_VERSION = "2016-11-15";
export const ELB_VERSION = "2012-06-01";
export const ELBV2_VERSION = "2015-12-01";
export const STS_VERSION = "2011-06-15";

export type Service = "ec2" | "elb" | "elbv2" | "sts";

const SERVICE_OF_VERSION: Readonly<Record<string, Service>> = {
  [EC2_VERSION]: "ec2",
  [ELB_VERSION]: "elb",
  [ELBV2_VERSION]: "elbv2",
  [STS_VERSION]: "sts",
};

/** The signing name each service's requests carry in their credential scope. */
const SIGNING_NAME: Readonly<Record<Service, string>> = {
  ec2: "ec2",
  elb: "elasticloadbalancing",
  elbv2: "elasticloadbalancing",
  sts: "sts",
};

export interface AwsFakeOptions {
  readonly seed?: number;
  /** Milliseconds since the epoch; tests may move time (credential expiry). */
  readonly now?: () => number;
  /** How long a deleted load balancer's network interfaces keep its security groups in use. */
  readonly eniLingerMs?: number;
  /** How long an NLB stays `provisioning`. */
  readonly nlbProvisioningMs?: number;
  /** AWS's default quotas (quotas.ts), any of them changed (as an account's raised quota). */
  readonly quotas?: Partial<AwsQuotas>;
}

export interface AccountKeys {
  readonly accountId: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface VolumeSpec {
  /** Default 10. */
  readonly sizeGiB?: number;
  readonly tags?: Readonly<Record<string, string>>;
  /** An instance id (in the volume's zone): the volume is in-use, attached as /dev/xvdba. */
  readonly attachedTo?: string;
}

export interface InstanceSpec {
  readonly privateDnsName?: string;
  readonly az?: string;
  readonly subnetId?: string;
  readonly type?: string;
  /** The AMI it was launched from (default: one of the fake's). */
  readonly imageId?: string;
  readonly architecture?: "x86_64" | "arm64";
  readonly state?: InstanceStateName;
  readonly publicIp?: boolean;
  readonly tags?: Readonly<Record<string, string>>;
  readonly securityGroupIds?: readonly string[];
}

let fakes = 0;

export class AwsFake {
  readonly log: RequestLog;
  readonly spec: SpecHook;
  readonly faults: FaultInjector;
  readonly state = new AwsState();
  private readonly server: FakeHttpServer;
  private readonly now: () => number;
  private readonly handlers: Record<Service, Record<string, Handler>>;
  private readonly models: Record<Service, AwsModel>;
  private readonly errors: Record<Service, ErrorRenderer>;
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly limits = new Map<string, { rate: number; burst: number }>();
  private requests = 0;
  private ipSeq = 0;
  private readonly fakeNo = ++fakes;
  eniLingerMs: number;
  nlbProvisioningMs: number;
  /** The quotas every account has; tests may change them. */
  quotas: AwsQuotas;
  /** Answer DescribeTargetGroups by LoadBalancerArn with TargetGroupNotFound when it has none (as some AWS-compatible endpoints do). */
  noTargetGroupsNotFound = false;
  /** How many of the next NLB creates end `failed` after provisioning. */
  private failingNlbCreates = 0;
  /** AssumeRole's credential lifetime when the caller asks for none. */
  assumedRoleTtlSeconds = 3600;

  private constructor(opts: AwsFakeOptions) {
    this.now = opts.now ?? Date.now;
    this.eniLingerMs = opts.eniLingerMs ?? 0;
    this.nlbProvisioningMs = opts.nlbProvisioningMs ?? 0;
    this.quotas = { ...AWS_DEFAULT_QUOTAS, ...opts.quotas };
    this.log = new RequestLog(this.now);
    this.faults = new FaultInjector(seededRandom(opts.seed ?? 1));
    this.models = sharedModels();
    this.spec = specHook(new ModelChecker(Object.values(this.models)));
    this.errors = {
      ec2: awsErrors(this.models.ec2),
      elb: awsErrors(this.models.elb),
      elbv2: awsErrors(this.models.elbv2),
      sts: awsErrors(this.models.sts),
    };
    this.handlers = {
      ec2: ec2Handlers(this.state, { quotas: () => this.quotas }),
      elb: elbHandlers(this.state, { eniLingerMs: () => this.eniLingerMs, quotas: () => this.quotas }),
      elbv2: elbv2Handlers(this.state, {
        eniLingerMs: () => this.eniLingerMs,
        quotas: () => this.quotas,
        provisioningMs: () => this.nlbProvisioningMs,
        noTargetGroupsNotFound: () => this.noTargetGroupsNotFound,
        nextCreateFails: () => {
          if (this.failingNlbCreates === 0) return false;
          this.failingNlbCreates--;
          return true;
        },
      }),
      sts: stsHandlers(this.state, { defaultTtlSeconds: () => this.assumedRoleTtlSeconds }),
    };
    assertModelsServe(this.models, this.handlers);
    this.server = new FakeHttpServer(
      (req, res) => this.handle(req, res),
      (_err, res) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/xml" }).end();
      },
    );
  }

  static start(opts: AwsFakeOptions = {}): Promise<AwsFake> {
    const fake = new AwsFake(opts);
    return startFake(fake, fake.server);
  }

  get url(): string {
    return this.server.url;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  // ---- accounts, keys, roles -------------------------------------------------------------------

  createAccount(name: string): AccountKeys {
    const accountId = String(100000000000 + this.fakeNo * 1000 + this.state.accounts.size + 1);
    this.state.accounts.set(accountId, { id: accountId, name });
    const key = this.createAccessKey(accountId);
    return { accountId, accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
  }

  /** A second key for rotation; the first stays valid until revoked. */
  createAccessKey(accountId: string): AccessKey {
    const key: AccessKey = {
      accessKeyId: `AKIA${randomBytes(8).toString("hex").toUpperCase()}`,
      secretAccessKey: randomBytes(30).toString("base64"),
      accountId,
    };
    this.state.keys.set(key.accessKeyId, key);
    return key;
  }

  revokeAccessKey(accessKeyId: string): void {
    this.state.keys.delete(accessKeyId);
  }

  createRole(
    accountId: string,
    name: string,
    opts: { externalId?: string; trustedAccounts: readonly string[] },
  ): string {
    const arn = `arn:aws:iam::${accountId}:role/${name}`;
    this.state.roles.set(arn, {
      arn,
      accountId,
      trustedAccounts: opts.trustedAccounts,
      ...(opts.externalId !== undefined && { externalId: opts.externalId }),
    });
    return arn;
  }

  /** Every temporary credential of the role expires now (as if its session ended). */
  expireRoleSessions(roleArn: string): void {
    for (const [id, k] of this.state.keys)
      if (k.roleArn === roleArn) this.state.keys.set(id, { ...k, expiresAtMs: this.now() - 1 });
  }

  /** Per account (and region, and operation) request buckets, as AWS throttles: 0 removes. */
  setRateLimit(
    accountId: string,
    region: string,
    ratePerSecond: number,
    burst: number,
    operation = "*",
  ): void {
    const key = `${accountId}/${region}/${operation}`;
    this.buckets.delete(key);
    if (ratePerSecond <= 0) this.limits.delete(key);
    else this.limits.set(key, { rate: ratePerSecond, burst });
  }

  setFaults(faults: Partial<FaultConfig>, accountId?: string): void {
    this.faults.set(faults, accountId);
  }

  // ---- the inventory -----------------------------------------------------------------------------

  createVpc(
    accountId: string,
    region: string,
    opts: { cidr?: string; tags?: Record<string, string> } = {},
  ): string {
    const id = this.state.hexId("vpc");
    this.state.vpcs.insert(
      { id, account: accountId, region, tags: opts.tags ?? {}, cidr: opts.cidr ?? "10.0.0.0/16" },
      this.now(),
    );
    const rtb: RouteTable = {
      id: this.state.hexId("rtb"),
      account: accountId,
      region,
      tags: {},
      vpcId: id,
      routes: [{ cidr: opts.cidr ?? "10.0.0.0/16", gatewayId: "local", origin: "CreateRouteTable" }],
      main: true,
      subnetIds: [],
    };
    this.state.routeTables.insert(rtb, this.now());
    return id;
  }

  createSubnet(
    accountId: string,
    region: string,
    opts: { vpcId: string; az?: string; cidr?: string; tags?: Record<string, string> },
  ): string {
    const id = this.state.hexId("subnet");
    const s: Subnet = {
      id,
      account: accountId,
      region,
      tags: opts.tags ?? {},
      vpcId: opts.vpcId,
      az: opts.az ?? zonesOf(region)[0]!.name,
      cidr: opts.cidr ?? `10.0.${this.state.subnets.all().length}.0/24`,
    };
    this.state.subnets.insert(s, this.now());
    return id;
  }

  /** An Elastic IP allocation, associated elsewhere when `associationId` is given. */
  createAddress(
    accountId: string,
    region: string,
    opts: { associationId?: string; tags?: Record<string, string> } = {},
  ): string {
    const id = this.state.hexId("eipalloc");
    this.state.addresses.insert(
      {
        id,
        account: accountId,
        region,
        tags: opts.tags ?? {},
        publicIp: `198.51.100.${(++this.ipSeq % 250) + 1}`,
        ...(opts.associationId !== undefined && { associationId: opts.associationId }),
      },
      this.now(),
    );
    return id;
  }

  createSecurityGroup(
    accountId: string,
    region: string,
    opts: { vpcId: string; name: string; tags?: Record<string, string> },
  ): string {
    const g: SecurityGroup = {
      id: this.state.hexId("sg"),
      account: accountId,
      region,
      tags: opts.tags ?? {},
      vpcId: opts.vpcId,
      name: opts.name,
      description: opts.name,
      ingress: [],
    };
    this.state.securityGroups.insert(g, this.now());
    return g.id;
  }

  createRouteTable(
    accountId: string,
    region: string,
    opts: { vpcId: string; tags?: Record<string, string>; subnetIds?: readonly string[] },
  ): string {
    const vpc = this.state.vpcs.get(opts.vpcId);
    const t: RouteTable = {
      id: this.state.hexId("rtb"),
      account: accountId,
      region,
      tags: opts.tags ?? {},
      vpcId: opts.vpcId,
      routes: [{ cidr: vpc?.cidr ?? "10.0.0.0/16", gatewayId: "local", origin: "CreateRouteTable" }],
      main: false,
      subnetIds: [],
    };
    this.state.routeTables.insert(t, this.now());
    for (const subnetId of opts.subnetIds ?? []) this.associateRouteTable(t.id, subnetId);
    return t.id;
  }

  /** Gives the subnet this route table (AssociateRouteTable): its previous explicit one loses it. */
  associateRouteTable(routeTableId: string, subnetId: string): void {
    for (const t of this.state.routeTables.all())
      if (t.subnetIds.includes(subnetId))
        this.state.routeTables.replace(
          { ...t, subnetIds: t.subnetIds.filter((s) => s !== subnetId) },
          this.now(),
        );
    const t = this.state.routeTables.get(routeTableId);
    if (t === undefined) throw new Error(`no route table ${routeTableId}`);
    this.state.routeTables.replace({ ...t, subnetIds: [...t.subnetIds, subnetId] }, this.now());
  }

  /** A route made by someone else (a gateway route, as Terraform would add). */
  addRoute(routeTableId: string, route: { cidr: string; instanceId?: string; gatewayId?: string }): void {
    const t = this.state.routeTables.get(routeTableId);
    if (t === undefined) throw new Error(`no route table ${routeTableId}`);
    this.state.routeTables.replace(
      {
        ...t,
        routes: [
          ...t.routes,
          {
            cidr: route.cidr,
            origin: "CreateRoute",
            ...(route.instanceId !== undefined && { instanceId: route.instanceId }),
            ...(route.gatewayId !== undefined && { gatewayId: route.gatewayId }),
          },
        ],
      },
      this.now(),
    );
  }

  /** An EBS volume in `az` (its region is the zone's), as if made in the console. */
  createVolume(accountId: string, az: string, spec: VolumeSpec = {}): EbsVolume {
    const at = new Date(Math.floor(this.now() / 1000) * 1000);
    const v: EbsVolume = {
      id: this.state.hexId("vol"),
      account: accountId,
      region: az.replace(/[a-z]$/, ""),
      tags: spec.tags ?? {},
      az,
      sizeGiB: spec.sizeGiB ?? 10,
      state: spec.attachedTo === undefined ? "available" : "in-use",
      volumeType: "gp3",
      ...(spec.attachedTo !== undefined && {
        attachedTo: { instanceId: spec.attachedTo, device: "/dev/xvdba", at },
      }),
      createdAt: at,
    };
    this.state.volumes.insert(v, this.now());
    return v;
  }

  createInstance(accountId: string, region: string, subnetId: string, spec: InstanceSpec = {}): Ec2Instance {
    const subnet = this.state.subnets.get(subnetId);
    if (subnet === undefined) throw new Error(`no subnet ${subnetId}`);
    const n = ++this.ipSeq;
    const privateIp = `10.0.${Math.floor(n / 250) % 250}.${(n % 250) + 4}`;
    const dnsSuffix = region === "us-east-1" ? "ec2.internal" : `${region}.compute.internal`;
    const id = this.state.hexId("i");
    const inst: Ec2Instance = {
      id,
      account: accountId,
      region,
      tags: spec.tags ?? {},
      state: spec.state ?? "running",
      type: spec.type ?? "m5.large",
      imageId: spec.imageId ?? "ami-0abcdef1234567890",
      architecture: spec.architecture ?? "x86_64",
      az: subnet.az,
      vpcId: subnet.vpcId,
      subnetId,
      privateIp,
      privateDns: spec.privateDnsName ?? `ip-${privateIp.replace(/\./g, "-")}.${dnsSuffix}`,
      ...((spec.publicIp ?? true) && {
        publicIp: `54.${n % 250}.${Math.floor(n / 250) % 250}.${(n % 200) + 10}`,
        publicDns: `ec2-54-${n % 250}-${Math.floor(n / 250) % 250}-${(n % 200) + 10}.compute-1.amazonaws.com`,
      }),
      securityGroupIds: spec.securityGroupIds ?? [],
      sourceDestCheck: true,
      launchTime: new Date(Math.floor(this.now() / 1000) * 1000),
    };
    this.state.instances.insert(inst, this.now());
    return inst;
  }

  setInstanceState(instanceId: string, state: InstanceStateName): void {
    const i = this.state.instances.get(instanceId);
    if (i === undefined) throw new Error(`no instance ${instanceId}`);
    this.state.instances.replace({ ...i, state }, this.now());
  }

  instance(instanceId: string): Ec2Instance | undefined {
    return this.state.instances.get(instanceId);
  }

  /** The next `n` NLB creates end in state `failed` once provisioning is over. */
  failNextNlbCreates(n: number): void {
    this.failingNlbCreates = n;
  }

  classicLoadBalancers(accountId?: string): ClassicLb[] {
    return this.state.classicLbs.all(accountId);
  }

  networkLoadBalancers(accountId?: string): V2Lb[] {
    return this.state.v2Lbs.all(accountId);
  }

  // ---- one request ---------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    let raw: Buffer;
    try {
      raw = await readBody(req);
    } catch {
      res.writeHead(413).end();
      return;
    }
    const params = new URLSearchParams(url.searchParams);
    if (req.method === "POST")
      for (const [k, v] of new URLSearchParams(raw.toString("utf8"))) params.set(k, v);
    const service = SERVICE_OF_VERSION[params.get("Version") ?? ""];
    const action = params.get("Action") ?? "unknown";
    const requestId = `${(++this.requests).toString(16).padStart(8, "0")}-4a2b-4c6d-8e0f-fa4e${this.fakeNo.toString().padStart(8, "0")}`;
    const renderer = this.errors[service ?? "ec2"];
    const ex = new Exchange(req, res, {
      log: this.log,
      renderer,
      inFlight: this.server.inFlight,
      spec: this.spec,
      operation: service === undefined ? action : `${service}.${action}`,
      requestId,
      requestIdHeader: "x-amzn-requestid",
    });
    try {
      if (service === undefined)
        throw new FakeError(
          400,
          "InvalidAction",
          `The action ${action} with version ${params.get("Version")} is not valid`,
        );
      this.spec.checkRequest(ex.operation, {
        method: req.method ?? "GET",
        path: url.pathname,
        query: params,
        headers: req.headers,
      });
      const key = this.authenticate(req, url, raw, service);
      ex.account = key.accountId;
      const region = signedRegion(req);
      const nowMs = this.now();
      this.rateLimit(key.accountId, region, ex.operation, nowMs);
      const config = this.faults.config(key.accountId);
      const injected = await this.faults.beforeCall(config, ex.clientGone);
      if (injected.kind === "abandoned") return;
      if (injected.kind === "error") {
        ex.fault = injected.fault;
        ex.fail(injected.error);
        return;
      }
      const caller: Caller = { account: key.accountId, region, nowMs, staleReadMs: config.staleReadMs };
      const handler = this.handlers[service][action];
      const model = this.models[service];
      if (handler === undefined || !model.has(action))
        throw new FakeError(400, "InvalidAction", `The action ${action} is not valid for this web service`);
      const { input, problems } = model.decodeRequest(action, params);
      if (problems.length > 0)
        throw new FakeError(
          400,
          service === "ec2" ? "InvalidParameterValue" : "ValidationError",
          problems[0]!,
        );
      const output = handler(input, caller);
      // A lost answer stands for a lost change to the inventory; STS changes none.
      const mutating = service !== "sts" && !/^Describe/.test(action);
      const lost = mutating ? this.faults.lostResponse(config) : undefined;
      if (lost !== undefined) {
        ex.fault = "lostResponse";
        ex.fail(lost);
        return;
      }
      ex.send({
        status: 200,
        contentType: "text/xml;charset=UTF-8",
        body: model.renderResponse(action, output, requestId),
      });
    } catch (err) {
      if (err instanceof FakeError) ex.fail(err);
      else throw err;
    }
  }

  private rateLimit(account: string, region: string, operation: string, nowMs: number): void {
    for (const op of [operation, "*"]) {
      const key = `${account}/${region}/${op}`;
      const limit = this.limits.get(key);
      if (limit === undefined) continue;
      let bucket = this.buckets.get(key);
      if (bucket === undefined) {
        bucket = new TokenBucket(limit.rate, limit.burst, nowMs);
        this.buckets.set(key, bucket);
      }
      if (bucket.take(nowMs) > 0)
        throw new FakeError(503, "RequestLimitExceeded", "Request limit exceeded.", { kind: "throttled" });
    }
  }

  /** SigV4 with a key the fake issued; temporary keys need their session token and must not be expired. */
  private authenticate(req: IncomingMessage, url: URL, body: Buffer, service: Service): AccessKey {
    const auth = String(req.headers.authorization ?? "");
    const m =
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
        auth,
      );
    const denied = (code: string, message: string, status = 403) =>
      new FakeError(
        service === "ec2" && code === "InvalidClientTokenId" ? 401 : status,
        service === "ec2" && code === "InvalidClientTokenId" ? "AuthFailure" : code,
        message,
        { kind: "auth" },
      );
    if (m === null) throw denied("MissingAuthenticationToken", "Request is missing Authentication Token");
    const [, keyId, date, region, signingName, signedHeaders, signature] = m as unknown as string[];
    const key = this.state.keys.get(keyId!);
    if (key === undefined)
      throw denied("InvalidClientTokenId", "The security token included in the request is invalid.");
    if (signingName !== SIGNING_NAME[service])
      throw denied(
        "SignatureDoesNotMatch",
        `Credential should be scoped to correct service: '${SIGNING_NAME[service]}'.`,
      );
    const token = req.headers["x-amz-security-token"];
    if (key.sessionToken !== undefined && token !== key.sessionToken)
      throw denied("InvalidClientTokenId", "The security token included in the request is invalid.");
    if (key.expiresAtMs !== undefined && key.expiresAtMs <= this.now())
      throw new FakeError(400, "ExpiredToken", "The security token included in the request is expired", {
        kind: "auth",
      });
    const amzDate = String(req.headers["x-amz-date"] ?? "");
    const headers = signedHeaders!.split(";");
    const canonical = [
      req.method ?? "GET",
      url.pathname,
      [...url.searchParams]
        .map(([k, v]) => [uriEncode(k), uriEncode(v)])
        .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
        .map(([k, v]) => `${k}=${v}`)
        .join("&"),
      headers
        .map(
          (h) =>
            `${h}:${String(req.headers[h] ?? "")
              .trim()
              .replace(/\s+/g, " ")}\n`,
        )
        .join(""),
      signedHeaders,
      String(req.headers["x-amz-content-sha256"] ?? createHash("sha256").update(body).digest("hex")),
    ].join("\n");
    const scope = `${date}/${region}/${signingName}/aws4_request`;
    const toSign = [
      "AWS4-HMAC-SHA256",
      amzDate,
      scope,
      createHash("sha256").update(canonical).digest("hex"),
    ].join("\n");
    let k: Buffer = createHmac("sha256", `AWS4${key.secretAccessKey}`).update(date!).digest();
    for (const part of [region!, signingName!, "aws4_request"])
      k = createHmac("sha256", k).update(part).digest();
    const expected = createHmac("sha256", k).update(toSign).digest("hex");
    if (expected !== signature)
      throw denied(
        "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
      );
    return key;
  }
}

let modelCache: Record<Service, AwsModel> | undefined;

/**
 * The botocore models under sim/fixtures/ (README there): EC2, ELB and ELBv2 cut to the
 * operations the fake serves, STS whole.
 */
export const AWS_MODEL_FILES: Readonly<Record<Service, string>> = {
  ec2: "aws/ec2-2016-11-15/service-2.ccm-subset.json",
  elb: "aws/elb-2012-06-01/service-2.ccm-subset.json",
  elbv2: "aws/elbv2-2015-12-01/service-2.ccm-subset.json",
  sts: "aws/sts-2011-06-15/service-2.json",
};

/** Loaded once per process. */
function sharedModels(): Record<Service, AwsModel> {
  modelCache ??= {
    ec2: AwsModel.load("ec2", AWS_MODEL_FILES.ec2),
    elb: AwsModel.load("elb", AWS_MODEL_FILES.elb),
    elbv2: AwsModel.load("elbv2", AWS_MODEL_FILES.elbv2),
    sts: AwsModel.load("sts", AWS_MODEL_FILES.sts),
  };
  return modelCache;
}

/**
 * Every action the fake serves is in its service's model: the fixtures are subsets, so a
 * handler added without its operation there fails here, not as InvalidAction per call.
 */
function assertModelsServe(
  models: Record<Service, AwsModel>,
  handlers: Record<Service, Record<string, Handler>>,
): void {
  const missing = (Object.keys(handlers) as Service[]).flatMap((s) =>
    Object.keys(handlers[s])
      .filter((action) => !models[s].has(action))
      .map((action) => `${s} ${action} (${AWS_MODEL_FILES[s]})`),
  );
  if (missing.length > 0)
    throw new Error(
      `the model fixtures lack operations the AWS fake serves: ${missing.join(", ")}; ` +
        "add them to scripts/vendor-specs.mjs and run it (sim/fixtures/README.md)",
    );
}

function signedRegion(req: IncomingMessage): string {
  return (
    /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(String(req.headers.authorization ?? ""))?.[1] ?? "us-east-1"
  );
}

function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * AWS's error envelopes. EC2: <Response><Errors>, throttling is 503 RequestLimitExceeded; the
 * query services (ELB, ELBv2, STS): <ErrorResponse> in the service's namespace, throttling is
 * 400 Throttling.
 */
function awsErrors(model: AwsModel): ErrorRenderer {
  const ec2 = model.protocol === "ec2";
  type Answer = readonly [status: number, code: string, message: string];
  const faults: Record<"throttled" | "unavailable" | "internal", Answer> = {
    throttled: ec2
      ? [503, "RequestLimitExceeded", "Request limit exceeded."]
      : [400, "Throttling", "Rate exceeded"],
    unavailable: ec2
      ? [503, "Unavailable", "The service is unavailable. Please try again shortly."]
      : [503, "ServiceUnavailable", "Service is unavailable"],
    internal: ec2
      ? [500, "InternalError", "An internal error has occurred"]
      : [500, "InternalFailure", "An internal error occurred"],
  };
  return {
    render(error, call) {
      const [status, code, message]: Answer =
        error.kind === "throttled" || error.kind === "unavailable" || error.kind === "internal"
          ? faults[error.kind]
          : [error.status, error.code, error.message];
      const head = `<Code>${escapeXml(code)}</Code><Message>${escapeXml(message)}</Message>`;
      const body = ec2
        ? `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>${head}</Error></Errors><RequestID>${call.requestId}</RequestID></Response>`
        : `<ErrorResponse xmlns="${model.namespace}"><Error><Type>${status >= 500 ? "Receiver" : "Sender"}</Type>${head}</Error><RequestId>${call.requestId}</RequestId></ErrorResponse>`;
      return {
        status,
        contentType: ec2 ? "text/xml;charset=UTF-8" : "text/xml",
        ...(error.headers !== undefined && { headers: error.headers }),
        body,
      };
    },
  };
}
