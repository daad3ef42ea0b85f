import { PersistentVolume } from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import { FleetState } from "../fleet/state.js";
import { FakeClock } from "../util/clock.js";
import type { DiskMetadata, Volumes } from "./provider.js";
import type { ClusterCloud } from "./scope.js";
import { UnclaimedDisks } from "./unclaimed-disks.js";

const disk = (id: string, owner: string): DiskMetadata => ({
  id,
  region: "r",
  zones: ["ra"],
  sizeGiB: 8,
  state: "available",
  ownerClusters: [owner],
  createdAt: new Date("2026-01-01T00:00:00Z"),
});
const pv = (name: string, handle: string) =>
  PersistentVolume.fromPartial({
    name,
    uid: `u-${name}`,
    source: "csi",
    csiDriver: "d",
    volumeHandle: handle,
  });

describe("UnclaimedDisks", () => {
  test("tagged disks no PV of a complete view names; a partial view is not judged; answers are cached", async () => {
    let listings = 0;
    const volumes: Volumes = {
      sources: { inTree: [], csiDrivers: ["d"] },
      maxBatch: 100,
      parseVolumeHandle: (_s, _d, h) => ({ id: h }),
      get: async () => {
        throw new Error("not used");
      },
      getMany: async () => [],
      listOwned: async (clusters) => {
        listings++;
        expect([...clusters].sort()).toEqual(["a"]);
        return [disk("d1", "a"), disk("d2", "a"), disk("d3", "b")];
      },
    };
    const cloud = { provider: { volumes }, account: { name: "acct" } } as unknown as ClusterCloud;
    const fleet = new FleetState();
    fleet.replace("a", [], [], [], [pv("p1", "d1")]);
    // b never sent a complete snapshot.
    fleet.setConnected("b", true);
    const clock = new FakeClock();
    const unclaimed = new UnclaimedDisks({
      clusters: () => ["a", "b"],
      cloudFor: () => cloud,
      view: (c) => fleet.view(c),
      followsVolumes: () => true,
      clock,
      maxAgeMs: 60_000,
    });
    const report = await unclaimed.current();
    expect(report.disks.map((d) => [d.cluster, d.id, d.sizeGiB, d.createdAt])).toEqual([
      ["a", "d2", 8, "2026-01-01T00:00:00.000Z"],
    ]);
    expect(report.unknown.map((u) => u.cluster)).toEqual(["b"]);
    await unclaimed.current();
    expect(listings).toBe(1);
    clock.advance(60_000);
    await unclaimed.current();
    expect(listings).toBe(2);
  });
});
