/**
 * Mutual TLS between agents and the hub: a CA the hub trusts issues each cluster a client
 * certificate whose URI SAN names the cluster. The hub maps certificate to cluster and refuses
 * any mismatch with the token or the Hello; it reloads its certificate and client CA bundle
 * from their files, so both rotate without a restart and without dropping open streams.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, HubTlsCredentials } from "@fleet-ccm/agent";
import { AgentMessage, HubMessage, RELEASE_VERSION } from "@fleet-ccm/proto";
import { Client, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

const PREFIX = "spiffe://fleet-ccm/cluster/";
let dir: string;
let fleet: LocalFleet;
let a: string;
let b: string;
const hubLines: { msg: string; cluster?: string }[] = [];

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: "ignore", cwd: dir });
}

function ca(name: string): void {
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-days",
    "1",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-subj",
    `/CN=${name}`,
  );
}

/** A leaf certificate signed by `issuer`, with the given extensions (SAN, key usage). */
function leaf(name: string, issuer: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
  openssl(
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  );
  openssl(
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${issuer}.crt`,
    "-CAkey",
    `${issuer}.key`,
    "-CAcreateserial",
    "-days",
    "1",
    "-out",
    `${name}.crt`,
    "-extfile",
    `${name}.ext`,
  );
}

const file = (n: string) => join(dir, n);
const pem = (n: string) => readFileSync(file(n));
const client = (name: string, cluster: string, issuer: string) =>
  leaf(name, issuer, `subjectAltName=URI:${PREFIX}${cluster}\nextendedKeyUsage=clientAuth`);

/** Replaces a file the way a mounted Secret changes: a whole new file under the same name. */
function swap(target: string, content: Buffer): void {
  writeFileSync(`${file(target)}.new`, content);
  renameSync(`${file(target)}.new`, file(target));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-mtls-"));
  ca("ca1");
  ca("ca2");
  ca("foreign");
  const serverExt = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth";
  leaf("hub1", "ca1", serverExt);
  leaf("hub2", "ca2", serverExt);
  fleet = await LocalFleet.start({
    clusters: 2,
    nodesPerCluster: 0,
    logger: pino({ level: "info" }, { write: (s: string) => hubLines.push(JSON.parse(s)) }),
    hubConfig: {
      grpc: {
        listen: "127.0.0.1:0",
        tls: {
          certFile: file("hub.crt"),
          keyFile: file("hub.key"),
          clientCaFile: file("clients-ca.crt"),
          reloadIntervalMs: 200,
        },
      },
    },
  });
  [a = "", b = ""] = [...fleet.clusters.keys()];
  client("a1", a, "ca1");
  client("b1", b, "ca1");
  client("a2", a, "ca2");
  client("b2", b, "ca2");
  client("foreign-a", a, "foreign");
  leaf("nouri", "ca1", "subjectAltName=DNS:agent.example\nextendedKeyUsage=clientAuth");
  writeFileSync(file("hub.crt"), pem("hub1.crt"));
  writeFileSync(file("hub.key"), pem("hub1.key"));
  writeFileSync(file("clients-ca.crt"), pem("ca1.crt"));
  await fleet.startHub();
}, 60_000);

afterAll(async () => {
  await fleet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  welcomed: boolean;
  code?: number;
  details?: string;
}

/** One stream with a client certificate (or none), a token (or none) and a Hello naming `hello`. */
async function attempt(opts: {
  trust: string;
  cert?: string;
  token?: string;
  hello: string;
}): Promise<Outcome> {
  // The agent's own TLS credentials (they dial an IP address without SNI, as Node.js 26 requires).
  const creds = new HubTlsCredentials(
    opts.cert === undefined
      ? { caPem: pem(`${opts.trust}.crt`) }
      : {
          files: {
            caFile: file(`${opts.trust}.crt`),
            certFile: file(`${opts.cert}.crt`),
            keyFile: file(`${opts.cert}.key`),
          },
        },
  );
  const c = new Client(`127.0.0.1:${fleet.hubPort}`, creds);
  const md = new Metadata();
  if (opts.token !== undefined) md.set("authorization", `Bearer ${opts.token}`);
  const call = c.makeBidiStreamRequest(
    "/fleet.v1.Hub/Sync",
    (m: AgentMessage) => Buffer.from(AgentMessage.encode(m).finish()),
    (buf: Buffer) => HubMessage.decode(buf),
    md,
    { deadline: Date.now() + 10_000 },
  );
  const out = await new Promise<Outcome>((resolve) => {
    call.on("data", (m: HubMessage) => {
      if (m.body?.$case === "welcome") resolve({ welcomed: true });
    });
    call.on("error", (e: ServiceError) => resolve({ welcomed: false, code: e.code, details: e.details }));
    call.write({
      body: {
        $case: "hello",
        value: { cluster: opts.hello, agentVersion: RELEASE_VERSION, kubernetesVersion: "v1.31.0" },
      },
    });
  });
  call.cancel();
  c.close();
  return out;
}

describe("the client certificate names the cluster", () => {
  test("a certificate of cluster A with A's token, or with no token at all: welcomed", async () => {
    expect(await attempt({ trust: "ca1", cert: "a1", token: fleet.cluster(a).token, hello: a })).toEqual({
      welcomed: true,
    });
    expect(await attempt({ trust: "ca1", cert: "a1", hello: a })).toEqual({ welcomed: true });
  });

  test("A's certificate with B's token, or a Hello naming B: PERMISSION_DENIED", async () => {
    const mixed = await attempt({ trust: "ca1", cert: "a1", token: fleet.cluster(b).token, hello: a });
    expect(mixed.code).toBe(status.PERMISSION_DENIED);
    expect(mixed.details).toContain(
      `the client certificate names cluster "${a}", the bearer token another one`,
    );
    const hello = await attempt({ trust: "ca1", cert: "a1", hello: b });
    expect(hello.code).toBe(status.PERMISSION_DENIED);
    expect(hello.details).toContain(`belongs to cluster "${a}", not "${b}"`);
  });

  test("a certificate naming no cluster: UNAUTHENTICATED, saying what it expects", async () => {
    const o = await attempt({ trust: "ca1", cert: "nouri", token: fleet.cluster(a).token, hello: a });
    expect(o.code).toBe(status.UNAUTHENTICATED);
    expect(o.details).toContain(`expected one URI SAN ${PREFIX}<cluster>`);
  });

  test("no client certificate, or one from a CA the hub does not trust: the TLS handshake fails", async () => {
    for (const cert of [undefined, "foreign-a"]) {
      const o = await attempt({
        trust: "ca1",
        ...(cert === undefined ? {} : { cert }),
        token: fleet.cluster(a).token,
        hello: a,
      });
      expect(o.welcomed).toBe(false);
      expect(o.code).toBe(status.UNAVAILABLE);
    }
  });

  test("refusals are counted by reason", async () => {
    const m = await fleet.hub?.metrics.streamsRefused.get();
    const n = (reason: string) =>
      (m?.values ?? []).filter((v) => v.labels.reason === reason).reduce((x, v) => x + v.value, 0);
    expect(n("identity")).toBe(3);
  });
});

test("certificates rotate without a restart or a dropped stream: old and new valid during the overlap", async () => {
  const logger = pino({ level: "silent" });
  const agent = new Agent({
    cluster: a,
    kubeConfig: fleet.kubeConfigFor(a),
    hub: {
      address: `127.0.0.1:${fleet.hubPort}`,
      token: fleet.cluster(a).token,
      insecure: false,
      tlsFiles: { caFile: file("ca1.crt"), certFile: file("a1.crt"), keyFile: file("a1.key") },
    },
    nats: { servers: [fleet.nats.url], user: `agent-${a}`, password: fleet.cluster(a).natsPassword },
    logger,
  });
  fleet.cluster(a).agent = agent;
  await agent.start();
  fleet.addNodes(a, 1);
  expect(await waitFor(() => fleet.progress().initialized === 1, 20_000)).toBe(true);
  const connects = () => hubLines.filter((l) => l.msg === "agent connected" && l.cluster === a).length;
  const before = connects();

  // Overlap begins: the hub trusts both client CAs and serves a certificate of the new CA.
  swap("clients-ca.crt", Buffer.concat([pem("ca1.crt"), pem("ca2.crt")]));
  swap("hub.key", pem("hub2.key"));
  swap("hub.crt", pem("hub2.crt"));
  expect(
    await waitFor(async () => (await attempt({ trust: "ca2", cert: "b2", hello: b })).welcomed, 10_000),
  ).toBe(true);
  // A client of the old CA still gets in (trusting the new server CA); one that trusts only the
  // old server CA no longer does: the hub's certificate was reloaded.
  expect((await attempt({ trust: "ca2", cert: "b1", hello: b })).welcomed).toBe(true);
  expect((await attempt({ trust: "ca1", cert: "b1", hello: b })).code).toBe(status.UNAVAILABLE);

  expect(hubLines.some((l) => l.msg === "TLS certificate reloaded from its file")).toBe(true);
  expect(hubLines.some((l) => l.msg === "TLS client CA reloaded from its file")).toBe(true);

  // Overlap ends: only the new client CA. Old client certificates are refused on new connections.
  swap("clients-ca.crt", pem("ca2.crt"));
  expect(
    await waitFor(
      async () => (await attempt({ trust: "ca2", cert: "b1", hello: b })).code === status.UNAVAILABLE,
      10_000,
    ),
  ).toBe(true);

  // The agent's stream, opened before all this, never dropped, and its cluster still converges.
  expect(connects()).toBe(before);
  expect(fleet.hub?.fleet.view(a)?.connected).toBe(true);
  fleet.addNodes(a, 1);
  expect(await waitFor(() => fleet.progress().initialized === 2, 20_000)).toBe(true);
  expect(connects()).toBe(before);
}, 90_000);

test("the agent as a process with --cert-file and no token: its cluster's nodes initialize", async () => {
  // After the rotation above the hub serves a ca2 certificate and trusts only ca2 clients.
  const kube = fleet.cluster(b).kube;
  writeFileSync(file("b.kubeconfig"), kube.kubeconfigYaml(), { mode: 0o600 });
  writeFileSync(file("b.nats"), fleet.cluster(b).natsPassword, { mode: 0o600 });
  const output: string[] = [];
  const child: ChildProcess = spawn(
    process.execPath,
    [
      fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url)),
      "agent",
      "--cluster",
      b,
      "--hub",
      `127.0.0.1:${fleet.hubPort}`,
      "--ca-file",
      file("ca2.crt"),
      "--cert-file",
      file("b2.crt"),
      "--key-file",
      file("b2.key"),
      "--nats",
      fleet.nats.url,
      "--nats-user",
      `agent-${b}`,
      "--nats-password-file",
      file("b.nats"),
      "--kubeconfig",
      file("b.kubeconfig"),
      "--log-level",
      "info",
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FLEET_CCM_TOKEN: "" } },
  );
  child.stdout?.on("data", (d: Buffer) => output.push(d.toString()));
  child.stderr?.on("data", (d: Buffer) => output.push(d.toString()));
  try {
    const before = fleet.progress().initialized;
    fleet.addNodes(b, 1);
    expect(await waitFor(() => fleet.progress().initialized === before + 1, 30_000)).toBe(true);
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
  expect(output.join("")).not.toContain("UNAUTHENTICATED");
}, 60_000);
