/**
 * Structural checks of deploy/: every manifest parses, the pods are hardened, the agent's
 * RBAC is exactly what it needs, the hub has none, the example hub config is accepted by
 * the hub's own parser, and the NATS configuration is accepted by nats-server 2.9 and
 * enforces the per-cluster permission model on a live server.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { parseAllDocuments } from "yaml";
import { parseHubConfig } from "../hub/src/config/load.js";
import type { HubConfig } from "../hub/src/config/schema.js";
import { namedRefs } from "../hub/src/config/secret.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DEPLOY = join(ROOT, "deploy");
const NAMESPACE = "fleet-ccm-system";
/** Per Deployment: its role's image (deploy/images/*.Containerfile) and that image's user. */
const IMAGES: Record<string, string> = {
  "fleet-ccm-hub": "ghcr.io/fleet-ccm/fleet-ccm-hub:0.1.0",
  "fleet-ccm-agent": "ghcr.io/fleet-ccm/fleet-ccm-agent:0.1.0",
};
const IMAGE_USER = 65532;

// biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects are checked field by field below.
type Obj = Record<string, any>;
interface Doc {
  readonly file: string; // relative to deploy/
  readonly obj: Obj;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return yamlFiles(p);
    return /\.ya?ml$/.test(name) ? [p] : [];
  });
}

function parseFile(path: string, version: "1.1" | "1.2"): unknown[] {
  const docs = parseAllDocuments(readFileSync(path, "utf8"), { version });
  if (!Array.isArray(docs)) return [];
  return docs.map((d, i) => {
    if (d.errors.length > 0)
      throw new Error(`${relative(ROOT, path)} document ${i}: ${d.errors.map((e) => e.message).join("; ")}`);
    return d.toJS();
  });
}

const FILES = yamlFiles(DEPLOY);
const DOCS: Doc[] = FILES.flatMap((path) =>
  parseFile(path, "1.2")
    .filter((o): o is Obj => o !== null && typeof o === "object")
    .map((obj) => ({ file: relative(DEPLOY, path), obj })),
);
/** Kubernetes objects (and Kustomizations): everything with apiVersion and kind. */
const OBJECTS = DOCS.filter(
  (d) => typeof d.obj["apiVersion"] === "string" && typeof d.obj["kind"] === "string",
);

function find(kind: string, name: string, dir?: string): Obj {
  const hits = OBJECTS.filter(
    (d) =>
      d.obj["kind"] === kind &&
      d.obj["metadata"]?.["name"] === name &&
      (dir === undefined || d.file.startsWith(`${dir}/`)),
  );
  if (hits.length !== 1)
    throw new Error(`expected one ${kind} ${name}${dir ? ` in deploy/${dir}` : ""}, found ${hits.length}`);
  return hits[0]!.obj;
}

function container(deploy: Obj, name: string): Obj {
  const c = (deploy["spec"]["template"]["spec"]["containers"] as Obj[]).find((x) => x["name"] === name);
  if (c === undefined) throw new Error(`no container ${name}`);
  return c;
}

const DEPLOYMENTS = OBJECTS.filter((d) => d.obj["kind"] === "Deployment");
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "Kustomization"]);

