/**
 * PersistentVolumes end to end: a real nats-server, real gRPC, the hub and agents against the
 * Kubernetes API simulator (under the shipped ClusterRole) and the simulated cloud's disks. The
 * hub labels each PV with its disk's zone and region and, where it has none, a nodeAffinity; a
 * PV naming another account's disk gets a Warning Event and nothing else; 500 PVs of one
 * cluster cost a handful of batched lookups.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { KubePolicyRule } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { parseAllDocuments } from "yaml";
import { DEMO_ACCOUNT, DEMO_REGION, LocalFleet, waitFor } from "../cli/src/local-fleet.js";
import { pvEvent, pvObject, readPv } from "./persistent-volumes-fixture.js";

const logger = pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" });
const DRIVER = "csi.simulated.fleet-ccm.io";
const ZONE = "topology.kubernetes.io/zone";
const REGION = "topology.kubernetes.io/region";
const MANY = 500;
const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));
const API_TOKEN = "volumes-e2e-api-token";

function shippedRules(): KubePolicyRule[] {
  const docs = parseAllDocuments(readFileSync(new URL("../deploy/agent/rbac.yaml", import.meta.url), "utf8"));
  return docs.map((d) => d.toJS()).find((o) => o?.kind === "ClusterRole").rules as KubePolicyRule[];
}

const volume = pvObject;
const csi = (handle: string) => ({ csi: { driver: DRIVER, volumeHandle: handle } });

describe("PersistentVolume topology from cloud disks", () => {
  let fleet: LocalFleet;
  let first: string;
  let second: string;
  const pv = (cluster: string, name: string) => readPv(fleet.cluster(cluster).kube, name);

  beforeAll(async () => {
    fleet = await LocalFleet.start({
      clusters: 2,
      nodesPerCluster: 0,
      logger,
      convergeDeadlineMs: 2000,
      apiToken: API_TOKEN,
      kubeRbac: { user: "system:serviceaccount:fleet-ccm-system:fleet-ccm-agent", rules: shippedRules() },
    });
    [first = "", second = ""] = [...fleet.clusters.keys()];
    // 500 PVs in the second cluster before its agent starts: one snapshot brings them all.
    const kube = fleet.cluster(second).kube;
    for (let i = 0; i < MANY; i++) {
      const d = fleet.cloud.createDisk(DEMO_ACCOUNT, { region: DEMO_REGION, zones: [`${DEMO_REGION}b`] });
      kube.create("PersistentVolume", volume(`many-${i}`, csi(d.id)));
    }
    fleet.cloud.resetStats();
    await fleet.startHub();
    await fleet.startAgents();
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  test(`${MANY} PVs of one cluster labeled with batched lookups`, async () => {
    const labeled = () =>
      Array.from({ length: MANY }, (_, i) => pv(second, `many-${i}`)).filter(
        (p) => p?.metadata.labels?.[ZONE] === `${DEMO_REGION}b` && p.spec.nodeAffinity !== undefined,
      ).length;
    expect(await waitFor(() => labeled() === MANY, 60_000)).toBe(true);
    const lists = fleet.cloud.requests({ operation: "disks.list" }).length;
    const gets = fleet.cloud.requests({ operation: "disks.get" }).length;
    // Counted before any other test makes a PV: these calls are the 500 PVs' alone.
    // 100 ids per call: 5 batches when they arrive together; never one call per PV.
    expect(lists).toBeGreaterThanOrEqual(MANY / 100);
    expect(lists + gets).toBeLessThanOrEqual(10);
  });

  test("a zonal and a regional disk: labels and nodeAffinity; a user's label and others' PVs untouched", async () => {
    const zonal = fleet.cloud.createDisk(DEMO_ACCOUNT, { region: DEMO_REGION, zones: [`${DEMO_REGION}a`] });
    const regional = fleet.cloud.createDisk(DEMO_ACCOUNT, {
      region: DEMO_REGION,
      zones: [`${DEMO_REGION}c`, `${DEMO_REGION}a`],
    });
    const kube = fleet.cluster(first).kube;
    kube.create("PersistentVolume", volume("zonal", csi(zonal.id)));
    kube.create("PersistentVolume", volume("regional", csi(regional.id), { [ZONE]: "chosen-by-user" }));
    kube.create("PersistentVolume", volume("nfs", { nfs: { server: "nfs.example", path: "/x" } }));
    expect(await waitFor(() => pv(first, "zonal")?.spec.nodeAffinity !== undefined, 20_000)).toBe(true);
    expect(pv(first, "zonal")?.metadata.labels).toEqual({ [ZONE]: `${DEMO_REGION}a`, [REGION]: DEMO_REGION });
    expect(pv(first, "zonal")?.spec.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      {
        matchExpressions: [
          { key: ZONE, operator: "In", values: [`${DEMO_REGION}a`] },
          { key: REGION, operator: "In", values: [DEMO_REGION] },
        ],
      },
    ]);
    expect(await waitFor(() => pv(first, "regional")?.spec.nodeAffinity !== undefined, 20_000)).toBe(true);
    // The user's zone label stays; the affinity spans every zone of the regional disk.
    expect(pv(first, "regional")?.metadata.labels).toEqual({
      [ZONE]: "chosen-by-user",
      [REGION]: DEMO_REGION,
    });
    expect(
      pv(first, "regional")?.spec.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions?.[0],
    ).toEqual({
      key: ZONE,
      operator: "In",
      values: [`${DEMO_REGION}a`, `${DEMO_REGION}c`],
    });
    expect(pv(first, "nfs")?.metadata.labels ?? {}).toEqual({});
    expect(pv(first, "nfs")?.spec.nodeAffinity).toBeUndefined();
  });

  test("a PV naming another account's disk: a Warning Event saying why, nothing written", async () => {
    fleet.cloud.createAccount("someone-else");
    const theirs = fleet.cloud.createDisk("someone-else", { region: DEMO_REGION });
    fleet.cluster(first).kube.create("PersistentVolume", volume("foreign", csi(theirs.id)));
    const event = () => pvEvent(fleet.cluster(first).kube, "foreign", "DiskNotInScope");
    expect(await waitFor(() => event() !== undefined, 20_000)).toBe(true);
    expect(event()).toMatchObject({ type: "Warning", reason: "DiskNotInScope" });
    expect(event()?.message).toContain(
      `disk ${theirs.id} is not in account ${DEMO_ACCOUNT}, region ${DEMO_REGION}`,
    );
    const foreign = pv(first, "foreign");
    expect(foreign?.metadata.labels ?? {}).toEqual({});
    expect(foreign?.spec.nodeAffinity).toBeUndefined();
  });

  test("a disk tagged for a cluster that backs none of its PVs is listed by the fleet API and fleet-ccm status", async () => {
    const tag = { [`kubernetes.io/cluster/${first}`]: "owned" };
    const orphan = fleet.cloud.createDisk(DEMO_ACCOUNT, {
      region: DEMO_REGION,
      sizeGiB: 42,
      tags: tag,
      name: "pvc-left-behind",
    });
    const claimed = fleet.cloud.createDisk(DEMO_ACCOUNT, { region: DEMO_REGION, tags: tag });
    fleet.cluster(first).kube.create("PersistentVolume", volume("claimed", csi(claimed.id)));
    expect(
      await waitFor(() => fleet.hub?.fleet.view(first)?.persistentVolumes.has("claimed") === true, 20_000),
    ).toBe(true);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CLI, "status", "--hub", `http://127.0.0.1:${fleet.hub?.apiPort()}`, "--color", "never"],
      { env: { PATH: process.env["PATH"], FLEET_CCM_API_TOKEN: API_TOKEN } },
    );
    const line = stdout.split("\n").find((l) => l.includes(orphan.id));
    expect(line).toBeDefined();
    expect(line).toContain(first);
    expect(line).toContain("42 GiB");
    expect(line).toContain("pvc-left-behind");
    // A disk a PV names is claimed; the fleet never deletes either.
    expect(stdout).not.toContain(claimed.id);
    expect(fleet.cloud.disks(DEMO_ACCOUNT).map((d) => d.id)).toEqual(
      expect.arrayContaining([orphan.id, claimed.id]),
    );
  });
});
