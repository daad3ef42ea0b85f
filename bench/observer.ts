// The measurement side: one real watch per simulated API server (plain HTTP, one JSON event per
// line, exactly what kubectl --watch reads), recording when each node loses the uninitialized
// taint, when nodes are deleted, and when Services get a load-balancer ingress.
//
// Why a watch and not a poll: a poll of N nodes every P ms costs N/P object reads per second
// whether anything changes or not (10,000 nodes every 100 ms = 100,000 objects/s serialized and
// parsed, more than the fleet itself does), and bounds the resolution to P. A watch costs one
// event per change, the same stream the agents already get, and timestamps each change when it
// arrives (its error is the delivery delay, which the agents see too).

import { Agent as HttpAgent, get as httpGet, type IncomingMessage } from "node:http";

const UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized";
const SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown";

interface WatchObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: { taints?: { key?: string }[] };
  status?: { loadBalancer?: { ingress?: unknown[] } };
}

interface WatchEvent {
  type?: string;
  object?: WatchObject & { code?: number };
}

interface ListBody {
  metadata?: { resourceVersion?: string };
  items?: WatchObject[];
}

export interface ClusterObservation {
  /** Node name → ms (epoch) when it was first seen without the uninitialized taint. */
  readonly initializedAt: Map<string, number>;
  /** Node name → ms of its first MODIFIED event (the agent's first patch landed). */
  readonly firstModifiedAt: Map<string, number>;
  /** Node name → ms when it was seen deleted. */
  readonly deletedAt: Map<string, number>;
  /** Nodes seen at all (ADDED/MODIFIED). */
  readonly seen: Set<string>;
  /** Nodes that carry the shutdown taint now. */
  readonly shutdownTainted: Set<string>;
  /** "namespace/name" → ms when it first had a load-balancer ingress. */
  readonly serviceReadyAt: Map<string, number>;
  /** Node watch events (ADDED/MODIFIED/DELETED): one per change of a Node object. */
  nodeEvents: number;
  serviceEvents: number;
  /** Watches restarted after a 410 or a closed stream. */
  restarts: number;
}

