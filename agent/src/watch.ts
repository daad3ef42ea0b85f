import type {
  Informer,
  KubeConfig,
  KubernetesObject,
  ObjectCache,
  V1Node,
  V1Service,
} from "@kubernetes/client-node";
// The modules themselves, not the package index: the index also loads exec/attach/port-forward
// (ws, tar) and every generated API, which the agent bundle would otherwise carry.
import { ListWatch } from "@kubernetes/client-node/dist/cache.js";
import { Watch } from "@kubernetes/client-node/dist/watch.js";
import type { Logger } from "pino";
import type { KubeClient } from "./kube-client.js";
import { slimNode, slimService } from "./slim.js";

const NODES = "/api/v1/nodes";
const SERVICES = "/api/v1/services";

export type WatchEvent =
  | { readonly kind: "node"; readonly type: "upsert"; readonly obj: V1Node }
  | { readonly kind: "node"; readonly type: "delete"; readonly obj: V1Node }
  | { readonly kind: "service"; readonly type: "upsert"; readonly obj: V1Service }
  | { readonly kind: "service"; readonly type: "delete"; readonly obj: V1Service };

/** client-node's Watch, with every object slimmed (slim.ts) before it reaches a cache. */
class SlimmingWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly slimmers: Readonly<Record<string, (obj: never) => KubernetesObject>>,
  ) {
    super(kc);
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    // biome-ignore lint/suspicious/noExplicitAny: client-node's own callback signature
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    // biome-ignore lint/suspicious/noExplicitAny: client-node's own callback signature
    done: (err: any) => void,
  ): Promise<AbortController> {
    const slim = this.slimmers[path];
    if (slim === undefined) throw new Error(`no slimmer for ${path}`);
    return super.watch(
      path,
      queryParams,
      // BOOKMARK and ERROR objects are not cached: only ADDED/MODIFIED/DELETED are slimmed.
      (phase, obj, watchObj) =>
        callback(
          phase,
          obj && phase !== "BOOKMARK" && phase !== "ERROR" ? slim(obj as never) : obj,
          watchObj,
        ),
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
    api: KubeClient,
    private readonly logger: Logger,
    onEvent: (e: WatchEvent) => void,
  ) {
    const watch = new SlimmingWatch(kc, { [NODES]: slimNode, [SERVICES]: slimService });
    // autoStart false, as makeInformer does: start() is called once handlers are attached.
    this.nodes = new ListWatch(NODES, watch, () => api.listNodes(slimNode), false);
    this.services = new ListWatch(SERVICES, watch, () => api.listServices(slimService), false);
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
