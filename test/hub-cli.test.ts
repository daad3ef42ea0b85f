/**
 * `fleet-ccm hub --config F --check-config` as a user runs it (the built CLI): a configuration
 * with several kinds of mistakes reports every one of them, one line per problem naming the
 * field, exits 2, prints no stack trace and never echoes a secret.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "@jest/globals";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-hub-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function checkConfig(yaml: string, env: Record<string, string> = {}) {
  const path = join(dir, `hub-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, yaml);
  const r = spawnSync(process.execPath, [CLI, "hub", "--config", path, "--check-config"], {
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "", ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const GOOD = `
grpc: { listen: "127.0.0.1:7443", insecure: true }
nats: { servers: ["nats://127.0.0.1:4222"], user: hub, password: { env: NATS_PW } }
accounts:
  - { name: sim, provider: simulated, region: r1, endpoint: "http://127.0.0.1:1", credentials: { env: SIM_KEY } }
clusters:
  - { name: alpha, token: { env: ALPHA_TOKEN }, account: sim }
`;

test("several kinds of mistakes: every problem, one line each, exit 2", () => {
  const r = checkConfig(`
grpc: { listen: "7443" }
nats: { servers: ["nats://127.0.0.1:4222"], password: "hunter2-inline" }
limits: { maxObjectsPerChunk: 0 }
snapshotHold: { maxPercent: 200 }
accounts:
  - { name: sim, provider: simulated, region: r1, credentials: "abc-inline-key" }
clusters:
  - { name: alpha, token: "tok-inline-secret", account: sim }
  - { name: beta, token: { file: /run/beta }, account: main }
  - { name: alpha, token: { env: X }, account: sim }
`);
  expect(r.code).toBe(2);
  const lines = r.stderr.trim().split("\n");
  expect(lines[0]).toMatch(/hub-.*\.yaml is invalid:$/);
  for (const want of [
    /^grpc\.listen: expected host:port/,
    /^grpc\.tls: TLS is required/,
    /^nats\.password: a secret is given by reference, never inline: \{file: \/path\} .* \{env: NAME\}/,
    /^limits\.maxObjectsPerChunk: /,
    /^snapshotHold\.maxPercent: /,
    /^accounts\[0\]\.credentials: a secret is given by reference/,
    /^clusters\[0\]\.token: a secret is given by reference/,
    /^clusters\[1\]\.account: unknown account "main"$/,
    /^clusters\[2\]\.name: duplicate cluster "alpha"$/,
  ])
    expect(lines.some((l) => want.test(l))).toBe(true);
  expect(r.stderr).not.toMatch(/hunter2|abc-inline|tok-inline|Invalid input|\n\s+at /);
  expect(r.stdout).toBe("");
});

test("an unknown provider, a missing credential file and a duplicate cluster name: all three at once", () => {
  const r = checkConfig(
    `
grpc: { listen: "127.0.0.1:7443", insecure: true }
nats: { servers: ["nats://127.0.0.1:4222"] }
accounts:
  - { name: main, provider: vsphere, region: r1, credentials: { env: DO_TOKEN } }
  - { name: sim, provider: simulated, region: r1, endpoint: "http://127.0.0.1:1", credentials: { file: ${join(dir, "no-such-key")} } }
clusters:
  - { name: alpha, token: { env: ALPHA_TOKEN }, account: sim }
  - { name: alpha, token: { env: BETA_TOKEN }, account: main }
`,
    { DO_TOKEN: "t", ALPHA_TOKEN: "a", BETA_TOKEN: "b" },
  );
  expect(r.code).toBe(2);
  const lines = r.stderr.trim().split("\n");
  expect(lines[0]).toMatch(/hub-.*\.yaml is invalid:$/);
  expect(lines.slice(1)).toEqual([
    'clusters[1].name: duplicate cluster "alpha"',
    'accounts[0].provider: unknown provider "vsphere" (known: simulated, linode, aws, digitalocean, hetzner, gcp, openstack, azure)',
    `accounts[1].credentials: cannot read secret file ${join(dir, "no-such-key")} (ENOENT)`,
  ]);
  expect(r.stdout).toBe("");
});

test("a valid file whose secrets cannot be resolved names each one; a good one passes", () => {
  const missing = checkConfig(GOOD, { SIM_KEY: "k" });
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain("nats.password: environment variable NATS_PW is not set");
  expect(missing.stderr).toContain("clusters[0].token: environment variable ALPHA_TOKEN is not set");
  expect(missing.stderr).not.toMatch(/\n\s+at /);

  const ok = checkConfig(GOOD, { SIM_KEY: "k", NATS_PW: "p", ALPHA_TOKEN: "t" });
  expect(ok.stderr).toBe("");
  expect(ok.stdout).toBe("configuration is valid\n");
  expect(ok.code).toBe(0);
});
