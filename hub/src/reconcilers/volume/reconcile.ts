import { ObjectKind, type PersistentVolume, PersistentVolumeDesired } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import type { DiskLookups } from "../../cloud/disk-lookups.js";
import { errorMessage } from "../../cloud/errors.js";
import type { ClusterCloud } from "../../cloud/scope.js";
import type { FleetState } from "../../fleet/state.js";
import { EVENT_SOURCE, LABEL_REGION, LABEL_ZONE } from "../../k8s/well-known.js";
import { keyOf, type WorkKey } from "../../queue/index.js";
import type { Clock } from "../../util/clock.js";
import type { ConvergenceTracker } from "../convergence.js";
import { after, backoff, DONE, type Outcome } from "../outcome.js";
import { converged, desiredTopology, outOfScope } from "./topology.js";

export const PERSISTENT_VOLUME = "persistent-volume";
/** A PV's disk is not the cluster's: not found in its account and region, or out of its scope. */
export const REASON_DISK_NOT_IN_SCOPE = "DiskNotInScope";
/** How long a PV whose disk is not in scope waits before its disk is looked up again. */
export const NOT_IN_SCOPE_RECHECK_MS = 10 * 60_000;

export interface VolumeDeps {
  readonly fleet: FleetState;
  cloudFor(cluster: string): ClusterCloud | undefined;
  lookupsFor(cloud: ClusterCloud): DiskLookups | undefined;
  readonly tracker: ConvergenceTracker;
  readonly clock: Clock;
  readonly logger: Logger;
}

function pvEvent(pv: Readonly<PersistentVolume>, reason: string, message: string) {
  return {
    kind: ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME,
    namespace: "",
    name: pv.name,
    uid: pv.uid,
    type: "Warning",
    reason,
    message,
    sourceComponent: EVENT_SOURCE.persistentVolumeLabel,
  };
}

/**
 * One PV: look its disk up (batched per account), then publish the zone and region labels it
 * lacks and, if it has none, its nodeAffinity. A PV that already shows everything costs no
 * call. A disk out of scope gets a Warning Event and nothing written.
 */
export async function reconcilePersistentVolume(key: WorkKey, deps: VolumeDeps): Promise<Outcome> {
  const view = deps.fleet.view(key.cluster);
  // Never judge from a partial view: wait for the agent's full snapshot.
  if (view === undefined || !view.synced) return DONE;
  const k = keyOf(key);
  const pv = view.persistentVolumes.get(key.name);
  if (pv === undefined || pv.deletionTimestamp !== undefined) {
    deps.tracker.clear(k);
    return DONE;
  }
  const cloud = deps.cloudFor(key.cluster);
  const volumes = cloud?.provider.volumes;
  const ref = volumes?.parseVolumeHandle(pv.source, pv.csiDriver, pv.volumeHandle);
  if (cloud === undefined || ref === undefined) return DONE;
  // Labels and affinity already there (the report shows our patch, or a provisioner's): done.
  if (pv.hasNodeAffinity && pv.labels[LABEL_ZONE] !== undefined && pv.labels[LABEL_REGION] !== undefined) {
    deps.tracker.clear(k);
    return DONE;
  }
  const pending = deps.tracker.pending(k, pv.uid);
  if (pending !== undefined) return after(pending.deadlineMs - deps.clock.now());
  const lookups = deps.lookupsFor(cloud);
  if (lookups === undefined) return DONE;
  let disk: Awaited<ReturnType<DiskLookups["get"]>>;
  try {
    disk = await lookups.get(ref.id);
  } catch (err) {
    // Transient errors are not answers: back off, change nothing.
    return backoff(new Error(`disk ${ref.id} of PersistentVolume ${pv.name}: ${errorMessage(err)}`));
  }
  const where = `account ${cloud.account.name}, region ${cloud.account.region}`;
  const problem =
    disk === undefined
      ? `disk ${ref.id} is not in ${where}: it is in another account or region, or deleted`
      : outOfScope(disk, key.cluster, cloud.account.region, aliases(cloud));
  if (problem !== null || disk === undefined) {
    deps.tracker.clear(k);
    return after(NOT_IN_SCOPE_RECHECK_MS, {
      events: [
        pvEvent(
          pv,
          REASON_DISK_NOT_IN_SCOPE,
          `${problem}; fleet-ccm writes no topology on this PersistentVolume`,
        ),
      ],
    });
  }
  const topology = desiredTopology(pv, disk);
  if (converged(topology)) {
    deps.tracker.clear(k);
    return DONE;
  }
  const inflight = deps.tracker.record(k, pv.uid);
  const desired = PersistentVolumeDesired.fromPartial({
    name: pv.name,
    uid: pv.uid,
    generation: inflight.generation,
    labels: { ...topology.labels },
    nodeAffinity: topology.nodeAffinity.map((r) => ({ ...r, values: [...r.values] })),
  });
  return after(inflight.deadlineMs - inflight.publishedAtMs, { persistentVolumes: [desired] });
}

/** The names the cluster's disks may be tagged with besides its own (the vendor CCM's cluster name). */
function aliases(cloud: ClusterCloud): string[] {
  const vendor = cloud.target.scope.adoptFrom?.vendorCcmClusterName;
  return vendor === undefined ? [] : [vendor];
}
