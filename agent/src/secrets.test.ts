// The agent's Secret reading against the Kubernetes API simulator over HTTP, under a ClusterRole
// that grants secrets `get` only: exactly the Secrets Services name, only the keys asked for.

import { Writable } from "node:stream";
import type { SecretReference } from "@fleet-ccm/proto";
import {
  type KubeApiServer,
  type KubePolicyRule,
  selfSignedCertificate,
  startKubeApiServer,
  waitFor,
} from "@fleet-ccm/sim";
import { afterEach, describe, expect, test } from "@jest/globals";
import { KubeConfig, type V1Service } from "@kubernetes/client-node";
import { pino } from "pino";
import { KubeClient } from "./kube-client.js";
import { SecretFollower, type ServiceRef } from "./secrets.js";

const PORT = "service.beta.kubernetes.io/linode-loadbalancer-port-";
const REFERENCE: SecretReference = {
  annotationPrefix: PORT,
  jsonField: "tls-secret-name",
  keys: ["tls.crt", "tls.key"],
};
const USER = "system:serviceaccount:fleet-ccm-system:fleet-ccm-agent";
const GET_SECRETS: KubePolicyRule = { apiGroups: [""], resources: ["secrets"], verbs: ["get"] };

let sim: KubeApiServer | undefined;
let follower: SecretFollower | undefined;
afterEach(async () => {
  await follower?.stop();
  await sim?.close();
  sim = undefined;
  follower = undefined;
});

function service(namespace: string, name: string, annotations: Record<string, string>): V1Service {
  return { metadata: { namespace, name, uid: `${namespace}-${name}-uid`, annotations } };
}

const tlsPort = (secret: string) => ({
  [`${PORT}443`]: JSON.stringify({ protocol: "https", "tls-secret-name": secret }),
});

function tlsSecret(namespace: string, name: string, c: { cert: string; key: string }, extra = {}): object {
  return {
    metadata: { namespace, name },
    type: "kubernetes.io/tls",
    stringData: { "tls.crt": c.cert, "tls.key": c.key, ...extra },
  };
}

interface Setup {
  readonly follower: SecretFollower;
  readonly reads: string[];
  readonly changed: ServiceRef[][];
  readonly logs: string[];
}

async function setup(
  services: V1Service[],
  rules: KubePolicyRule[] = [GET_SECRETS],
  refreshMs?: number,
): Promise<[KubeApiServer, Setup]> {
  sim = await startKubeApiServer({ rbac: { user: USER, rules } });
  for (const ns of new Set(services.map((s) => s.metadata?.namespace ?? "")))
    if (ns !== "default") sim.create("Namespace", { metadata: { name: ns } });
  const kc = new KubeConfig();
  kc.loadFromOptions(sim.kubeConfigOptions());
  const api = new KubeClient(kc);
  const reads: string[] = [];
  const changed: ServiceRef[][] = [];
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  follower = new SecretFollower({
    api: {
      readSecret: (ns, name) => {
        reads.push(`${ns}/${name}`);
        return api.readSecret(ns, name);
      },
    },
    references: [REFERENCE],
    logger: pino({ level: "debug" }, sink),
    services: () => services,
    onChanged: (s) => changed.push([...s]),
    ...(refreshMs !== undefined && { refreshMs }),
  });
  return [sim, { follower, reads, changed, logs }];
}

