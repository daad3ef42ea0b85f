/**
 * Joining and leaving a fleet as a user does it, end to end: a real nats-server with
 * decentralized auth (fleet-ccm nats-init's operator and accounts), the hub as a process on a
 * config file, `fleet-ccm register` adding clusters to that file while the hub runs, agents as
 * processes with nothing but the credentials of register's manifest, and `fleet-ccm unregister`
 * revoking one (gRPC stream closed, NATS refused) and deleting its cloud resources: the hub
 * first clears its Services' finalizer and ingress through the agent, so `kubectl delete svc`
 * (the machine's kubectl against the cluster's simulator) completes; with the agent down,
 * unregister prints the kubectl commands that do it.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createNatsAuth, type NatsAuthSetup, parseHubConfig } from "@fleet-ccm/hub";
import { CLUSTER_TAG, freePort } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { parseAllDocuments } from "yaml";
import { agentBaseObjects } from "../cli/src/agent-manifest.js";
import { DEMO_ACCOUNT, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { metricSum } from "./hub-metrics.js";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const OWNER_TAG = "fleet-ccm.io/cluster";
const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });

let fleet: LocalFleet;
let auth: NatsAuthSetup;
let dir: string;
let configPath: string;
let hub: { child: ChildProcess; grpcPort: number; httpPort: number; output: () => string };
const agents = new Map<string, ChildProcess>();
const creds = new Map<string, { token: string; natsCreds: string; manifest: Record<string, unknown>[] }>();
const [A, B, C, D] = ["cluster-001", "cluster-002", "cluster-003", "cluster-004"] as const;
const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";
const KUBECTL = process.env["KUBECTL"] ?? "/usr/bin/kubectl";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: readonly string[], env: Record<string, string> = fleet.hubEnv()): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { timeout: 60_000, env: { ...process.env, ...env } },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function natsAs(natsCreds: string): Promise<NatsConnection> {
  return connect({
    servers: fleet.nats.url,
    authenticator: credsAuthenticator(new TextEncoder().encode(natsCreds)),
    maxReconnectAttempts: 0,
    timeout: 3000,
  });
}

/** Whether NATS refuses these credentials outright. */
async function refused(natsCreds: string): Promise<boolean> {
  try {
    const nc = await natsAs(natsCreds);
    await nc.close();
    return false;
  } catch (err) {
    return /authorization/i.test(String((err as Error).message));
  }
}

