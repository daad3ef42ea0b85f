import type { AnnotationFilter } from "@fleet-ccm/proto";
import type {
  Informer,
  KubeConfig,
  KubernetesListObject,
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
import { type Clock, Retry, systemClock } from "./backoff.js";
import type { KubeClient } from "./kube-client.js";
import { slimNode, slimService } from "./slim.js";

const NODES = "/api/v1/nodes";
const SERVICES = "/api/v1/services";

export type WatchEvent =
  | { readonly kind: "node"; readonly type: "upsert"; readonly obj: V1Node }
  | { readonly kind: "node"; readonly type: "delete"; readonly obj: V1Node }
  | { readonly kind: "service"; readonly type: "upsert"; readonly obj: V1Service }
  | { readonly kind: "service"; readonly type: "delete"; readonly obj: V1Service };

/** A watch that ends cleanly this soon without a single event is a failure (as client-go's reflector says). */
const SHORT_WATCH_MS = 1000;
const HEALTHY_WATCH_MS = 30_000;

/**
 * client-node's Watch, with every object slimmed (slim.ts) before it reaches a cache. It also
 * tells when a watch delivered something or stayed up a while (the API server is serving it:
 * backoff starts over)
 * and turns a watch that ends at once without events into an error, so that a server closing
 * every watch makes the informer back off instead of reconnecting in a tight loop.
 */
class SlimmingWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly slimmers: Readonly<Record<string, (obj: never) => KubernetesObject>>,
    private readonly onServing: (path: string) => void,
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
    const started = Date.now();
    let events = 0;
    return super.watch(
      path,
      queryParams,
      // BOOKMARK and ERROR objects are not cached: only ADDED/MODIFIED/DELETED are slimmed.
      (phase, obj, watchObj) => {
        if (phase !== "ERROR" && events++ === 0) this.onServing(path);
        callback(
          phase,
          obj && phase !== "BOOKMARK" && phase !== "ERROR" ? slim(obj as never) : obj,
          watchObj,
        );
      },
      (err: unknown) => {
        const lasted = Date.now() - started;
        // A quiet watch that stayed up a while proves the server serves it too.
        if (events === 0 && lasted >= HEALTHY_WATCH_MS) this.onServing(path);
        done(
          err === null && events === 0 && lasted < SHORT_WATCH_MS
            ? new Error(`watch of ${path} ended at once without events`)
            : err,
        );
      },
    );
  }
}

/** A LIST answer that is not a list: never taken for an empty one. */
function checkedList<T extends KubernetesObject>(
  path: string,
  list: KubernetesListObject<T>,
): KubernetesListObject<T> {
  if (typeof list !== "object" || list === null || !Array.isArray(list.items))
    throw new Error(`LIST ${path} answered something that is not a list`);
  return list;
}

/** Informer restarts and initial lists: 500 ms doubling to 30 s, jittered. */
const WATCH_BACKOFF = { initialMs: 500, maxMs: 30_000 };

interface Informed<T extends KubernetesObject> {
  readonly what: string;
  readonly informer: Informer<T> & ObjectCache<T>;
  readonly retry: Retry;
  /** Set once a list of this kind has succeeded and its items are in the cache. */
  synced: boolean;
}

/**
 * Informers on Nodes and Services. client-node's informer stops on a failed list or a non-410
 * watch error (and its start() resolves even when the list failed); this restarts it with
 * backoff, and its relist then reports what changed meanwhile as ordinary events. A failed
 * list never changes the cache: the previous view stands. `start()` resolves only once every
 * kind has been listed completely.
 */
export class ClusterWatch {
  private readonly nodes: Informed<V1Node>;
  private readonly services: Informed<V1Service>;
  private stopped = false;
  private readonly waiters = new Set<() => void>();

