// A GCP account's credentials against the fake's token endpoint, STS and iamcredentials, through
// google-auth-library's own code: a service-account key or a workload identity federation file
// (file- or URL-sourced subject token, with or without impersonation), each rotated without a
// new provider; tokens that expire or are revoked mid-run; refusals mapped to the contract.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GcpComputeFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { credentialNames } from "../../bind-provider.js";
import { sampleLoadBalancerSpec } from "../../conformance/conformance.testkit.js";
import { ForbiddenError } from "../../errors.js";
import { type AccountBinding, type CloudProvider, isInProgress } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { gcpProvider } from "./index.js";

const PROJECT = "wif-project";
const OTHER = "wif-other";
const REGION = "us-central1";
let fake: GcpComputeFake;
let key: string;
let dir: string;
let audience: string;
const tokenFile = () => join(dir, "subject-token");
const saOf = (project: string) => `fleet-ccm@${project}.iam.gserviceaccount.com`;

beforeAll(async () => {
  fake = await GcpComputeFake.start({ spec: true });
  key = fake.createProject(PROJECT, { [REGION]: [`${REGION}-a`] }).key;
  fake.createProject(OTHER, { [REGION]: [`${REGION}-a`] });
  fake.createInstance(PROJECT, { name: "node-0", zone: `${REGION}-a`, tags: ["n"] });
  fake.createInstance(PROJECT, { name: "node-1", zone: `${REGION}-a`, tags: ["n"] });
  fake.createInstance(OTHER, { name: "other-0", zone: `${REGION}-a` });
  audience = fake.sts.createPool(PROJECT);
  fake.sts.allowImpersonation(audience, saOf(PROJECT));
  dir = mkdtempSync(join(tmpdir(), "gcp-wif-"));
});

afterAll(async () => {
  fake.spec?.assertClean();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  fake.resetFaults();
  fake.operationMs = 0;
  writeFileSync(tokenFile(), fake.sts.subjectToken(audience));
});

/** An account whose credential is read through `read` each time, as the hub's rotating secrets are. */
function account(name: "serviceAccountKey" | "externalAccount", read: () => string): AccountBinding {
  return {
    name: "gcp",
    provider: "gcp",
    region: REGION,
    network: "default",
    endpoint: fake.url,
    credential: read(),
    secret: () => read(),
    credentialNames: [name],
    requestTimeoutMs: 5_000,
  };
}

async function federated(config: () => string, project = PROJECT): Promise<CloudProvider> {
  return (
    await bindRecorded(gcpProvider, account("externalAccount", config), { project, operationPollMs: 10 })
  ).provider;
}

const names = async (p: CloudProvider, name: string) =>
  (await p.instances.findByName(name)).map((m) => m.name);

describe("the factory's credentials", () => {
  test("exactly one of a key and an external-account file; a bare reference is the key", () => {
    const spec = gcpProvider.credentials;
    expect(credentialNames(spec, [""])).toEqual(["serviceAccountKey"]);
    expect(credentialNames(spec, ["externalAccount"])).toEqual(["externalAccount"]);
    expect(() => credentialNames(spec, ["serviceAccountKey", "externalAccount"])).toThrow(
      "credentials: exactly one of serviceAccountKey, externalAccount",
    );
    expect(() => credentialNames(spec, [])).toThrow("exactly one of");
  });

  test("a file of the other kind, or of neither, is refused naming the field", async () => {
    const file = fake.sts.externalAccountFile(audience, { subjectTokenFile: tokenFile() });
    await expect(
      bindRecorded(
        gcpProvider,
        account("serviceAccountKey", () => file),
      ),
    ).rejects.toThrow(
      "credentials.serviceAccountKey: is an external-account file: give it as credentials.externalAccount",
    );
    await expect(federated(() => key)).rejects.toThrow(
      "credentials.externalAccount: is a service-account key: give it as credentials.serviceAccountKey",
    );
    const aws = JSON.stringify({ ...JSON.parse(file), credential_source: { environment_id: "aws1" } });
    await expect(federated(() => aws)).rejects.toThrow("credentials.externalAccount.credential_source");
    await expect(federated(() => "{nope")).rejects.toThrow("credentials.externalAccount: is not JSON");
    // An external-account file names no project: the account's options must.
    await expect(
      bindRecorded(
        gcpProvider,
        account("externalAccount", () => file),
        { operationPollMs: 10 },
      ),
    ).rejects.toThrow("options.project: required");
  });
});

