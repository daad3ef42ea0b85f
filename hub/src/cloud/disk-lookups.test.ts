import { describe, expect, test } from "@jest/globals";
import { systemClock } from "../util/clock.js";
import { DiskLookups } from "./disk-lookups.js";
import { DiskNotFoundError, TransientCloudError } from "./errors.js";
import type { DiskMetadata, Volumes } from "./provider.js";

function fakeVolumes(have: ReadonlySet<string>, hidden: ReadonlySet<string> = new Set()) {
  const calls = { getMany: [] as number[], get: [] as string[] };
  const disk = (id: string): DiskMetadata => ({
    id,
    region: "r",
    zones: ["ra"],
    sizeGiB: 1,
    state: "available",
    ownerClusters: [],
  });
  const volumes: Volumes = {
    sources: { inTree: [], csiDrivers: ["d"] },
    maxBatch: 100,
    parseVolumeHandle: (_s, _d, h) => ({ id: h }),
    async get(id) {
      calls.get.push(id);
      if (!have.has(id)) throw new DiskNotFoundError(id);
      return disk(id);
    },
    async getMany(ids) {
      calls.getMany.push(ids.length);
      if (ids.includes("boom")) throw new TransientCloudError("503");
      // A list that misses some (eventual consistency) is no answer about them.
      return ids.filter((id) => have.has(id) && !hidden.has(id)).map(disk);
    },
    listOwned: async () => [],
  };
  return { volumes, calls };
}

describe("DiskLookups", () => {
  test("500 lookups in one window: 5 batches of 100, no direct read", async () => {
    const ids = Array.from({ length: 500 }, (_, i) => `disk-${i}`);
    const { volumes, calls } = fakeVolumes(new Set(ids));
    const lookups = new DiskLookups(volumes, systemClock);
    const answers = await Promise.all(ids.map((id) => lookups.get(id)));
    expect(answers.map((d) => d?.id)).toEqual(ids);
    expect(calls.getMany).toEqual([100, 100, 100, 100, 100]);
    expect(calls.get).toEqual([]);
  });

  test("only a direct read says not found; one a batch missed is found directly", async () => {
    const { volumes, calls } = fakeVolumes(new Set(["a", "late"]), new Set(["late"]));
    const lookups = new DiskLookups(volumes, systemClock);
    const [a, late, gone, again] = await Promise.all(
      ["a", "late", "gone", "gone"].map((id) => lookups.get(id)),
    );
    expect(a?.id).toBe("a");
    expect(late?.id).toBe("late");
    expect(gone).toBeUndefined();
    expect(again).toBeUndefined();
    expect(calls.getMany).toEqual([3]);
    expect(calls.get.sort()).toEqual(["gone", "late"]);
  });

  test("a failed batch fails its lookups (no not-found from an error)", async () => {
    const { volumes } = fakeVolumes(new Set(["a"]));
    const lookups = new DiskLookups(volumes, systemClock);
    await expect(Promise.all([lookups.get("a"), lookups.get("boom")])).rejects.toBeInstanceOf(
      TransientCloudError,
    );
  });
});
