/**
 * Secrets never leak: a fleet of processes (hub and agents through the CLI, a real nats-server,
 * the simulators) runs at debug level through its happy path and its failure paths (a cloud
 * answering 5xx and 403, an agent with a wrong token, one with a wrong NATS password, fleet API
 * calls with a wrong token), and every log line, every /metrics scrape, every Kubernetes Event
 * and every error answer is scanned for every secret used, and for the wrong ones presented.
 * TLS private keys that Services name are scanned for the same way in linode-tls.e2e.test.ts.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@fleet-ccm/sim";
import { afterAll, expect, test } from "@jest/globals";
import { pino } from "pino";
import { DEMO_ACCOUNT, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { scanForSecrets } from "./secret-forms.js";

const logger = pino({ level: "silent" });
let fleet: LocalFleet | undefined;
const children: ChildProcess[] = [];
let dir = "";

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await fleet?.stop();
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

test("no log line, metric, Event or error answer contains a secret", async () => {
  const apiToken = randomBytes(24).toString("base64url");
  const wrongToken = randomBytes(24).toString("base64url");
  const wrongNats = randomBytes(18).toString("base64url");
  const wrongApiToken = randomBytes(24).toString("base64url");
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-secrets-"));
  const apiTokenFile = join(dir, "api-token");
  writeFileSync(apiTokenFile, apiToken, { mode: 0o600 });
  const apiPort = await freePort();
  const f = await LocalFleet.start({
    clusters: 2,
    nodesPerCluster: 0,
    logger,
    hubConfig: { api: { listen: `127.0.0.1:${apiPort}`, token: { file: apiTokenFile } } },
  });
  fleet = f;
  const [a = "", b = ""] = [...f.clusters.keys()];
  const hub = await f.spawnHubProcess(undefined, { captureOutput: true, logLevel: "debug" });
  children.push(hub.child);
  const outputs: string[][] = [];
  for (const c of [a, b]) {
    const out: string[] = [];
    outputs.push(out);
    children.push(f.spawnAgentProcess(c, { output: out, logLevel: "debug" }));
  }
  const scrapes: string[] = [];
  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${hub.httpPort}/metrics`).catch(() => undefined);
    if (res?.ok) scrapes.push(await res.text());
    return res?.ok === true;
  };
  expect(await waitFor(scrape, 20_000)).toBe(true);

  // The happy path: nodes initialized, load balancers up.
  for (const c of [a, b]) {
    f.addNodes(c, 2);
    f.addServices(c, 1);
  }
  expect(
    await waitFor(() => f.progress().initialized === 4 && f.serviceProgress().withIngress === 2, 30_000),
  ).toBe(true);
  await scrape();

  // The cloud fails: 5xx, then the account suspended (403). A node joins meanwhile.
  f.cloud.setFaults({ errorRate: 1 });
  f.addNodes(a, 1);
  const outcome = async (re: RegExp) => (await scrape()) && re.test(scrapes.at(-1) ?? "");
  expect(await waitFor(() => outcome(/fleet_ccm_cloud_calls_total\{[^}]*outcome="transient"/), 15_000)).toBe(
    true,
  );
  f.cloud.resetFaults();
  f.cloud.setAccountSuspended(DEMO_ACCOUNT, true);
  f.addServices(b, 1);
  // Refused by the cloud: an outcome other than ok, transient, throttled or not found.
  expect(
    await waitFor(
      () =>
        outcome(
          /fleet_ccm_cloud_calls_total\{[^}]*outcome="(?!ok"|transient"|throttled"|notfound"|instancenotfound")/,
        ),
      15_000,
    ),
  ).toBe(true);
  await scrape();
  f.cloud.setAccountSuspended(DEMO_ACCOUNT, false);
  expect(await waitFor(() => f.progress().initialized === 5, 30_000)).toBe(true);

  // An agent with a wrong token and one with a wrong NATS password.
  const wrongTokenOut: string[] = [];
  children.push(f.spawnAgentProcess(a, { output: wrongTokenOut, logLevel: "debug", token: wrongToken }));
  outputs.push(wrongTokenOut);
  const wrongNatsOut: string[] = [];
  outputs.push(wrongNatsOut);
  children.push(f.spawnAgentProcess(b, { output: wrongNatsOut, logLevel: "debug", natsPassword: wrongNats }));
  expect(await waitFor(() => wrongTokenOut.some((l) => /UNAUTHENTICATED|token/i.test(l)), 20_000)).toBe(true);
  expect(await waitFor(() => wrongNatsOut.some((l) => /nats|authorization/i.test(l)), 20_000)).toBe(true);

  // The fleet API: wrong token, no token, the right one.
  const answers: string[] = [];
  for (const auth of [`Bearer ${wrongApiToken}`, undefined, `Bearer ${apiToken}`]) {
    const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1/fleet`, {
      headers: auth === undefined ? {} : { authorization: auth },
    });
    answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.text()}`);
  }
  expect(answers[0]).toMatch(/^401/);
  expect(answers[2]).toMatch(/^200/);
  await scrape();

  const events = [a, b].flatMap((c) =>
    f
      .cluster(c)
      .kube.list("Event")
      .map((e) => JSON.stringify(e)),
  );
  expect(events.length).toBeGreaterThan(0);
  const haystacks: Record<string, string> = {
    "hub log": hub.output(),
    "agent logs": outputs.map((o) => o.join("\n")).join("\n"),
    "nats-server log": f.nats.output(),
    metrics: scrapes.join("\n"),
    "Kubernetes Events": events.join("\n"),
    "fleet API answers": answers.join("\n"),
  };
  // Something was said everywhere (debug level, failures logged).
  for (const [where, text] of Object.entries(haystacks))
    if (where !== "nats-server log")
      expect({ where, empty: text.length === 0 }).toEqual({ where, empty: false });
  expect(haystacks["hub log"]).toMatch(/stream without valid credentials refused/);

  const secrets = [...f.secrets(), apiToken, wrongToken, wrongNats, wrongApiToken];
  expect(secrets.every((s) => s.length >= 16)).toBe(true);
  const scan = (texts: Record<string, string>) => scanForSecrets(secrets, texts);
  // The scan finds what it looks for: a token's first 12 characters in a line.
  expect(scan({ probe: `token=${(secrets[1] ?? "").slice(0, 12)}…` })).toEqual(["secret #1 in probe"]);
  const leaks = scan(haystacks);
  expect(leaks).toEqual([]);
}, 180_000);
