import type { V1Node, V1Service } from "@kubernetes/client-node";
import { type SecretsOf, toWireNode, toWireService } from "./convert.js";
import { type Change, objectKey, type PendingChange, readyChange } from "./outbox.js";
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

/** What the hub is told of a watch event: the object's latest state, or its deletion. */
export function changeOf(e: WatchEvent, secrets?: SecretsOf): PendingChange {
  const md = e.obj.metadata;
  const name = md?.name ?? "";
  const uid = md?.uid ?? "";
  if (e.kind === "node")
    return e.type === "upsert"
      ? new NodeUpsert(objectKey("node", "", name, uid), e.obj)
      : readyChange({ $case: "nodeDeleted", value: { namespace: "", name, uid } });
  const namespace = md?.namespace ?? "";
  return e.type === "upsert"
    ? new ServiceUpsert(objectKey("service", namespace, name, uid), e.obj, secrets)
    : readyChange({ $case: "serviceDeleted", value: { namespace, name, uid } });
}
