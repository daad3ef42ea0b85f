import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsLocalCloud } from "./aws-cloud.js";
import { AzureLocalCloud } from "./azure-cloud.js";
import { cliCommand } from "./cli-command.js";
import { DigitalOceanLocalCloud } from "./digitalocean-cloud.js";
import type { Command } from "./flags.js";
import { bool, int, str, UsageError } from "./flags.js";
import { GcpLocalCloud } from "./gcp-cloud.js";
import { HetznerLocalCloud } from "./hetzner-cloud.js";
import { LinodeLocalCloud } from "./linode-cloud.js";
import { type LocalCloud, LocalFleet, waitFor } from "./local-fleet.js";
import { makeLogger } from "./logger.js";
import { OpenStackLocalCloud } from "./openstack-cloud.js";
import { Progress } from "./progress.js";

export interface DemoSummary {
  clusters: number;
  nodes: number;
  nodesInitialized: number;
  services: number;
  servicesWithIngress: number;
  convergeMs: number | null;
  converged: boolean;
  cloudCalls: number;
  /** One kubeconfig per simulated cluster, for kubectl (removed when the demo stops). */
  kubeconfigs: string[];
  /** Where the kubeconfigs and the API token are: this run's own folder unless --kubeconfig-dir. */
  kubeconfigDir: string;
  /** The hub's fleet page and API (loopback); its token is in `apiTokenFile`. */
  fleetPage: string;
  apiTokenFile: string;
  /** The hub's readiness (gRPC listening, NATS connected): 200 "ok" or 503 with what is missing. */
  readyz: string;
}

const DEMO_PROVIDERS = [
  "simulated",
  "linode",
  "aws",
  "digitalocean",
  "hetzner",
  "gcp",
  "openstack",
  "azure",
] as const;
type DemoProvider = (typeof DEMO_PROVIDERS)[number];

const isDemoProvider = (p: string): p is DemoProvider => (DEMO_PROVIDERS as readonly string[]).includes(p);

const CLOUD_NAMES: Record<DemoProvider, string> = {
  simulated: "the simulated cloud",
  linode: "the fake Linode API",
  aws: "the fake AWS",
  digitalocean: "the fake DigitalOcean API",
  hetzner: "the fake Hetzner Cloud API",
  gcp: "the fake Compute Engine",
  openstack: "the fake OpenStack cloud",
  azure: "the fake Azure Resource Manager",
};

/** The vendor fake the demo's clusters run on (none: the simulated cloud LocalFleet starts itself). */
async function startCloud(
  provider: DemoProvider,
  clusters: readonly string[],
  latencyMs: number,
): Promise<LocalCloud | undefined> {
  switch (provider) {
    case "simulated":
      return undefined;
    case "linode":
      return LinodeLocalCloud.start(clusters, { latencyMs });
    case "aws":
      return AwsLocalCloud.start(clusters, { latencyMs });
    case "digitalocean":
      return DigitalOceanLocalCloud.start(clusters, { latencyMs });
    case "hetzner":
      return HetznerLocalCloud.start(clusters, { latencyMs });
    case "gcp":
      return GcpLocalCloud.start(clusters, { latencyMs });
    case "openstack":
      return OpenStackLocalCloud.start(clusters, { latencyMs });
    case "azure":
      return AzureLocalCloud.start(clusters, { latencyMs });
  }
}

