/**
 * The images without a container engine: scripts/image/stage.mjs lays out each role's tree
 * exactly as its Containerfile does (deploy/images/), and the entrypoint is started from that
 * tree as the images' user (uid 65532 when the test runs as root) in a tree it cannot write
 * to. The Containerfiles, deploy/compose and the manifests are checked against the same facts.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, type NatsServer, startNatsServer, waitFor } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parse, parseAllDocuments } from "yaml";
import { LocalFleet } from "../cli/src/local-fleet.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ROLES = ["hub", "agent"] as const;
type Role = (typeof ROLES)[number];
/** The images' USER and the manifests' runAsUser. */
const IMAGE_UID = 65532;
const AS_IMAGE_USER = process.getuid?.() === 0;
const APP = "opt/fleet-ccm";
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

// Code only the simulators define (sim/src/index.ts exports), and only the hub defines.
const SIM_MARKERS = ["startSimulatedCloud", "startKubeApiServer", "startNatsServer", "SimCloudError"];
const HUB_MARKERS = ["builtinProviders", "simulatedProvider", "loadHubConfig"];
// The cloud SDKs .ci/run keeps out of the agent's dependencies, by names their code carries
// (googleapis by googleapis-common: grpc-js and protobufjs name type.googleapis.com URLs).
const CLOUD_SDK =
  /aws-sdk|@google-cloud\/|googleapis-common|@azure\/|@linode\/|digitalocean|hcloud|openstack/;

let dir: string;
const tree = (role: Role) => join(dir, role);

// biome-ignore lint/suspicious/noExplicitAny: YAML documents are checked field by field.
type Obj = Record<string, any>;

function files(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((p) => lstatSync(join(root, p)).isFile() || lstatSync(join(root, p)).isSymbolicLink())
    .sort();
}

function size(root: string): number {
  return files(root).reduce((n, p) => n + lstatSync(join(root, p)).size, 0);
}

/** The environment of the container: no NODE_OPTIONS of the test runner, a home that does not exist. */
function imageEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: "/nonexistent", ...extra };
}

const asUser = AS_IMAGE_USER ? { uid: IMAGE_UID, gid: IMAGE_UID } : {};

/** The command names `fleet-ccm --help` lists, in order. */
function listedCommands(help: string): string[] {
  const section = help.split("Commands:\n")[1]?.split("\n\n")[0] ?? "";
  return section.split("\n").flatMap((l) => /^ {2}(\S+)/.exec(l)?.[1] ?? []);
}

/** The ENTRYPOINT of the role's Containerfile (its JSON form). */
function imageEntrypoint(role: Role): string[] {
  const text = readFileSync(join(ROOT, `deploy/images/${role}.Containerfile`), "utf8");
  const line = text.split("\n").find((l) => l.startsWith("ENTRYPOINT "));
  return JSON.parse(line?.slice("ENTRYPOINT ".length) ?? "[]") as string[];
}

/**
 * The image's ENTRYPOINT as a command in the staged tree: `fleet-ccm` (through its shebang) or
 * an absolute path is the tree's file, `node` the one on the image's PATH.
 */
function entrypointCommand(role: Role): [string, ...string[]] {
  const [cmd = "", ...rest] = imageEntrypoint(role).map((a) =>
    a === "fleet-ccm"
      ? join(tree(role), "usr/local/bin/fleet-ccm")
      : a.startsWith("/")
        ? join(tree(role), a)
        : a,
  );
  return [cmd, ...rest];
}