describe("workload identity federation", () => {
  test("a file-sourced subject token exchanged at STS is accepted by Compute, and the token is reused", async () => {
    const file = fake.sts.externalAccountFile(audience, { subjectTokenFile: tokenFile() });
    const provider = await federated(() => file);
    const before = fake.sts.exchanges;
    expect(await names(provider, "node-0")).toEqual(["node-0"]);
    expect(await names(provider, "node-1")).toEqual(["node-1"]);
    expect(fake.sts.exchanges).toBe(before + 1);
  });

  test("with impersonation, the federated token is traded for the service account's", async () => {
    const file = fake.sts.externalAccountFile(audience, {
      subjectTokenFile: tokenFile(),
      impersonate: saOf(PROJECT),
    });
    const provider = await federated(() => file);
    const before = fake.sts.impersonations;
    expect(await names(provider, "node-0")).toEqual(["node-0"]);
    expect(fake.sts.impersonations).toBe(before + 1);
  });

  test("an impersonation the pool is not granted is ForbiddenError, not a transient failure", async () => {
    const file = fake.sts.externalAccountFile(audience, {
      subjectTokenFile: tokenFile(),
      impersonate: saOf(OTHER),
    });
    const provider = await federated(() => file, OTHER);
    const err = await provider.instances.findByName("other-0").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(String(err)).toContain("iam.serviceAccounts.getAccessToken");
  });

  test("a URL-sourced subject token (JSON answer) works the same", async () => {
    let served = 0;
    const server: Server = createServer((_req, res) => {
      served++;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ token: fake.sts.subjectToken(audience) }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
      const file = fake.sts.externalAccountFile(audience, { subjectTokenUrl: url, format: "json" });
      const provider = await federated(() => file);
      expect(await names(provider, "node-1")).toEqual(["node-1"]);
      expect(served).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  test("a rotated subject-token file is read at the next exchange, without a new provider", async () => {
    const file = fake.sts.externalAccountFile(audience, { subjectTokenFile: tokenFile() });
    const provider = await federated(() => file);
    await names(provider, "node-0");
    // The identity provider rotates: old subject tokens revoked, a new one on disk; and the
    // access token expires mid-run.
    fake.sts.revokeSubjectTokens(audience);
    writeFileSync(tokenFile(), fake.sts.subjectToken(audience));
    fake.expireTokens();
    const before = fake.sts.exchanges;
    expect(await names(provider, "node-0")).toEqual(["node-0"]);
    expect(fake.sts.exchanges).toBe(before + 1);
  });

  test("a rotated external-account file (now impersonating) is used at once", async () => {
    let current = fake.sts.externalAccountFile(audience, { subjectTokenFile: tokenFile() });
    const provider = await federated(() => current);
    await names(provider, "node-0");
    const before = fake.sts.impersonations;
    current = fake.sts.externalAccountFile(audience, {
      subjectTokenFile: tokenFile(),
      impersonate: saOf(PROJECT),
    });
    expect(await names(provider, "node-1")).toEqual(["node-1"]);
    expect(fake.sts.impersonations).toBe(before + 1);
  });

  test("a revoked subject token, once the access token expires, is ForbiddenError (never 'not found')", async () => {
    const file = fake.sts.externalAccountFile(audience, { subjectTokenFile: tokenFile() });
    const provider = await federated(() => file);
    await names(provider, "node-0");
    fake.sts.revokeSubjectTokens(audience);
    fake.expireTokens();
    const err = await provider.instances
      .getByProviderID(`gce://${PROJECT}/${REGION}-a/node-0`)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(String(err)).toContain("token request failed");
  });
});

describe("a token that expires mid-run", () => {
  test("between the passes of an ensure whose operations take time: a new token, the ensure finishes", async () => {
    const provider = (
      await bindRecorded(
        gcpProvider,
        account("serviceAccountKey", () => key),
        { operationPollMs: 10 },
      )
    ).provider;
    fake.operationMs = 40;
    const target = {
      cluster: "prod",
      network: "default",
      scope: {},
      serviceUid: "7e0d4e4f-5a8b-4c3f-9a2b-1c0d4e0d4e4f",
    };
    const lbs = provider.loadBalancers!;
    const spec = sampleLoadBalancerSpec([`${REGION}-a/node-0`]);
    const issued = fake.tokensIssued;
    let expired = false;
    let answer = await lbs.ensure(target, spec);
    for (let n = 0; isInProgress(answer) && n < 200; n++) {
      if (!expired) {
        fake.expireTokens();
        expired = true;
      }
      await new Promise((r) => setTimeout(r, 15));
      answer = await lbs.ensure(target, spec);
    }
    expect(expired).toBe(true);
    expect(isInProgress(answer)).toBe(false);
    expect(fake.tokensIssued).toBeGreaterThan(issued);
    let gone = await lbs.ensureDeleted(target);
    while (isInProgress(gone)) {
      await new Promise((r) => setTimeout(r, 15));
      gone = await lbs.ensureDeleted(target);
    }
  });

  test("a 401 that a fresh token does not cure is ForbiddenError after one repeat, never 'not found'", async () => {
    const provider = (
      await bindRecorded(
        gcpProvider,
        account("serviceAccountKey", () => key),
        { operationPollMs: 10 },
      )
    ).provider;
    await names(provider, "node-0");
    // Every token the endpoint issues from now on is already expired when Compute sees it.
    fake.tokenLifetimeSeconds = 0;
    fake.expireTokens();
    try {
      const issued = fake.tokensIssued;
      const err = await provider.instances
        .getByProviderID(`gce://${PROJECT}/${REGION}-a/node-0`)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ForbiddenError);
      expect(String(err)).toContain("authError");
      // The first try and one repeat, each with its own token at most.
      expect(fake.tokensIssued - issued).toBeLessThanOrEqual(2);
    } finally {
      fake.tokenLifetimeSeconds = 3600;
    }
    expect(await names(provider, "node-0")).toEqual(["node-0"]);
  });

  test("federated: an expired access token is exchanged again and the call succeeds", async () => {
    const file = fake.sts.externalAccountFile(audience, {
      subjectTokenFile: tokenFile(),
      impersonate: saOf(PROJECT),
    });
    const provider = await federated(() => file);
    await names(provider, "node-0");
    const before = fake.sts.exchanges;
    fake.expireTokens();
    expect(await names(provider, "node-1")).toEqual(["node-1"]);
    expect(fake.sts.exchanges).toBe(before + 1);
  });
});