const agent = new HttpAgent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function getJson(url: string): Promise<ListBody> {
  return new Promise((resolve, reject) => {
    httpGet(url, { agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${url}: ${res.statusCode} ${text.slice(0, 200)}`));
        else
          try {
            resolve(JSON.parse(text) as ListBody);
          } catch (err) {
            reject(err);
          }
      });
      res.on("error", reject);
    }).on("error", reject);
  });
}

/** One resource's watch on one API server, re-listing after a 410 and re-watching after the stream ends. */
class ResourceWatch {
  private rv = "0";
  private res: IncomingMessage | undefined;
  private closed = false;
  private buf = "";

  constructor(
    private readonly base: string,
    private readonly path: string,
    private readonly onObject: (type: string, obj: WatchObject, now: number) => void,
    private readonly onRestart: () => void,
  ) {}

  async start(): Promise<void> {
    const list = await getJson(`${this.base}${this.path}`);
    const now = Date.now();
    for (const item of list.items ?? []) this.onObject("LISTED", item, now);
    this.rv = list.metadata?.resourceVersion ?? "0";
    await this.watch();
  }

  private watch(): Promise<void> {
    return new Promise((resolve, reject) => {
      const url = `${this.base}${this.path}?watch=true&resourceVersion=${encodeURIComponent(this.rv)}`;
      const req = httpGet(url, { agent }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`watch ${url}: ${res.statusCode}`));
          return;
        }
        this.res = res;
        this.buf = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => this.onData(chunk));
        res.on("end", () => this.ended());
        res.on("error", () => undefined);
        resolve();
      });
      req.on("error", (err) => {
        if (this.closed) resolve();
        else reject(err);
      });
    });
  }

  private onData(chunk: string): void {
    this.buf += chunk;
    let nl = this.buf.indexOf("\n");
    if (nl < 0) return;
    const now = Date.now();
    let from = 0;
    while (nl >= 0) {
      const line = this.buf.slice(from, nl);
      from = nl + 1;
      if (line.length > 0) this.onLine(line, now);
      nl = this.buf.indexOf("\n", from);
    }
    this.buf = this.buf.slice(from);
  }

  private onLine(line: string, now: number): void {
    let ev: WatchEvent;
    try {
      ev = JSON.parse(line) as WatchEvent;
    } catch {
      return;
    }
    const obj = ev.object;
    if (ev.type === "ERROR") {
      // 410 Gone: our resourceVersion is too old. List again (a real informer does the same).
      this.rv = "";
      this.res?.destroy();
      return;
    }
    if (obj === undefined) return;
    const rv = obj.metadata?.resourceVersion;
    if (rv !== undefined) this.rv = rv;
    if (ev.type === "BOOKMARK") return;
    this.onObject(ev.type ?? "", obj, now);
  }

  private ended(): void {
    this.res = undefined;
    if (this.closed) return;
    this.onRestart();
    const again = this.rv === "" ? this.start() : this.watch();
    again.catch(() => {
      if (!this.closed) setTimeout(() => this.ended(), 500);
    });
  }

  close(): void {
    this.closed = true;
    this.res?.destroy();
  }
}

export class FleetObserver {
  readonly clusters = new Map<string, ClusterObservation>();
  private readonly watches: ResourceWatch[] = [];

  /** Starts watching every cluster's Nodes (and Services when asked); resolves once every watch is open. */
  async start(kube: ReadonlyMap<string, string>, services: boolean): Promise<void> {
    await Promise.all(
      [...kube].map(async ([cluster, url]) => {
        const o: ClusterObservation = {
          initializedAt: new Map(),
          deletedAt: new Map(),
          firstModifiedAt: new Map(),
          seen: new Set(),
          shutdownTainted: new Set(),
          serviceReadyAt: new Map(),
          nodeEvents: 0,
          serviceEvents: 0,
          restarts: 0,
        };
        this.clusters.set(cluster, o);
        const nodes = new ResourceWatch(
          url,
          "/api/v1/nodes",
          (type, obj, now) => {
            const name = obj.metadata?.name;
            if (name === undefined) return;
            if (type !== "LISTED") o.nodeEvents++;
            if (type === "DELETED") {
              if (!o.deletedAt.has(name)) o.deletedAt.set(name, now);
              o.shutdownTainted.delete(name);
              return;
            }
            o.seen.add(name);
            if (type === "MODIFIED" && !o.firstModifiedAt.has(name)) o.firstModifiedAt.set(name, now);
            if (o.deletedAt.has(name)) o.deletedAt.delete(name); // recreated under the same name
            const taints = obj.spec?.taints ?? [];
            if (!o.initializedAt.has(name) && !taints.some((t) => t.key === UNINITIALIZED))
              o.initializedAt.set(name, now);
            if (taints.some((t) => t.key === SHUTDOWN)) o.shutdownTainted.add(name);
            else o.shutdownTainted.delete(name);
          },
          () => o.restarts++,
        );
        this.watches.push(nodes);
        await nodes.start();
        if (!services) return;
        const svcs = new ResourceWatch(
          url,
          "/api/v1/services",
          (type, obj, now) => {
            const key = `${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
            if (type !== "LISTED") o.serviceEvents++;
            if (type === "DELETED") {
              o.serviceReadyAt.delete(key);
              return;
            }
            if (!o.serviceReadyAt.has(key) && (obj.status?.loadBalancer?.ingress ?? []).length > 0)
              o.serviceReadyAt.set(key, now);
          },
          () => o.restarts++,
        );
        this.watches.push(svcs);
        await svcs.start();
      }),
    );
  }

  initializedCount(): number {
    let n = 0;
    for (const o of this.clusters.values()) n += o.initializedAt.size;
    return n;
  }

  nodeEvents(clusters?: readonly string[]): number {
    let n = 0;
    for (const [c, o] of this.clusters) if (clusters === undefined || clusters.includes(c)) n += o.nodeEvents;
    return n;
  }

  servicesReady(): number {
    let n = 0;
    for (const o of this.clusters.values()) n += o.serviceReadyAt.size;
    return n;
  }

  restarts(): number {
    let n = 0;
    for (const o of this.clusters.values()) n += o.restarts;
    return n;
  }

  close(): void {
    for (const w of this.watches) w.close();
    agent.destroy();
  }
}
