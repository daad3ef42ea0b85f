/**
 * Linode TLS ports end to end: a hub process, an agent process under the shipped ClusterRole
 * (secrets: get only), a real nats-server, the Kubernetes API simulator and the fake Linode
 * API. A Service whose port-443 annotation names a kubernetes.io/tls Secret gets an https
 * NodeBalancer config with that certificate and key; the Secret rotated, the config follows; a
 * Service naming a missing Secret gets a Warning Event and is built once the Secret exists. The
 * private keys never show in the hub's or the agent's logs, in Events, metrics or the fleet API.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type KubePolicyRule, selfSignedCertificate } from "@fleet-ccm/sim";
import { afterAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseAllDocuments } from "yaml";
import { LinodeLocalCloud } from "../cli/src/linode-cloud.js";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { scanForSecrets } from "./secret-forms.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const CLUSTER = "cluster-001";
const P = "service.beta.kubernetes.io/linode-loadbalancer-";
const USER = "system:serviceaccount:fleet-ccm-system:fleet-ccm-agent";

function shippedRules(): KubePolicyRule[] {
  const docs = parseAllDocuments(readFileSync(new URL("../deploy/agent/rbac.yaml", import.meta.url), "utf8"));
  return docs.map((d) => d.toJS()).find((o) => o?.kind === "ClusterRole").rules as KubePolicyRule[];
}

let fleet: LocalFleet | undefined;
let dir = "";
afterAll(async () => {
  await fleet?.stop();
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

interface KubeEvent {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

test("an https port gets the Secret's certificate, follows its rotation, and no key is ever printed", async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-linode-tls-"));
  const apiToken = randomBytes(24).toString("base64url");
  writeFileSync(join(dir, "api-token"), apiToken, { mode: 0o600 });
  const apiPort = await freePort();
  const cloud = await LinodeLocalCloud.start([CLUSTER]);
  const f = await LocalFleet.start({
    cloud,
    clusters: 1,
    nodesPerCluster: 0,
    logger,
    kubeRbac: { user: USER, rules: shippedRules() },
    hubConfig: { api: { listen: `127.0.0.1:${apiPort}`, token: { file: join(dir, "api-token") } } },
  });
  fleet = f;
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true, logLevel: "debug" });
  const agentOut: string[] = [];
  f.spawnAgentProcess(CLUSTER, {
    hubPort: hub.grpcPort,
    output: agentOut,
    logLevel: "debug",
    secretRefreshMs: 500,
  });
  f.addNodes(CLUSTER, 2);
  expect(await waitFor(() => f.progress().initialized === 2, 60_000)).toBe(true);

  const kube = f.cluster(CLUSTER).kube;
  const first = selfSignedCertificate("shop.example.com");
  const rotated = selfSignedCertificate("shop.example.com");
  const late = selfSignedCertificate("late.example.com");
  const tlsSecret = (name: string, c: { cert: string; key: string }) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { namespace: "default", name },
    type: "kubernetes.io/tls",
    data: {
      "tls.crt": Buffer.from(c.cert).toString("base64"),
      "tls.key": Buffer.from(c.key).toString("base64"),
    },
  });
  const httpsService = (name: string, secret: string) =>
    kube.create("Service", {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name,
        namespace: "default",
        annotations: { [`${P}port-443`]: JSON.stringify({ protocol: "https", "tls-secret-name": secret }) },
      },
      spec: {
        type: "LoadBalancer",
        selector: { app: name },
        ports: [
          { name: "http", port: 80, targetPort: 8080 },
          { name: "https", port: 443, targetPort: 8443 },
        ],
      },
    });
  const config443 = (name: string) => {
    const uid = (kube.get("Service", "default", name) as { metadata: { uid: string } } | undefined)?.metadata
      .uid;
    return cloud.fake.store
      .nodeBalancersOf(cloud.account(CLUSTER))
      .find((nb) => uid !== undefined && nb.tags.includes(`fccm:u=${uid}`))
      ?.configs.find((c) => c.port === 443);
  };

  kube.create("Secret", tlsSecret("shop-tls", first));
  httpsService("shop", "shop-tls");
  expect(await waitFor(() => config443("shop")?.sslCert === first.cert.trim(), 60_000)).toBe(true);
  expect(config443("shop")).toMatchObject({ protocol: "https", sslKey: first.key.trim() });
  expect(config443("shop")?.nodes).toHaveLength(2);

  // Rotated (as cert-manager renews it): the NodeBalancer config follows, keeping its id.
  const id = config443("shop")?.id;
  kube.update("Secret", {
    ...(kube.get("Secret", "default", "shop-tls") as object),
    data: tlsSecret("shop-tls", rotated).data,
  });
  expect(await waitFor(() => config443("shop")?.sslCert === rotated.cert.trim(), 30_000)).toBe(true);
  expect(config443("shop")).toMatchObject({ id, sslKey: rotated.key.trim() });

  // A Secret that does not exist yet: a Warning Event on the Service, nothing built, no crash.
  httpsService("late", "late-tls");
  const warned = () =>
    (kube.list("Event") as unknown as KubeEvent[]).find(
      (e) =>
        e.involvedObject.name === "late" && e.type === "Warning" && e.reason === "SyncLoadBalancerFailed",
    );
  expect(await waitFor(() => warned() !== undefined, 30_000)).toBe(true);
  expect(warned()?.message).toContain('TLS Secret "late-tls": Secret default/late-tls not found');
  expect(config443("late")).toBeUndefined();
  kube.create("Secret", tlsSecret("late-tls", late));
  expect(await waitFor(() => config443("late")?.sslCert === late.cert.trim(), 30_000)).toBe(true);

  // Everything the fleet printed or answered, scanned for the private keys.
  const metrics = await (await fetch(`http://127.0.0.1:${hub.httpPort}/metrics`)).text();
  let answers = "";
  for (const path of ["/api/v1/fleet", `/api/v1/clusters/${CLUSTER}`]) {
    const res = await fetch(`http://127.0.0.1:${apiPort}${path}`, {
      headers: { authorization: `Bearer ${apiToken}` },
    });
    expect(res.status).toBe(200);
    answers += await res.text();
  }
  const events = kube.list("Event").map((e) => JSON.stringify(e));
  const haystacks = {
    "hub log": hub.output(),
    "agent log": agentOut.join("\n"),
    metrics,
    "Kubernetes Events": events.join("\n"),
    "fleet API": answers,
  };
  // The logs are at debug level and said something about the Secrets (names only).
  expect(haystacks["agent log"]).toContain("late-tls");
  expect(haystacks["hub log"]).toContain("late-tls");
  expect(answers).toContain("shop");
  const keys = [first.key, rotated.key, late.key];
  // The scan finds what it looks for: a few lines of one key, its Secret data, a Buffer's bytes.
  const lines = first.key.split("\n");
  expect(scanForSecrets(keys, { probe: `key: ${lines.slice(2, 4).join("")}` })).toEqual([
    "secret #0 in probe",
  ]);
  expect(scanForSecrets(keys, { probe: tlsSecret("x", rotated).data["tls.key"] })).toEqual([
    "secret #1 in probe",
  ]);
  expect(scanForSecrets(keys, { probe: JSON.stringify(Buffer.from(late.key)) })).toEqual([
    "secret #2 in probe",
  ]);
  expect(scanForSecrets(keys, haystacks)).toEqual([]);
}, 180_000);
