import { readFileSync } from "node:fs";
import { Agent, NatsAuthError } from "@fleet-ccm/agent";
import { isValidClusterName } from "@fleet-ccm/proto";
// The module, not the package index (see agent/src/watch.ts).
import { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import type { Command, FlagValues } from "./flags.js";
import { bool, int, requiredStr, str, UsageError } from "./flags.js";
import { makeLogger } from "./logger.js";

function secretFrom(v: FlagValues, fileFlag: string, envName: string): string | undefined {
  const file = str(v, fileFlag);
  if (file !== undefined) {
    try {
      return readFileSync(file, "utf8").trim();
    } catch (err) {
      throw new UsageError(
        `--${fileFlag}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  }
  const env = process.env[envName];
  return env === undefined || env.trim() === "" ? undefined : env.trim();
}

/**
 * The token as of each connection: a --token-file is read again (a rotated Kubernetes Secret is
 * used at the next reconnect, with no restart); a file that cannot be read keeps the last token.
 */
function tokenReader(file: string | undefined, initial: string): string | (() => string) {
  if (file === undefined) return initial;
  let last = initial;
  return () => {
    try {
      const t = readFileSync(file, "utf8").trim();
      if (t !== "") last = t;
    } catch {
      // Kept: a Secret volume swaps its files atomically, a failed read is a moment.
    }
    return last;
  };
}

export const agentCommand: Command = {
  name: "agent",
  summary: "run the per-cluster agent: stream Nodes/Services to the hub, apply its results",
  usage: "fleet-ccm agent --cluster NAME --hub HOST:PORT --token-file FILE --nats URL [flags]",
  flags: {
    cluster: {
      type: "string",
      placeholder: "NAME",
      description: "This cluster's name in the hub configuration.",
    },
    hub: { type: "string", placeholder: "HOST:PORT", description: "The hub's gRPC address." },
    "token-file": {
      type: "string",
      placeholder: "FILE",
      description: "File with this cluster's hub token (else the FLEET_CCM_TOKEN environment variable).",
    },
    insecure: { type: "boolean", description: "Plain TCP to the hub, no TLS. Only for loopback and tests." },
    "ca-file": {
      type: "string",
      placeholder: "FILE",
      description: "CA bundle to verify the hub's TLS certificate (default: system roots).",
    },
    "cert-file": {
      type: "string",
      placeholder: "FILE",
      description:
        "Mutual TLS: this cluster's client certificate (PEM; it names the cluster). Needs --ca-file and --key-file; the files are read again every minute.",
    },
    "key-file": {
      type: "string",
      placeholder: "FILE",
      description: "Mutual TLS: the client certificate's key.",
    },
    nats: {
      type: "string",
      placeholder: "URL",
      multiple: true,
      description: "NATS server URL, e.g. nats://nats:4222.",
    },
    "nats-user": { type: "string", placeholder: "USER", description: "NATS user for this cluster's agent." },
    "nats-password-file": {
      type: "string",
      placeholder: "FILE",
      description: "File with the NATS password (else the FLEET_CCM_NATS_PASSWORD environment variable).",
    },
    "nats-creds-file": {
      type: "string",
      placeholder: "FILE",
      description:
        "NATS user credentials (.creds, from fleet-ccm register) for decentralized auth, instead of --nats-user and --nats-password-file.",
    },
    "nats-auth-wait-ms": {
      type: "string",
      placeholder: "MS",
      default: "120000",
      description:
        "How long NATS refusing the credentials at start is tried again before the agent exits 1: a cluster registered moments ago is admitted when the hub next reads its configuration (its --reload-interval).",
    },
    kubeconfig: {
      type: "string",
      placeholder: "FILE",
      description:
        "kubeconfig to reach the cluster's API server (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config).",
    },
    "apply-concurrency": {
      type: "string",
      placeholder: "N",
      default: "16",
      description: "Objects patched in parallel.",
    },
    "hub-ping-ms": {
      type: "string",
      placeholder: "MS",
      default: "60000",
      description:
        "How often the hub is pinged (HTTP/2 PING): a hub that does not answer within 10 s (a dead or frozen replica, a broken path) is left for a new connection. Also keeps idle-timeout load balancers and NATs in front of the hub from dropping the connection.",
    },
    "secret-refresh-ms": {
      type: "string",
      placeholder: "MS",
      default: "60000",
      description:
        "How often the Secrets that Services name (TLS certificates of load-balancer ports) are read again, so a rotated certificate reaches the load balancer.",
    },
    "log-level": {
      type: "string",
      placeholder: "LEVEL",
      default: "info",
      description: "trace, debug, info, warn or error.",
    },
  },
  async run(v) {
    const cluster = requiredStr(v, "cluster");
    if (!isValidClusterName(cluster)) throw new UsageError(`--cluster: "${cluster}" is not a DNS-1123 label`);
    const address = requiredStr(v, "hub");
    const certFile = str(v, "cert-file");
    const keyFile = str(v, "key-file");
    if ((certFile === undefined) !== (keyFile === undefined))
      throw new UsageError("--cert-file and --key-file go together");
    const token = secretFrom(v, "token-file", "FLEET_CCM_TOKEN");
    if (token === undefined && certFile === undefined)
      throw new UsageError(
        "a hub token is required: --token-file or FLEET_CCM_TOKEN (or a client certificate)",
      );
    const servers = (v["nats"] as string[] | undefined) ?? [];
    if (servers.length === 0) throw new UsageError("--nats is required");
    const kc = new KubeConfig();
    const kubeconfig = str(v, "kubeconfig");
    if (kubeconfig !== undefined) kc.loadFromFile(kubeconfig);
    else kc.loadFromDefault();
    const caFile = str(v, "ca-file");
    if (certFile !== undefined && caFile === undefined)
      throw new UsageError("--cert-file needs --ca-file (the CA bundle that verifies the hub)");
    const log = makeLogger(str(v, "log-level") ?? "info", { component: "agent", cluster });
    const agent = new Agent({
      cluster,
      kubeConfig: kc,
      hub: {
        address,
        token: tokenReader(str(v, "token-file"), token ?? ""),
        insecure: bool(v, "insecure"),
        pingIntervalMs: int(v, "hub-ping-ms", 100),
        ...(caFile === undefined ? {} : { caPem: readFileSync(caFile) }),
        ...(certFile === undefined || keyFile === undefined || caFile === undefined
          ? {}
          : { tlsFiles: { caFile, certFile, keyFile } }),
      },
      nats: {
        servers,
        ...(str(v, "nats-creds-file") === undefined
          ? {}
          : { creds: secretFrom(v, "nats-creds-file", "FLEET_CCM_NATS_CREDS") }),
        ...(str(v, "nats-user") === undefined ? {} : { user: str(v, "nats-user") }),
        ...(secretFrom(v, "nats-password-file", "FLEET_CCM_NATS_PASSWORD") === undefined
          ? {}
          : { password: secretFrom(v, "nats-password-file", "FLEET_CCM_NATS_PASSWORD") }),
        authWaitMs: int(v, "nats-auth-wait-ms", 0),
      },
      logger: log,
      applyConcurrency: int(v, "apply-concurrency", 1),
      secretRefreshMs: int(v, "secret-refresh-ms", 100),
    });
    // Signals are handled from the start: the agent may wait long for its API server or NATS.
    const signalled = new Promise<void>((resolve) => {
      process.once("SIGTERM", () => resolve());
      process.once("SIGINT", () => resolve());
    });
    try {
      await Promise.race([agent.start(), signalled]);
    } catch (err) {
      if (!(err instanceof NatsAuthError)) throw err;
      // A configuration error: one line that says what to check, no stack trace.
      log.error({ servers: err.servers, user: err.user }, err.message);
      await agent.stop();
      return 1;
    }
    await signalled;
    log.info("shutting down");
    await agent.stop();
    return 0;
  },
};