describe("deploy/ manifests", () => {
  test("every YAML file parses, and YAML 1.1 (Kubernetes) and 1.2 read it the same", () => {
    expect(FILES.length).toBeGreaterThanOrEqual(13);
    for (const f of FILES) {
      // A difference would be an ambiguous scalar such as 0440 (octal in 1.1) or yes/no.
      expect({ file: relative(ROOT, f), docs: parseFile(f, "1.1") }).toEqual({
        file: relative(ROOT, f),
        docs: parseFile(f, "1.2"),
      });
    }
    const kinds = new Set(OBJECTS.map((d) => d.obj["kind"]));
    for (const k of [
      "Namespace",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "Deployment",
      "Service",
      "NetworkPolicy",
      "ResourceQuota",
      "Kustomization",
    ])
      expect(kinds).toContain(k);
  });

  test("no container sets an environment variable twice (the last one would silently win)", () => {
    for (const { file, obj } of DEPLOYMENTS)
      for (const c of obj["spec"]["template"]["spec"]["containers"] as Obj[]) {
        const names = ((c["env"] as Obj[] | undefined) ?? []).map((e) => e["name"] as string);
        const twice = names.filter((n, i) => names.indexOf(n) !== i);
        expect({ where: `${file} ${c["name"]}`, twice }).toEqual({
          where: `${file} ${c["name"]}`,
          twice: [],
        });
      }
  });

  test("every object is named, labelled part-of fleet-ccm and namespaced in fleet-ccm-system", () => {
    for (const { file, obj } of OBJECTS) {
      if (obj["kind"] === "Kustomization") continue;
      const where = `${file} ${obj["kind"]}`;
      expect({ where, name: typeof obj["metadata"]?.["name"] }).toEqual({ where, name: "string" });
      expect({ where, partOf: obj["metadata"]["labels"]?.["app.kubernetes.io/part-of"] }).toEqual({
        where,
        partOf: "fleet-ccm",
      });
      const ns = obj["metadata"]["namespace"];
      expect({ where, ns }).toEqual({ where, ns: CLUSTER_SCOPED.has(obj["kind"]) ? undefined : NAMESPACE });
    }
  });

  test("each kustomization lists exactly the object files of its directory, and they exist", () => {
    const kustomizations = OBJECTS.filter((d) => d.obj["kind"] === "Kustomization");
    expect(kustomizations.map((k) => k.file).sort()).toEqual([
      "agent/kustomization.yaml",
      "hub/kustomization.yaml",
    ]);
    for (const k of kustomizations) {
      const dir = dirname(k.file);
      const listed = [...(k.obj["resources"] as string[])].sort();
      for (const r of listed) expect(existsSync(join(DEPLOY, dir, r))).toBe(true);
      const objectFiles = [
        ...new Set(
          OBJECTS.filter((d) => dirname(d.file) === dir && d.obj["kind"] !== "Kustomization").map((d) =>
            basename(d.file),
          ),
        ),
      ].sort();
      expect({ dir, listed }).toEqual({ dir, listed: objectFiles });
    }
  });

  test("the Namespace is the same object in hub/ and agent/ and enforces Pod Security restricted", () => {
    const ns = OBJECTS.filter((d) => d.obj["kind"] === "Namespace");
    expect(ns.map((d) => d.file).sort()).toEqual(["agent/namespace.yaml", "hub/namespace.yaml"]);
    expect(ns[0]!.obj).toEqual(ns[1]!.obj);
    expect(ns[0]!.obj["metadata"]["name"]).toBe(NAMESPACE);
    expect(ns[0]!.obj["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]).toBe("restricted");
  });

  test("every Deployment: hardened pod and container, requests and memory limit; the agent one replica with Recreate, the hub replicas rolling one at a time under a PodDisruptionBudget", () => {
    expect(DEPLOYMENTS.map((d) => d.obj["metadata"]["name"]).sort()).toEqual([
      "fleet-ccm-agent",
      "fleet-ccm-hub",
    ]);
    for (const { obj } of DEPLOYMENTS) {
      const spec = obj["spec"];
      if (obj["metadata"]["name"] === "fleet-ccm-hub") {
        // Hub replicas share the clusters by leases (README "Hub replicas").
        expect(spec["replicas"]).toBeGreaterThanOrEqual(2);
        expect(spec["strategy"]).toEqual({
          type: "RollingUpdate",
          rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
        });
        const pdb = OBJECTS.find((d) => d.obj["kind"] === "PodDisruptionBudget")?.obj;
        expect(pdb?.["spec"]).toEqual({
          maxUnavailable: 1,
          selector: { matchLabels: { "app.kubernetes.io/name": "fleet-ccm-hub" } },
        });
      } else {
        expect(spec["replicas"]).toBe(1);
        expect(spec["strategy"]).toEqual({ type: "Recreate" });
      }
      const labels = spec["template"]["metadata"]["labels"];
      for (const [k, v] of Object.entries(spec["selector"]["matchLabels"] as Obj)) expect(labels[k]).toBe(v);
      const pod = spec["template"]["spec"];
      expect(pod["hostNetwork"] ?? false).toBe(false);
      expect(pod["hostPID"] ?? false).toBe(false);
      expect(pod["securityContext"]).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      });
      // A numeric non-root user, so the kubelet can verify runAsNonRoot whatever the image says;
      // the images' own USER (deploy/images/*.Containerfile).
      expect(pod["securityContext"]["runAsUser"]).toBe(IMAGE_USER);
      expect(pod["securityContext"]["runAsGroup"]).toBe(IMAGE_USER);
      const containers = [
        ...(pod["containers"] as Obj[]),
        ...((pod["initContainers"] as Obj[] | undefined) ?? []),
      ];
      expect(containers.length).toBeGreaterThan(0);
      for (const c of containers) {
        expect(c["image"]).toBe(IMAGES[obj["metadata"]["name"]]);
        expect(c["securityContext"]).toEqual({
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"] },
          seccompProfile: { type: "RuntimeDefault" },
        });
        expect(c["securityContext"]["privileged"]).toBeUndefined();
        const res = c["resources"];
        expect(typeof res["requests"]["cpu"]).toBe("string");
        expect(typeof res["requests"]["memory"]).toBe("string");
        expect(typeof res["limits"]["memory"]).toBe("string");
        // Every secret and config volume is mounted read-only.
        const volumes = new Map((pod["volumes"] as Obj[]).map((v) => [v["name"] as string, v]));
        for (const m of c["volumeMounts"] as Obj[]) {
          const v = volumes.get(m["name"]);
          expect(v).toBeDefined();
          if (v?.["secret"] !== undefined || v?.["configMap"] !== undefined) expect(m["readOnly"]).toBe(true);
          if (v?.["secret"] !== undefined) expect(v["secret"]["defaultMode"]).toBe(0o440);
        }
      }
    }
  });
});

