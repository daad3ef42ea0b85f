// Nova servers as nodes, checked against openstack-cloud-controller-manager (c453fb7) through the
// fake OpenStack cloud: the addresses `nodeAddresses` (pkg/openstack/instances_addresses.go)
// builds (only ACTIVE ports, the metadata hostname after the access IPs, addresses on
// `public-network-name` or outside `internal-network-name` taken out of the port IPs), the
// zone as `util.SanitizeLabel` makes it, and the states `InstanceExists` / `InstanceShutdown`
// (pkg/openstack/instances.go) give: gone only on Nova's 404 (or DELETED), shut down only SHUTOFF.
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import type { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork } from "../../../../../sim/src/openstack/store.js";
import type { CloudProvider, InstanceMetadata } from "../../provider.js";
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

let project: FakeProject;
let fake: OpenStackFake;
let storage: FakeNetwork;
let spare: FakeNetwork;
/** internalNetworkName [k8s], publicNetworkName [public], as upstream's [Networking]. */
let scoped: CloudProvider;
/** No network options. */
let plain: CloudProvider;

beforeAll(async () => {
  project = await startFakeProject();
  fake = project.fake;
  storage = fake.createNetwork(PROJECT, REGION, { name: "storage", cidr: "192.168.5.0/24" });
  spare = fake.createNetwork(PROJECT, REGION, { name: "zz-spare", cidr: "172.16.0.0/24" });
  scoped = (
    await bindRecorded(openstackProvider, projectAccount(project), {
      applicationCredentialId: APP_CREDENTIAL.id,
      internalNetworkName: ["k8s"],
      publicNetworkName: ["public"],
    })
  ).provider;
  plain = (
    await bindRecorded(openstackProvider, projectAccount(project), {
      applicationCredentialId: APP_CREDENTIAL.id,
    })
  ).provider;
});

afterAll(async () => {
  expect(fake.specProblems()).toEqual([]);
  await fake.close();
});

const get = (p: CloudProvider, id: string): Promise<InstanceMetadata> =>
  p.instances.getByProviderID(`openstack:///${id}`);

/** The server's fixed IP on `net`. */
const ipOn = (serverId: string, net: FakeNetwork): string => {
  const port = [...fake.store.ports.values()].find((p) => p.deviceId === serverId && p.networkId === net.id);
  return port?.fixedIps[0]?.ip_address ?? "";
};

describe("addresses as upstream's nodeAddresses", () => {
  test("internal-network-name and public-network-name take the other networks' port IPs out (removeFromNodeAddresses)", async () => {
    // Ports (all ACTIVE) on storage, k8s and public; Nova lists the three networks' fixed IPs.
    const s = fake.createServer(PROJECT, REGION, {
      name: "scoped",
      networks: [storage, project.net, project.ext],
    });
    const meta = await get(scoped, s.id);
    // Upstream (instances_addresses.go:252-266): the storage IP is taken out (not in
    // internal-network-name), the public one becomes ExternalIP only.
    expect(meta.addresses).toEqual([
      { type: "InternalIP", address: ipOn(s.id, project.net) },
      { type: "ExternalIP", address: ipOn(s.id, project.ext) },
    ]);
    // Without the options every address stays, the ports' first.
    expect((await get(plain, s.id)).addresses).toEqual([
      { type: "InternalIP", address: ipOn(s.id, storage) },
      { type: "InternalIP", address: ipOn(s.id, project.net) },
      { type: "InternalIP", address: ipOn(s.id, project.ext) },
    ]);
  });

  test("only ACTIVE ports' fixed IPs come first (instances_addresses.go:153)", async () => {
    // The DOWN port is the server's first; Nova still lists its address under its network.
    const s = fake.createServer(PROJECT, REGION, { name: "down-port" });
    fake.addServerPort(s.id, spare, "DOWN");
    fake.addServerPort(s.id, project.net, "ACTIVE");
    expect((await get(plain, s.id)).addresses).toEqual([
      { type: "InternalIP", address: ipOn(s.id, project.net) },
      { type: "InternalIP", address: ipOn(s.id, spare) },
    ]);
    // With internal-network-name the DOWN port's address is not a node address at all.
    expect((await get(scoped, s.id)).addresses).toEqual([
      { type: "InternalIP", address: ipOn(s.id, project.net) },
    ]);
  });

  test("the metadata hostname follows the port and access IPs, before Nova's addresses (instances_addresses.go:187-191)", async () => {
    const s = fake.createServer(PROJECT, REGION, {
      name: "node-a",
      networks: [project.net],
      metadata: { hostname: "node-a.example" },
    });
    const fip = fake.attachFloatingIp(s.id, project.ext);
    expect((await get(plain, s.id)).addresses).toEqual([
      { type: "InternalIP", address: ipOn(s.id, project.net) },
      { type: "Hostname", address: "node-a.example" },
      { type: "ExternalIP", address: fip.address },
    ]);
    const none = fake.createServer(PROJECT, REGION, { name: "node-b", networks: [project.net] });
    expect((await get(plain, none.id)).addresses.some((a) => a.type === "Hostname")).toBe(false);
  });
});

test("the zone is the availability zone as upstream's SanitizeLabel makes it (pkg/util/util.go:137-148)", async () => {
  const cases: [string, string][] = [
    ["nova", "nova"],
    ["az 1", "az-1"],
    ["  zone/é:1 ", "zone-1"],
    ["-_.a b._-", "a-b"],
    ["a".repeat(70), "a".repeat(63)],
  ];
  for (const [az, zone] of cases) {
    const s = fake.createServer(PROJECT, REGION, { name: `az-${zone}`, networks: [project.net], az });
    expect((await get(plain, s.id)).zone).toBe(zone);
  }
});

describe("states as upstream's InstanceExists and InstanceShutdown", () => {
  test("SOFT_DELETED (restorable) is neither gone nor shut down: Nova still answers the server", async () => {
    const s = fake.createServer(PROJECT, REGION, { name: "soft", networks: [project.net] });
    fake.setServerStatus(s.id, "SOFT_DELETED");
    expect((await get(plain, s.id)).state).toBe("unknown");
    // The refresh keeps it too.
    const listed = (await plain.instances.listPage(undefined)).instances.find((i) => i.instanceID === s.id);
    expect(listed?.state).toBe("unknown");
  });

  test("only SHUTOFF is shut down (instances.go:108-110)", async () => {
    const s = fake.createServer(PROJECT, REGION, { name: "states", networks: [project.net] });
    fake.setServerStatus(s.id, "SHUTOFF");
    expect((await get(plain, s.id)).state).toBe("stopped");
    for (const status of ["SUSPENDED", "PAUSED", "SHELVED_OFFLOADED"] as const) {
      fake.setServerStatus(s.id, status);
      expect((await get(plain, s.id)).state).toBe("unknown");
    }
  });
});
