import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { Transform } from "node:stream";

export type TcpProxyMode = "forward" | "refuse" | "blackhole";

export interface TcpProxyOptions {
  /** host:port of each backend; new connections go round-robin, skipping ones that refuse. */
  readonly targets: readonly string[];
  /** 0 or absent: a free port. */
  readonly port?: number;
  /**
   * A stream of its own per connection between the server's bytes and the client (e.g. a
   * NatsMessageDropper): what it passes on is what the client gets.
   */
  readonly downstream?: () => Transform;
}

interface Pair {
  readonly client: Socket;
  upstream: Socket | undefined;
  /** The client side is gone but the upstream side is kept open and silent (forgetClients). */
  forgotten?: boolean;
}

/**
 * A TCP proxy under the test's control, in front of NATS or of several hub replicas (as a
 * Kubernetes Service would be): `cut()` drops every connection and refuses new ones,
 * `blackhole()` keeps them open but lets nothing through (a partition the client only notices
 * by its timeouts), `forgetClients()` closes only the clients' side (the server notices
 * nothing), `restore()` forwards again.
 */
export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private targets: string[];
  private next = 0;
  private modeNow: TcpProxyMode = "forward";
  /** Connections accepted, by target (tests see where clients landed). */
  readonly connections = new Map<string, number>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    targets: readonly string[],
    private readonly downstream: (() => Transform) | undefined,
  ) {
    this.targets = [...targets];
  }

  static async start(opts: TcpProxyOptions): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => proxy?.accept(client));
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 0, "127.0.0.1", () => {
        const a = server.address();
        resolve(typeof a === "object" && a !== null ? a.port : 0);
      });
    });
    proxy = new TcpProxy(server, port, opts.targets, opts.downstream);
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get mode(): TcpProxyMode {
    return this.modeNow;
  }

  setTargets(targets: readonly string[]): void {
    this.targets = [...targets];
  }

  /** Drops every connection; new ones are closed at once. */
  cut(): void {
    this.modeNow = "refuse";
    for (const p of this.pairs) this.drop(p, true);
  }

  /** Nothing passes any more, in either direction; connections stay open. */
  blackhole(): void {
    this.modeNow = "blackhole";
    for (const p of this.pairs) {
      p.client.pause();
      p.upstream?.pause();
    }
  }

  /**
   * Closes the client side of every connection and keeps the upstream side open with nothing
   * passing: the client reconnects while the server still sees its old connection, as after a
   * NAT or load balancer that forgot the flow.
   */
  forgetClients(): void {
    for (const p of this.pairs) {
      p.forgotten = true;
      p.upstream?.unpipe();
      p.upstream?.pause();
      p.client.destroy();
    }
  }

  /** Forwards again (a blackholed connection resumes; cut ones are gone). */
  restore(): void {
    this.modeNow = "forward";
    for (const p of this.pairs) {
      if (p.forgotten === true) continue;
      p.client.resume();
      p.upstream?.resume();
    }
  }

  async close(): Promise<void> {
    for (const p of this.pairs) this.drop(p, true);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private drop(p: Pair, all = false): void {
    p.client.destroy();
    if (all || p.forgotten !== true) {
      p.upstream?.destroy();
      this.pairs.delete(p);
    }
  }

  private accept(client: Socket): void {
    if (this.modeNow === "refuse") {
      client.destroy();
      return;
    }
    const pair: Pair = { client, upstream: undefined };
    this.pairs.add(pair);
    client.pause();
    client.on("error", () => this.drop(pair));
    client.on("close", () => this.drop(pair));
    this.dial(pair, 0);
  }

  private dial(pair: Pair, tried: number): void {
    if (tried >= this.targets.length || !this.pairs.has(pair)) {
      this.drop(pair);
      return;
    }
    const target = this.targets[this.next++ % this.targets.length] ?? "";
    const idx = target.lastIndexOf(":");
    const upstream = createConnection({ host: target.slice(0, idx), port: Number(target.slice(idx + 1)) });
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      this.connections.set(target, (this.connections.get(target) ?? 0) + 1);
      pair.upstream = upstream;
      upstream.on("close", () => this.drop(pair, true));
      client.pipe(upstream);
      const through = this.downstream?.();
      if (through === undefined) upstream.pipe(client);
      else upstream.pipe(through).pipe(client);
      if (this.modeNow === "blackhole") upstream.pause();
      else pair.client.resume();
    });
    const client = pair.client;
    upstream.on("error", () => {
      if (!connected) this.dial(pair, tried + 1);
      else this.drop(pair, true);
    });
  }
}

export function startTcpProxy(opts: TcpProxyOptions): Promise<TcpProxy> {
  return TcpProxy.start(opts);
}
