import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent } from "@fleet-ccm/agent";
import {
  builtinProviders,
  DEFAULT_RECONCILE_WORKERS,
  Hub,
  type NatsAuthSetup,
  natsServerAuthConfig,
  parseHubConfig,
} from "@fleet-ccm/hub";
import {
  CLUSTER_TAG,
  createMachine,
  fleetNatsUsers,
  freePort,
  type KubeApiServer,
  type KubeRbacOptions,
  kubeletNode,
  type NatsCluster,
  type NatsServer,
  nodeName,
  type SimulatedCloud,
  startKubeApiServer,
  startNatsCluster,
  startNatsServer,
  startSimulatedCloud,
  waitFor,
} from "@fleet-ccm/sim";
import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";

export const DEMO_REGION = "sim-east-1";
/** The built CLI entry point. */
const CLI = fileURLToPath(new URL("../../bin/fleet-ccm.js", import.meta.url));
export const DEMO_ACCOUNT = "sim-main";
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";

export interface LocalFleetOptions {
  readonly clusters: number;
  readonly nodesPerCluster: number;
  readonly logger: Logger;
  /** Cloud API latency in ms (fixed). */
  readonly cloudLatencyMs?: number;
  readonly convergeDeadlineMs?: number;
  readonly workers?: number;
  readonly rateLimitPerSecond?: number;
  /** The account's rate-limit burst in the hub (default 500). */
  readonly rateLimitBurst?: number;
  /** Every cluster has configureCloudRoutes (default false). */
  readonly configureCloudRoutes?: boolean;
  /** More settings of a cluster's entry in the hub configuration (its podNetwork, say). */
  readonly clusterSettings?: (cluster: string) => Record<string, unknown>;
  /** Per-call cloud request timeout of the hub (default 5000 ms). */
  readonly requestTimeoutMs?: number;
  /** Extra hub config merged at the top level (tests). */
  readonly hubConfig?: Record<string, unknown>;
  /** Every cluster's API server authorizes requests against these RBAC rules (the agent's role). */
  readonly kubeRbac?: KubeRbacOptions;
  /** Serve the fleet API and page on a free loopback port with this token (the demo). */
  readonly apiToken?: string;
  /**
   * NATS with decentralized auth (operator, accounts: `fleet-ccm nats-init`) instead of one
   * password user per cluster; agents then need a credential from `fleet-ccm register`.
   */
  readonly natsAuth?: NatsAuthSetup;
  /** The hub configuration starts without clusters (they join with `fleet-ccm register`). */
  readonly unregistered?: boolean;
  /** The hub's NATS user may publish only to these subjects (a hub refused some clusters'). */
  readonly hubNatsPublish?: readonly string[];
  /** JetStream on the fleet's nats-server (hub replicas keep their leases in it). */
  readonly jetstream?: boolean;
  /** A three-node NATS cluster with clustered JetStream instead of one nats-server. */
  readonly natsCluster?: boolean;
  /** Another cloud's fake instead of the simulated cloud's account (e.g. AwsLocalCloud). */
  readonly cloud?: LocalCloud;
}

/** A vendor fake the fleet's clusters run on: the hub's accounts, each cluster's account and scope, its machines. */
export interface LocalCloud {
  readonly provider: string;
  /** `accounts[]` of the hub config and the environment its secret references read. */
  accountsConfig(): { accounts: Record<string, unknown>[]; env: Record<string, string> };
  clusterConfig(cluster: string): {
    account: string;
    region?: string;
    scope: Record<string, unknown>;
    adoptFrom?: { vendorCcmClusterName: string };
  };
  /** Creates the machine of the cluster's `index`th node; answers the node name kubelet registers. */
  addMachine(cluster: string, index: number): string;
  /** Every API call the fake answered. */
  totalCalls(): number;
  close(): Promise<void>;
}

export interface AgentProcessOptions {
  /** The hub's gRPC port (default: the fleet's hub). */
  readonly hubPort?: number;
  /** The API server URL in the agent's kubeconfig instead of the simulator's (a fault proxy). */
  readonly kubeServer?: string;
  /** NATS servers (default: the fleet's). */
  readonly natsServers?: readonly string[];
  /** The NATS password written to --nats-password-file (default: the cluster's). */
  readonly natsPassword?: string;
  /** A NATS .creds (decentralized auth) passed with --nats-creds-file instead of user and password. */
  readonly natsCreds?: string;
  /** The hub token written to --token-file (default: the cluster's). */
  readonly token?: string;
  /** --log-level (default warn). */
  readonly logLevel?: string;
  /** Collects the agent's stdout and stderr, one line per entry, instead of inheriting stderr. */
  readonly output?: string[];
  /** --secret-refresh-ms (default: the agent's). */
  readonly secretRefreshMs?: number;
  /** --nats-auth-wait-ms (default: the agent's). */
  readonly natsAuthWaitMs?: number;
}

