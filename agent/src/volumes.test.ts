// Which PersistentVolumes the agent follows, what it sends of them, and the topology patch it
// applies, against the Kubernetes API simulator (the real client path, RBAC of deploy/agent).

import { ApplyOutcome } from "@fleet-ccm/proto";
import { startKubeApiServer } from "@fleet-ccm/sim";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { CoreV1Api, KubeConfig, type V1PersistentVolume } from "@kubernetes/client-node";
import { applyPersistentVolumeDesired } from "./apply/persistent-volume.js";
import { KubeClient } from "./kube-client.js";
import {
  persistentVolumePatch,
  slimPersistentVolume,
  toWirePersistentVolume,
  VolumeFilter,
} from "./volumes.js";

const ZONE = "topology.kubernetes.io/zone";
const REGION = "topology.kubernetes.io/region";
const filter = new VolumeFilter(["awsElasticBlockStore"], ["ebs.csi.aws.com", "linodebs.csi.linode.com"]);

function pv(
  name: string,
  spec: Partial<NonNullable<V1PersistentVolume["spec"]>>,
  labels = {},
): V1PersistentVolume {
  return {
    metadata: { name, uid: `uid-${name}`, resourceVersion: "1", labels: { team: "a", ...labels } },
    spec: { capacity: { storage: "10Gi" }, accessModes: ["ReadWriteOnce"], ...spec },
    status: { phase: "Bound" },
  };
}

const desired = (name: string, uid: string) => ({
  name,
  uid,
  generation: 1,
  labels: { [ZONE]: "us-east-1a", [REGION]: "us-east-1" },
  nodeAffinity: [{ key: ZONE, operator: "In", values: ["us-east-1a"] }],
});

describe("VolumeFilter and the wire form", () => {
  test("only the asked in-tree sources and CSI drivers are forwarded, with their disk handle", () => {
    const ebs = pv("a", { awsElasticBlockStore: { volumeID: "aws://us-east-1a/vol-1" } });
    const csi = pv("b", { csi: { driver: "linodebs.csi.linode.com", volumeHandle: "123-pvcabc" } });
    const other = pv("c", { csi: { driver: "nfs.csi.k8s.io", volumeHandle: "x" } });
    const gce = pv("d", { gcePersistentDisk: { pdName: "disk-1" } });
    expect(toWirePersistentVolume(ebs, filter)).toMatchObject({
      source: "awsElasticBlockStore",
      csiDriver: "",
      volumeHandle: "aws://us-east-1a/vol-1",
      capacity: "10Gi",
      phase: "Bound",
      hasNodeAffinity: false,
    });
    expect(toWirePersistentVolume(csi, filter)).toMatchObject({
      source: "csi",
      csiDriver: "linodebs.csi.linode.com",
      volumeHandle: "123-pvcabc",
    });
    expect(toWirePersistentVolume(other, filter)).toBeUndefined();
    expect(toWirePersistentVolume(gce, filter)).toBeUndefined();
    expect(new VolumeFilter([], []).empty).toBe(true);
    expect(
      filter.sameAs(
        new VolumeFilter(["awsElasticBlockStore"], ["linodebs.csi.linode.com", "ebs.csi.aws.com"]),
      ),
    ).toBe(true);
  });

  test("the cache keeps only topology labels, the disk, capacity and nodeAffinity", () => {
    const slim = slimPersistentVolume(
      pv("a", { csi: { driver: "ebs.csi.aws.com", volumeHandle: "vol-1", fsType: "ext4" } }, { [ZONE]: "z" }),
      filter,
    );
    expect(slim.metadata?.labels).toEqual({ [ZONE]: "z" });
    expect(slim.spec?.csi).toEqual({ driver: "ebs.csi.aws.com", volumeHandle: "vol-1" });
    expect(slimPersistentVolume(pv("n", { nfs: { server: "s", path: "/" } }), filter).spec).toBeUndefined();
  });

  test("the patch never overwrites a label and adds nodeAffinity only where there is none", () => {
    const mine = pv(
      "a",
      { csi: { driver: "ebs.csi.aws.com", volumeHandle: "vol-1" } },
      { [ZONE]: "user-zone" },
    );
    expect(persistentVolumePatch(mine, desired("a", "uid-a"))).toEqual({
      metadata: { uid: "uid-a", resourceVersion: "1", labels: { [REGION]: "us-east-1" } },
      spec: {
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: ZONE, operator: "In", values: ["us-east-1a"] }] },
            ],
          },
        },
      },
    });
    const done = pv(
      "b",
      {
        csi: { driver: "ebs.csi.aws.com", volumeHandle: "vol-1" },
        nodeAffinity: {
          required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "k", operator: "Exists" }] }] },
        },
      },
      { [ZONE]: "a", [REGION]: "b" },
    );
    expect(persistentVolumePatch(done, desired("b", "uid-b"))).toBeNull();
  });
});

describe("applying a PersistentVolume's topology", () => {
  let sim: Awaited<ReturnType<typeof startKubeApiServer>>;
  let core: CoreV1Api;
  let api: KubeClient;

  beforeAll(async () => {
    sim = await startKubeApiServer();
    const kc = new KubeConfig();
    kc.loadFromOptions(sim.kubeConfigOptions());
    core = kc.makeApiClient(CoreV1Api);
    api = new KubeClient(kc);
  });

  afterAll(async () => {
    await sim.close();
  });

  test("labels and nodeAffinity land on the PV with that uid; a recreated PV is STALE", async () => {
    const spec = { csi: { driver: "ebs.csi.aws.com", volumeHandle: "vol-1" } };
    const created = await core.createPersistentVolume({
      body: {
        metadata: { name: "pv-1" },
        spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], ...spec },
      },
    });
    const uid = created.metadata?.uid ?? "";
    const r = await applyPersistentVolumeDesired(api, desired("pv-1", uid), undefined);
    expect(r.outcome).toBe(ApplyOutcome.APPLY_OUTCOME_APPLIED);
    const got = await core.readPersistentVolume({ name: "pv-1" });
    expect(got.metadata?.labels).toEqual({ [ZONE]: "us-east-1a", [REGION]: "us-east-1" });
    expect(got.spec?.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: ZONE, operator: "In", values: ["us-east-1a"] }] },
    ]);
    // Again: nothing to write (nodeAffinity is immutable once set, and is left alone).
    expect((await applyPersistentVolumeDesired(api, desired("pv-1", uid), got)).outcome).toBe(
      ApplyOutcome.APPLY_OUTCOME_APPLIED,
    );
    const stale = await applyPersistentVolumeDesired(api, desired("pv-1", "another-uid"), undefined);
    expect(stale.outcome).toBe(ApplyOutcome.APPLY_OUTCOME_STALE);
  });
});
