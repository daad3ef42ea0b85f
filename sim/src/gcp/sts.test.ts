// The fake's workload identity federation on the wire: STS token exchange (RFC 8693 form in,
// OAuth JSON out, OAuth errors), IAM Credentials generateAccessToken (Google's JSON errors), and
// google-auth-library's IdentityPoolClient getting a token the fake Compute Engine accepts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { IdentityPoolClient } from "google-auth-library";
import { GcpComputeFake } from "./fake.js";
import { ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE, STS_GRANT_TYPE } from "./sts.js";

const PROJECT = "sts-project";
const SA = `fleet-ccm@${PROJECT}.iam.gserviceaccount.com`;
let fake: GcpComputeFake;
let audience: string;
let dir: string;

beforeAll(async () => {
  fake = await GcpComputeFake.start({ spec: true });
  fake.createProject(PROJECT, { "us-central1": ["us-central1-a"] });
  audience = fake.sts.createPool(PROJECT);
  fake.sts.allowImpersonation(audience, SA);
  dir = mkdtempSync(join(tmpdir(), "gcp-sts-"));
});

afterAll(async () => {
  fake.spec?.assertClean();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const exchange = (fields: Record<string, string>) =>
  fetch(`${fake.url}/v1/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });

const form = (subject: string, over: Record<string, string> = {}) => ({
  grant_type: STS_GRANT_TYPE,
  audience,
  scope: "https://www.googleapis.com/auth/cloud-platform",
  requested_token_type: ACCESS_TOKEN_TYPE,
  subject_token: subject,
  subject_token_type: JWT_TOKEN_TYPE,
  ...over,
});

/** A Compute call with a bearer token: its status. */
const computeStatus = async (token: string) =>
  (
    await fetch(`${fake.url}/compute/v1/projects/${PROJECT}/zones`, {
      headers: { authorization: `Bearer ${token}` },
    })
  ).status;

describe("STS token exchange", () => {
  test("a pool's subject token is exchanged for an access token Compute accepts", async () => {
    const res = await exchange(form(fake.sts.subjectToken(audience)));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ issued_token_type: ACCESS_TOKEN_TYPE, token_type: "Bearer" });
    expect(typeof body.expires_in).toBe("number");
    expect(await computeStatus(String(body.access_token))).toBe(200);
  });

  test("refusals are OAuth errors: grant type, audience, revoked subject token", async () => {
    const subject = fake.sts.subjectToken(audience);
    const refused = async (fields: Record<string, string>) => {
      const res = await exchange(fields);
      return { status: res.status, error: ((await res.json()) as { error: string }).error };
    };
    expect(await refused(form(subject, { grant_type: "client_credentials" }))).toEqual({
      status: 400,
      error: "unsupported_grant_type",
    });
    expect(await refused(form(subject, { audience: "//iam.googleapis.com/projects/1/nope" }))).toEqual({
      status: 400,
      error: "invalid_target",
    });
    expect(await refused(form(subject, { subject_token_type: "urn:x" }))).toEqual({
      status: 400,
      error: "invalid_request",
    });
    fake.sts.revokeSubjectTokens(audience);
    expect(await refused(form(subject))).toEqual({ status: 400, error: "invalid_grant" });
  });
});

describe("generateAccessToken", () => {
  const impersonate = (
    token: string,
    email = SA,
    body: unknown = { scope: ["https://www.googleapis.com/auth/compute"] },
  ) =>
    fetch(`${fake.url}/v1/projects/-/serviceAccounts/${email}:generateAccessToken`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  test("a federated token becomes the service account's; refusals are Google's JSON errors", async () => {
    const federated = (await (await exchange(form(fake.sts.subjectToken(audience)))).json()) as {
      access_token: string;
    };
    const ok = await impersonate(federated.access_token);
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { accessToken: string; expireTime: string };
    expect(body.expireTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(await computeStatus(body.accessToken)).toBe(200);

    const denied = await impersonate(federated.access_token, `other@${PROJECT}.iam.gserviceaccount.com`);
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { status: string } }).error.status).toBe("PERMISSION_DENIED");
    expect((await impersonate("ya29.not-issued")).status).toBe(401);
    expect((await impersonate(federated.access_token, SA, { lifetime: "3600s" })).status).toBe(400);
    // An expired federated token is refused like any other.
    fake.expireTokens();
    expect((await impersonate(federated.access_token)).status).toBe(401);
  });
});

test("google-auth-library's IdentityPoolClient (file-sourced, impersonating) gets a token Compute accepts", async () => {
  const file = join(dir, "token");
  writeFileSync(file, fake.sts.subjectToken(audience));
  const config = JSON.parse(
    fake.sts.externalAccountFile(audience, { subjectTokenFile: file, impersonate: SA }),
  );
  const client = new IdentityPoolClient({ ...config, scopes: ["https://www.googleapis.com/auth/compute"] });
  const { token } = await client.getAccessToken();
  expect(await computeStatus(token ?? "")).toBe(200);
});
