import { ObjectKind } from "@fleet-ccm/proto";
import { DiskLookups } from "../../cloud/disk-lookups.js";
import type { Volumes } from "../../cloud/provider.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { Controller, ControllerContext } from "../controller.js";
import { onTrackedApplyResult } from "../node-init/index.js";
import { PERSISTENT_VOLUME, reconcilePersistentVolume } from "./reconcile.js";

/**
 * persistentvolume-label-controller (upstream's PersistentVolumeLabel): zone and region labels,
 * and a nodeAffinity, on the PVs of the providers' disks, from one batched disk lookup per
 * account for all its clusters.
 */
export function persistentVolumeLabelController(ctx: ControllerContext): Controller {
  const key = (cluster: string, name: string): WorkKey => ({ cluster, kind: PERSISTENT_VOLUME, name });
  // One batcher per provider binding (an account and region), shared by its clusters.
  const lookups = new WeakMap<Volumes, DiskLookups>();
  const deps = {
    fleet: ctx.fleet,
    cloudFor: ctx.cloudFor,
    tracker: ctx.tracker,
    clock: ctx.clock,
    logger: ctx.logger.child({ component: PERSISTENT_VOLUME }),
    lookupsFor(cloud: NonNullable<ReturnType<ControllerContext["cloudFor"]>>): DiskLookups | undefined {
      const volumes = cloud.provider.volumes;
      if (volumes === undefined) return undefined;
      let l = lookups.get(volumes);
      if (l === undefined) {
        l = new DiskLookups(volumes, ctx.clock);
        lookups.set(volumes, l);
      }
      return l;
    },
  };
  return {
    name: "persistentvolume-label-controller",
    kinds: [PERSISTENT_VOLUME],
    triggers: {
      onPersistentVolume(cluster, name, change) {
        if (change.type === "delete") {
          ctx.tracker.clear(keyOf(key(cluster, name)));
          return;
        }
        ctx.queue.add(key(cluster, name));
      },
    },
    reconcile: (k) => reconcilePersistentVolume(k, deps),
    onApplyResult(cluster, result) {
      onTrackedApplyResult(ctx, ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME, key(cluster, result.name), result);
    },
  };
}
