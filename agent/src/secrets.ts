/**
 * The Secrets the hub's provider needs (TLS certificates of load-balancer ports), read one by
 * one with `get`: only those a Service's annotations name under the Welcome's
 * secret_references, only in the Service's own namespace, only the keys asked for. They are
 * read again when the Service changes and every `refreshMs`, so a rotated certificate reaches
 * the hub; a change sends the Services naming the Secret again. Secret content is never logged.
 */

import { createHash } from "node:crypto";
import {
  MAX_SECRET_VALUE_BYTES,
  type NamedSecret,
  namedSecrets,
  type SecretReference,
  type ServiceSecret,
} from "@fleet-ccm/proto";
import type { V1Service } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type KubeClient, KubeRequestError } from "./kube-client.js";

/** Re-read period of every named Secret (a rotated certificate reaches the hub within it). */
export const DEFAULT_SECRET_REFRESH_MS = 60_000;
/** Secrets read at once. */
const CONCURRENCY = 8;

export interface ServiceRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export interface SecretFollowerOptions {
  readonly api: Pick<KubeClient, "readSecret">;
  readonly references: readonly SecretReference[];
  readonly logger: Logger;
  /** The Services the agent's caches hold now. */
  readonly services: () => readonly V1Service[];
  /** These Services' Secrets changed: send them again. */
  readonly onChanged: (services: readonly ServiceRef[]) => void;
  readonly refreshMs?: number;
}

interface Entry {
  readonly secret: ServiceSecret;
  /** Of the content, to tell a change (never logged). */
  readonly digest: string;
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function digestOf(s: ServiceSecret): string {
  const h = createHash("sha256").update(s.problem).update("\u0000");
  for (const k of Object.keys(s.data).sort())
    h.update(k)
      .update("\u0000")
      .update(s.data[k] as Buffer);
  return h.digest("hex");
}

export function refOf(s: V1Service): ServiceRef {
  return { namespace: s.metadata?.namespace ?? "", name: s.metadata?.name ?? "", uid: s.metadata?.uid ?? "" };
}

export class SecretFollower {
  /** By namespace/name of the Secret. */
  private readonly cache = new Map<string, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: SecretFollowerOptions) {}

  get references(): readonly SecretReference[] {
    return this.opts.references;
  }

  /** The Secrets a Service names (none when the hub asked for none). */
  named(s: V1Service): NamedSecret[] {
    return namedSecrets(s.metadata?.annotations, this.opts.references);
  }

  /** Every Secret the Service names is in the cache (it may be sent at once). */
  hasAll(s: V1Service): boolean {
    const ns = s.metadata?.namespace ?? "";
    return this.named(s).every((n) => this.cache.has(keyOf(ns, n.name)));
  }

  /** What the wire form of the Service carries: its Secrets as last read. */
  forService(s: V1Service): ServiceSecret[] {
    const ns = s.metadata?.namespace ?? "";
    return this.named(s).map(
      (n) =>
        this.cache.get(keyOf(ns, n.name))?.secret ?? {
          name: n.name,
          data: {},
          problem: "not read yet by the agent",
        },
    );
  }

  /** Reads the Secrets one Service names; true when any of them changed. */
  async readFor(s: V1Service): Promise<boolean> {
    const ns = s.metadata?.namespace ?? "";
    let changed = false;
    for (const n of this.named(s)) if (await this.read(ns, n, refOf(s))) changed = true;
    return changed;
  }

  /**
   * Reads the Secrets that cached Services name and were never read (Services that appeared
   * while readAll ran), so the snapshot taken next carries them all; a few rounds at most.
   */
  async readMissing(): Promise<void> {
    for (let round = 0; round < 3 && !this.stopped; round++) {
      const missing = this.opts.services().filter((s) => !this.hasAll(s));
      if (missing.length === 0) return;
      for (const s of missing) await this.readFor(s);
    }
  }

