import {
  CoreV1Api,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
  ListWatch,
  type ObjectCache,
  type V1Node,
  type V1Service,
  Watch,
} from "@kubernetes/client-node";
import type { Logger } from "pino";

export type WatchEvent =
  | { readonly kind: "node"; readonly type: "upsert"; readonly obj: V1Node }
  | { readonly kind: "node"; readonly type: "delete"; readonly obj: V1Node }
  | { readonly kind: "service"; readonly type: "upsert"; readonly obj: V1Service }
  | { readonly kind: "service"; readonly type: "delete"; readonly obj: V1Service };

/**
 * What the agent never reads: managedFields, and on Nodes the image list, node info and volume
 * lists (on real nodes tens of kilobytes each). Dropped before the informer caches an object, so
 * the agent's memory follows the number of objects, not their size.
 */
function trim<T extends KubernetesObject>(obj: T): T {
  const o = obj as T & { status?: Record<string, unknown> };
  if (o.metadata?.managedFields !== undefined) o.metadata.managedFields = undefined;
  if (o.kind === "Node" || o.status?.["nodeInfo"] !== undefined) {
    const st = o.status;
    if (st !== undefined) {
      st["images"] = undefined;
      st["nodeInfo"] = undefined;
      st["volumesAttached"] = undefined;
      st["volumesInUse"] = undefined;
    }
  }
  return obj;
}

function trimList<L extends { items: KubernetesObject[] }>(list: L): L {
  for (const item of list.items) trim(item);
  return list;
}

/** client-node's Watch, with every object trimmed before it reaches the cache. */
class TrimmingWatch extends Watch {
  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    // biome-ignore lint/suspicious/noExplicitAny: client-node's own callback signature
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    // biome-ignore lint/suspicious/noExplicitAny: client-node's own callback signature
    done: (err: any) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      queryParams,
      (phase, obj, watchObj) => callback(phase, obj ? trim(obj) : obj, watchObj),
      done,
    );
  }
}

const RESTART_MIN_MS = 500;
const RESTART_MAX_MS = 30_000;

/**
 * Informers on Nodes and Services. client-node's informer stops on a failed
 * list or a non-410 watch error; this restarts it with backoff, and its relist
 * then reports what changed meanwhile as ordinary events.
 */
export class ClusterWatch {
  private readonly nodes: Informer<V1Node> & ObjectCache<V1Node>;
  private readonly services: Informer<V1Service> & ObjectCache<V1Service>;
  private stopped = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    kc: KubeConfig,
    private readonly logger: Logger,
    onEvent: (e: WatchEvent) => void,
  ) {
    const core = kc.makeApiClient(CoreV1Api);
    const watch = new TrimmingWatch(kc);
    // autoStart false, as makeInformer does: start() is called once handlers are attached.
    this.nodes = new ListWatch("/api/v1/nodes", watch, async () => trimList(await core.listNode()), false);
    this.services = new ListWatch(
      "/api/v1/services",
      watch,
      async () => trimList(await core.listServiceForAllNamespaces()),
      false,
    );
    this.nodes.on("add", (obj) => onEvent({ kind: "node", type: "upsert", obj }));
    this.nodes.on("update", (obj) => onEvent({ kind: "node", type: "upsert", obj }));
    this.nodes.on("delete", (obj) => onEvent({ kind: "node", type: "delete", obj }));
    this.services.on("add", (obj) => onEvent({ kind: "service", type: "upsert", obj }));
    this.services.on("update", (obj) => onEvent({ kind: "service", type: "upsert", obj }));
    this.services.on("delete", (obj) => onEvent({ kind: "service", type: "delete", obj }));
    this.restartOnError("nodes", this.nodes);
    this.restartOnError("services", this.services);
  }

  private restartOnError<T extends KubernetesObject>(what: string, informer: Informer<T>): void {
    let failures = 0;
    informer.on("connect", () => {
      failures = 0;
    });
    informer.on("error", (err: unknown) => {
      if (this.stopped) return;
      failures++;
      const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** Math.min(failures - 1, 10));
      this.logger.warn({ what, err: String(err), retryInMs: delay }, "watch failed; restarting");
      const t = setTimeout(
        () => {
          this.timers.delete(t);
          if (!this.stopped) informer.start().catch(() => undefined);
        },
        delay * (0.5 + Math.random() / 2),
      );
      this.timers.add(t);
    });
  }

  /** Resolves once both informers have listed (retrying until they can). */
  async start(): Promise<void> {
    for (;;) {
      try {
        await Promise.all([this.nodes.start(), this.services.start()]);
        return;
      } catch (err) {
        if (this.stopped) return;
        this.logger.warn({ err: String(err) }, "initial list failed; retrying");
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  listNodes(): readonly V1Node[] {
    return this.nodes.list();
  }

  listServices(): readonly V1Service[] {
    return this.services.list();
  }

  node(name: string): V1Node | undefined {
    return this.nodes.get(name);
  }

  service(namespace: string, name: string): V1Service | undefined {
    return this.services.get(name, namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    await Promise.all([this.nodes.stop(), this.services.stop()]);
  }
}
