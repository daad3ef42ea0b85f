import type { PersistentVolume } from "@fleet-ccm/proto";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { type SecretsOf, toWireNode, toWireService } from "./convert.js";
import { type Change, objectKey, type PendingChange, readyChange } from "./outbox.js";
import { toWirePersistentVolume, type VolumeFilter } from "./volumes.js";
import type { WatchEvent } from "./watch.js";

// Classes rather than closures: a pending change is then one small object holding the cached
// object (no function and context per entry), however many wait while the hub reads slowly.

class NodeUpsert implements PendingChange {
  readonly type = "change";
  constructor(
    readonly key: string,
    private readonly node: V1Node,
  ) {}

  wire(): Change {
    return { $case: "node", value: toWireNode(this.node) };
  }
}

class ServiceUpsert implements PendingChange {
  readonly type = "change";
  constructor(
    readonly key: string,
    private readonly service: V1Service,
    private readonly secrets: SecretsOf | undefined,
  ) {}

  wire(): Change {
    return { $case: "service", value: toWireService(this.service, this.secrets) };
  }
}

/** A PersistentVolume's wire form is built when it is seen (it names a disk or is not sent). */
class PersistentVolumeUpsert implements PendingChange {
  readonly type = "change";
  constructor(
    readonly key: string,
    private readonly pv: PersistentVolume,
  ) {}

  wire(): Change {
    return { $case: "persistentVolume", value: this.pv };
  }
}

/**
 * What the hub is told of a watch event: the object's latest state, or its deletion; nothing for
 * a PersistentVolume that names no disk the hub asked for.
 */
export function changeOf(
  e: Exclude<WatchEvent, { kind: "persistentVolume" }>,
  secrets?: SecretsOf,
): PendingChange;
export function changeOf(
  e: WatchEvent,
  secrets?: SecretsOf,
  volumes?: VolumeFilter,
): PendingChange | undefined;
export function changeOf(
  e: WatchEvent,
  secrets?: SecretsOf,
  volumes?: VolumeFilter,
): PendingChange | undefined {
  const md = e.obj.metadata;
  const name = md?.name ?? "";
  const uid = md?.uid ?? "";
  if (e.kind === "persistentVolume") {
    const pv = volumes === undefined ? undefined : toWirePersistentVolume(e.obj, volumes);
    if (pv === undefined) return undefined;
    return e.type === "upsert"
      ? new PersistentVolumeUpsert(objectKey("persistentVolume", "", name, uid), pv)
      : readyChange({ $case: "persistentVolumeDeleted", value: { namespace: "", name, uid } });
  }
  if (e.kind === "node")
    return e.type === "upsert"
      ? new NodeUpsert(objectKey("node", "", name, uid), e.obj)
      : readyChange({ $case: "nodeDeleted", value: { namespace: "", name, uid } });
  const namespace = md?.namespace ?? "";
  return e.type === "upsert"
    ? new ServiceUpsert(objectKey("service", namespace, name, uid), e.obj, secrets)
    : readyChange({ $case: "serviceDeleted", value: { namespace, name, uid } });
}
