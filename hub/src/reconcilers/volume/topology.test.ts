import { PersistentVolume } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { DiskMetadata } from "../../cloud/provider.js";
import { LABEL_REGION, LABEL_ZONE } from "../../k8s/well-known.js";
import { converged, desiredTopology, outOfScope } from "./topology.js";

const disk = (over: Partial<DiskMetadata> = {}): DiskMetadata => ({
  id: "disk-1",
  region: "us-east-1",
  zones: ["us-east-1a"],
  sizeGiB: 10,
  state: "available",
  ownerClusters: [],
  ...over,
});
const pv = (over: Partial<PersistentVolume> = {}) =>
  PersistentVolume.fromPartial({
    name: "pv",
    uid: "u",
    source: "csi",
    csiDriver: "d",
    volumeHandle: "h",
    ...over,
  });

describe("desiredTopology (upstream PersistentVolumeLabel)", () => {
  test("zone and region labels, and a nodeAffinity with one In requirement per label", () => {
    expect(desiredTopology(pv(), disk())).toEqual({
      labels: { [LABEL_ZONE]: "us-east-1a", [LABEL_REGION]: "us-east-1" },
      nodeAffinity: [
        { key: LABEL_ZONE, operator: "In", values: ["us-east-1a"] },
        { key: LABEL_REGION, operator: "In", values: ["us-east-1"] },
      ],
    });
  });

  test("a regional disk: every zone it spans, sorted and __-joined in the label, split in the affinity", () => {
    const t = desiredTopology(pv(), disk({ zones: ["us-east-1c", "us-east-1a"] }));
    expect(t.labels[LABEL_ZONE]).toBe("us-east-1a__us-east-1c");
    expect(t.nodeAffinity[0]).toEqual({
      key: LABEL_ZONE,
      operator: "In",
      values: ["us-east-1a", "us-east-1c"],
    });
  });

  test("never overwrites a label or an existing nodeAffinity", () => {
    const t = desiredTopology(pv({ labels: { [LABEL_ZONE]: "mine" }, hasNodeAffinity: true }), disk());
    expect(t).toEqual({ labels: { [LABEL_REGION]: "us-east-1" }, nodeAffinity: [] });
    expect(
      converged(
        desiredTopology(
          pv({ labels: { [LABEL_ZONE]: "a", [LABEL_REGION]: "b" }, hasNodeAffinity: true }),
          disk(),
        ),
      ),
    ).toBe(true);
  });

  test("a disk with a region only (no zones): the region label and requirement alone", () => {
    const t = desiredTopology(pv(), disk({ zones: [] }));
    expect(t.labels).toEqual({ [LABEL_REGION]: "us-east-1" });
    expect(t.nodeAffinity).toEqual([{ key: LABEL_REGION, operator: "In", values: ["us-east-1"] }]);
  });
});

describe("outOfScope", () => {
  test("another region, or tags naming other clusters only; untagged and own disks are in scope", () => {
    expect(outOfScope(disk({ region: "eu-west-1" }), "a", "us-east-1", [])).toMatch(/region eu-west-1/);
    expect(outOfScope(disk({ ownerClusters: ["b"] }), "a", "us-east-1", [])).toMatch(/tagged for cluster b/);
    expect(outOfScope(disk({ ownerClusters: ["b"] }), "a", "us-east-1", ["b"])).toBeNull();
    expect(outOfScope(disk({ ownerClusters: ["a", "b"] }), "a", "us-east-1", [])).toBeNull();
    expect(outOfScope(disk(), "a", "us-east-1", [])).toBeNull();
  });
});