interface ClusterHandle {
  readonly name: string;
  readonly token: string;
  readonly natsPassword: string;
  readonly kube: KubeApiServer;
  agent: Agent | undefined;
  nextNode: number;
  nextService: number;
}

interface KubeService {
  metadata?: { name?: string; namespace?: string; uid?: string; finalizers?: string[] };
  spec?: { type?: string };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}

interface KubeNode {
  metadata?: { name?: string; uid?: string };
  spec?: { providerID?: string; taints?: { key: string }[] };
}

/**
 * A whole fleet on one machine: a real nats-server, the simulated cloud, one
 * simulated Kubernetes API server per cluster, the hub and one agent per
 * cluster, all talking over loopback sockets. Used by the demo, the
 * end-to-end tests and the benchmarks.
 */
export class LocalFleet {
  readonly clusters = new Map<string, ClusterHandle>();
  hubNatsPassword = "";
  hub: Hub | undefined;
  hubPort = 0;
  private env: Record<string, string> = {};
  private readonly children = new Set<ChildProcess>();
  /** Set with `natsCluster`: `nats` is then its first node. */
  natsCluster: NatsCluster | undefined;

  private constructor(
    readonly opts: LocalFleetOptions,
    readonly nats: NatsServer,
    readonly cloud: SimulatedCloud,
    private readonly cloudKey: string,
  ) {}

  static async start(opts: LocalFleetOptions): Promise<LocalFleet> {
    const names = Array.from(
      { length: opts.clusters },
      (_, i) => `cluster-${String(i + 1).padStart(3, "0")}`,
    );
    const secrets = names.map(() => ({
      token: randomBytes(24).toString("base64url"),
      natsPassword: randomBytes(18).toString("base64url"),
    }));
    const hubPassword = randomBytes(18).toString("base64url");
    const users = fleetNatsUsers(
      hubPassword,
      names.map((cluster, i) => ({ cluster, password: secrets[i]?.natsPassword ?? "" })),
    ).map((u) =>
      u.user === "hub" && opts.hubNatsPublish !== undefined ? { ...u, publish: opts.hubNatsPublish } : u,
    );
    if (opts.natsAuth !== undefined && opts.natsCluster)
      throw new Error("LocalFleet: natsAuth and natsCluster cannot be combined");
    const natsCluster = opts.natsCluster ? await startNatsCluster({ users }) : undefined;
    const nats =
      natsCluster?.nodes[0] ??
      (await startNatsServer({
        users,
        ...(opts.natsAuth !== undefined && { authConfig: natsServerAuthConfig(opts.natsAuth, "{dir}/jwt") }),
        ...(opts.jetstream && { jetstream: true }),
      }));
    const cloud = await startSimulatedCloud({ regions: [DEMO_REGION] });
    const account = cloud.createAccount(DEMO_ACCOUNT);
    if (opts.cloudLatencyMs) cloud.setFaults({ latencyMs: opts.cloudLatencyMs });
    const fleet = new LocalFleet(opts, nats, cloud, account.apiKey);
    fleet.natsCluster = natsCluster;
    fleet.hubNatsPassword = hubPassword;
    await Promise.all(
      names.map(async (name, i) => {
        const kube = await startKubeApiServer(opts.kubeRbac === undefined ? {} : { rbac: opts.kubeRbac });
        fleet.clusters.set(name, {
          name,
          token: secrets[i]?.token ?? "",
          natsPassword: secrets[i]?.natsPassword ?? "",
          kube,
          agent: undefined,
          nextNode: 0,
          nextService: 0,
        });
      }),
    );
    return fleet;
  }

  /** Every secret this fleet hands out: the cloud key, cluster tokens, NATS passwords (leak scans). */
  secrets(): string[] {
    return [
      this.cloudKey,
      this.hubNatsPassword,
      ...[...this.clusters.values()].flatMap((c) => [c.token, c.natsPassword]),
    ];
  }

  /** The hub configuration for this fleet (JSON is YAML). Secrets are env references. */
  /** Every NATS URL of the fleet (one, or each node of the cluster). */
  get natsUrls(): readonly string[] {
    return this.natsCluster?.urls ?? [this.nats.url];
  }

