import type { AnnotationFilter } from "@fleet-ccm/proto";
import type {
  Informer,
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ObjectCache,
  V1Node,
  V1PersistentVolume,
  V1Service,
} from "@kubernetes/client-node";
// The modules themselves, not the package index: the index also loads exec/attach/port-forward
// (ws, tar) and every generated API, which the agent bundle would otherwise carry.
import { ListWatch } from "@kubernetes/client-node/dist/cache.js";
import { Watch } from "@kubernetes/client-node/dist/watch.js";
import type { Logger } from "pino";
import { type Clock, Retry, systemClock } from "./backoff.js";
import { watchOverHttp } from "./http-watch.js";
import type { KubeClient } from "./kube-client.js";
import { FailureSummary } from "./log-summary.js";
import { slimNode, slimService } from "./slim.js";
import { slimPersistentVolume, type VolumeFilter } from "./volumes.js";

const NODES = "/api/v1/nodes";
const SERVICES = "/api/v1/services";
const PERSISTENT_VOLUMES = "/api/v1/persistentvolumes";

export type WatchEvent =
  | { readonly kind: "node"; readonly type: "upsert"; readonly obj: V1Node }
  | { readonly kind: "node"; readonly type: "delete"; readonly obj: V1Node }
  | { readonly kind: "service"; readonly type: "upsert"; readonly obj: V1Service }
  | { readonly kind: "service"; readonly type: "delete"; readonly obj: V1Service }
  | {
      readonly kind: "persistentVolume";
      readonly type: "upsert" | "delete";
      readonly obj: V1PersistentVolume;
    };

/** A watch that ends cleanly this soon without a single event is a failure (as client-go's reflector says). */
const SHORT_WATCH_MS = 1000;
const HEALTHY_WATCH_MS = 30_000;

/**
 * A watch ended with 410 Gone (its resourceVersion is compacted), in either form the API server
 * sends it: HTTP 410 answering the watch request, or an `ERROR` event carrying a 410 Status.
 * It has no `code` or `statusCode` of 410 on purpose: ListWatch would take one for its own and
 * relist at once, every time, with no backoff.
 */
export class WatchExpired extends Error {
  readonly status = 410;
}

/** A 410 Gone: an HTTP error's statusCode, or an `ERROR` event's Status code. */
function isGone(x: unknown): boolean {
  if (typeof x !== "object" || x === null) return false;
  const { code, statusCode } = x as { code?: unknown; statusCode?: unknown };
  return code === 410 || statusCode === 410;
}

/**
 * client-node's Watch (its requests made by watchOverHttp), with every object slimmed (slim.ts)
 * before it reaches a cache. It also tells when a watch delivered something or stayed up a
 * while (the API server is serving it: backoff starts over), turns a watch that ends at once
 * without events into an error, so that a server closing every watch makes the informer back
 * off instead of reconnecting in a tight loop, and ends a watch that met a 410 with a
 * WatchExpired, so that ClusterWatch decides when to relist.
 */
class SlimmingWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly slimmers: Readonly<Record<string, (obj: never) => KubernetesObject>>,
    private readonly onServing: (path: string) => void,
    private readonly clock: Clock,
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
    const started = this.clock.now();
    let events = 0;
    /** The message of the 410 Status an `ERROR` event carried (the server then ends the watch). */
    let expired: string | undefined;
    return watchOverHttp(
      this.config,
      path,
      queryParams,
      // BOOKMARK and ERROR objects are not cached: only ADDED/MODIFIED/DELETED are slimmed.
      (phase, obj, watchObj) => {
        if (phase === "ERROR") {
          if (isGone(obj)) expired = String((obj as { message?: unknown }).message ?? "410 Gone");
        } else if (events++ === 0) this.onServing(path);
        // ListWatch forgets its resourceVersion on a 410 ERROR: the restart relists.
        callback(
          phase,
          obj && phase !== "BOOKMARK" && phase !== "ERROR" ? slim(obj as never) : obj,
          watchObj,
        );
      },
      (err: unknown) => {
        const lasted = this.clock.now() - started;
        // A quiet watch that stayed up a while proves the server serves it too.
        if (events === 0 && lasted >= HEALTHY_WATCH_MS) this.onServing(path);
        if (isGone(err)) {
          // ListWatch is told as it is of an in-stream 410, so it forgets the resourceVersion
          // and relists when ClusterWatch restarts it.
          const status = {
            kind: "Status",
            apiVersion: "v1",
            status: "Failure",
            reason: "Expired",
            code: 410,
          };
          callback("ERROR", status, { type: "ERROR", object: status });
          expired = "HTTP 410 Gone";
        }
        if (expired !== undefined) done(new WatchExpired(`watch of ${path}: ${expired}`));
        else
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
  /** The 410s that relist at once: logged the first time, then summarized. */
  readonly expired: FailureSummary;
  /** Set once a list of this kind has succeeded and its items are in the cache. */
  synced: boolean;
  /**
   * Since the last list, its watch delivered an event or stayed up 30 s: the API server serves
   * it, and a 410 now is the ordinary end of a resourceVersion.
   */
  served: boolean;
  /** A list failed, and none succeeded since: the next success ends those failures. */
  listFailing: boolean;
}

/**
 * Informers on Nodes and Services, and on PersistentVolumes when the hub asks for some (the
 * volume filter is not empty). client-node's informer stops on a failed list or a non-410
 * watch error (and its start() resolves even when the list failed); this restarts it with
 * backoff, and its relist then reports what changed meanwhile as ordinary events. A failed
 * list never changes the cache: the previous view stands. `start()` resolves only once every
 * kind has been listed completely.
 *
 * A watch ending with 410 Gone relists at once if the watch served since the last list (an
 * event, or 30 s up): its resourceVersion was compacted in the ordinary way, which client-go's
 * reflector too takes for a watch's end, not an error. A 410 before that is a failure like any
 * other and backs off: a server or proxy answering every watch with 410 costs a LIST per
 * backoff step, not a tight loop of them. Time since the list alone would not do (a watch
 * resumed after an hour meets the 410 at once), and the relist succeeding proves nothing of the
 * watch: only a serving watch starts that backoff over.
 */
export class ClusterWatch {
  private readonly nodes: Informed<V1Node>;
  private readonly services: Informed<V1Service>;
  /** Absent when the hub asked for no PersistentVolume. */
  private readonly volumes: Informed<V1PersistentVolume> | undefined;
  private stopped = false;
  private readonly waiters = new Set<() => void>();

  constructor(
    kc: KubeConfig,
    api: KubeClient,
    logger: Logger,
    /** The annotations kept in the caches: those the hub asked for. */
    readonly annotations: AnnotationFilter,
    /** The PersistentVolumes the hub asked for. */
    readonly volumeFilter: VolumeFilter,
    onEvent: (e: WatchEvent) => void,
    clock: Clock = systemClock,
  ) {
    const node = (n: V1Node) => slimNode(n, annotations);
    const service = (s: V1Service) => slimService(s, annotations);
    const volume = (pv: V1PersistentVolume) => slimPersistentVolume(pv, volumeFilter);
    const watch = new SlimmingWatch(
      kc,
      { [NODES]: node, [SERVICES]: service, [PERSISTENT_VOLUMES]: volume },
      (path) => {
        const i = path === NODES ? this.nodes : path === SERVICES ? this.services : this.volumes;
        if (i !== undefined) this.serving(i as Informed<KubernetesObject>);
      },
      clock,
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
            let l: KubernetesListObject<T>;
            try {
              l = checkedList(path, await list());
            } catch (err) {
              self.listFailing = true;
              throw err;
            }
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
        expired: new FailureSummary(
          logger,
          `watch of ${what} ended with 410 Gone (its resourceVersion is compacted): relisting at once`,
          clock,
          30_000,
          "info",
        ),
        synced: false,
        served: false,
        listFailing: false,
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
    if (!volumeFilter.empty) {
      const v = informed("persistentvolumes", PERSISTENT_VOLUMES, () => api.listPersistentVolumes(volume));
      v.informer.on("add", (obj) => onEvent({ kind: "persistentVolume", type: "upsert", obj }));
      v.informer.on("update", (obj) => onEvent({ kind: "persistentVolume", type: "upsert", obj }));
      v.informer.on("delete", (obj) => onEvent({ kind: "persistentVolume", type: "delete", obj }));
      this.restartOnError(v);
      this.volumes = v;
    }
  }

  private listed<T extends KubernetesObject>(i: Informed<T>): void {
    if (this.stopped) return;
    i.served = false;
    // A list proves the server lists, not that it watches: after a 410 the backoff starts over
    // only once the watch serves.
    if (i.listFailing) i.retry.succeeded();
    i.listFailing = false;
    if (i.synced) return;
    i.synced = true;
    if (this.synced) for (const w of this.waiters) w();
  }

  /** Every kind has been listed completely at least once. */
  get synced(): boolean {
    return this.nodes.synced && this.services.synced && (this.volumes?.synced ?? true);
  }

  private serving<T extends KubernetesObject>(i: Informed<T>): void {
    i.served = true;
    i.retry.succeeded();
  }

  private restartOnError<T extends KubernetesObject>(i: Informed<T>): void {
    i.informer.on("error", (err: unknown) => this.failed(i, err));
  }

  private failed<T extends KubernetesObject>(i: Informed<T>, err: unknown): void {
    if (this.stopped) return;
    if (err instanceof WatchExpired) {
      if (i.served) {
        i.expired.failed(i.what, { resource: i.what, err: err.message });
        setImmediate(() => this.run(i));
      } else
        i.retry.failed(
          err,
          () => this.run(i),
          { status: err.status, reason: "Expired" },
          `watch of ${i.what}`,
        );
      return;
    }
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
    if (this.volumes !== undefined) this.run(this.volumes);
    await done;
    return this.synced && !this.stopped;
  }

  listNodes(): readonly V1Node[] {
    return this.nodes.informer.list();
  }

  listServices(): readonly V1Service[] {
    return this.services.informer.list();
  }

  listPersistentVolumes(): readonly V1PersistentVolume[] {
    return this.volumes?.informer.list() ?? [];
  }

  persistentVolume(name: string): V1PersistentVolume | undefined {
    return this.volumes?.informer.get(name);
  }

  node(name: string): V1Node | undefined {
    return this.nodes.informer.get(name);
  }

  service(namespace: string, name: string): V1Service | undefined {
    return this.services.informer.get(name, namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [this.nodes, this.services, this.volumes].filter((i) => i !== undefined);
    for (const i of all) {
      i.retry.cancel();
      i.expired.stop();
    }
    for (const w of this.waiters) w();
    await Promise.all(all.map((i) => i.informer.stop()));
  }
}