  constructor(
    kc: KubeConfig,
    api: KubeClient,
    logger: Logger,
    /** The annotations kept in the caches: those the hub asked for. */
    readonly annotations: AnnotationFilter,
    onEvent: (e: WatchEvent) => void,
    clock: Clock = systemClock,
  ) {
    const node = (n: V1Node) => slimNode(n, annotations);
    const service = (s: V1Service) => slimService(s, annotations);
    const watch = new SlimmingWatch(kc, { [NODES]: node, [SERVICES]: service }, (path) =>
      (path === NODES ? this.nodes : this.services).retry.succeeded(),
    );
    const informed = <T extends KubernetesObject>(
      what: string,
      path: string,
      list: () => Promise<KubernetesListObject<T>>,
    ): Informed<T> => {
      const self: Informed<T> = {
        what,
        // autoStart false, as makeInformer does: start() is called once handlers are attached.
        informer: new ListWatch(
          path,
          watch,
          async () => {
            const l = checkedList(path, await list());
            // ListWatch fills its cache right after this resolves, in the same task.
            setImmediate(() => this.listed(self));
            return l;
          },
          false,
        ),
        retry: new Retry({
          what: `watch of ${what}`,
          logger,
          clock,
          backoff: WATCH_BACKOFF,
          fields: { resource: what },
        }),
        synced: false,
      };
      return self;
    };
    this.nodes = informed("nodes", NODES, () => api.listNodes(node));
    this.services = informed("services", SERVICES, () => api.listServices(service));
    const n = this.nodes.informer;
    n.on("add", (obj) => onEvent({ kind: "node", type: "upsert", obj }));
    n.on("update", (obj) => onEvent({ kind: "node", type: "upsert", obj }));
    n.on("delete", (obj) => onEvent({ kind: "node", type: "delete", obj }));
    const s = this.services.informer;
    s.on("add", (obj) => onEvent({ kind: "service", type: "upsert", obj }));
    s.on("update", (obj) => onEvent({ kind: "service", type: "upsert", obj }));
    s.on("delete", (obj) => onEvent({ kind: "service", type: "delete", obj }));
    this.restartOnError(this.nodes);
    this.restartOnError(this.services);
  }

  private listed<T extends KubernetesObject>(i: Informed<T>): void {
    if (this.stopped) return;
    i.retry.succeeded();
    if (i.synced) return;
    i.synced = true;
    if (this.synced) for (const w of this.waiters) w();
  }

  /** Every kind has been listed completely at least once. */
  get synced(): boolean {
    return this.nodes.synced && this.services.synced;
  }

  private restartOnError<T extends KubernetesObject>(i: Informed<T>): void {
    i.informer.on("error", (err: unknown) => this.failed(i, err));
  }

  private failed<T extends KubernetesObject>(i: Informed<T>, err: unknown): void {
    if (this.stopped) return;
    const e = err as { code?: unknown; statusCode?: unknown };
    const status = typeof e.code === "number" ? e.code : e.statusCode;
    i.retry.failed(
      err,
      () => this.run(i),
      typeof status === "number" ? { status } : {},
      // Until the first complete list, nothing is sent to the hub.
      i.synced
        ? `watch of ${i.what}`
        : `initial list of ${i.what} (nothing is sent to the hub until it succeeds)`,
    );
  }

  private run<T extends KubernetesObject>(i: Informed<T>): void {
    if (this.stopped) return;
    // A failed list or watch is reported as an "error" event; a throw is treated the same way.
    i.informer.start().catch((err: unknown) => this.failed(i, err));
  }

  /**
   * Resolves true once both kinds have been listed completely, retrying with backoff until they
   * are; false if stopped before.
   */
  async start(): Promise<boolean> {
    const done = new Promise<void>((resolve) => {
      const w = () => {
        this.waiters.delete(w);
        resolve();
      };
      this.waiters.add(w);
    });
    this.run(this.nodes);
    this.run(this.services);
    await done;
    return this.synced && !this.stopped;
  }

  listNodes(): readonly V1Node[] {
    return this.nodes.informer.list();
  }

  listServices(): readonly V1Service[] {
    return this.services.informer.list();
  }

  node(name: string): V1Node | undefined {
    return this.nodes.informer.get(name);
  }

  service(namespace: string, name: string): V1Service | undefined {
    return this.services.informer.get(name, namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.nodes.retry.cancel();
    this.services.retry.cancel();
    for (const w of this.waiters) w();
    await Promise.all([this.nodes.informer.stop(), this.services.informer.stop()]);
  }
}
