// The Kubernetes API simulator seen through real clients: kubectl (/usr/bin/kubectl) and, where Debian's
// python3-kubernetes is installed, the official Python client.

import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type KubeApiServer, startKubeApiServer } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";

const KUBECTL = process.env["KUBECTL"] ?? "/usr/bin/kubectl";
const PYTHON = "/usr/bin/python3";
const hasPythonClient = spawnSync(PYTHON, ["-c", "import kubernetes"]).status === 0;
if (!hasPythonClient) {
  console.warn(
    `python3-kubernetes is not installed (${PYTHON} cannot import kubernetes): the Python client tests are skipped; install it with 'apt-get install -y python3-kubernetes'`,
  );
}

let sim: KubeApiServer;
let dir: string;
let kubeconfig: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: readonly string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

function kubectl(...args: string[]): Promise<Run> {
  return run(KUBECTL, ["--kubeconfig", kubeconfig, "--cache-dir", join(dir, "cache"), ...args]);
}

function kubectlWithInput(input: string, ...args: string[]): Promise<Run> {
  return run(KUBECTL, ["--kubeconfig", kubeconfig, "--cache-dir", join(dir, "cache"), ...args], input);
}

async function kubectlOk(...args: string[]): Promise<string> {
  const r = await kubectl(...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

/** The rows of kubectl's table output, split on runs of 2+ spaces. */
function rows(out: string): string[][] {
  return out
    .trimEnd()
    .split("\n")
    .map((l) => l.trim().split(/\s{2,}/));
}

async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

beforeAll(async () => {
  if (spawnSync(KUBECTL, ["version", "--client"]).status !== 0) {
    throw new Error(
      `kubectl not runnable at ${KUBECTL} (set KUBECTL to its path): these tests need a real kubectl`,
    );
  }
  dir = mkdtempSync(join(tmpdir(), "kubectl-e2e-"));
  sim = await startKubeApiServer({ name: "sim-kubectl" });
  kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, sim.kubeconfigYaml());
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  sim.create("Node", {
    metadata: { name: "node-a", labels: { "node-role.kubernetes.io/worker": "", zone: "z1" } },
    status: {
      conditions: [{ type: "Ready", status: "True" }],
      addresses: [
        { type: "InternalIP", address: "10.0.0.11" },
        { type: "ExternalIP", address: "203.0.113.11" },
      ],
      nodeInfo: {
        kubeletVersion: "v1.32.4",
        osImage: "Debian GNU/Linux 12 (bookworm)",
        kernelVersion: "6.1.0-18-amd64",
        containerRuntimeVersion: "containerd://1.7.13",
      },
    },
  });
  sim.create("Node", { metadata: { name: "node-b" }, spec: { unschedulable: true } });
  sim.create("Service", {
    metadata: { name: "web", namespace: "default" },
    spec: {
      type: "LoadBalancer",
      selector: { app: "web", tier: "front" },
      ports: [{ name: "http", port: 80 }],
    },
  });
  sim.patch(
    "Service",
    "default",
    "web",
    "merge",
    { status: { loadBalancer: { ingress: [{ ip: "198.51.100.7" }] } } },
    "status",
  );
  const webUid = sim.get("Service", "default", "web")?.metadata?.uid ?? "";
  sim.create("Event", {
    metadata: { name: "web.1", namespace: "default" },
    involvedObject: { kind: "Service", namespace: "default", name: "web", uid: webUid, apiVersion: "v1" },
    reason: "EnsuredLoadBalancer",
    message: "Ensured load balancer",
    type: "Normal",
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: "service-controller" },
  });
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("kubectl get: server-side Tables", () => {
  test("get nodes -o wide shows the node columns", async () => {
    const t = rows(await kubectlOk("get", "nodes", "-o", "wide"));
    expect(t[0]).toEqual([
      "NAME",
      "STATUS",
      "ROLES",
      "AGE",
      "VERSION",
      "INTERNAL-IP",
      "EXTERNAL-IP",
      "OS-IMAGE",
      "KERNEL-VERSION",
      "CONTAINER-RUNTIME",
    ]);
    const a = t.find((r) => r[0] === "node-a");
    expect(a).toEqual([
      "node-a",
      "Ready",
      "worker",
      expect.stringMatching(/^\d+s$/),
      "v1.32.4",
      "10.0.0.11",
      "203.0.113.11",
      "Debian GNU/Linux 12 (bookworm)",
      "6.1.0-18-amd64",
      "containerd://1.7.13",
    ]);
    const b = t.find((r) => r[0] === "node-b");
    expect(b?.slice(0, 3)).toEqual(["node-b", "Unknown,SchedulingDisabled", "<none>"]);
    expect(b?.slice(-5)).toEqual(["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]);
  });

  test("get nodes without -o wide hides the priority-1 columns; --show-labels reads the row metadata", async () => {
    const t = rows(await kubectlOk("get", "nodes", "--show-labels"));
    expect(t[0]).toEqual(["NAME", "STATUS", "ROLES", "AGE", "VERSION", "LABELS"]);
    expect(t.find((r) => r[0] === "node-a")?.[5]).toBe("node-role.kubernetes.io/worker=,zone=z1");
  });

  test("get svc shows type, cluster IP, load-balancer IP and ports; -o wide adds the selector", async () => {
    const t = rows(await kubectlOk("get", "svc", "-o", "wide"));
    expect(t[0]).toEqual(["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]);
    const web = sim.get("Service", "default", "web") as { spec: { ports: { nodePort: number }[] } };
    expect(t.find((r) => r[0] === "web")).toEqual([
      "web",
      "LoadBalancer",
      expect.stringMatching(/^10\.96\./),
      "198.51.100.7",
      `80:${web.spec.ports[0]?.nodePort}/TCP`,
      expect.stringMatching(/^\d+s$/),
      "app=web,tier=front",
    ]);
    expect(t.find((r) => r[0] === "kubernetes")).toEqual([
      "kubernetes",
      "ClusterIP",
      "10.96.0.1",
      "<none>",
      "443/TCP",
      expect.stringMatching(/^\d+s$/),
      "<none>",
    ]);
  });

  test("get events shows LAST SEEN TYPE REASON OBJECT MESSAGE", async () => {
    const t = rows(await kubectlOk("get", "events"));
    expect(t[0]).toEqual(["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    expect(t[1]).toEqual([
      expect.stringMatching(/^\d+s$/),
      "Normal",
      "EnsuredLoadBalancer",
      "service/web",
      "Ensured load balancer",
    ]);
  });

  test("get of one object, namespaces, and an empty Pod list", async () => {
    expect(rows(await kubectlOk("get", "node", "node-a"))).toEqual([
      ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
      ["node-a", "Ready", "worker", expect.stringMatching(/^\d+s$/), "v1.32.4"],
    ]);
    const ns = rows(await kubectlOk("get", "namespaces"));
    expect(ns[0]).toEqual(["NAME", "STATUS", "AGE"]);
    expect(ns.map((r) => r.slice(0, 2))).toContainEqual(["kube-system", "Active"]);
    const pods = await kubectl("get", "pods", "-A");
    expect(pods.code).toBe(0);
    expect(pods.stderr).toContain("No resources found");
  });

  test('get all lists the Services (the "all" category from discovery)', async () => {
    const t = rows(await kubectlOk("get", "all"));
    expect(t[0]).toEqual(["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]);
    expect(t.map((r) => r[0])).toEqual(expect.arrayContaining(["service/kubernetes", "service/web"]));
  });

  test("delete namespace waits until the namespace controller has emptied and removed it", async () => {
    await kubectlOk("create", "namespace", "scratch");
    await kubectlOk("-n", "scratch", "create", "service", "clusterip", "tmp", "--tcp=80:80");
    expect(await kubectlOk("delete", "namespace", "scratch")).toBe('namespace "scratch" deleted\n');
    expect(sim.get("Namespace", undefined, "scratch")).toBeUndefined();
    expect(sim.list("Service", "scratch")).toEqual([]);
  });

  test("get -w prints a row per change under one header", async () => {
    const child: ChildProcess = spawn(KUBECTL, [
      "--kubeconfig",
      kubeconfig,
      "--cache-dir",
      join(dir, "cache"),
      "get",
      "nodes",
      "-w",
    ]);
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    try {
      expect(await waitFor(() => out.includes("node-b"), 10_000)).toBe(true);
      sim.patch("Node", undefined, "node-b", "merge", { spec: { unschedulable: false } });
      expect(await waitFor(() => out.trimEnd().split("\n").length >= 4, 10_000)).toBe(true);
      const t = rows(out);
      expect(t.filter((r) => r[0] === "NAME")).toHaveLength(1);
      expect(t[3]?.slice(0, 2)).toEqual(["node-b", "Unknown"]);
    } finally {
      child.kill();
    }
  });
});

describe("kubectl describe", () => {
  test("describe node lists its (no) Pods and Events", async () => {
    const out = await kubectlOk("describe", "node", "node-a");
    expect(out).toContain("Name:               node-a");
    expect(out).toContain("Non-terminated Pods:          (0 in total)");
    expect(out).toMatch(/Events:\s+<none>/);
  });

  test("describe svc shows the load-balancer ingress and the Service's Events", async () => {
    const out = await kubectlOk("describe", "svc", "web");
    expect(out).toMatch(/LoadBalancer Ingress:\s+198\.51\.100\.7/);
    expect(out).toMatch(/Normal\s+EnsuredLoadBalancer\s+\S+\s+service-controller\s+Ensured load balancer/);
  });
});

describe("kubectl apply / create -f: validation on the server (/openapi/v3, fieldValidation)", () => {
  const manifest = (port: number, extra = ""): string => `apiVersion: v1
kind: Service
metadata:
  name: applied
spec:
  type: ClusterIP
  ports:
  - port: ${port}${extra}
`;

  test("apply creates, and re-apply patches with the merge keys /openapi/v3 publishes", async () => {
    const created = await kubectlWithInput(manifest(81), "apply", "-f", "-");
    expect(created).toMatchObject({ code: 0, stderr: "" });
    expect(created.stdout.trim()).toBe("service/applied created");
    const changed = await kubectlWithInput(manifest(82), "apply", "-f", "-");
    expect(changed).toMatchObject({ code: 0, stderr: "", stdout: "service/applied configured\n" });
    const svc = sim.get("Service", "default", "applied") as { spec: { ports: { port: number }[] } };
    expect(svc.spec.ports.map((p) => p.port)).toEqual([82]);
  });

  test("an unknown field: Strict (kubectl's default) refuses with the strict decoding error", async () => {
    const r = await kubectlWithInput(
      manifest(90, "\n    portx: 1").replace("name: applied", "name: strict"),
      "create",
      "-f",
      "-",
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'Service in version "v1" cannot be handled as a Service: strict decoding error: unknown field "spec.ports[0].portx"',
    );
    expect(sim.get("Service", "default", "strict")).toBeUndefined();
  });

  test("--validate=warn prints the server's Warning and stores the object without the field", async () => {
    const r = await kubectlWithInput(
      manifest(91, "\n    portx: 1").replace("name: applied", "name: warned"),
      "apply",
      "--validate=warn",
      "-f",
      "-",
    );
    expect(r).toMatchObject({ code: 0, stdout: "service/warned created\n" });
    expect(r.stderr).toBe('Warning: unknown field "spec.ports[0].portx"\n');
    const svc = sim.get("Service", "default", "warned") as { spec: { ports: Record<string, unknown>[] } };
    expect(Object.keys(svc.spec.ports[0] ?? {})).not.toContain("portx");
  });

  test("--validate=false (Ignore) drops the field silently", async () => {
    const r = await kubectlWithInput(
      manifest(92, "\n    portx: 1").replace("name: applied", "name: ignored"),
      "apply",
      "--validate=false",
      "-f",
      "-",
    );
    expect(r).toMatchObject({ code: 0, stderr: "", stdout: "service/ignored created\n" });
    const svc = sim.get("Service", "default", "ignored") as { spec: { ports: Record<string, unknown>[] } };
    expect(Object.keys(svc.spec.ports[0] ?? {})).not.toContain("portx");
  });

  test("kubectl explain reads the schema from /openapi/v3", async () => {
    const out = await kubectlOk("explain", "svc.spec.ports");
    expect(out).toContain("FIELD: ports <[]ServicePort>");
    expect(out).toMatch(/nodePort\s+<integer>/);
  });
});

describe("the Python client (python3-kubernetes)", () => {
  const pyTest = hasPythonClient ? test : test.skip;
  pyTest("lists, and watches with watch=True", async () => {
    const script = `
import sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
print("nodes", ",".join(sorted(n.metadata.name for n in v1.list_node().items)))
print("services", ",".join(sorted(s.metadata.name for s in v1.list_namespaced_service("default", label_selector="provider=kubernetes").items)))
print("pods", len(v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-a,status.phase!=Succeeded").items))
w = watch.Watch()
for ev in w.stream(v1.list_node, field_selector="metadata.name=node-a", timeout_seconds=5):
    print("watch", ev["type"], ev["object"].metadata.name)
    w.stop()
`;
    const r = await run(PYTHON, ["-c", script, kubeconfig]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim().split("\n")).toEqual([
      "nodes node-a,node-b",
      "services kubernetes",
      "pods 0",
      "watch ADDED node-a",
    ]);
  });

  pyTest("creates, patches (also /status) and deletes a Service", async () => {
    const script = `
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
svc = client.V1Service(metadata=client.V1ObjectMeta(name="py-svc"),
    spec=client.V1ServiceSpec(type="LoadBalancer", ports=[client.V1ServicePort(port=80)]))
print("type", v1.create_namespaced_service("default", svc).spec.type)
print("labels", v1.patch_namespaced_service("py-svc", "default", {"metadata": {"labels": {"a": "b"}}}).metadata.labels)
st = v1.patch_namespaced_service_status("py-svc", "default", {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.9"}]}}})
print("ingress", st.status.load_balancer.ingress[0].ip)
v1.delete_namespaced_service("py-svc", "default")
try:
    v1.read_namespaced_service("py-svc", "default")
except client.exceptions.ApiException as e:
    print("read", e.status)
`;
    const r = await run(PYTHON, ["-c", script, kubeconfig]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim().split("\n")).toEqual([
      "type LoadBalancer",
      "labels {'a': 'b'}",
      "ingress 192.0.2.9",
      "read 404",
    ]);
  });
});
