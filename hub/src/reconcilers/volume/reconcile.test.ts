// The PV reconciler against the simulated cloud through the real simulated provider: what it
// publishes, what it costs, and what it does when the cloud fails or the disk is not the
// cluster's (fault injection in the cloud, no mock of ours).
import { PersistentVolume } from "@fleet-ccm/proto";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "@jest/globals";
import { pino } from "pino";
import { type SimulatedCloud, startSimulatedCloud } from "../../../../sim/src/cloud/index.js";
import { DiskLookups } from "../../cloud/disk-lookups.js";
import { simulatedProvider } from "../../cloud/providers/simulated/index.js";
import { SIMULATED_CSI_DRIVER } from "../../cloud/providers/simulated/volumes.js";
import { bindRecorded } from "../../cloud/recording-context.testkit.js";
import { type ClusterCloud, clusterCloud } from "../../cloud/scope.js";
import { FleetState } from "../../fleet/state.js";
import { LABEL_REGION, LABEL_ZONE } from "../../k8s/well-known.js";
import { systemClock } from "../../util/clock.js";
import { ConvergenceTracker } from "../convergence.js";
import {
  PERSISTENT_VOLUME,
  REASON_DISK_NOT_IN_SCOPE,
  reconcilePersistentVolume,
  type VolumeDeps,
} from "./reconcile.js";

const REGION = "sim-east-1";
let cloud: SimulatedCloud;
let cc: ClusterCloud;
let ops: string[];
let fleet: FleetState;
let deps: VolumeDeps;

const pv = (name: string, handle: string, over: Partial<PersistentVolume> = {}) =>
  PersistentVolume.fromPartial({
    name,
    uid: `uid-${name}`,
    resourceVersion: "1",
    source: "csi",
    csiDriver: SIMULATED_CSI_DRIVER,
    volumeHandle: handle,
    ...over,
  });
const key = (name: string) => ({ cluster: "c1", kind: PERSISTENT_VOLUME, name });
const diskCalls = () => ops.filter((o) => o.startsWith("disks.")).length;

beforeAll(async () => {
  cloud = await startSimulatedCloud({ seed: 3, regions: [REGION] });
  const { apiKey } = cloud.createAccount("acme");
  cloud.createAccount("other");
  const account = {
    name: "acme",
    provider: "simulated",
    region: REGION,
    endpoint: cloud.url,
    credential: apiKey,
    requestTimeoutMs: 1000,
  };
  const bound = await bindRecorded(simulatedProvider, account);
  ops = bound.ops;
  cc = clusterCloud("c1", { provider: bound.provider, account });
});

afterAll(async () => {
  await cloud.close();
});

beforeEach(() => {
  cloud.resetFaults();
  ops.length = 0;
  fleet = new FleetState();
  const volumes = cc.provider.volumes;
  if (volumes === undefined) throw new Error("the simulated provider has volumes");
  const lookups = new DiskLookups(volumes, systemClock);
  deps = {
    fleet,
    cloudFor: () => cc,
    lookupsFor: () => lookups,
    tracker: new ConvergenceTracker(systemClock, 5000),
    clock: systemClock,
    logger: pino({ level: "silent" }),
  };
});

describe("reconcilePersistentVolume", () => {
  test("publishes the labels and affinity once; a pending publication costs no call", async () => {
    const d = cloud.createDisk("acme", { region: REGION, zones: [`${REGION}b`] });
    fleet.replace("c1", [], [], [], [pv("a", d.id, { labels: { [LABEL_ZONE]: "mine" } })]);
    const out = await reconcilePersistentVolume(key("a"), deps);
    expect(out.persistentVolumes).toEqual([
      expect.objectContaining({
        name: "a",
        uid: "uid-a",
        labels: { [LABEL_REGION]: REGION },
        nodeAffinity: [
          { key: LABEL_ZONE, operator: "In", values: [`${REGION}b`] },
          { key: LABEL_REGION, operator: "In", values: [REGION] },
        ],
      }),
    ]);
    expect(out.requeue.kind).toBe("after");
    const calls = diskCalls();
    const again = await reconcilePersistentVolume(key("a"), deps);
    expect(again.persistentVolumes).toBeUndefined();
    expect(diskCalls()).toBe(calls);
  });

  test("a PV showing both labels and an affinity costs no call", async () => {
    fleet.replace(
      "c1",
      [],
      [],
      [],
      [
        pv("done", "disk-0123456789ab", {
          labels: { [LABEL_ZONE]: "z", [LABEL_REGION]: "r" },
          hasNodeAffinity: true,
        }),
      ],
    );
    const out = await reconcilePersistentVolume(key("done"), deps);
    expect(out).toEqual({ requeue: { kind: "done" } });
    expect(diskCalls()).toBe(0);
  });

  test("5xx from the cloud: backoff, nothing published, no Event", async () => {
    const d = cloud.createDisk("acme", { region: REGION });
    fleet.replace("c1", [], [], [], [pv("b", d.id)]);
    cloud.setFaults({ errorRate: 1 }, "acme");
    const out = await reconcilePersistentVolume(key("b"), deps);
    expect(out.requeue.kind).toBe("backoff");
    expect(out.persistentVolumes).toBeUndefined();
    expect(out.events).toBeUndefined();
  });

  test("a disk of another account, or tagged for another cluster: a Warning Event, nothing written", async () => {
    const theirs = cloud.createDisk("other", { region: REGION });
    const tagged = cloud.createDisk("acme", {
      region: REGION,
      tags: { "kubernetes.io/cluster/c2": "owned" },
    });
    fleet.replace("c1", [], [], [], [pv("x", theirs.id), pv("y", tagged.id)]);
    const [x, y] = await Promise.all([
      reconcilePersistentVolume(key("x"), deps),
      reconcilePersistentVolume(key("y"), deps),
    ]);
    for (const out of [x, y]) {
      expect(out.persistentVolumes).toBeUndefined();
      expect(out.events?.[0]).toMatchObject({ type: "Warning", reason: REASON_DISK_NOT_IN_SCOPE });
      expect(out.requeue.kind).toBe("after");
    }
    expect(x.events?.[0]?.message).toContain(`disk ${theirs.id} is not in account acme, region ${REGION}`);
    expect(y.events?.[0]?.message).toContain("tagged for cluster c2");
  });

  test("nothing before the cluster's first complete snapshot", async () => {
    fleet.setConnected("c1", true);
    expect(await reconcilePersistentVolume(key("a"), deps)).toEqual({ requeue: { kind: "done" } });
    expect(diskCalls()).toBe(0);
  });
});
