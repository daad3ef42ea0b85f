// The periodic server refresh through the fake OpenStack cloud: a full paged
// `GET /servers/detail` first (the project's ports read once, by Neutron's pages), then Nova's `changes-since` the last listing (one call, the
// ports of the changed servers only; deleted servers leave the view), a full listing again
// once the last is `fullListIntervalSeconds` old, and a failed refresh (a Nova call, one page of
// ports) leaves the view as it was.
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import type { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import { FakeClock } from "../../../util/clock.js";
import type { Instances } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { openstackProvider } from "./index.js";
import {
  APP_CREDENTIAL,
  type FakeProject,
  PROJECT,
  projectAccount,
  REGION,
  startFakeProject,
} from "./project.testkit.js";

const clock = new FakeClock(Date.parse("2026-12-01T00:00:00Z"));
let project: FakeProject;
let fake: OpenStackFake;
let instances: Instances;
let ops: string[];
let failNova = false;
/** The project's port page (1-based, counted from when it is set) refused with an error. */
let failPortPage: number | undefined;
let portPages = 0;

beforeAll(async () => {
  project = await startFakeProject(() => clock.now());
  fake = project.fake;
  for (let i = 0; i < 7; i++) fake.createServer(PROJECT, REGION, { name: `n${i}`, networks: [project.net] });
  const bound = await bindRecorded(
    openstackProvider,
    projectAccount(project),
    { applicationCredentialId: APP_CREDENTIAL.id, pageSize: 3, fullListIntervalSeconds: 600 },
    {
      clock,
      before: (op) => {
        if (failNova && op === "instances.changes") throw new Error("Nova unreachable");
        if (failPortPage !== undefined && op === "ports.listProject" && ++portPages === failPortPage)
          throw new Error("Neutron unreachable");
      },
    },
  );
  instances = bound.provider.instances;
  ops = bound.ops;
});

afterAll(async () => {
  expect(fake.specProblems()).toEqual([]);
  await fake.close();
});

/** One refresh as the hub's instance cache walks it: every page, the names seen, the calls made. */
async function refresh(): Promise<{ names: string[]; calls: Record<string, number> }> {
  const from = ops.length;
  const names: string[] = [];
  let token: string | undefined;
  do {
    const page = await instances.listPage(token);
    names.push(...page.instances.map((i) => i.name));
    token = page.nextPageToken;
  } while (token !== undefined);
  const calls: Record<string, number> = {};
  for (const op of ops.slice(from)) if (!op.startsWith("keystone.")) calls[op] = (calls[op] ?? 0) + 1;
  return { names: names.sort(), calls };
}

const all = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`);

test("a full listing first, then changes-since the last: one Nova call, ports of the changed servers only; deletions leave; a full listing again after the interval", async () => {
  // Seven servers, three a page: three Nova pages, and the project's seven ports read once for
  // all of them, three a page.
  expect(await refresh()).toEqual({ names: all(7), calls: { "instances.list": 3, "ports.listProject": 3 } });

  // The first changes-since reaches a minute before the full listing (Nova's clock may be
  // behind): the seven servers made just before it are read once more.
  clock.advance(120_000);
  expect(await refresh()).toEqual({ names: all(7), calls: { "instances.changes": 3, "ports.list": 3 } });
  // Nothing changed since: one Nova call, nothing else.
  clock.advance(120_000);
  expect(await refresh()).toEqual({ names: all(7), calls: { "instances.changes": 1 } });

  // A server shut down, one deleted, one new: Nova names the three; the ports of the two live ones.
  const byName = (name: string) => [...fake.store.servers.values()].find((s) => s.name === name)?.id ?? "";
  fake.setServerStatus(byName("n1"), "SHUTOFF");
  fake.deleteServer(byName("n2"));
  fake.createServer(PROJECT, REGION, { name: "n7", networks: [project.net] });
  clock.advance(120_000);
  const changed = await refresh();
  expect(changed.calls).toEqual({ "instances.changes": 1, "ports.list": 1 });
  expect(changed.names).toEqual(["n0", "n1", "n3", "n4", "n5", "n6", "n7"]);
  const n1 = (await instances.listPage(undefined)).instances.find((i) => i.name === "n1");
  expect(n1?.state).toBe("stopped");

  // The last full listing is ten minutes old: a full one again.
  clock.advance(600_000);
  expect(await refresh()).toEqual({
    names: ["n0", "n1", "n3", "n4", "n5", "n6", "n7"],
    calls: { "instances.list": 3, "ports.listProject": 3 },
  });
});

test("a failed changes-since refresh leaves the view as it was; the next one catches up", async () => {
  await refresh();
  clock.advance(120_000);
  fake.createServer(PROJECT, REGION, { name: "n8", networks: [project.net] });
  failNova = true;
  await expect(refresh()).rejects.toThrow(/Nova unreachable/);
  failNova = false;
  clock.advance(120_000);
  const next = await refresh();
  expect(next.calls).toEqual({ "instances.changes": 1, "ports.list": 1 });
  expect(next.names).toContain("n8");
});

test("a failed page of the project's ports fails the full listing: no result, never a partial one; the next listing is whole", async () => {
  clock.advance(600_000);
  portPages = 0;
  failPortPage = 2;
  await expect(refresh()).rejects.toThrow(/Neutron unreachable/);
  failPortPage = undefined;
  // The next refresh is a full listing again (the failed one left nothing), whole.
  const next = await refresh();
  expect(next.calls).toEqual({ "instances.list": 3, "ports.listProject": 3 });
  expect(next.names).toEqual(["n0", "n1", "n3", "n4", "n5", "n6", "n7", "n8"]);
});

test("a server made after the project's ports were read has its own looked up by device_id", async () => {
  clock.advance(600_000);
  const from = ops.length;
  const first = await instances.listPage(undefined);
  const late = fake.createServer(PROJECT, REGION, { name: "n9", networks: [project.net] });
  const seen = [...first.instances];
  let token = first.nextPageToken;
  while (token !== undefined) {
    const page = await instances.listPage(token);
    seen.push(...page.instances);
    token = page.nextPageToken;
  }
  const calls = ops.slice(from).filter((op) => op.startsWith("ports."));
  expect(calls.filter((op) => op === "ports.list")).toHaveLength(1);
  const n9 = seen.find((i) => i.instanceID === late.id);
  expect(n9?.addresses.some((a) => a.type === "InternalIP")).toBe(true);
});