  hubConfigText(grpcPort = 0, httpPort = 0, natsServers: readonly string[] = this.natsUrls): string {
    const env: Record<string, string> = {
      FLEET_CCM_SIM_KEY: this.cloudKey,
      FLEET_CCM_NATS_HUB: this.hubNatsPassword,
    };
    const auth = this.opts.natsAuth;
    if (auth !== undefined) {
      env["FLEET_CCM_NATS_HUB_CREDS"] = auth.hubCreds;
      env["FLEET_CCM_NATS_OPERATOR"] = auth.operatorSeed;
      env["FLEET_CCM_NATS_SYSTEM"] = auth.systemCreds;
    }
    const other = this.opts.cloud?.accountsConfig();
    Object.assign(env, other?.env ?? {});
    const registered = this.opts.unregistered ? [] : [...this.clusters.values()];
    const clusters = registered.map((c) => {
      const envName = `FLEET_CCM_TOKEN_${c.name.replaceAll("-", "_").toUpperCase()}`;
      env[envName] = c.token;
      return {
        name: c.name,
        token: { env: envName },
        ...(this.opts.cloud?.clusterConfig(c.name) ?? {
          account: DEMO_ACCOUNT,
          scope: { tags: { [CLUSTER_TAG]: c.name } },
        }),
        configureCloudRoutes: this.opts.configureCloudRoutes ?? false,
        ...this.opts.clusterSettings?.(c.name),
      };
    });
    if (this.opts.apiToken !== undefined) env["FLEET_CCM_API_TOKEN"] = this.opts.apiToken;
    this.env = env;
    return JSON.stringify({
      grpc: { listen: `127.0.0.1:${grpcPort}`, insecure: true },
      http: { listen: `127.0.0.1:${httpPort}` },
      nats:
        auth === undefined
          ? { servers: [...natsServers], user: "hub", password: { env: "FLEET_CCM_NATS_HUB" } }
          : {
              servers: [...natsServers],
              credentials: { env: "FLEET_CCM_NATS_HUB_CREDS" },
              operator: {
                account: auth.fleetAccount,
                signingKey: { env: "FLEET_CCM_NATS_OPERATOR" },
                systemCredentials: { env: "FLEET_CCM_NATS_SYSTEM" },
              },
            },
      reconcile: {
        workers: this.opts.workers ?? DEFAULT_RECONCILE_WORKERS,
        convergeDeadlineMs: this.opts.convergeDeadlineMs ?? 5000,
        heartbeatIntervalMs: 2000,
      },
      accounts: other?.accounts ?? [
        {
          name: DEMO_ACCOUNT,
          provider: "simulated",
          region: DEMO_REGION,
          endpoint: this.cloud.url,
          credentials: { env: "FLEET_CCM_SIM_KEY" },
          rateLimit: {
            perSecond: this.opts.rateLimitPerSecond ?? 500,
            burst: this.opts.rateLimitBurst ?? 500,
          },
          requestTimeoutMs: this.opts.requestTimeoutMs ?? 5000,
        },
      ],
      clusters,
      ...(this.opts.apiToken !== undefined && {
        api: { listen: "127.0.0.1:0", token: { env: "FLEET_CCM_API_TOKEN" } },
      }),
      ...(this.opts.hubConfig ?? {}),
    });
  }

  /** The environment the hub's `{env: …}` secret references read (for CLI commands on its config). */
  hubEnv(): Record<string, string> {
    if (Object.keys(this.env).length === 0) this.hubConfigText();
    return { ...this.env };
  }

  async startHub(): Promise<Hub> {
    const config = parseHubConfig(this.hubConfigText(), "local fleet");
    const hub = await Hub.create({
      config,
      providers: builtinProviders,
      logger: this.opts.logger,
      env: this.env,
    });
    const { grpcPort } = await hub.start();
    this.hub = hub;
    this.hubPort = grpcPort;
    return hub;
  }