describe("SecretFollower", () => {
  test("reads only the Secrets Services name, in their own namespace, only the keys asked for", async () => {
    const cert = selfSignedCertificate("shop.example.com");
    const shop = service("shop", "web", tlsPort("shop-tls"));
    const other = service("other", "web", tlsPort("shop-tls"));
    const plain = service("shop", "plain", { [`${PORT}80`]: JSON.stringify({ protocol: "http" }) });
    const [s, f] = await setup([shop, other, plain]);
    s.create("Secret", tlsSecret("shop", "shop-tls", cert, { "ca.crt": "not asked for" }));
    s.create("Secret", {
      metadata: { namespace: "shop", name: "db-password" },
      stringData: { password: "hunter2" },
    });
    // As before the agent's first snapshot: read, nothing reported.
    await f.follower.readAll(false);

    expect(f.reads.sort()).toEqual(["other/shop-tls", "shop/shop-tls"]);
    const [got] = f.follower.forService(shop);
    expect(got?.problem).toBe("");
    expect(Object.keys(got?.data ?? {}).sort()).toEqual(["tls.crt", "tls.key"]);
    expect(got?.data["tls.crt"]?.toString()).toBe(cert.cert);
    expect(got?.data["tls.key"]?.toString()).toBe(cert.key);
    // Another namespace's Service never gets this namespace's Secret.
    expect(f.follower.forService(other)).toEqual([
      { name: "shop-tls", data: {}, problem: "Secret other/shop-tls not found" },
    ]);
    expect(f.follower.forService(plain)).toEqual([]);
    expect(f.changed).toEqual([]);
    expect(f.logs.join("")).not.toContain("PRIVATE KEY");
  });

  test("a Service that appeared while the Secrets were read has its own read before the snapshot (readMissing)", async () => {
    const cert = selfSignedCertificate("late.example.com");
    const first = service("default", "first", tlsPort("first-tls"));
    const late = service("default", "late", tlsPort("late-tls"));
    const services = [first];
    const [s, f] = await setup(services);
    s.create("Secret", tlsSecret("default", "first-tls", cert));
    s.create("Secret", tlsSecret("default", "late-tls", cert));
    await f.follower.readAll(false);
    services.push(late);
    expect(f.follower.hasAll(late)).toBe(false);
    expect(f.follower.forService(late)[0]?.problem).toBe("not read yet by the agent");
    await f.follower.readMissing();
    expect(f.follower.forService(late)[0]?.problem).toBe("");
    // Only the one not read yet: the first Secret is not read again.
    expect(f.reads).toEqual(["default/first-tls", "default/late-tls"]);
    expect(f.changed).toEqual([]);
  });

  test("a Secret missing a key, an invalid name, or one the role may not get is a problem, not data", async () => {
    const cert = selfSignedCertificate("a.example.com");
    const noKey = service("default", "nokey", tlsPort("half"));
    const badName = service("default", "badname", tlsPort("../kube-system/token"));
    const [s, f] = await setup([noKey, badName]);
    s.create("Secret", { metadata: { name: "half" }, stringData: { "tls.crt": cert.cert } });
    await f.follower.readAll();
    expect(f.follower.forService(noKey)[0]?.problem).toBe("Secret default/half has no tls.key");
    expect(f.follower.forService(badName)[0]?.problem).toMatch(/not a valid Secret name/);
    // An invalid name is never requested.
    expect(f.reads).toEqual(["default/half"]);
    expect(f.logs.join("")).toContain("Secret named by a Service cannot be used");
    expect(f.logs.join("")).not.toContain("PRIVATE KEY");

    await follower?.stop();
    await sim?.close();
    const [s2, g] = await setup([noKey], []);
    s2.create("Secret", tlsSecret("default", "half", cert));
    await g.follower.readAll();
    expect(g.follower.forService(noKey)[0]?.problem).toMatch(/may not get Secret default\/half/);
  });

  test("a rotated Secret is read again: periodically and on request, the Services naming it reported", async () => {
    const first = selfSignedCertificate("r.example.com");
    const second = selfSignedCertificate("r.example.com");
    const a = service("default", "a", tlsPort("rot"));
    const b = service("default", "b", tlsPort("rot"));
    const [s, f] = await setup([a, b], [GET_SECRETS], 100);
    s.create("Secret", tlsSecret("default", "rot", first));
    await f.follower.readAll(false);
    // Unchanged: nothing to report.
    await f.follower.readAll();
    expect(f.changed).toEqual([]);
    expect(await f.follower.readFor(a)).toBe(false);

    f.follower.start();
    const secret = s.get("Secret", "default", "rot") as unknown as Record<string, unknown>;
    s.update("Secret", {
      ...secret,
      data: {
        "tls.crt": Buffer.from(second.cert).toString("base64"),
        "tls.key": Buffer.from(second.key).toString("base64"),
      },
    });
    expect(await waitFor(() => f.changed.length > 0, 5_000)).toBe(true);
    expect(f.changed[0]?.map((r) => r.name).sort()).toEqual(["a", "b"]);
    expect(f.follower.forService(b)[0]?.data["tls.crt"]?.toString()).toBe(second.cert);

    // Deleted: a problem the hub shows as a Warning Event; no crash, no data kept.
    s.delete("Secret", "default", "rot");
    expect(await f.follower.readFor(a)).toBe(true);
    expect(f.follower.forService(a)[0]).toEqual({
      name: "rot",
      data: {},
      problem: "Secret default/rot not found",
    });
    expect(f.logs.join("")).not.toContain("PRIVATE KEY");
  });
});