  /**
   * Reads every Secret the cached Services name, drops what none names any more, and sends
   * again the Services whose Secrets changed (when `notify`).
   */
  async readAll(notify = true): Promise<void> {
    const services = this.opts.services();
    const wanted = new Map<string, { ns: string; n: NamedSecret; by: ServiceRef[] }>();
    for (const s of services) {
      const ns = s.metadata?.namespace ?? "";
      for (const n of this.named(s)) {
        const k = keyOf(ns, n.name);
        const w = wanted.get(k);
        if (w === undefined) wanted.set(k, { ns, n, by: [refOf(s)] });
        else {
          w.by.push(refOf(s));
          // Two references may ask for different keys of the same Secret.
          w.n = { ...w.n, keys: [...new Set([...w.n.keys, ...n.keys])].sort() };
        }
      }
    }
    for (const k of [...this.cache.keys()]) if (!wanted.has(k)) this.cache.delete(k);
    const changed: ServiceRef[] = [];
    const queue = [...wanted.values()];
    const worker = async () => {
      for (let w = queue.shift(); w !== undefined && !this.stopped; w = queue.shift())
        if (await this.read(w.ns, w.n, w.by[0] as ServiceRef)) changed.push(...w.by);
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
    if (notify && changed.length > 0 && !this.stopped) this.opts.onChanged(changed);
  }

  /** Periodic re-reads, until stop(). */
  start(): void {
    const period = this.opts.refreshMs ?? DEFAULT_SECRET_REFRESH_MS;
    if (this.opts.references.length === 0 || period <= 0) return;
    const tick = () => {
      if (this.stopped) return;
      this.refreshing ??= this.readAll()
        .catch((err: unknown) => this.opts.logger.warn({ err: String(err) }, "Secrets not read again"))
        .finally(() => {
          this.refreshing = undefined;
          if (!this.stopped) this.schedule(tick, period);
        });
    };
    this.schedule(tick, period);
  }

  private schedule(tick: () => void, period: number): void {
    this.timer = setTimeout(tick, period);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.refreshing;
  }

  /** Reads one Secret into the cache; true when what the hub gets of it changed. */
  private async read(ns: string, n: NamedSecret, by: ServiceRef): Promise<boolean> {
    const k = keyOf(ns, n.name);
    const next = await this.fetch(ns, n, by);
    // A transient failure keeps what was read before (nothing changes on the hub's side).
    if (next === undefined) return false;
    const digest = digestOf(next);
    const before = this.cache.get(k);
    this.cache.set(k, { secret: next, digest });
    if (before?.digest === digest) return false;
    if (next.problem !== "")
      this.opts.logger.warn(
        { service: `${by.namespace}/${by.name}`, secret: n.name, problem: next.problem },
        "Secret named by a Service cannot be used",
      );
    else if (before !== undefined)
      this.opts.logger.info({ secret: k }, "Secret changed: the Services naming it are sent again");
    return true;
  }

  private async fetch(ns: string, n: NamedSecret, by: ServiceRef): Promise<ServiceSecret | undefined> {
    const problem = (p: string): ServiceSecret => ({ name: n.name, data: {}, problem: p });
    if (!n.valid) return problem("not a valid Secret name (a DNS-1123 subdomain)");
    let secret: { data?: Record<string, string> };
    try {
      secret = await this.opts.api.readSecret(ns, n.name);
    } catch (err) {
      const code = err instanceof KubeRequestError ? err.code : undefined;
      if (code === 404) return problem(`Secret ${ns}/${n.name} not found`);
      if (code === 403)
        return problem(`the agent may not get Secret ${ns}/${n.name} (its ClusterRole needs get on secrets)`);
      this.opts.logger.warn(
        { service: `${by.namespace}/${by.name}`, secret: n.name, status: code, err: (err as Error).message },
        "Secret not read: kept as last read, tried again later",
      );
      return undefined;
    }
    const data: Record<string, Buffer> = {};
    for (const key of n.keys) {
      const raw = secret.data?.[key];
      const value = typeof raw === "string" ? Buffer.from(raw, "base64") : undefined;
      if (value === undefined || value.length === 0) return problem(`Secret ${ns}/${n.name} has no ${key}`);
      if (value.length > MAX_SECRET_VALUE_BYTES)
        return problem(`${key} of Secret ${ns}/${n.name} is over ${MAX_SECRET_VALUE_BYTES} bytes`);
      data[key] = value;
    }
    return { name: n.name, data, problem: "" };
  }
}