describe("agent manifests", () => {
  const deploy = find("Deployment", "fleet-ccm-agent", "agent");
  const pod = deploy["spec"]["template"]["spec"];
  const agent = container(deploy, "agent");

  test("the ClusterRole grants exactly the agent's (resource, verb) set: no wildcard, secrets get only, no pods/configmaps", () => {
    const role = find("ClusterRole", "fleet-ccm-agent", "agent");
    const grants = new Set<string>();
    for (const rule of role["rules"] as Obj[]) {
      expect(rule["nonResourceURLs"]).toBeUndefined();
      expect(rule["resourceNames"]).toBeUndefined();
      for (const g of rule["apiGroups"] as string[])
        for (const r of rule["resources"] as string[])
          for (const v of rule["verbs"] as string[]) {
            expect([g, r, v]).not.toContain("*");
            grants.add(`${g === "" ? "core" : g}/${r}:${v}`);
          }
    }
    expect([...grants].sort()).toEqual(
      [
        "core/nodes:get",
        "core/nodes:list",
        "core/nodes:watch",
        "core/nodes:patch",
        "core/nodes:delete",
        "core/nodes/status:patch",
        "core/services:get",
        "core/services:list",
        "core/services:watch",
        "core/services/status:patch",
        "core/events:create",
        "core/events:patch",
        "core/secrets:get",
        "core/persistentvolumes:get",
        "core/persistentvolumes:list",
        "core/persistentvolumes:watch",
        "core/persistentvolumes:patch",
      ].sort(),
    );
    for (const forbidden of ["pods", "configmaps", "serviceaccounts", "leases"])
      expect([...grants].some((g) => g.split(":")[0]!.split("/").includes(forbidden))).toBe(false);
    // It is the only role in deploy/.
    expect(
      OBJECTS.filter((d) => /^(Cluster)?Role$/.test(d.obj["kind"])).map((d) => d.obj["metadata"]["name"]),
    ).toEqual(["fleet-ccm-agent"]);
  });

  test("the ClusterRoleBinding binds that role to the agent's ServiceAccount only", () => {
    const binding = find("ClusterRoleBinding", "fleet-ccm-agent", "agent");
    expect(binding["roleRef"]).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: "fleet-ccm-agent",
    });
    expect(binding["subjects"]).toEqual([
      { kind: "ServiceAccount", name: "fleet-ccm-agent", namespace: NAMESPACE },
    ]);
    expect(find("ServiceAccount", "fleet-ccm-agent", "agent")["automountServiceAccountToken"]).toBe(true);
    expect(pod["serviceAccountName"]).toBe("fleet-ccm-agent");
    expect(pod["automountServiceAccountToken"]).toBe(true);
  });

  test("runs with the agent arguments; every $(VAR) comes from the ConfigMap, every file from the Secret", () => {
    expect(agent["args"]).toEqual([
      "agent",
      "--cluster",
      "$(CLUSTER_NAME)",
      "--hub",
      "$(HUB_ADDRESS)",
      "--token-file",
      "/var/run/fleet-ccm/token",
      "--nats",
      "$(NATS_URL)",
      "--nats-creds-file",
      "/var/run/fleet-ccm/nats.creds",
      "--ca-file",
      "/var/run/fleet-ccm/ca.crt",
    ]);
    const env = new Map((agent["env"] as Obj[]).map((e) => [e["name"] as string, e]));
    const vars = (agent["args"] as string[]).flatMap((a) =>
      [...a.matchAll(/\$\(([A-Z_]+)\)/g)].map((m) => m[1]!),
    );
    expect(vars.sort()).toEqual(["CLUSTER_NAME", "HUB_ADDRESS", "NATS_URL"]);
    for (const v of vars)
      expect(env.get(v)?.["valueFrom"]).toEqual({ configMapKeyRef: { name: "fleet-ccm-agent", key: v } });
    // No secret is passed through the environment.
    for (const e of env.values()) expect(e["valueFrom"]?.["secretKeyRef"]).toBeUndefined();

    const volume = (pod["volumes"] as Obj[]).find((v) => v["secret"]?.["secretName"] === "fleet-ccm-agent");
    expect(volume).toBeDefined();
    expect((volume!["secret"]["items"] as Obj[]).map((i) => [i["key"], i["path"]])).toEqual([
      ["token", "token"],
      ["nats.creds", "nats.creds"],
      ["ca.crt", "ca.crt"],
    ]);
    const mount = (agent["volumeMounts"] as Obj[]).find((m) => m["name"] === volume!["name"]);
    expect(mount).toMatchObject({ mountPath: "/var/run/fleet-ccm", readOnly: true });
    const files = (agent["args"] as string[]).filter((a) => a.startsWith("/"));
    expect(files.map((f) => basename(f)).sort()).toEqual(["ca.crt", "nats.creds", "token"]);
    for (const f of files) expect(dirname(f)).toBe("/var/run/fleet-ccm");
  });

  test("starts before any node is initialized: tolerations, priority, node resolver", () => {
    const tolerations = pod["tolerations"] as Obj[];
    const tolerates = (key: string, effect: string) =>
      tolerations.some(
        (t) =>
          t["key"] === key &&
          (t["operator"] === "Exists" || t["value"] === "true") &&
          (t["effect"] === undefined || t["effect"] === effect) &&
          t["tolerationSeconds"] === undefined,
      );
    expect(tolerates("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule")).toBe(true);
    expect(tolerates("node.kubernetes.io/not-ready", "NoSchedule")).toBe(true);
    expect(tolerates("node.kubernetes.io/not-ready", "NoExecute")).toBe(true);
    expect(tolerates("node.kubernetes.io/network-unavailable", "NoSchedule")).toBe(true);
    // An unreachable node still evicts the single agent (default 300 s), so it moves elsewhere.
    expect(
      tolerations.some((t) => t["key"] === "node.kubernetes.io/unreachable" || t["key"] === undefined),
    ).toBe(false);
    expect(pod["priorityClassName"]).toBe("system-cluster-critical");
    expect(pod["dnsPolicy"]).toBe("Default");
    const quota = find("ResourceQuota", "fleet-ccm-critical-pods", "agent");
    expect(quota["spec"]["scopeSelector"]["matchExpressions"]).toEqual([
      { scopeName: "PriorityClass", operator: "In", values: ["system-cluster-critical"] },
    ]);
  });

  test("resources and no invented probes (the agent serves no HTTP)", () => {
    expect(agent["resources"]).toEqual({
      requests: { cpu: "50m", memory: "64Mi" },
      limits: { memory: "256Mi" },
    });
    expect(agent["livenessProbe"]).toBeUndefined();
    expect(agent["readinessProbe"]).toBeUndefined();
    expect(agent["startupProbe"]).toBeUndefined();
    expect(agent["ports"]).toBeUndefined();
  });
});