export const demoCommand: Command = {
  name: "demo",
  summary: "run a whole fleet on this machine: nats-server, simulated cloud and clusters, hub, agents",
  usage:
    "fleet-ccm demo [--provider simulated|linode|aws|digitalocean|hetzner|gcp|openstack|azure] [--clusters N] [--nodes M] [--services K] [--exit-when-converged] [--json] [--verbose]",
  flags: {
    provider: {
      type: "string",
      placeholder: "NAME",
      default: "simulated",
      description:
        "The clusters' cloud: simulated; linode (a fake Linode API: Linodes, NodeBalancers, Cloud Firewalls); aws (a fake AWS: two accounts, one through an assumed role, in us-east-1 and us-west-2); digitalocean (a fake DigitalOcean API: Droplets, a VPC per cluster, Load Balancers); hetzner (a fake Hetzner Cloud API: servers, a network per cluster, load balancers); gcp (a fake Compute Engine: a project in us-central1 reached with a service-account key, instances, target-pool load balancers); openstack (a fake OpenStack cloud: Keystone, Nova servers, a Neutron network per cluster, Octavia load balancers with floating IPs); or azure (a fake Azure Resource Manager and Entra ID: a subscription in eastus, VMs, the cluster's shared Standard load balancer).",
    },
    clusters: { type: "string", placeholder: "N", default: "3", description: "Simulated clusters." },
    nodes: { type: "string", placeholder: "M", default: "5", description: "Nodes per cluster." },
    services: {
      type: "string",
      placeholder: "K",
      default: "0",
      description: "LoadBalancer Services per cluster.",
    },
    "exit-when-converged": {
      type: "boolean",
      description:
        "Exit once every node is initialized and every Service has an ingress (exit 0), or when --timeout passes (exit 1).",
    },
    json: { type: "boolean", description: "Print one JSON summary on stdout instead of progress lines." },
    verbose: {
      type: "boolean",
      description:
        "When stderr is not a terminal, print start-up progress there as plain lines (on a terminal it is one line updated in place).",
    },
    timeout: {
      type: "string",
      placeholder: "SECONDS",
      default: "300",
      description: "Give up converging after this long.",
    },
    "cloud-latency-ms": {
      type: "string",
      placeholder: "MS",
      default: "20",
      description: "Latency of every simulated cloud API call.",
    },
    "kubeconfig-dir": {
      type: "string",
      placeholder: "DIR",
      description:
        "Where to write one kubeconfig per simulated cluster and the fleet API's token (default: a new fleet-ccm-demo-XXXXXX folder of this run in the temporary directory, readable by you only). The files are removed when the demo stops, and the default folder with them.",
    },
    "log-level": {
      type: "string",
      placeholder: "LEVEL",
      default: "warn",
      description: "Log level of the hub and agents (logs go to stderr).",
    },
  },
  async run(v) {
    const clusters = int(v, "clusters", 1);
    const nodes = int(v, "nodes", 0);
    const services = int(v, "services", 0);
    const json = bool(v, "json");
    const timeoutMs = int(v, "timeout", 1) * 1000;
    const logger = makeLogger(str(v, "log-level") ?? "warn");
    const progress = new Progress({ verbose: bool(v, "verbose") });
    const say = (line: string) => {
      if (!json) progress.around(() => process.stdout.write(`${line}\n`));
    };
    // The fleet page's token: this demo's own, random, on loopback only.
    const apiToken = randomBytes(24).toString("base64url");
    const provider = str(v, "provider") ?? "simulated";
    if (!isDemoProvider(provider))
      throw new UsageError(`--provider must be one of ${DEMO_PROVIDERS.join(", ")}, got "${provider}"`);
    const cloudName = CLOUD_NAMES[provider];
    say(`starting nats-server, ${cloudName} and ${clusters} simulated clusters…`);
    progress.update(`starting nats-server, ${cloudName} and ${clusters} simulated clusters`);
    const latencyMs = int(v, "cloud-latency-ms", 0);
    const clusterNames = Array.from(
      { length: clusters },
      (_, i) => `cluster-${String(i + 1).padStart(3, "0")}`,
    );
    const cloud = await startCloud(provider, clusterNames, latencyMs);
    const fleet = await LocalFleet.start({
      clusters,
      nodesPerCluster: nodes,
      logger,
      cloudLatencyMs: latencyMs,
      apiToken,
      ...(cloud !== undefined && { cloud }),
    }).catch(async (err: unknown) => {
      // The fleet never started, so it will not close the fake (nor remove the GCP key file).
      await cloud?.close();
      throw err;
    });
    // A folder of this run's own (mode 0700) unless one is given: never one path shared by every
    // user and every run on the machine.
    const givenDir = str(v, "kubeconfig-dir");
    const kubeconfigDir = givenDir ?? mkdtempSync(join(tmpdir(), "fleet-ccm-demo-"));
    if (givenDir !== undefined) mkdirSync(givenDir, { recursive: true });
    say(`kubeconfigs and the fleet API token: ${kubeconfigDir} (removed when the demo stops)`);
    const apiTokenFile = join(kubeconfigDir, "api-token");
    writeFileSync(apiTokenFile, apiToken, { mode: 0o600 });
    const kubeconfigs = [...fleet.clusters.values()].map((c) => {
      const file = join(kubeconfigDir, `${c.name}.kubeconfig`);
      writeFileSync(file, c.kube.kubeconfigYaml(), { mode: 0o600 });
      return file;
    });
    let stopping = false;
    const shutdown = async () => {
      if (stopping) return;
      stopping = true;
      for (const f of [...kubeconfigs, apiTokenFile]) rmSync(f, { force: true });
      if (givenDir === undefined) rmSync(kubeconfigDir, { recursive: true, force: true });
      await fleet.stop();
    };
    try {
      progress.update("starting the hub");
      await fleet.startHub();
      const apiPort = fleet.hub?.apiPort();
      if (apiPort === undefined) throw new Error("the demo hub serves no fleet API");
      const fleetPage = `http://127.0.0.1:${apiPort}/ui/`;
      const readyz = `http://127.0.0.1:${fleet.hub?.healthPort()}/readyz`;
      say(`hub listening on 127.0.0.1:${fleet.hubPort} (gRPC); starting ${clusters} agents…`);
      progress.update(`starting ${clusters} agents`);
      await fleet.startAgents();
      progress.update(`registering ${clusters * nodes} nodes and ${clusters * services} Services`);
      const t0 = Date.now();
      for (const c of fleet.clusters.keys()) {
        fleet.addNodes(c, nodes);
        fleet.addServices(c, services);
      }
      say(
        `${clusters * nodes} nodes registered with the uninitialized taint, as kubelet --cloud-provider=external does`,
      );
      if (services > 0) say(`${clusters * services} LoadBalancer Services created`);
      let last = "";
      const converged = await waitFor(
        () => {
          const p = fleet.progress();
          const s = fleet.serviceProgress();
          const services = s.services > 0 ? `, ${s.withIngress}/${s.services} Services have an ingress` : "";
          const line = `  initialized ${p.initialized}/${p.nodes} nodes${services}`;
          progress.update(line.trim());
          if (line !== last) {
            last = line;
            say(`${line} (${Date.now() - t0} ms)`);
          }
          return p.initialized === p.nodes && s.withIngress === s.services;
        },
        timeoutMs,
        100,
      );
      const p = fleet.progress();
      const s = fleet.serviceProgress();
      progress.done(converged ? "converged" : "did not converge in time");
      const summary: DemoSummary = {
        clusters,
        nodes: p.nodes,
        nodesInitialized: p.initialized,
        services: s.services,
        servicesWithIngress: s.withIngress,
        convergeMs: converged ? Date.now() - t0 : null,
        converged,
        cloudCalls: fleet.cloudCalls(),
        kubeconfigs,
        kubeconfigDir,
        fleetPage,
        apiTokenFile,
        readyz,
      };
      if (json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else {
        say(
          converged
            ? `all ${p.nodes} nodes initialized${s.services > 0 ? ` and ${s.services} load balancers assigned` : ""} in ${summary.convergeMs} ms`
            : "did not converge in time",
        );
      }
      if (bool(v, "exit-when-converged") || !converged) return converged ? 0 : 1;
      const first = kubeconfigs[0] ?? "";
      const cli = cliCommand();
      say(
        [
          `look at the simulated clusters with kubectl (one kubeconfig per cluster in ${kubeconfigDir}):`,
          `  kubectl --kubeconfig ${first} get nodes -o wide       # initialized nodes, their addresses`,
          `  kubectl --kubeconfig ${first} get nodes --show-labels # region, zone, instance type`,
          `  kubectl --kubeconfig ${first} get svc                 # load-balancer IPs (EXTERNAL-IP)`,
          `  kubectl --kubeconfig ${first} get events              # Synced, EnsuredLoadBalancer, …`,
          "and the fleet as the hub sees it:",
          `  fleet page: ${fleetPage}#token=${apiToken}`,
          `  ${cli.command} status --hub http://127.0.0.1:${apiPort} --token-file ${apiTokenFile}`,
          ...(cli.onPath ? [] : [`  (${cli.howToPath})`]),
          `  hub readiness: curl -s ${readyz}   # ok: gRPC listening, NATS connected`,
        ].join("\n"),
      );
      say("running; press Ctrl-C to stop");
      await new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      return 0;
    } finally {
      progress.done();
      await shutdown();
    }
  },
};