  /**
   * Runs the hub as its own process through the CLI (`fleet-ccm hub --config`), on a fixed gRPC
   * port so agents reconnect to its successor, and a fixed HTTP port (/healthz, /readyz,
   * /metrics). Secrets reach it as environment variables, as the config's `{env: …}`
   * references say. With `captureOutput` its stderr (the log) and stdout are kept for `output()`
   * instead of passed through. Needs `npm run build`.
   */
  async spawnHubProcess(
    grpcPort?: number,
    opts: {
      captureOutput?: boolean;
      logLevel?: string;
      env?: Record<string, string>;
      /** Run on this config file (written from the fleet's config if absent; kept on exit). */
      configPath?: string;
      args?: readonly string[];
      /** The hub's NATS servers instead of the fleet's (a proxy in front of it). */
      natsServers?: readonly string[];
    } = {},
  ): Promise<{ child: ChildProcess; grpcPort: number; httpPort: number; output: () => string }> {
    const port = grpcPort ?? (await freePort());
    const httpPort = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-hub-"));
    const configPath = opts.configPath ?? join(dir, "hub.yaml");
    const text = this.hubConfigText(port, httpPort, opts.natsServers);
    if (!existsSync(configPath)) writeFileSync(configPath, text, { mode: 0o600 });
    const child = spawn(
      process.execPath,
      [CLI, "hub", "--config", configPath, "--log-level", opts.logLevel ?? "warn", ...(opts.args ?? [])],
      {
        stdio: ["ignore", opts.captureOutput ? "pipe" : "ignore", opts.captureOutput ? "pipe" : "inherit"],
        env: { ...process.env, ...this.env, ...opts.env },
      },
    );
    let output = "";
    const keep = (b: Buffer) => {
      output += b.toString();
    };
    child.stderr?.on("data", keep);
    child.stdout?.on("data", keep);
    child.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    this.children.add(child);
    child.once("exit", () => this.children.delete(child));
    this.hubPort = port;
    return { child, grpcPort: port, httpPort, output: () => output };
  }

  async stopHub(): Promise<void> {
    await this.hub?.stop();
    this.hub = undefined;
  }

  kubeConfigFor(cluster: string): KubeConfig {
    const c = this.cluster(cluster);
    const kc = new KubeConfig();
    kc.loadFromOptions(c.kube.kubeConfigOptions());
    return kc;
  }

  cluster(name: string): ClusterHandle {
    const c = this.clusters.get(name);
    if (c === undefined) throw new Error(`no cluster ${name}`);
    return c;
  }

  async startAgent(cluster: string, hubPort = this.hubPort, hubPingIntervalMs?: number): Promise<Agent> {
    const c = this.cluster(cluster);
    const agent = new Agent({
      cluster,
      kubeConfig: this.kubeConfigFor(cluster),
      hub: {
        address: `127.0.0.1:${hubPort}`,
        token: c.token,
        insecure: true,
        ...(hubPingIntervalMs !== undefined && { pingIntervalMs: hubPingIntervalMs }),
      },
      nats: { servers: [...this.natsUrls], user: `agent-${cluster}`, password: c.natsPassword },
      logger: this.opts.logger.child({ component: "agent", cluster }),
    });
    await agent.start();
    c.agent = agent;
    return agent;
  }