describe("hub manifests", () => {
  const deploy = find("Deployment", "fleet-ccm-hub", "hub");
  const pod = deploy["spec"]["template"]["spec"];
  const hub = container(deploy, "hub");

  test("the hub's ServiceAccount has no Kubernetes API access and no token", () => {
    expect(find("ServiceAccount", "fleet-ccm-hub", "hub")["automountServiceAccountToken"]).toBe(false);
    expect(pod["serviceAccountName"]).toBe("fleet-ccm-hub");
    expect(pod["automountServiceAccountToken"]).toBe(false);
    const bindings = OBJECTS.filter((d) => /^(Cluster)?RoleBinding$/.test(d.obj["kind"]));
    expect(bindings.length).toBeGreaterThan(0);
    for (const b of bindings)
      for (const s of b.obj["subjects"] as Obj[]) expect(s["name"]).not.toBe("fleet-ccm-hub");
    expect(OBJECTS.filter((d) => d.file.startsWith("hub/") && /Role/.test(d.obj["kind"]))).toEqual([]);
  });

  test("runs `hub --config` with the generated ConfigMap and the secrets Secret", () => {
    expect(hub["args"]).toEqual(["hub", "--config", "/etc/fleet-ccm/hub.yaml"]);
    const volumes = new Map((pod["volumes"] as Obj[]).map((v) => [v["name"] as string, v]));
    const mounts = new Map((hub["volumeMounts"] as Obj[]).map((m) => [m["mountPath"] as string, m]));
    const config = volumes.get(mounts.get("/etc/fleet-ccm")?.["name"]);
    expect(config?.["configMap"]).toEqual({
      name: "fleet-ccm-hub-config",
      items: [{ key: "hub.yaml", path: "hub.yaml" }],
    });
    const secrets = volumes.get(mounts.get("/var/run/fleet-ccm")?.["name"]);
    expect(secrets?.["secret"]?.["secretName"]).toBe("fleet-ccm-hub-secrets");
    const k = OBJECTS.find((d) => d.file === "hub/kustomization.yaml")!.obj;
    expect(k["configMapGenerator"]).toEqual([
      expect.objectContaining({ name: "fleet-ccm-hub-config", namespace: NAMESPACE, files: ["hub.yaml"] }),
    ]);
  });

  test("ports grpc 7443 and http 9090; probes on http /readyz and /healthz", () => {
    expect(hub["ports"]).toEqual([
      { name: "grpc", containerPort: 7443, protocol: "TCP" },
      { name: "http", containerPort: 9090, protocol: "TCP" },
    ]);
    expect(hub["readinessProbe"]["httpGet"]).toEqual({ path: "/readyz", port: "http" });
    expect(hub["livenessProbe"]["httpGet"]).toEqual({ path: "/healthz", port: "http" });
  });

  test("the Service selects the hub pod and exposes grpc and http", () => {
    const svc = find("Service", "fleet-ccm-hub", "hub");
    const labels = deploy["spec"]["template"]["metadata"]["labels"];
    for (const [k, v] of Object.entries(svc["spec"]["selector"] as Obj)) expect(labels[k]).toBe(v);
    expect((svc["spec"]["ports"] as Obj[]).map((p) => [p["name"], p["port"], p["targetPort"]])).toEqual([
      ["grpc", 7443, "grpc"],
      ["http", 9090, "http"],
    ]);
  });

  test("the NetworkPolicy admits ingress to the hub on 7443 and 9090 only", () => {
    const np = find("NetworkPolicy", "fleet-ccm-hub", "hub");
    expect(np["spec"]["podSelector"]).toEqual({ matchLabels: { "app.kubernetes.io/name": "fleet-ccm-hub" } });
    expect(deploy["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]).toBe("fleet-ccm-hub");
    expect(np["spec"]["policyTypes"]).toEqual(["Ingress"]);
    const ports = (np["spec"]["ingress"] as Obj[]).flatMap((rule) => {
      // A rule without ports would admit every port.
      expect(Array.isArray(rule["ports"]) && rule["ports"].length > 0).toBe(true);
      return (rule["ports"] as Obj[]).map((p) => `${p["protocol"]}/${p["port"]}`);
    });
    expect(ports.sort()).toEqual(["TCP/7443", "TCP/9090"]);
  });
});

describe("hub/hub.yaml", () => {
  let cfg: HubConfig;
  beforeAll(() => {
    cfg = parseHubConfig(readFileSync(join(DEPLOY, "hub/hub.yaml"), "utf8"), "deploy/hub/hub.yaml");
  });

  test("is accepted by the hub's own config parser", () => {
    expect(cfg.grpc.insecure).toBe(false);
    expect(cfg.grpc.tls).toMatchObject({
      certFile: "/var/run/fleet-ccm/tls.crt",
      keyFile: "/var/run/fleet-ccm/tls.key",
    });
    expect(cfg.grpc.listen).toBe("0.0.0.0:7443");
    expect(cfg.http.listen).toBe("0.0.0.0:9090");
    expect(cfg.nats.user).toBe("hub");
    expect(cfg.accounts.map((a) => a.provider)).toEqual(["simulated", "simulated"]);
    expect(cfg.accounts.every((a) => a.endpoint === "http://sim-cloud:8080")).toBe(true);
    expect(cfg.clusters.map((c) => c.name)).toEqual(["prod-eu-1", "prod-us-1"]);
    expect(cfg.clusters[0]!.controllers).toBeUndefined();
    expect(cfg.clusters[1]!.controllers).toEqual(["*", "-node-route-controller"]);
  });

  test("every secret is a file of the mounted hub Secret, and each cluster's token is its own", () => {
    const refs = [
      cfg.nats.password,
      ...cfg.accounts.flatMap((a) => namedRefs(a.credentials).map(([, ref]) => ref)),
      ...cfg.clusters.map((c) => c.token),
    ];
    for (const ref of refs) {
      expect(ref).toBeDefined();
      expect(ref && "file" in ref ? dirname(ref.file) : ref).toBe("/var/run/fleet-ccm");
    }
    const tokens = cfg.clusters.map((c) =>
      c.token === undefined ? c.tokenHash : "file" in c.token ? c.token.file : c.token.env,
    );
    expect(new Set(tokens).size).toBe(cfg.clusters.length);
    // Secret keys cannot contain "/": the files sit directly in the mount.
    for (const ref of refs) if (ref && "file" in ref) expect(basename(ref.file)).toMatch(/^[-._a-zA-Z0-9]+$/);
  });
});

// ---- NATS ----------------------------------------------------------------------------------

const NATS_CONF = join(DEPLOY, "nats/nats.conf");

function natsServerBinary(): string {
  const dirs = [...(process.env["PATH"] ?? "").split(delimiter), "/usr/sbin", "/usr/bin", "/usr/local/bin"];
  for (const d of dirs) {
    const p = join(d, "nats-server");
    if (d !== "" && existsSync(p)) return p;
  }
  throw new Error(
    "nats-server not found on PATH or in /usr/sbin: install the Debian package nats-server (npm run setup)",
  );
}

/** `user: "x"` entries of nats.conf, in order, with the password and permission block after each. */
function natsUsers(text: string): { user: string; password: string; block: string }[] {
  const out: { user: string; password: string; block: string }[] = [];
  const re = /user:\s*"([^"]+)"\s*\n\s*password:\s*"([^"]*)"([\s\S]*?)(?=\n\s*#|\n\s*\{|\n\s*\]|$)/g;
  for (const m of text.matchAll(re)) out.push({ user: m[1]!, password: m[2]!, block: m[3]! });
  return out;
}

/** Why a subscription was closed, or "still open" after `ms` (the server answers a denied SUB at once). */
async function closedWithin(sub: Subscription, ms = 2000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const open = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("still open"), ms);
  });
  try {
    return await Promise.race([sub.closed.then((e) => String(e)), open]);
  } finally {
    clearTimeout(timer);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

describe("nats/nats.conf", () => {
  const text = readFileSync(NATS_CONF, "utf8");
  const users = natsUsers(text);

  test("nats-server -c deploy/nats/nats.conf -t accepts it", () => {
    const r = spawnSync(natsServerBinary(), ["-c", NATS_CONF, "-t"], { encoding: "utf8", timeout: 15_000 });
    expect({ status: r.status, output: `${r.stdout}${r.stderr}` }).toEqual({
      status: 0,
      output: expect.stringContaining("is valid"),
    });
  });

  test("one user for the hub and one per cluster of hub.yaml, with bcrypt passwords only", () => {
    const cfg = parseHubConfig(readFileSync(join(DEPLOY, "hub/hub.yaml"), "utf8"));
    expect(users.map((u) => u.user)).toEqual(["hub", ...cfg.clusters.map((c) => `agent-${c.name}`)]);
    for (const u of users) expect(u.password).toMatch(/^\$2[abxy]\$\d{2}\$[./A-Za-z0-9]{53}$/);
    const agents = users.filter((u) => u.user !== "hub");
    for (const a of agents) {
      const c = a.user.slice("agent-".length);
      expect(a.block.replace(/\s+/g, " ")).toContain(
        `publish: { deny: [">"] } subscribe: { allow: ["fleet.v1.${c}.>", "_INBOX_${c}.>"] }`,
      );
    }
    expect(users[0]!.block.replace(/\s+/g, " ")).toContain(
      `publish: { allow: ["fleet.v1.>", "$JS.API.>", "$KV.fleet-ccm-leases.>"] } subscribe: { allow: ["_INBOX_hub.>"] }`,
    );
  });

  describe("on a live nats-server (the file's users, test passwords)", () => {
    let dir: string;
    let server: ChildProcess | undefined;
    let url = "";
    const conns: NatsConnection[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "fleet-ccm-deploy-nats-"));
      // Same users and permissions; each bcrypt hash replaced by a known plaintext password.
      let replaced = 0;
      const conf = text.replace(
        /(user:\s*"([^"]+)"\s*\n\s*password:\s*)"[^"]*"/g,
        (_m, head: string, user: string) => {
          replaced++;
          return `${head}"test-${user}"`;
        },
      );
      expect(replaced).toBe(users.length);
      writeFileSync(join(dir, "nats.conf"), conf);
      const port = await freePort();
      url = `nats://127.0.0.1:${port}`;
      const proc = spawn(
        natsServerBinary(),
        ["-c", join(dir, "nats.conf"), "-a", "127.0.0.1", "-p", String(port)],
        {
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      server = proc;
      await new Promise<void>((resolve, reject) => {
        let log = "";
        const timer = setTimeout(() => reject(new Error(`nats-server did not start:\n${log}`)), 10_000);
        const onData = (b: Buffer) => {
          log += b.toString();
          if (log.includes("Server is ready")) {
            clearTimeout(timer);
            resolve();
          }
        };
        proc.stdout?.on("data", onData);
        proc.stderr?.on("data", onData);
        proc.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`nats-server exited ${code}:\n${log}`));
        });
      });
    });

    afterAll(async () => {
      await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
      if (server !== undefined && server.exitCode === null) {
        const exited = new Promise((r) => server!.once("exit", r));
        server.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    });

    async function as(user: string, inboxPrefix: string) {
      const nc = await connect({ servers: url, user, pass: `test-${user}`, inboxPrefix, reconnect: false });
      conns.push(nc);
      const errors: string[] = [];
      void (async () => {
        for await (const s of nc.status()) if (s.type === "error") errors.push(String(s.error.message));
      })();
      return { nc, errors };
    }

    test("an agent receives its own cluster's subjects; the hub publishes them", async () => {
      const hub = await as("hub", "_INBOX_hub");
      const eu = await as("agent-prod-eu-1", "_INBOX_prod-eu-1");
      const sub = eu.nc.subscribe("fleet.v1.prod-eu-1.>", { max: 1 });
      await eu.nc.flush();
      hub.nc.publish("fleet.v1.prod-eu-1.desired", "x");
      await hub.nc.flush();
      const got: string[] = [];
      for await (const m of sub) got.push(m.subject);
      expect(got).toEqual(["fleet.v1.prod-eu-1.desired"]);
      expect(hub.errors).toEqual([]);
      expect(eu.errors).toEqual([]);
    });

    test("no agent may subscribe to another cluster's subjects or the shared inbox, nor publish", async () => {
      const clusters = users.filter((u) => u.user !== "hub").map((u) => u.user.slice("agent-".length));
      expect(clusters.length).toBeGreaterThanOrEqual(2);
      for (const c of clusters) {
        const agent = await as(`agent-${c}`, `_INBOX_${c}`);
        const denied = [
          ...clusters.filter((o) => o !== c).flatMap((o) => [`fleet.v1.${o}.>`, `_INBOX_${o}.>`]),
          "_INBOX.>",
          "fleet.v1.>",
          ">",
        ].map((subject) => agent.nc.subscribe(subject));
        agent.nc.publish(`fleet.v1.${c}.desired`, "forged");
        await agent.nc.flush();
        for (const s of denied)
          expect({ c, subject: s.getSubject(), closed: await closedWithin(s) }).toEqual({
            c,
            subject: s.getSubject(),
            closed: expect.stringMatching(/Permissions Violation for Subscription/i),
          });
        await agent.nc.flush();
        expect(agent.errors.some((e) => /Permissions Violation for Publish/i.test(e))).toBe(true);
      }
    });

    test("the hub may publish only fleet.v1.> and not read the agents' subjects", async () => {
      const hub = await as("hub", "_INBOX_hub");
      const sub = hub.nc.subscribe("fleet.v1.>");
      hub.nc.publish("other.subject", "x");
      await hub.nc.flush();
      expect(await closedWithin(sub)).toMatch(/Permissions Violation/i);
      await hub.nc.flush();
      expect(hub.errors.some((e) => /Permissions Violation for Publish to "other.subject"/i.test(e))).toBe(
        true,
      );
    });

    test("a wrong password is refused", async () => {
      await expect(
        connect({ servers: url, user: "agent-prod-us-1", pass: "test-agent-prod-eu-1", reconnect: false }),
      ).rejects.toThrow(/Authorization Violation/i);
    });
  });
});