/** The machine's kubectl against the cluster's API simulator (in this process: never spawnSync). */
function kubectl(cluster: string, shellArgs: string): Promise<{ code: number; out: string }> {
  const kubeconfig = join(dir, `${cluster}.kubeconfig`);
  writeFileSync(kubeconfig, fleet.cluster(cluster).kube.kubeconfigYaml(), { mode: 0o600 });
  const line = `${KUBECTL} --kubeconfig ${kubeconfig} --cache-dir ${join(dir, "kube-cache")} ${shellArgs}`;
  return new Promise((resolve) => {
    execFile("bash", ["-c", line], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

/** Each LoadBalancer Service's finalizers and ingress, as the cluster's API server has them. */
function servicesOf(cluster: string) {
  return fleet
    .services(cluster)
    .filter((s) => s.spec?.type === "LoadBalancer")
    .map((s) => ({
      name: s.metadata?.name,
      finalizers: s.metadata?.finalizers ?? [],
      ingress: s.status?.loadBalancer?.ingress ?? [],
    }));
}

function initialized(cluster: string): number {
  return fleet.nodes(cluster).filter((n) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED))
    .length;
}

async function register(cluster: string, extra: readonly string[] = [], config = configPath): Promise<void> {
  const out = join(dir, `${cluster}.yaml`);
  const r = await cli([
    "register",
    cluster,
    "--config",
    config,
    "--account",
    DEMO_ACCOUNT,
    "--hub-address",
    `127.0.0.1:${hub.grpcPort}`,
    "--scope-tag",
    `${CLUSTER_TAG}=${cluster}`,
    "-o",
    out,
    ...extra,
  ]);
  expect(r.stderr).toContain(`registered cluster ${cluster}`);
  expect(r.code).toBe(0);
  const manifest = parseAllDocuments(readFileSync(out, "utf8")).map(
    (d) => d.toJS() as Record<string, unknown>,
  );
  const secret = manifest.find((o) => o["kind"] === "Secret") as { stringData: Record<string, string> };
  creds.set(cluster, {
    token: secret.stringData["token"] ?? "",
    natsCreds: secret.stringData["nats.creds"] ?? "",
    manifest,
  });
}

function startAgent(cluster: string, output?: string[]): void {
  const c = creds.get(cluster);
  agents.set(
    cluster,
    fleet.spawnAgentProcess(cluster, {
      token: c?.token ?? "",
      natsCreds: c?.natsCreds ?? "",
      logLevel: output === undefined ? "error" : "warn",
      ...(output === undefined ? {} : { output }),
    }),
  );
}

beforeAll(async () => {
  auth = await createNatsAuth();
  const apiPort = await freePort();
  fleet = await LocalFleet.start({
    clusters: 4,
    nodesPerCluster: 0,
    logger,
    natsAuth: auth,
    unregistered: true,
    convergeDeadlineMs: 2000,
    // The fleet API on a fixed port: unregister follows the hub's clearing there (api.listen).
    apiToken: "register-e2e-api-token",
    hubConfig: {
      api: { listen: `127.0.0.1:${apiPort}`, token: { env: "FLEET_CCM_API_TOKEN" } },
      // Where `register --pod-network auto` takes each cluster's pod network from.
      podNetworkPool: { cidrs: ["10.200.0.0/14"] },
    },
  });
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-register-"));
  configPath = join(dir, "hub.yaml");
  hub = await fleet.spawnHubProcess(undefined, {
    configPath,
    captureOutput: true,
    logLevel: "info",
    args: ["--reload-interval", "200"],
  });
  // Ready: gRPC up, NATS connected with the hub's credentials, the fleet account pushed.
  const ready = await waitFor(async () => {
    const r = await fetch(`http://127.0.0.1:${hub.httpPort}/readyz`).catch(() => undefined);
    return r?.status === 200;
  }, 20_000);
  if (!ready) throw new Error(`hub not ready:\n${hub.output()}`);
});

afterAll(async () => {
  for (const a of agents.values()) a.kill("SIGKILL");
  hub?.child.kill("SIGKILL");
  await fleet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("register", () => {
  test("a cluster registered into the running hub: its agent, with only the manifest's credentials, initializes its nodes", async () => {
    // Registered into a copy of the configuration that reaches the hub only later (as a
    // ConfigMap's update, or the hub's --reload-interval, would): the agent starts before the
    // hub admits the cluster, NATS refuses it for now, and it waits, saying why.
    const staged = join(dir, "hub.staged.yaml");
    copyFileSync(configPath, staged);
    await register(A, ["--pod-network", "auto"], staged);
    const output: string[] = [];
    startAgent(A, output);
    const refusal = "NATS accepting the agent's credentials failed";
    expect(await waitFor(() => output.some((l) => l.includes(refusal)), 30_000)).toBe(true);
    renameSync(staged, configPath);

    const cfg = parseHubConfig(readFileSync(configPath, "utf8"));
    const entry = cfg.clusters.find((c) => c.name === A);
    // The hub keeps the token's digest only; the token is in the manifest only.
    expect(entry?.tokenHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(entry?.token).toBeUndefined();
    expect(readFileSync(configPath, "utf8")).not.toContain(creds.get(A)?.token ?? "?");
    expect(entry?.natsSigningKey).toMatch(/^A/);

    const waiting = output.find((l) => l.includes(refusal)) ?? "";
    expect(waiting).toContain("--reload-interval");
    expect(waiting).not.toContain(
      creds
        .get(A)
        ?.natsCreds.split("\n")
        .find((l) => l.startsWith("SU")) ?? "?",
    );
    fleet.addNodes(A, 3);
    expect(await waitFor(() => initialized(A) === 3, 30_000)).toBe(true);
    expect(agents.get(A)?.exitCode).toBeNull();
    expect(output.filter((l) => l.includes('"level":50'))).toEqual([]);
    expect(hub.output()).toContain('"msg":"configuration reloaded"');
  });

  test("the manifest is deploy/agent's objects plus the cluster's ConfigMap and Secret, nothing else", () => {
    const manifest = creds.get(A)?.manifest ?? [];
    const kinds = manifest.map((o) => o["kind"]);
    expect(kinds).toEqual([
      "Namespace",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "ResourceQuota",
      "ConfigMap",
      "Secret",
      "Deployment",
    ]);
    const base = agentBaseObjects();
    // RBAC, namespace, quota: byte for byte the objects of deploy/agent.
    for (const kind of ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ResourceQuota"])
      expect(manifest.find((o) => o["kind"] === kind)).toEqual(base.find((o) => o["kind"] === kind));
    const cm = manifest.find((o) => o["kind"] === "ConfigMap") as { data: Record<string, string> };
    expect(cm.data).toEqual({
      CLUSTER_NAME: A,
      HUB_ADDRESS: `127.0.0.1:${hub.grpcPort}`,
      NATS_URL: fleet.nats.url,
    });
    const deployment = manifest.find((o) => o["kind"] === "Deployment") as {
      spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } };
    };
    expect(deployment.spec.replicas).toBe(1);
    const args = deployment.spec.template.spec.containers[0]?.args ?? [];
    expect(args).toContain("--nats-creds-file");
    // No CA given: the agent trusts the system roots.
    expect(args).not.toContain("--ca-file");
  });

  test("an agent's NATS credential reads only its own cluster's subjects and publishes nothing", async () => {
    await register(B, ["--configure-cloud-routes", "--pod-network", "auto"]);
    startAgent(B);
    fleet.addNodes(B, 2);
    expect(await waitFor(() => initialized(B) === 2, 30_000)).toBe(true);

    const nc = await natsAs(creds.get(A)?.natsCreds ?? "");
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error") errors.push(String(s.error?.message));
    })();
    const seen: string[] = [];
    const record = (e: Error | null, m: { subject: string }) => {
      if (e === null) seen.push(m.subject);
    };
    nc.subscribe(`fleet.v1.${B}.>`, { callback: record });
    nc.subscribe(">", { callback: record });
    nc.publish(`fleet.v1.${A}.desired`, "forged");
    nc.publish(`fleet.v1.${B}.desired`, "forged");
    await nc.flush();
    expect(
      await waitFor(
        () =>
          errors.some((e) => e.includes(`Subscription to "fleet.v1.${B}.>"`)) &&
          errors.some((e) => e.includes('Subscription to ">"')) &&
          errors.some((e) => e.includes(`Publish to "fleet.v1.${A}.desired"`)) &&
          errors.some((e) => e.includes(`Publish to "fleet.v1.${B}.desired"`)),
        5000,
      ),
    ).toBe(true);
    await nc.close();
    expect(seen).toEqual([]);
  });
});

describe("register --pod-network auto", () => {
  test("each cluster gets the next free block of podNetworkPool; the running hub gives its nodes ranges from it, routed", async () => {
    const cfg = parseHubConfig(readFileSync(configPath, "utf8"));
    expect(cfg.clusters.map((c) => [c.name, c.podNetwork?.cidrs])).toEqual([
      [A, ["10.200.0.0/16"]],
      [B, ["10.201.0.0/16"]],
    ]);
    const ranges = (cluster: string) =>
      fleet.nodes(cluster).map((n) => (n.spec as { podCIDR?: string } | undefined)?.podCIDR ?? "");
    expect(
      await waitFor(
        () =>
          ranges(A).every((r) => r.startsWith("10.200.")) && ranges(B).every((r) => r.startsWith("10.201.")),
        30_000,
      ),
    ).toBe(true);
    expect(new Set([...ranges(A), ...ranges(B)]).size).toBe(5);
    // B programs VPC routes: the route controller routes what the hub allocated, as any range.
    expect(
      await waitFor(() => {
        const routed = new Set(fleet.cloud.routes().map((r) => r.destinationCidr));
        return ranges(B).every((r) => routed.has(r));
      }, 30_000),
    ).toBe(true);
    // What a user sees, with the machine's kubectl.
    const got = await kubectl(A, "get nodes -o jsonpath='{.items[*].spec.podCIDR}'");
    expect(got.out.split(" ").sort()).toEqual([...ranges(A)].sort());
  });
});

describe("config edits", () => {
  test("register refuses while another edit holds the configuration's lock, and changes nothing", async () => {
    const before = readFileSync(configPath, "utf8");
    writeFileSync(`${configPath}.lock`, "4242\n");
    try {
      const r = await cli([
        "register",
        "cluster-009",
        "--config",
        configPath,
        "--account",
        DEMO_ACCOUNT,
        "--hub-address",
        "127.0.0.1:1",
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("another fleet-ccm register/unregister is editing");
      expect(r.stdout).toBe("");
    } finally {
      rmSync(`${configPath}.lock`);
    }
    expect(readFileSync(configPath, "utf8")).toBe(before);
  });
});

describe("unregister", () => {
  test("revokes the cluster: stream closed, NATS refused within seconds, its cloud resources deleted; the other cluster carries on", async () => {
    // Cloud resources of B: two load balancers, and the routes of its two nodes' pod CIDRs (the
    // hub allocated them from B's pod network).
    fleet.addServices(B, 2);
    const ownedByB = () => {
      const inv = fleet.cloud.inventory();
      return {
        loadBalancers: inv.loadBalancers.filter((x) => x.tags[OWNER_TAG] === B).length,
        routes: fleet.cloud.routes().filter((r) => r.tags[OWNER_TAG] === B).length,
      };
    };
    expect(
      await waitFor(() => {
        const o = ownedByB();
        return o.loadBalancers === 2 && o.routes === 2;
      }, 30_000),
    ).toBe(true);
    expect(await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_hub_streams_connected")).toBe(2);
    expect(await refused(creds.get(B)?.natsCreds ?? "")).toBe(false);

    const startedAt = Date.now();
    expect(
      await waitFor(
        () => servicesOf(B).every((s) => s.finalizers.includes(FINALIZER) && s.ingress.length > 0),
        30_000,
      ),
    ).toBe(true);
    const r = await cli([
      "unregister",
      B,
      "--config",
      configPath,
      "--delete-cloud-resources",
      "--grace",
      "1000",
    ]);
    expect(r.stderr).toContain(`revoked ${B}'s NATS credential`);
    expect(r.code).toBe(0);
    // The hub deleted the load balancers and cleared the Services through the agent, before the
    // revocation; what unregister deletes itself is what was left: the route.
    expect(r.stderr).toContain(`the hub cleared every LoadBalancer Service of ${B}`);
    expect(r.stderr.indexOf("the hub cleared every")).toBeLessThan(r.stderr.indexOf(`removed cluster ${B}`));
    expect(r.stdout).toContain(`deleted 0 load balancer(s) and 2 route(s) of ${B}`);
    expect(r.stdout).not.toContain("not cleared");
    expect(ownedByB()).toEqual({ loadBalancers: 0, routes: 0 });
    expect(servicesOf(B)).toEqual([
      { name: expect.any(String), finalizers: [], ingress: [] },
      { name: expect.any(String), finalizers: [], ingress: [] },
    ]);
    // Nothing left to wait for: kubectl delete returns, the Services are gone.
    const del = await kubectl(B, "delete svc --all -n default --timeout=20s");
    expect(del.out).not.toMatch(/timed out/);
    expect(del.code).toBe(0);
    expect(fleet.services(B).filter((s) => s.spec?.type === "LoadBalancer")).toEqual([]);

    // NATS refuses B's credential, and B's stream is gone.
    expect(await waitFor(() => refused(creds.get(B)?.natsCreds ?? ""), 5000)).toBe(true);
    expect(
      await waitFor(
        async () => (await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_hub_streams_connected")) === 1,
        5000,
      ),
    ).toBe(true);
    const revokedWithinMs = Date.now() - startedAt;
    process.stdout.write(`unregister: revoked and cleaned up in ${revokedWithinMs} ms\n`);
    expect(parseHubConfig(readFileSync(configPath, "utf8")).clusters.map((c) => c.name)).toEqual([A]);

    // The other cluster is untouched: its credential works, its new node is initialized.
    expect(await refused(creds.get(A)?.natsCreds ?? "")).toBe(false);
    fleet.addNodes(A, 1);
    expect(await waitFor(() => initialized(A) === 4, 30_000)).toBe(true);
    // B's agent no longer gets anywhere: a new node of B stays uninitialized while A's work shows the hub alive.
    expect(initialized(B)).toBe(2);
  }, 120_000);

  test("removed where the NATS operator key is not at hand: the running hub revokes the cluster by itself", async () => {
    await register(C);
    startAgent(C);
    fleet.addNodes(C, 1);
    expect(await waitFor(() => initialized(C) === 1, 30_000)).toBe(true);
    const streams = await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_hub_streams_connected");

    const env = fleet.hubEnv();
    delete env["FLEET_CCM_NATS_OPERATOR"];
    delete env["FLEET_CCM_NATS_SYSTEM"];
    const r = await cli(["unregister", C, "--config", configPath], env);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("the hub revokes it when it reloads its configuration");
    // Without --delete-cloud-resources the finalizers stay (the next CCM cleans up): it says so.
    expect(r.stderr).toContain(`keep their ${FINALIZER} finalizer and their ingress`);
    expect(r.stderr).toContain("To hand cluster-003 to the vendor's CCM");
    const editedAt = Date.now();
    expect(await waitFor(() => refused(creds.get(C)?.natsCreds ?? ""), 5000)).toBe(true);
    process.stdout.write(
      `unregister: the hub alone revoked the NATS credential ${Date.now() - editedAt} ms after the edit\n`,
    );
    expect(
      await waitFor(
        async () =>
          (await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_hub_streams_connected")) === streams - 1,
        5000,
      ),
    ).toBe(true);
    expect(await refused(creds.get(A)?.natsCreds ?? "")).toBe(false);

    // An agent started again with the revoked credential: one clear line, exit 1 (after
    // --nats-auth-wait-ms, a second here).
    const output: string[] = [];
    const again = fleet.spawnAgentProcess(C, {
      token: creds.get(C)?.token ?? "",
      natsCreds: creds.get(C)?.natsCreds ?? "",
      output,
      natsAuthWaitMs: 1000,
    });
    const code = await new Promise<number | null>((resolve) => again.once("exit", (c) => resolve(c)));
    expect(code).toBe(1);
    expect(output.join("\n")).toContain("refused the agent's credentials from --nats-creds-file");
    expect(output.join("\n")).not.toContain(
      creds
        .get(C)
        ?.natsCreds.split("\n")
        .find((l) => l.startsWith("SU")) ?? "?",
    );
  });

  test("with the agent down: the load balancer is deleted, and unregister prints the kubectl commands that clear each Service", async () => {
    await register(D);
    startAgent(D);
    fleet.addNodes(D, 1);
    fleet.addServices(D, 1);
    expect(
      await waitFor(
        () => servicesOf(D).every((s) => s.finalizers.includes(FINALIZER) && s.ingress.length > 0),
        30_000,
      ),
    ).toBe(true);
    const streams = await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_hub_streams_connected");
    agents.get(D)?.kill("SIGKILL");
    expect(
      await waitFor(
        async () =>
          (await metricSum({ httpPort: hub.httpPort }, "fleet_ccm_hub_streams_connected")) === streams - 1,
        15_000,
      ),
    ).toBe(true);

    const r = await cli([
      "unregister",
      D,
      "--config",
      configPath,
      "--delete-cloud-resources",
      "--clear-timeout",
      "3000",
      "--grace",
      "500",
    ]);
    expect(r.stderr).toContain(`the hub did not confirm that ${D}'s Services are cleared within 3 s`);
    expect(r.stderr).toContain("agent is not connected");
    expect(r.stderr).toContain(`revoked ${D}'s NATS credential`);
    expect(r.code).toBe(1);
    expect(fleet.cloud.inventory().loadBalancers.filter((x) => x.tags[OWNER_TAG] === D)).toEqual([]);
    expect(servicesOf(D)[0]?.finalizers).toEqual([FINALIZER]);
    const [svc] = fleet.services(D).filter((s) => s.spec?.type === "LoadBalancer");
    const commands = r.stdout
      .split("\n")
      .filter((l) => l.startsWith(`  kubectl --context ${D} `))
      .map((l) => l.trim());
    expect(r.stdout).toContain(`not cleared: Service default/${svc?.metadata?.name}:`);
    expect(commands).toEqual([
      `kubectl --context ${D} -n default patch svc ${svc?.metadata?.name} --type=json -p '[{"op":"test","path":"/metadata/finalizers/0","value":"${FINALIZER}"},{"op":"remove","path":"/metadata/finalizers/0"}]'`,
      `kubectl --context ${D} -n default patch svc ${svc?.metadata?.name} --subresource=status --type=merge -p '{"status":{"loadBalancer":{"ingress":null}}}'`,
    ]);
    // The printed commands work as printed (the context is the cluster's kubeconfig here).
    for (const c of commands) {
      const ran = await kubectl(D, c.replace(`kubectl --context ${D} `, ""));
      expect(ran.out).toContain("patched");
      expect(ran.code).toBe(0);
    }
    expect(servicesOf(D)).toEqual([{ name: svc?.metadata?.name, finalizers: [], ingress: [] }]);
    const del = await kubectl(D, "delete svc --all -n default --timeout=20s");
    expect(del.code).toBe(0);
    expect(fleet.services(D).filter((s) => s.spec?.type === "LoadBalancer")).toEqual([]);
  }, 120_000);
});
