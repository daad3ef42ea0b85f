import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  addClusterEntry,
  builtinProviders,
  CloudAccounts,
  ConfigError,
  clusterRegionProblem,
  createNatsAuth,
  deleteClusterResources,
  type HubConfig,
  HubMetrics,
  markClusterDecommissioned,
  natsServerAuthConfig,
  newClusterNatsCredential,
  nextFreePodNetwork,
  ProviderRegistry,
  parseHubConfig,
  pushFleetAccount,
  removeClusterEntry,
  setNatsSection,
  systemClock,
  tokenHash,
} from "@fleet-ccm/hub";
import { isValidClusterName } from "@fleet-ccm/proto";
import { pino } from "pino";
import { agentManifest } from "./agent-manifest.js";
import {
  awaitCleared,
  type Clearing,
  type FleetApiAccess,
  finalizersStayNotice,
  fleetApiAccess,
  kubectlClearCommands,
  kubectlFindCommand,
} from "./decommission.js";
import type { Command } from "./flags.js";
import { bool, int, requiredStr, str, UsageError } from "./flags.js";
import { Progress } from "./progress.js";

function readConfig(path: string): { text: string; config: HubConfig } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
  return { text, config: parseHubConfig(text, path) };
}

/** Replaces the file in one step (a reader never sees half of it), keeping its mode. */
function writeAtomically(path: string, text: string, mode?: number): void {
  let keep = mode;
  try {
    keep ??= statSync(path).mode & 0o777;
  } catch {
    keep ??= 0o600;
  }
  const tmp = join(dirname(path), `.${Date.now()}-${process.pid}.tmp`);
  writeFileSync(tmp, text, { mode: keep });
  chmodSync(tmp, keep);
  renameSync(tmp, path);
}

/**
 * Holds `<config>.lock` while a command reads, changes and writes the configuration, so two
 * commands never lose each other's edit. Returns the release (idempotent).
 */
