/**
 * scripts/validate-manifests.mjs (run by .ci/run): deploy/ passes; a wrong type, a misspelt
 * field and an unknown kind are each reported with the object they are in.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "@jest/globals";
import { agentManifest } from "../cli/src/agent-manifest.js";

const SCRIPT = fileURLToPath(new URL("../scripts/validate-manifests.mjs", import.meta.url));

function run(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: "utf8", input });
  return { status: r.status, out: r.stdout + r.stderr };
}

test("every manifest under deploy/ is valid against the Kubernetes schema", () => {
  const r = run([]);
  expect(r.out).toMatch(/^\d+ objects valid against the Kubernetes schema/);
  expect(r.status).toBe(0);
}, 60_000);

test("a wrong type, an unknown field and an unknown kind are refused, naming the object", () => {
  const bad = `apiVersion: apps/v1
kind: Deployment
metadata: {name: typed}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers: [{name: a, image: b, ports: [{containerPort: "80"}]}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: misspelt}
automountServiceAccountTokn: false
---
apiVersion: v1
kind: Frobnicator
metadata: {name: unknown}
`;
  const r = run(["-"], bad);
  expect(r.status).toBe(1);
  expect(r.out).toContain(
    "stdin: Deployment typed: data/spec/template/spec/containers/0/ports/0/containerPort must be integer",
  );
  expect(r.out).toContain(
    `stdin: ServiceAccount misspelt: Object literal may only specify known properties, and '"automountServiceAccountTokn"' does not exist`,
  );
  expect(r.out).toContain("stdin: Frobnicator unknown: no schema for v1 Frobnicator");
}, 60_000);

test("the manifest `fleet-ccm register` prints is valid against the Kubernetes schema, with and without a CA", () => {
  for (const caPem of [undefined, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"]) {
    const manifest = agentManifest({
      cluster: "prod-eu-1",
      hubAddress: "hub.fleet.example.com:7443",
      natsUrl: "tls://nats.fleet.example.com:4222",
      token: "t".repeat(32),
      natsCreds: "-----BEGIN NATS USER JWT-----\nx\n------END NATS USER JWT------\n",
      ...(caPem !== undefined && { caPem }),
    });
    const r = run(["-"], manifest);
    expect(r.out).toMatch(/^\d+ objects valid against the Kubernetes schema/);
    expect(r.status).toBe(0);
  }
}, 60_000);
