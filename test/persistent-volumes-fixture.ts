/**
 * PersistentVolumes in the Kubernetes API simulator, for the end-to-end tests of the hub's
 * volume topology: a PV of a disk, what the hub wrote on it, and the Event it got.
 */
import type { KubeApiServer } from "@fleet-ccm/sim";

export interface KubePv {
  metadata: { name: string; uid: string; labels?: Record<string, string> };
  spec: {
    nodeAffinity?: { required?: { nodeSelectorTerms: { matchExpressions?: unknown[] }[] } };
  };
}

interface KubeEvent {
  involvedObject: { kind: string; name: string };
  reason: string;
  type: string;
  message: string;
}

/** A PV of 10Gi with this volume source (`{ csi: {...} }`, `{ awsElasticBlockStore: {...} }`). */
export function pvObject(name: string, source: Record<string, unknown>, labels: Record<string, string> = {}) {
  return {
    metadata: { name, labels },
    spec: { capacity: { storage: "10Gi" }, accessModes: ["ReadWriteOnce"], ...source },
  };
}

export function readPv(kube: KubeApiServer, name: string): KubePv | undefined {
  return kube.get("PersistentVolume", undefined, name) as unknown as KubePv | undefined;
}

/** The Event the hub had recorded on the PV with this reason, if any. */
export function pvEvent(kube: KubeApiServer, name: string, reason: string): KubeEvent | undefined {
  return (kube.list("Event") as unknown as KubeEvent[]).find(
    (e) =>
      e.involvedObject.kind === "PersistentVolume" && e.involvedObject.name === name && e.reason === reason,
  );
}
