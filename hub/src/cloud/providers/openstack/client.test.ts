// The OpenStack client against the fake cloud over HTTP: one Keystone token for every caller at
// once, renewed before it expires and once more when a service refuses it, the catalog's region
// and interface (and an override), each service's errors mapped to the contract's.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "@jest/globals";
import { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import { FakeClock } from "../../../util/clock.js";
import {
  CloudError,
  ConflictError,
  ForbiddenError,
  ThrottledError,
  TransientCloudError,
} from "../../errors.js";
import { HttpStatusError } from "../../http/failures.js";
import type { CloudCallWrapper } from "../../provider.js";
import { endpointOf, OpenStackClient, type OpenStackClientConfig } from "./client.js";
import { isImmutable, isNotFound, OpenStackApiError, toContractError } from "./errors.js";
import { KeystoneAuth, type KeystoneCredentials } from "./keystone.js";

const clock = new FakeClock(1_800_000_000_000);
let fake: OpenStackFake;
const ops: string[] = [];
const call: CloudCallWrapper = (op, fn) => {
  ops.push(op);
  return fn(new AbortController().signal);
};

const appCredential: KeystoneCredentials = {
  kind: "application_credential",
  id: "app-1",
  secret: () => "s3cret",
};

function client(over: Partial<OpenStackClientConfig> = {}, credentials = appCredential) {
  const auth = new KeystoneAuth({
    authUrl: `${fake.url}/v3`,
    credentials,
    clock,
    call,
    requestTimeoutMs: 5_000,
  });
  return {
    auth,
    client: new OpenStackClient({
      auth,
      region: "RegionOne",
      interface: "public",
      endpoints: {},
      requestTimeoutMs: 5_000,
      clock,
      call,
      pageSize: 2,
      ...over,
    }),
  };
}

const names = (servers: readonly { name: string }[]) => servers.map((s) => s.name).sort();

beforeAll(async () => {
  fake = await OpenStackFake.start({ spec: true, now: () => clock.now(), tokenTtlMs: 3_600_000 });
  fake.createProject("demo");
  fake.createApplicationCredential("demo", "app-1", "s3cret");
  fake.createUser("demo", { name: "alice", password: "pw" });
  const net = fake.createNetwork("demo", "RegionOne", { name: "k8s", cidr: "10.0.0.0/16" });
  const far = fake.createNetwork("demo", "RegionTwo", { name: "k8s", cidr: "10.1.0.0/16" });
  for (let i = 0; i < 5; i++) fake.createServer("demo", "RegionOne", { name: `one-${i}`, networks: [net] });
  fake.createServer("demo", "RegionTwo", { name: "two-0", networks: [far] });
});

afterEach(() => {
  ops.length = 0;
  expect(fake.specProblems()).toEqual([]);
});
afterAll(() => fake.close());

describe("Keystone tokens", () => {
  test("callers at once share one token request; every page of the list is followed", async () => {
    const { auth, client: c } = client();
    const lists = await Promise.all(
      Array.from({ length: 5 }, () =>
        c.list<{ id: string; name: string }>("compute", "instances.list", "/servers/detail", "servers"),
      ),
    );
    for (const l of lists) expect(names(l)).toEqual(["one-0", "one-1", "one-2", "one-3", "one-4"]);
    expect(auth.issued).toBe(1);
    expect(ops.filter((o) => o === "keystone.tokens.create")).toHaveLength(1);
    // Five servers by two: three pages for each caller.
    expect(ops.filter((o) => o === "instances.list")).toHaveLength(15);
  });

  test("a token that expires mid-run is renewed before its expiry, and a revoked one after one 401", async () => {
    const { auth, client: c } = client();
    await c.get("compute", "instances.list", "/servers/detail");
    expect(auth.issued).toBe(1);
    // 56 minutes on: within the last tenth of its hour, renewed before Nova could refuse it.
    clock.advance(56 * 60_000);
    const before = fake.log.requests({ outcome: "401" }).length;
    await c.get("compute", "instances.list", "/servers/detail");
    expect(auth.issued).toBe(2);
    expect(fake.log.requests({ outcome: "401" })).toHaveLength(before);
    // Revoked early (a password change, a revocation): one 401, one new token, the call succeeds.
    fake.expireTokens();
    const servers = await c.list<{ id: string; name: string }>(
      "compute",
      "instances.list",
      "/servers/detail",
      "servers",
    );
    expect(servers).toHaveLength(5);
    expect(auth.issued).toBe(3);
    expect(fake.log.requests({ outcome: "401" })).toHaveLength(before + 1);
  });

  test("password authentication scoped to a project; refused credentials are ForbiddenError", async () => {
    const { client: c } = client(
      {},
      {
        kind: "password",
        username: "alice",
        userDomainName: "Default",
        password: () => "pw",
        projectName: "demo",
        projectDomainName: "Default",
      },
    );
    expect(await c.list("compute", "instances.list", "/servers/detail", "servers")).toHaveLength(5);
    const { client: bad } = client({}, { ...appCredential, secret: () => "wrong" });
    await expect(bad.get("compute", "instances.list", "/servers/detail")).rejects.toBeInstanceOf(
      ForbiddenError,
    );
  });
});

describe("the catalog", () => {
  test("a catalog of two regions: each client calls its region's endpoint of its interface", async () => {
    const mark = fake.log.mark();
    const { client: two } = client({ region: "RegionTwo", interface: "internal" });
    const servers = await two.list<{ id: string; name: string }>(
      "compute",
      "instances.list",
      "/servers/detail",
      "servers",
    );
    expect(names(servers)).toEqual(["two-0"]);
    const paths = fake.log
      .requests({ afterSeq: mark })
      .map((r) => r.path)
      .filter((p) => !p.startsWith("/v3/"));
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(p.startsWith("/RegionTwo/internal/compute/v2.1/")).toBe(true);
  });

  test("an endpoint override replaces the catalog's; a region the catalog lacks is a CloudError", async () => {
    const { client: over } = client({
      region: "RegionTwo",
      endpoints: { compute: `${fake.url}/RegionOne/public/compute/v2.1` },
    });
    expect(await over.list("compute", "instances.list", "/servers/detail", "servers")).toHaveLength(5);
    const { client: nowhere } = client({ region: "RegionNine" });
    await expect(nowhere.get("compute", "instances.list", "/servers/detail")).rejects.toBeInstanceOf(
      CloudError,
    );
  });

  test("Cinder: block-storage before volumev3 in the catalog; an override without version or project gets both", async () => {
    const ep = (region: string, url: string) => ({ id: url, interface: "public", region, url });
    const token = {
      token: "t",
      expiresAtMs: 0,
      issuedAtMs: 0,
      projectId: "p1",
      catalog: [
        { type: "volumev3", name: "cinderv3", endpoints: [ep("RegionOne", "https://c/v3/p1")] },
        {
          type: "block-storage",
          name: "cinder",
          endpoints: [ep("RegionOne", "https://c/volume/v3/"), ep("RegionTwo", "https://c2/v3")],
        },
      ],
    };
    expect(endpointOf(token, "block-storage", "RegionOne", "public")).toBe("https://c/volume/v3");
    expect(endpointOf(token, "block-storage", "RegionTwo", "public")).toBe("https://c2/v3");
    const legacy = { ...token, catalog: token.catalog.slice(0, 1) };
    expect(endpointOf(legacy, "block-storage", "RegionOne", "public")).toBe("https://c/v3/p1");
    fake.createVolume("demo", "RegionOne", { size: 3 });
    const { client: over } = client({
      endpoints: { "block-storage": `${fake.url}/RegionOne/public/volume` },
    });
    const volumes = await over.list<{ id: string }>(
      "block-storage",
      "cinder.volumes.list",
      "/volumes/detail",
      "volumes",
    );
    expect(volumes).toHaveLength(1);
  });

  test("Nova's itemNotFound is the one not found; a 5xx is transient", async () => {
    const { client: c } = client();
    const gone = await c
      .get("compute", "instances.get", "/servers/5e0c0000-0000-4000-8000-0000ffffffff")
      .catch((e) => e);
    expect(isNotFound(gone)).toBe(true);
    fake.setFaults({ errorRate: 1 }, "demo");
    try {
      const err = await c.get("compute", "instances.list", "/servers/detail").catch((e) => e);
      expect(err).toBeInstanceOf(TransientCloudError);
      expect(isNotFound(err)).toBe(false);
    } finally {
      fake.resetFaults();
    }
  });
});

describe("errors", () => {
  const answer = (status: number, body: unknown, retryAfter?: string) =>
    OpenStackApiError.from({
      what: "x",
      method: "PUT",
      path: "/v2/lbaas/pools/1",
      status,
      retryAfter,
      text: JSON.stringify(body),
    });

  test("429 and 503 with Retry-After are throttling; 503 without it is transient", () => {
    const now = clock.now();
    const t429 = toContractError(answer(429, { overLimit: { code: 429, message: "slow down" } }, "3"), now);
    expect(t429).toBeInstanceOf(ThrottledError);
    expect((t429 as ThrottledError).retryAfterMs).toBe(3_000);
    const t503 = toContractError(answer(503, { faultcode: "Server", faultstring: "busy" }, "7"), now);
    expect(t503).toBeInstanceOf(ThrottledError);
    expect((t503 as ThrottledError).retryAfterMs).toBe(7_000);
    expect(toContractError(answer(503, {}), now)).toBeInstanceOf(TransientCloudError);
    expect(toContractError(answer(503, {}), now)).not.toBeInstanceOf(ThrottledError);
  });

  test("each service's body is read; Octavia's 409 on an immutable load balancer is in progress", () => {
    const octavia = answer(409, {
      faultcode: "Client",
      faultstring: "Load Balancer 1 is immutable and cannot be updated.",
      debuginfo: null,
    });
    expect(octavia.code).toBe("Client");
    const mapped = toContractError(octavia, clock.now());
    expect(mapped).toBeInstanceOf(ConflictError);
    expect(isImmutable(mapped)).toBe(true);
    expect(answer(404, { NeutronError: { type: "PortNotFound", message: "gone", detail: "" } }).code).toBe(
      "PortNotFound",
    );
    expect(answer(404, { itemNotFound: { code: 404, message: "Instance x could not be found." } }).code).toBe(
      "itemNotFound",
    );
    expect(answer(502, "<html>proxy</html>")).toBeInstanceOf(HttpStatusError);
  });
});