/** Runs the image's entrypoint (its Containerfile's ENTRYPOINT) from the tree. */
function entrypoint(role: Role, args: string[], env: NodeJS.ProcessEnv = {}) {
  const [cmd, ...pre] = entrypointCommand(role);
  const r = spawnSync(cmd, [...pre, ...args], {
    cwd: "/",
    env: imageEnv(env),
    encoding: "utf8",
    timeout: 20_000,
    ...asUser,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function packageNames(root: string): string[] {
  return files(root)
    .filter((p) => /(^|\/)node_modules\/(@[^/]+\/)?[^/@]+\/package\.json$/.test(p))
    .map((p) => (JSON.parse(readFileSync(join(root, p), "utf8")) as { name?: string }).name ?? p)
    .sort();
}

/** Files of the tree whose text contains one of the markers. */
function scan(root: string, markers: readonly (string | RegExp)[]): string[] {
  const hits: string[] = [];
  for (const p of files(root)) {
    if (lstatSync(join(root, p)).isSymbolicLink()) continue;
    const text = readFileSync(join(root, p), "utf8");
    for (const m of markers)
      if (typeof m === "string" ? text.includes(m) : m.test(text)) hits.push(`${p}: ${m}`);
  }
  return hits;
}

/** Every file of the tree with its size and modification time. */
function snapshot(root: string): string[] {
  return files(root).map((p) => {
    const st = lstatSync(join(root, p));
    return `${p} ${st.size} ${st.mtimeMs}`;
  });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-images-"));
  chmodSync(dir, 0o755); // the image's user traverses it; everything below stays root's
  for (const role of ROLES) {
    const r = spawnSync(process.execPath, [join(ROOT, "scripts/image/stage.mjs"), role, tree(role)], {
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`stage.mjs ${role}: ${r.stderr}`);
  }
  const sizes = ROLES.map(
    (r) => `${r} ${(size(tree(r)) / 2 ** 20).toFixed(1)} MiB (${files(tree(r)).length} files)`,
  );
  console.log(`image trees, on top of the Node base image: ${sizes.join(", ")}`);
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("agent image tree", () => {
  test("holds the CLI entry and the agent bundle only: no node_modules", () => {
    expect(files(tree("agent"))).toEqual(
      [
        `${APP}/bin/fleet-ccm.js`,
        `${APP}/cli/dist/agent.bundle.js`,
        `${APP}/cli/dist/flags.js`,
        `${APP}/cli/dist/main.js`,
        `${APP}/cli/dist/run-command.js`,
        `${APP}/package.json`,
        "usr/local/bin/fleet-ccm",
      ].sort(),
    );
  });

  test("contains no simulator code, no hub code and no cloud SDK", () => {
    expect(scan(tree("agent"), [...SIM_MARKERS, ...HUB_MARKERS, CLOUD_SDK])).toEqual([]);
  });

  test("the entrypoint runs as the image's user: --help, agent --help, and says hub is not in it", () => {
    const top = entrypoint("agent", ["--help"]);
    expect(top).toMatchObject({ status: 0, stderr: "" });
    expect(top.stdout).toContain("Usage: fleet-ccm <command> [flags]");
    // Only what the image holds: every command listed runs, none answers "not part of this installation".
    expect(listedCommands(top.stdout)).toEqual(["agent"]);
    const agent = entrypoint("agent", ["agent", "--help"]);
    expect(agent).toMatchObject({ status: 0, stderr: "" });
    expect(agent.stdout).toContain("--token-file");
    // Loads the whole bundle and parses the flags: a missing module would fail here.
    const usage = entrypoint("agent", ["agent", "--cluster", "c1"]);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("fleet-ccm agent: ");
    expect(usage.stderr).not.toContain("Error:");
    expect(entrypoint("agent", ["hub", "--help"])).toEqual({
      status: 2,
      stdout: "",
      stderr: "fleet-ccm: the hub command is not part of this installation\n",
    });
  });
});

describe("the agent image tree against a local fleet", () => {
  let fleet: LocalFleet | undefined;
  let agent: ChildProcess | undefined;

  afterAll(async () => {
    if (agent?.exitCode === null) agent.kill("SIGKILL");
    await fleet?.stop();
  });

  test("the agent, run from its tree alone as the image's user, initializes a cluster's nodes", async () => {
    fleet = await LocalFleet.start({ clusters: 1, nodesPerCluster: 0, logger: pino({ level: "silent" }) });
    await fleet.startHub();
    const cluster = [...fleet.clusters.keys()][0] ?? "";
    const c = fleet.cluster(cluster);
    // Its credentials as the Deployment mounts them: files readable by the image's user only.
    const creds = join(dir, "agent-credentials");
    mkdirSync(creds, { mode: 0o755 });
    const credentials: Record<string, string> = {
      kubeconfig: c.kube.kubeconfigYaml(),
      token: c.token,
      "nats-password": c.natsPassword,
    };
    for (const [name, text] of Object.entries(credentials)) {
      writeFileSync(join(creds, name), text, { mode: 0o400 });
      if (AS_IMAGE_USER) chownSync(join(creds, name), IMAGE_UID, IMAGE_UID);
    }
    let stderr = "";
    agent = spawn(
      join(tree("agent"), "usr/local/bin/fleet-ccm"),
      [
        ...["agent", "--cluster", cluster, "--hub", `127.0.0.1:${fleet.hubPort}`, "--insecure"],
        ...["--token-file", join(creds, "token"), "--kubeconfig", join(creds, "kubeconfig")],
        ...["--nats", fleet.nats.url, "--nats-user", `agent-${cluster}`],
        ...["--nats-password-file", join(creds, "nats-password"), "--log-level", "warn"],
      ],
      { cwd: "/", env: imageEnv(), stdio: ["ignore", "ignore", "pipe"], ...asUser },
    );
    agent.stderr?.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    fleet.addNodes(cluster, 3);
    const done = await waitFor(
      () => agent?.exitCode !== null || fleet?.progress().initialized === 3,
      30_000,
      100,
    );
    expect({ done, exitCode: agent.exitCode, stderr, progress: fleet.progress() }).toEqual({
      done: true,
      exitCode: null,
      stderr: "",
      progress: { nodes: 3, initialized: 3 },
    });
    for (const n of fleet.nodes(cluster)) expect(n.spec?.providerID).toMatch(/^simulated:\/\//);
    if (AS_IMAGE_USER)
      expect(readFileSync(`/proc/${agent.pid}/status`, "utf8")).toContain(`\nUid:\t${IMAGE_UID}\t`);
  });
});

describe("hub image tree", () => {
  test("holds hub, proto and their production dependencies: no simulator, no agent, no dev tool", () => {
    const names = packageNames(tree("hub"));
    expect(names).toEqual(
      expect.arrayContaining(["@fleet-ccm/hub", "@fleet-ccm/proto", "@grpc/grpc-js", "pino"]),
    );
    for (const banned of [
      "@fleet-ccm/sim",
      "@fleet-ccm/agent",
      "@kubernetes/client-node",
      "typescript",
      "jest",
      "ts-jest",
      "esbuild",
      "@biomejs/biome",
      "@bufbuild/buf",
      "ts-proto",
    ])
      expect(names).not.toContain(banned);
    expect(scan(tree("hub"), SIM_MARKERS)).toEqual([]);
    // Only what runs: no TypeScript, declarations or source maps, no tests.
    expect(files(tree("hub")).filter((p) => /\.([cm]?ts|map)$|\.test\.js$/.test(p))).toEqual([]);
    expect(files(tree("hub")).filter((p) => p.startsWith(`${APP}/cli/`))).toEqual(
      [
        "agent-manifest.js",
        "decommission.js",
        "flags.js",
        "hub-command.js",
        "logger.js",
        "main.js",
        "progress.js",
        "register-command.js",
        "run-command.js",
        "status-command.js",
      ].map((f) => `${APP}/cli/dist/${f}`),
    );
  });

  test("the entrypoint runs as the image's user: --help, hub --help, and says agent is not in it", () => {
    const top = entrypoint("hub", ["--help"]);
    expect(top).toMatchObject({ status: 0, stderr: "" });
    expect(listedCommands(top.stdout)).toEqual(["hub", "status", "register", "unregister", "nats-init"]);
    for (const cmd of listedCommands(top.stdout))
      expect(entrypoint("hub", [cmd, "--help"])).toMatchObject({ status: 0, stderr: "" });
    const hub = entrypoint("hub", ["hub", "--help"]);
    expect(hub).toMatchObject({ status: 0, stderr: "" });
    // register, unregister and nats-init run from the hub image (with deploy/agent in it).
    for (const cmd of ["register", "unregister", "nats-init"])
      expect(entrypoint("hub", [cmd, "--help"])).toMatchObject({ status: 0, stderr: "" });
    expect(hub.stdout).toContain("--check-config");
    expect(entrypoint("hub", ["agent", "--help"])).toEqual({
      status: 2,
      stdout: "",
      stderr: "fleet-ccm: the agent command is not part of this installation\n",
    });
  });
});

describe("the hub image with deploy/compose", () => {
  const compose = parse(readFileSync(join(ROOT, "deploy/compose/compose.yaml"), "utf8")) as Obj;
  const hubYaml = readFileSync(join(ROOT, "deploy/compose/hub.yaml"), "utf8");
  const hubConfig = parse(hubYaml) as Obj;
  const hubService = compose["services"]["hub"] as Obj;
  const secretFiles = [...hubYaml.matchAll(/\/run\/secrets\/([\w.-]+)/g)].map((m) => m[1] as string);
  const envSecrets = [...hubYaml.matchAll(/env: (\S+)/g)].map((m) => m[1] as string);
  const values: Record<string, string> = {};
  let secrets: string;
  let configs = 0;
  let nats: NatsServer | undefined;
  let hub: ChildProcess | undefined;

  /** hub.yaml as the container sees it, with /run/secrets/ in a temporary directory. */
  function localConfig(edit: (cfg: Obj) => void = () => {}): string {
    const cfg = parse(hubYaml.replaceAll("/run/secrets/", `${secrets}/`)) as Obj;
    edit(cfg);
    const path = join(secrets, `hub-${++configs}.yaml`);
    writeFileSync(path, JSON.stringify(cfg), { mode: 0o644 });
    return path;
  }

  beforeAll(() => {
    secrets = join(dir, "secrets");
    mkdirSync(secrets, { mode: 0o755 });
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=fleet-ccm-hub"],
        ...["-keyout", join(secrets, "tls.key"), "-out", join(secrets, "tls.crt")],
        ...["-addext", "subjectAltName=IP:127.0.0.1"],
      ],
      { stdio: "ignore" },
    );
    for (const name of secretFiles.filter((n) => !n.startsWith("tls."))) {
      values[name] = `${name}-${Math.random().toString(36).slice(2)}`;
      writeFileSync(join(secrets, name), `${values[name]}\n`);
    }
    for (const name of envSecrets) values[name] = `${name}-${Math.random().toString(36).slice(2)}`;
    // As the README says: the secret files belong to the images' user, readable by it alone.
    for (const name of secretFiles) {
      chmodSync(join(secrets, name), 0o400);
      if (AS_IMAGE_USER) chownSync(join(secrets, name), IMAGE_UID, IMAGE_UID);
    }
  });

  afterAll(async () => {
    if (hub?.exitCode === null) hub.kill("SIGKILL");
    await nats?.stop();
  });

  const env = () => Object.fromEntries(envSecrets.map((n) => [n, values[n] ?? ""]));

  test("--check-config accepts deploy/compose/hub.yaml, its secrets from files and the environment", () => {
    expect(secretFiles.length).toBeGreaterThanOrEqual(5);
    expect(envSecrets.length).toBeGreaterThanOrEqual(1);
    const ok = entrypoint("hub", ["hub", "--config", localConfig(), "--check-config"], env());
    expect(ok).toEqual({ status: 0, stdout: "configuration is valid\n", stderr: "" });
    // Without the variable the hub names it, and prints no secret.
    const missing = entrypoint("hub", ["hub", "--config", localConfig(), "--check-config"]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(`environment variable ${envSecrets[0]} is not set`);
    for (const v of Object.values(values)) expect(missing.stdout + missing.stderr).not.toContain(v);
  });

  test("the hub runs from its tree as the image's user, and compose's healthcheck passes", async () => {
    nats = await startNatsServer({
      users: [
        {
          user: "hub",
          password: values["nats-password"] ?? "",
          publish: ["fleet.v1.>"],
          subscribe: ["_INBOX_hub.>"],
        },
      ],
    });
    const httpPort = await freePort();
    const before = snapshot(tree("hub"));
    const startedAt = Date.now();
    const config = localConfig((cfg) => {
      cfg["nats"]["servers"] = [nats?.url];
      cfg["grpc"]["listen"] = "127.0.0.1:0";
      cfg["http"]["listen"] = `127.0.0.1:${httpPort}`;
    });
    const test = hubService["healthcheck"]["test"] as string[];
    expect(test.slice(0, 2)).toEqual(["CMD", "node"]);
    const port = /^0\.0\.0\.0:(\d+)$/.exec(hubConfig["http"]["listen"])?.[1];
    const healthcheck = () =>
      spawnSync(
        test[1] ?? "",
        test.slice(2).map((a) => a.replace(`127.0.0.1:${port}`, `127.0.0.1:${httpPort}`)),
        {
          env: imageEnv(),
          timeout: 3000,
          ...asUser,
        },
      ).status === 0;
    // Nothing answers yet: the healthcheck fails (the hub serves /healthz within milliseconds of
    // starting, so this is checked before it starts).
    expect(healthcheck()).toBe(false);
    let stderr = "";
    const [cmd, ...pre] = entrypointCommand("hub");
    hub = spawn(cmd, [...pre, "hub", "--config", config], {
      cwd: "/",
      env: imageEnv(env()),
      stdio: ["ignore", "ignore", "pipe"],
      ...asUser,
    });
    hub.stderr?.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    const healthy = await waitFor(async () => hub?.exitCode !== null || healthcheck(), 20_000, 200);
    expect({ healthy, exitCode: hub.exitCode, stderr }).toMatchObject({ healthy: true, exitCode: null });
    if (AS_IMAGE_USER)
      expect(readFileSync(`/proc/${hub.pid}/status`, "utf8")).toContain(`\nUid:\t${IMAGE_UID}\t`);
    const ready = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
    expect(ready.status).toBe(200); // NATS connected
    hub.kill("SIGTERM");
    const code = await new Promise<number | null>((resolve) => hub?.once("exit", (c) => resolve(c)));
    expect(code).toBe(0);
    expect(stderr).toContain('"hub started"');
    for (const v of Object.values(values)) expect(stderr).not.toContain(v);
    // Nothing written: the tree it ran from is unchanged, and (as the image's user) it left
    // nothing in the temporary directory either.
    expect(snapshot(tree("hub"))).toEqual(before);
    if (AS_IMAGE_USER) {
      const left = readdirSync(tmpdir()).filter((n) => {
        const st = lstatSync(join(tmpdir(), n));
        return st.uid === IMAGE_UID && st.ctimeMs >= startedAt;
      });
      expect(left).toEqual([]);
    }
  });

  test("compose.yaml: hub and NATS, read-only and non-root, limits, every secret of hub.yaml wired", () => {
    expect(Object.keys(compose["services"]).sort()).toEqual(["hub", "nats"]);
    const hubDeploy = parseAllDocuments(
      readFileSync(join(ROOT, "deploy/hub/deployment.yaml"), "utf8"),
    )[0]?.toJS() as Obj;
    expect(hubService["image"]).toBe(hubDeploy["spec"]["template"]["spec"]["containers"][0]["image"]);
    expect(hubService["command"]).toEqual(["hub", "--config", "/etc/fleet-ccm/hub.yaml"]);
    expect(hubService["volumes"]).toContain("./hub.yaml:/etc/fleet-ccm/hub.yaml:ro");
    for (const [name, s] of Object.entries(compose["services"] as Record<string, Obj>)) {
      expect({ name, read_only: s["read_only"], user: s["user"], cap_drop: s["cap_drop"] }).toEqual({
        name,
        read_only: true,
        user: `${IMAGE_UID}:${IMAGE_UID}`,
        cap_drop: ["ALL"],
      });
      expect(s["security_opt"]).toContain("no-new-privileges:true");
      expect(typeof s["deploy"]["resources"]["limits"]["memory"]).toBe("string");
      expect(typeof s["deploy"]["resources"]["limits"]["cpus"]).toBe("string");
    }
    // /healthz on the port hub.yaml serves.
    expect((hubService["healthcheck"]["test"] as string[]).join(" ")).toContain(
      `http://127.0.0.1:${/:(\d+)$/.exec(hubConfig["http"]["listen"])?.[1]}/healthz`,
    );
    // Every secret file is a compose secret given to the hub; every variable is passed to it.
    expect([...(hubService["secrets"] as string[])].sort()).toEqual([...secretFiles].sort());
    for (const name of secretFiles) expect(compose["secrets"][name]).toBeDefined();
    for (const name of envSecrets) expect(Object.keys(hubService["environment"])).toContain(name);
    // NATS: the configuration of deploy/nats, at the address hub.yaml dials.
    const natsService = compose["services"]["nats"] as Obj;
    expect(natsService["volumes"]).toContain("../nats/nats.conf:/etc/nats/nats.conf:ro");
    expect(natsService["command"]).toEqual(["--config", "/etc/nats/nats.conf"]);
    expect(hubConfig["nats"]["servers"]).toEqual(["nats://nats:4222"]);
    expect(readFileSync(join(ROOT, "deploy/nats/nats.conf"), "utf8")).toContain('listen: "0.0.0.0:4222"');
  });
});

describe("Containerfiles", () => {
  test.each(ROLES)(
    "%s: multi-stage from the Node LTS base, stage.mjs tree, non-root, labels, fleet-ccm entrypoint",
    (role) => {
      const text = readFileSync(join(ROOT, `deploy/images/${role}.Containerfile`), "utf8");
      const lines = text.split("\n").filter((l) => !l.startsWith("#"));
      expect(lines).toContain("ARG BASE_IMAGE=docker.io/library/node:26-trixie-slim");
      expect(lines.filter((l) => l.startsWith("FROM "))).toEqual([
        `FROM $\{BUILD_IMAGE} AS build`,
        `FROM $\{BASE_IMAGE}`,
      ]);
      expect(text).toContain(`node scripts/image/stage.mjs ${role} /out`);
      expect(lines).toContain("COPY --from=build /out/ /");
      expect(lines).toContain(`USER ${IMAGE_UID}:${IMAGE_UID}`);
      expect(imageEntrypoint(role)).toEqual(["fleet-ccm"]);
      expect(lines).toContain(`ARG VERSION=${VERSION}`);
      for (const label of ["title", "description", "source", "version", "licenses"])
        expect(text).toContain(`org.opencontainers.image.${label}=`);
      expect(text).toContain(`org.opencontainers.image.title="fleet-ccm-${role}"`);
      expect(text).toContain('org.opencontainers.image.licenses="Apache-2.0"');
      // The manifests run this image, as its user, with a read-only root filesystem.
      const deploy = parseAllDocuments(
        readFileSync(join(ROOT, `deploy/${role}/deployment.yaml`), "utf8"),
      )[0]?.toJS() as Obj;
      const pod = deploy["spec"]["template"]["spec"];
      expect(pod["containers"][0]["image"]).toBe(`ghcr.io/fleet-ccm/fleet-ccm-${role}:${VERSION}`);
      expect(pod["securityContext"]["runAsUser"]).toBe(IMAGE_UID);
      expect(pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"]).toBe(true);
    },
  );

  test("the build context leaves out installed and built files", () => {
    const ignore = readFileSync(join(ROOT, ".dockerignore"), "utf8").split("\n");
    for (const p of ["node_modules", "**/node_modules", "**/dist", ".git"]) expect(ignore).toContain(p);
  });
});
