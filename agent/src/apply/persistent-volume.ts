import { type ApplyResult, ObjectKind, type PersistentVolumeDesired } from "@fleet-ccm/proto";
import type { V1PersistentVolume } from "@kubernetes/client-node";
import type { KubeClient } from "../kube-client.js";
import { persistentVolumePatch } from "../volumes.js";
import { applyGuarded } from "./guarded.js";

/** Applies the hub's topology of one PersistentVolume to exactly the PV with that uid. */
export function applyPersistentVolumeDesired(
  api: KubeClient,
  d: PersistentVolumeDesired,
  cached: V1PersistentVolume | undefined,
): Promise<ApplyResult> {
  return applyGuarded(
    {
      kind: ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME,
      namespace: "",
      name: d.name,
      uid: d.uid,
      generation: d.generation,
    },
    cached,
    () => api.readPersistentVolume(d.name),
    async (pv) => {
      const body = persistentVolumePatch(pv, d);
      if (body !== null) await api.patchPersistentVolume(d.name, body);
    },
  );
}