function lockConfig(path: string): () => void {
  const lock = `${path}.lock`;
  try {
    writeFileSync(lock, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST")
      throw new ConfigError(
        `${lock} exists: another fleet-ccm register/unregister is editing ${path} (remove the lock if none runs)`,
      );
    throw err;
  }
  let held = true;
  return () => {
    if (held) rmSync(lock, { force: true });
    held = false;
  };
}

function fail(cmd: string, err: unknown): number {
  process.stderr.write(`fleet-ccm ${cmd}: ${(err as Error).message}\n`);
  return err instanceof ConfigError ? 2 : 1;
}

interface ConfigEdit {
  readonly text: string;
  readonly config: HubConfig;
  readonly progress: Progress;
  /** Releases the lock once the file is written (work after that needs no lock). */
  readonly unlock: () => void;
}

/**
 * The frame of a command that edits the hub configuration: the config lock held (released at
 * the latest when `edit` ends), a progress line, the file read and parsed, and a failure as its
 * message on stderr and the exit code (2 for a configuration problem, else 1).
 */
async function editConfig(
  cmd: string,
  path: string,
  edit: (e: ConfigEdit) => Promise<number>,
): Promise<number> {
  const progress = new Progress({ verbose: true });
  let unlock = () => {};
  try {
    unlock = lockConfig(path);
    progress.update(`reading ${path}`);
    const { text, config } = readConfig(path);
    return await edit({ text, config, progress, unlock });
  } catch (err) {
    // The status line goes before the message, so the two never share a line.
    progress.done();
    return fail(cmd, err);
  } finally {
    progress.done();
    unlock();
  }
}

function scopeTags(list: readonly string[]): Record<string, string> | undefined {
  if (list.length === 0) return undefined;
  const tags: Record<string, string> = {};
  for (const kv of list) {
    const at = kv.indexOf("=");
    if (at <= 0) throw new UsageError(`--scope-tag: expected KEY=VALUE, got "${kv}"`);
    tags[kv.slice(0, at)] = kv.slice(at + 1);
  }
  return tags;
}

/** --pod-network: explicit CIDRs, or "auto" for the next free block of the fleet's pool. */
function podNetworkOf(
  flag: string | undefined,
  config: HubConfig,
  path: string,
): { cidrs: string[] } | undefined {
  if (flag === undefined) return undefined;
  if (flag !== "auto") return { cidrs: flag.split(",").map((c) => c.trim()) };
  if (config.podNetworkPool === undefined)
    throw new ConfigError(`${path}: --pod-network auto takes blocks from podNetworkPool, which is not set`);
  try {
    return { cidrs: nextFreePodNetwork(config.podNetworkPool, config.clusters) };
  } catch (err) {
    throw new ConfigError(`${path}: ${(err as Error).message}`);
  }
}

export const registerCommand: Command = {
  name: "register",
  summary: "add a cluster to the hub: its credentials, and the manifest that installs its agent",
  usage: "fleet-ccm register <cluster> --config hub.yaml --account NAME --hub-address HOST:PORT [flags]",
  positional: "cluster",
  flags: {
    config: {
      type: "string",
      placeholder: "FILE",
      description: "The hub configuration to add the cluster to.",
    },
    account: {
      type: "string",
      placeholder: "NAME",
      description: "The cloud account (accounts[].name) the cluster runs in.",
    },
    region: {
      type: "string",
      placeholder: "REGION",
      description: "The account's region the cluster runs in (required when the account serves several).",
    },
    "hub-address": {
      type: "string",
      placeholder: "HOST:PORT",
      description: "The hub's gRPC address as the cluster's nodes reach it.",
    },
    "nats-url": {
      type: "string",
      placeholder: "URL",
      description: "The NATS URL as the cluster's nodes reach it (default: the config's first nats.servers).",
    },
    "ca-file": {
      type: "string",
      placeholder: "FILE",
      description:
        "CA that signed the hub's (and NATS') certificate, put in the Secret (default: system roots).",
    },
    "scope-tag": {
      type: "string",
      placeholder: "KEY=VALUE",
      multiple: true,
      description:
        "Instances of the cluster carry this cloud tag (clusters[].scope.tags); others are refused.",
    },
    network: {
      type: "string",
      placeholder: "NETWORK",
      description: "The cluster's VPC / network (clusters[].network).",
    },
    "configure-cloud-routes": {
      type: "boolean",
      description: "Program VPC routes for the cluster's pod CIDRs (clusters[].configureCloudRoutes).",
    },
    "pod-network": {
      type: "string",
      placeholder: "CIDRS|auto",
      description:
        "The hub allocates the nodes' pod CIDRs from these (comma-separated, dual-stack: one per family), or from the next free block of podNetworkPool with auto (clusters[].podNetwork).",
    },
    image: {
      type: "string",
      placeholder: "IMAGE",
      description: "The agent image (default: deploy/agent's).",
    },
    output: {
      type: "string",
      short: "o",
      placeholder: "FILE",
      description: "Write the manifest here (mode 0600) instead of stdout.",
    },
  },
  async run(v) {
    const cluster = requiredStr(v, "cluster");
    if (!isValidClusterName(cluster)) throw new UsageError(`"${cluster}" is not a DNS-1123 label`);
    const path = resolve(requiredStr(v, "config"));
    const account = requiredStr(v, "account");
    const hubAddress = requiredStr(v, "hub-address");
    if (!/^(\[[0-9a-fA-F:.]+\]|[^:\s/]+):\d{1,5}$/.test(hubAddress))
      throw new UsageError(
        `--hub-address: expected HOST:PORT, e.g. hub.example.com:7443, got "${hubAddress}"`,
      );
    return editConfig("register", path, async ({ text, config, progress, unlock }) => {
      if (config.clusters.some((c) => c.name === cluster))
        throw new ConfigError(
          `${path}: cluster "${cluster}" is already registered (fleet-ccm unregister first)`,
        );
      if (!config.accounts.some((a) => a.name === account))
        throw new ConfigError(
          `${path}: no account "${account}" (accounts: ${config.accounts.map((a) => a.name).join(", ")})`,
        );
      const operator = config.nats.operator;
      if (operator === undefined)
        throw new ConfigError(
          `${path}: nats.operator is not set: register issues NATS credentials with decentralized auth; run fleet-ccm nats-init first (README, "Getting started")`,
        );
      const caFile = str(v, "ca-file");
      const caPem = caFile === undefined ? undefined : readFileSync(caFile, "utf8");
      progress.update("creating the cluster's hub token and NATS credential");
      const token = randomBytes(32).toString("base64url");
      const nats = await newClusterNatsCredential(operator.account, cluster);
      const tags = scopeTags((v["scope-tag"] as string[] | undefined) ?? []);
      const podNetwork = podNetworkOf(str(v, "pod-network"), config, path);
      const entry: Record<string, unknown> = {
        name: cluster,
        account,
        ...(str(v, "region") === undefined ? {} : { region: str(v, "region") }),
        ...(str(v, "network") === undefined ? {} : { network: str(v, "network") }),
        tokenHash: tokenHash(token),
        natsSigningKey: nats.signingKey,
        ...(bool(v, "configure-cloud-routes") ? { configureCloudRoutes: true } : {}),
        ...(tags === undefined ? {} : { scope: { tags } }),
        ...(podNetwork === undefined ? {} : { podNetwork }),
      };
      progress.update("building the agent manifest");
      const image = str(v, "image");
      const manifest = agentManifest({
        cluster,
        hubAddress,
        natsUrl: str(v, "nats-url") ?? config.nats.servers[0] ?? "",
        token,
        natsCreds: nats.creds,
        ...(caPem === undefined ? {} : { caPem }),
        ...(image === undefined ? {} : { image }),
      });
      const next = addClusterEntry(text, entry, path);
      // The cluster's bindings (account, region) are checked as the hub checks them.
      for (const [i, c] of next.config.clusters.entries()) {
        const served = next.config.accounts.find((a) => a.name === c.account)?.regions ?? [];
        const problem = clusterRegionProblem(c, i, served);
        if (problem !== undefined)
          throw new ConfigError(`${path}: ${problem}${c.name === cluster ? " (--region)" : ""}`);
      }
      const out = str(v, "output");
      if (out !== undefined) writeAtomically(resolve(out), manifest, 0o600);
      progress.update(`adding ${cluster} to ${path}`);
      writeAtomically(path, next.text);
      unlock();
      progress.done();
      if (out === undefined) process.stdout.write(manifest);
      process.stderr.write(
        [
          `registered cluster ${cluster} in ${path}: a running hub admits it within its --reload-interval (no restart).`,
          ...(podNetwork === undefined
            ? []
            : [`Its nodes get pod CIDRs from ${podNetwork.cidrs.join(", ")} (clusters[].podNetwork).`]),
          `The hub keeps only the token's digest; the token and the NATS credential are in the manifest${out === undefined ? "" : ` ${out}`} only.`,
          `Install the agent: kubectl --context <${cluster}> apply -f ${out ?? "<the manifest>"}`,
          "",
        ].join("\n"),
      );
      return 0;
    });
  },
};

export const unregisterCommand: Command = {
  name: "unregister",
  summary: "remove a cluster from the hub: revoke its credentials, optionally delete its cloud resources",
  usage: "fleet-ccm unregister <cluster> --config hub.yaml [--delete-cloud-resources [--hub URL]]",
  positional: "cluster",
  flags: {
    config: {
      type: "string",
      placeholder: "FILE",
      description: "The hub configuration to remove the cluster from.",
    },
    "delete-cloud-resources": {
      type: "boolean",
      description:
        "First have the running hub delete the cluster's load balancers and clear its Services' finalizer and ingress through the agent, then delete every load balancer and route left (needs the account's credentials where this runs).",
    },
    hub: {
      type: "string",
      placeholder: "URL",
      description:
        "With --delete-cloud-resources: the hub's fleet API, to follow the clearing (default: from api.listen, token api.token).",
    },
    "clear-timeout": {
      type: "string",
      placeholder: "MS",
      default: "120000",
      description:
        "With --delete-cloud-resources: how long the hub and the cluster's agent get to clear the Services before the cluster is revoked anyway.",
    },
    grace: {
      type: "string",
      placeholder: "MS",
      default: "3000",
      description:
        "With --delete-cloud-resources: time the running hub gets to drop the cluster before what is left is deleted.",
    },
  },
  async run(v) {
    const cluster = requiredStr(v, "cluster");
    const path = resolve(requiredStr(v, "config"));
    const deleteCloud = bool(v, "delete-cloud-resources");
    const grace = int(v, "grace", 0);
    const clearTimeout = int(v, "clear-timeout", 0);
    let cloud: CloudAccounts | undefined;
    let clearing: Clearing | undefined;
    if (deleteCloud) {
      // 1. The hub is told (clusters[].decommission), through its configuration as for any change.
      let access: FleetApiAccess = { problem: "not set" };
      const marked = await editConfig("unregister", path, async ({ text, config, progress, unlock }) => {
        const entry = config.clusters.find((c) => c.name === cluster);
        if (entry === undefined) throw new ConfigError(`${path}: no cluster "${cluster}"`);
        // The cloud credentials are resolved before anything changes: a missing one fails here.
        cloud = await CloudAccounts.create(
          config.accounts.filter((a) => a.name === entry.account),
          [entry],
          {
            registry: new ProviderRegistry(builtinProviders),
            clock: systemClock,
            logger: pino({ level: "silent" }),
            metrics: new HubMetrics(),
            refresh: config.refresh,
            maxConcurrentRouteWrites: config.routes.maxConcurrentPerAccount,
          },
        );
        access = fleetApiAccess(config, str(v, "hub"));
        if (!entry.decommission) {
          progress.update(`marking ${cluster} for decommission in ${path}`);
          writeAtomically(path, markClusterDecommissioned(text, cluster, path).text);
        }
        unlock();
        return 0;
      });
      if (marked !== 0) return marked;
      process.stderr.write(
        `decommissioning ${cluster}: the running hub deletes each Service's load balancer, then clears its finalizer and ingress through the agent\n`,
      );
      // 2. Followed through the fleet API until the agent's reports show every Service cleared.
      const progress = new Progress({ verbose: true });
      clearing = await awaitCleared(access, cluster, clearTimeout, progress);
      progress.done();
      if (clearing.done) process.stderr.write(`the hub cleared every LoadBalancer Service of ${cluster}\n`);
      else
        process.stderr.write(
          `the hub did not confirm that ${cluster}'s Services are cleared within ${Math.round(clearTimeout / 1000)} s: ${clearing.why ?? "no answer"}\n`,
        );
    }
    // 3. Revoked: removed from the configuration (the hub closes its streams), NATS refuses it.
    return editConfig("unregister", path, async ({ text, config, progress, unlock }) => {
      const entry = config.clusters.find((c) => c.name === cluster);
      if (entry === undefined) throw new ConfigError(`${path}: no cluster "${cluster}"`);
      const next = removeClusterEntry(text, cluster, path);
      progress.update(`removing ${cluster} from ${path}`);
      writeAtomically(path, next.text);
      unlock();
      process.stderr.write(
        `removed cluster ${cluster} from ${path}: a running hub closes its streams and refuses its token within its --reload-interval\n`,
      );
      if (config.nats.operator !== undefined && entry.natsSigningKey !== undefined) {
        progress.update("revoking the cluster's NATS credential");
        try {
          await pushFleetAccount(config.nats, next.config.clusters);
          process.stderr.write(
            `revoked ${cluster}'s NATS credential: its agent is disconnected and refused\n`,
          );
        } catch (err) {
          process.stderr.write(
            `could not revoke on NATS from here (${(err as Error).message}); the hub revokes it when it reloads its configuration\n`,
          );
        }
      }
      if (cloud === undefined) {
        progress.done();
        process.stderr.write(`${finalizersStayNotice(cluster)}\n`);
        return 0;
      }
      // 4. Whatever is left (the hub could not reach it, routes): deleted from here.
      let code = 0;
      const bound = cloud.cloudFor(cluster);
      if (bound === undefined) throw new Error(`cluster "${cluster}": no cloud provider bound`);
      progress.update(`waiting ${grace} ms for the hub to drop ${cluster}`);
      await new Promise((r) => setTimeout(r, grace));
      progress.update(`deleting ${cluster}'s cloud resources`);
      const report = await deleteClusterResources(bound.provider, bound.target, {
        onProgress: (s) => progress.update(s),
      });
      progress.done();
      for (const lb of report.loadBalancers)
        process.stdout.write(
          `deleted load balancer ${lb.name} (id ${lb.id}, Service uid ${lb.serviceUid})\n`,
        );
      for (const r of report.routes)
        process.stdout.write(`deleted route ${r.destinationCIDR} (id ${r.id})\n`);
      process.stdout.write(
        `deleted ${report.loadBalancers.length} load balancer(s) and ${report.routes.length} route(s) of ${cluster}\n`,
      );
      for (const p of report.problems) process.stderr.write(`not deleted: ${p}\n`);
      if (report.problems.length > 0) code = 1;
      // 5. What the hub could not clear: the commands that do, once the load balancers are gone.
      if (clearing !== undefined && !clearing.done) {
        code = 1;
        const left = clearing.left ?? [];
        if (report.problems.length > 0)
          process.stdout.write(
            'clear a Service\'s finalizer only once its load balancer is deleted (see "not deleted" above)\n',
          );
        if (left.length === 0)
          // Never a current answer: which Services are left is unknown here.
          process.stdout.write(
            `not cleared: the hub never said which Services of ${cluster} are left; list those with a finalizer, and remove service.kubernetes.io/load-balancer-cleanup from each:\n  ${kubectlFindCommand(cluster)}\n`,
          );
        for (const svc of left)
          process.stdout.write(
            `not cleared: Service ${svc.namespace}/${svc.name}:\n${kubectlClearCommands(cluster, svc)
              .map((c) => `  ${c}\n`)
              .join("")}`,
          );
      }
      return code;
    });
  },
};

export const natsInitCommand: Command = {
  name: "nats-init",
  summary: "create the fleet's NATS operator, accounts and the hub's NATS credentials (decentralized auth)",
  usage: "fleet-ccm nats-init --dir DIR [--config hub.yaml] [flags]",
  flags: {
    dir: {
      type: "string",
      placeholder: "DIR",
      description: "Where to write the keys, credentials and nats-server config.",
    },
    config: {
      type: "string",
      placeholder: "FILE",
      description: "Also set this hub configuration's nats section to use them (keeps the rest of the file).",
    },
    "nats-url": {
      type: "string",
      placeholder: "URL",
      multiple: true,
      default: "nats://127.0.0.1:4222",
      description: "NATS server URLs the hub dials (with --config).",
    },
    "secrets-path": {
      type: "string",
      placeholder: "DIR",
      description: "Where the hub finds the files of --dir (e.g. a Secret's mount path; default: --dir).",
    },
    "resolver-dir": {
      type: "string",
      placeholder: "DIR",
      default: "/data/nats/jwt",
      description: "The nats-server directory that keeps account JWTs (writable by nats-server).",
    },
  },
  async run(v) {
    const dir = resolve(requiredStr(v, "dir"));
    const urls = v["nats-url"];
    const servers = Array.isArray(urls) ? urls : [String(urls)];
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const setup = await createNatsAuth();
      const secret = (name: string, value: string) =>
        writeFileSync(join(dir, name), `${value}\n`, { mode: 0o600, flag: "wx" });
      secret("operator.seed", setup.operatorSeed);
      secret("system.creds", setup.systemCreds);
      secret("hub.creds", setup.hubCreds);
      secret("fleet-account.seed", setup.fleetAccountSeed);
      writeFileSync(
        join(dir, "nats-auth.conf"),
        natsServerAuthConfig(setup, str(v, "resolver-dir") ?? "/data/nats/jwt"),
        {
          mode: 0o644,
          flag: "wx",
        },
      );
      const at = str(v, "secrets-path") ?? dir;
      const nats = {
        servers,
        credentials: { file: join(at, "hub.creds") },
        operator: {
          account: setup.fleetAccount,
          signingKey: { file: join(at, "operator.seed") },
          systemCredentials: { file: join(at, "system.creds") },
        },
      };
      const configPath = str(v, "config");
      if (configPath !== undefined) {
        const path = resolve(configPath);
        const text = setNatsSection(readFileSync(path, "utf8"), nats, path);
        parseHubConfig(text, path);
        writeAtomically(path, text);
      }
      process.stdout.write(
        [
          `wrote ${dir}:`,
          "  nats-auth.conf      include it in nats-server's configuration (no secret in it)",
          "  operator.seed       the hub signs the fleet account with it (secret)",
          "  system.creds        the hub pushes the fleet account with it (secret)",
          "  hub.creds           the hub's NATS user (secret)",
          "  fleet-account.seed  only to issue a new hub.creds: keep it offline (secret)",
          configPath === undefined
            ? `hub configuration nats section:\n${JSON.stringify(nats, null, 2)}`
            : `set nats in ${configPath}`,
          "",
        ].join("\n"),
      );
      return 0;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST")
        return fail("nats-init", new Error(`${dir} already holds a NATS setup; choose another --dir`));
      return fail("nats-init", err);
    }
  },
};
