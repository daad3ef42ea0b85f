import { type ClusterEvent, ObjectKind } from "@fleet-ccm/proto";
import type { KubeClient } from "../kube-client.js";
import { apiFailure } from "./errors.js";

const MAX_CACHED = 4096;

const INVOLVED_KIND: Partial<Record<ObjectKind, string>> = {
  [ObjectKind.OBJECT_KIND_NODE]: "Node",
  [ObjectKind.OBJECT_KIND_SERVICE]: "Service",
  [ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME]: "PersistentVolume",
};

interface Seen {
  name: string;
  namespace: string;
  count: number;
}

function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * Records the hub's Events the way client-go's recorder does: a new Event per
 * (source, object, type, reason, message), and a count/lastTimestamp patch
 * when the same one repeats (recreated if it expired meanwhile).
 */
export class EventRecorder {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly api: KubeClient,
    private readonly host: string,
  ) {}

  async record(e: ClusterEvent): Promise<void> {
    const namespace = e.namespace === "" ? "default" : e.namespace;
    const key = [e.sourceComponent, e.kind, namespace, e.name, e.uid, e.type, e.reason, e.message].join(
      "\u0000",
    );
    const now = new Date();
    const prev = this.seen.get(key);
    if (prev !== undefined) {
      prev.count++;
      try {
        await this.api.patchEvent(prev.namespace, prev.name, {
          count: prev.count,
          lastTimestamp: rfc3339(now),
        });
        return;
      } catch (err) {
        if (apiFailure(err).code !== 404) throw err;
        this.seen.delete(key);
      }
    }
    const name = `${e.name}.${(BigInt(now.getTime()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1e6))).toString(16)}`;
    await this.api.createEvent(namespace, {
      metadata: { name, namespace },
      involvedObject: {
        kind: INVOLVED_KIND[e.kind] ?? "Node",
        apiVersion: "v1",
        name: e.name,
        namespace: e.namespace === "" ? undefined : e.namespace,
        uid: e.uid,
      },
      type: e.type,
      reason: e.reason,
      message: e.message,
      source: { component: e.sourceComponent, host: this.host },
      reportingComponent: e.sourceComponent,
      reportingInstance: this.host,
      count: prev?.count ?? 1,
      firstTimestamp: rfc3339(now),
      lastTimestamp: rfc3339(now),
    });
    if (this.seen.size >= MAX_CACHED) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    this.seen.set(key, { name, namespace, count: prev?.count ?? 1 });
  }
}
