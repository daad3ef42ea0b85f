// An account's SDK clients: made with the SDK's own google-gax, whose REST client keeps the
// proto root it loaded, so a second account does not load the SDK's protos again; each
// account's clients still call with that account's own credentials.
import { createRequire } from "node:module";
import { GcpComputeFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, jest, test } from "@jest/globals";
import type { AccountBinding } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { gcpProvider } from "./index.js";

const REGION = "us-central1";
let fake: GcpComputeFake;
const keys: Record<string, string> = {};

beforeAll(async () => {
  fake = await GcpComputeFake.start({ spec: true });
  for (const project of ["first-project", "second-project"]) {
    keys[project] = fake.createProject(project, { [REGION]: [`${REGION}-a`] }).key;
    fake.createInstance(project, { name: `${project}-node`, zone: `${REGION}-a` });
  }
});

afterAll(async () => {
  fake.spec?.assertClean();
  await fake.close();
});

const account = (project: string): AccountBinding => ({
  name: project,
  provider: "gcp",
  region: REGION,
  endpoint: fake.url,
  credential: keys[project] ?? "",
  requestTimeoutMs: 5_000,
});

/** The google-gax the SDK itself loads (the one the provider hands its clients). */
type GrpcClientClass = { protobufFromJSON: (json: object, ignoreCache?: boolean) => unknown };
const sdkGax = createRequire(createRequire(import.meta.url).resolve("@google-cloud/compute"))(
  "google-gax",
) as { fallback: { GrpcClient: GrpcClientClass } };

test("a second account's clients reuse the loaded proto root; each account calls as itself", async () => {
  const loads = jest.spyOn(sdkGax.fallback.GrpcClient, "protobufFromJSON");
  try {
    const first = await bindRecorded(gcpProvider, account("first-project"), {});
    expect((await first.provider.instances.findByName("first-project-node")).map((i) => i.name)).toEqual([
      "first-project-node",
    ]);
    // The first account's 17 clients: gax loads (or finds in its cache) the root at most once.
    const afterFirst = loads.mock.calls.length;
    expect(afterFirst).toBeLessThanOrEqual(1);
    const second = await bindRecorded(gcpProvider, account("second-project"), {});
    expect((await second.provider.instances.findByName("second-project-node")).map((i) => i.name)).toEqual([
      "second-project-node",
    ]);
    expect(await second.provider.instances.findByName("first-project-node")).toEqual([]);
    expect(loads.mock.calls.length).toBe(afterFirst);
  } finally {
    loads.mockRestore();
  }
});