  /**
   * Runs the cluster's agent as its own process through the CLI (`fleet-ccm agent`), with its
   * kubeconfig, token and NATS password in files, as in a real deployment. Needs `npm run build`.
   * A number is the hub's port (the default options otherwise).
   */
  spawnAgentProcess(cluster: string, options: number | AgentProcessOptions = {}): ChildProcess {
    const o: AgentProcessOptions = typeof options === "number" ? { hubPort: options } : options;
    const c = this.cluster(cluster);
    const dir = mkdtempSync(join(tmpdir(), `fleet-ccm-agent-${cluster}-`));
    const kubeconfig = c.kube.kubeconfigYaml();
    writeFileSync(
      join(dir, "kubeconfig"),
      o.kubeServer === undefined ? kubeconfig : kubeconfig.replaceAll(c.kube.url, o.kubeServer),
      { mode: 0o600 },
    );
    writeFileSync(join(dir, "token"), o.token ?? c.token, { mode: 0o600 });
    writeFileSync(join(dir, "nats-password"), o.natsPassword ?? c.natsPassword, { mode: 0o600 });
    if (o.natsCreds !== undefined) writeFileSync(join(dir, "nats.creds"), o.natsCreds, { mode: 0o600 });
    const natsAuth =
      o.natsCreds === undefined
        ? ["--nats-user", `agent-${cluster}`, "--nats-password-file", join(dir, "nats-password")]
        : ["--nats-creds-file", join(dir, "nats.creds")];
    const nats = (o.natsServers ?? this.natsUrls).flatMap((u) => ["--nats", u]);
    const child = spawn(
      process.execPath,
      [
        CLI,
        "agent",
        "--cluster",
        cluster,
        "--hub",
        `127.0.0.1:${o.hubPort ?? this.hubPort}`,
        "--insecure",
        "--token-file",
        join(dir, "token"),
        ...nats,
        ...natsAuth,
        "--kubeconfig",
        join(dir, "kubeconfig"),
        "--log-level",
        o.logLevel ?? "warn",
        ...(o.secretRefreshMs === undefined ? [] : ["--secret-refresh-ms", String(o.secretRefreshMs)]),
        ...(o.natsAuthWaitMs === undefined ? [] : ["--nats-auth-wait-ms", String(o.natsAuthWaitMs)]),
      ],
      {
        stdio: [
          "ignore",
          o.output === undefined ? "ignore" : "pipe",
          o.output === undefined ? "inherit" : "pipe",
        ],
      },
    );
    const out = o.output;
    if (out !== undefined) {
      let partial = "";
      const onData = (chunk: Buffer) => {
        const lines = (partial + chunk.toString("utf8")).split("\n");
        partial = lines.pop() ?? "";
        out.push(...lines.filter((l) => l !== ""));
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("exit", () => {
        if (partial !== "") out.push(partial);
      });
    }
    child.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    this.children.add(child);
    child.once("exit", () => this.children.delete(child));
    return child;
  }

  async stopAgent(cluster: string): Promise<void> {
    const c = this.cluster(cluster);
    await c.agent?.stop();
    c.agent = undefined;
  }

  async startAgents(): Promise<void> {
    await Promise.all([...this.clusters.keys()].map((c) => this.startAgent(c)));
  }

  /** Creates `count` machines in the cloud and registers their nodes as kubelet does. */
  addNodes(cluster: string, count: number): string[] {
    const c = this.cluster(cluster);
    const names: string[] = [];
    for (let i = 0; i < count; i++) {
      const index = c.nextNode++;
      let name = nodeName(cluster, index);
      if (this.opts.cloud !== undefined) name = this.opts.cloud.addMachine(cluster, index);
      else createMachine(this.cloud, { cluster, name, account: DEMO_ACCOUNT, region: DEMO_REGION, index });
      c.kube.create("Node", kubeletNode(name));
      names.push(name);
    }
    return names;
  }

  /** Creates `count` LoadBalancer Services in the cluster's default namespace. */
  addServices(cluster: string, count: number, namespace = "default"): string[] {
    const c = this.cluster(cluster);
    const names: string[] = [];
    for (let i = 0; i < count; i++) {
      const name = `web-${String(c.nextService++).padStart(4, "0")}`;
      c.kube.create("Service", {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace },
        spec: {
          type: "LoadBalancer",
          selector: { app: name },
          ports: [{ name: "http", port: 80, targetPort: 8080 }],
        },
      });
      names.push(name);
    }
    return names;
  }

  services(cluster: string): KubeService[] {
    return this.cluster(cluster).kube.list("Service") as KubeService[];
  }

  /** LoadBalancer Services in every cluster, and how many show an ingress. */
  serviceProgress(): { services: number; withIngress: number } {
    let services = 0;
    let withIngress = 0;
    for (const c of this.clusters.keys())
      for (const s of this.services(c)) {
        if (s.spec?.type !== "LoadBalancer") continue;
        services++;
        if ((s.status?.loadBalancer?.ingress ?? []).length > 0) withIngress++;
      }
    return { services, withIngress };
  }

  /** API calls the fleet's cloud answered. */
  cloudCalls(): number {
    return this.opts.cloud?.totalCalls() ?? this.cloud.stats().totalCalls;
  }

  nodes(cluster: string): KubeNode[] {
    return this.cluster(cluster).kube.list("Node") as KubeNode[];
  }

  /** Nodes in every cluster, and how many have lost the uninitialized taint. */
  progress(): { nodes: number; initialized: number } {
    let nodes = 0;
    let initialized = 0;
    for (const c of this.clusters.keys())
      for (const n of this.nodes(c)) {
        nodes++;
        if (!(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED)) initialized++;
      }
    return { nodes, initialized };
  }

  async stop(): Promise<void> {
    for (const child of this.children) child.kill("SIGKILL");
    await Promise.all([...this.clusters.values()].map((c) => c.agent?.stop()));
    await this.stopHub();
    await Promise.all([...this.clusters.values()].map((c) => c.kube.close()));
    await this.cloud.close();
    await this.opts.cloud?.close();
    await (this.natsCluster ?? this.nats).stop();
  }
}

export { waitFor };
