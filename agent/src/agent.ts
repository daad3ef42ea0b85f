import { hostname } from "node:os";
import {
  AnnotationFilter,
  ApplyOutcome,
  type ApplyResult,
  type ClusterEvent,
  clusterSubjectFilter,
  DesiredBatch,
  type NodeDesired,
  ObjectKind,
  type PersistentVolumeDesired,
  RELEASE_VERSION,
  type SecretReference,
  type ServiceDesired,
  sameReferences,
  type Welcome,
} from "@fleet-ccm/proto";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { KeyedDispatcher } from "./apply/dispatcher.js";
import { apiFailure } from "./apply/errors.js";
import { EventRecorder } from "./apply/events.js";
import { applyNodeDesired, nodeDesiredSlot, podCidrsFromEarlierStream } from "./apply/node.js";
import { applyPersistentVolumeDesired } from "./apply/persistent-volume.js";
import { applyServiceDesired } from "./apply/service.js";
import { changeOf } from "./changes.js";
import { withConnectionReuse } from "./connection-reuse.js";
import { type SecretsOf, toWireNode, toWireService } from "./convert.js";
import type { ClientTlsFiles } from "./hub-credentials.js";
import { HubStream, type TooLarge } from "./hub-stream.js";
import { KubeClient } from "./kube-client.js";
import { FailureSummary } from "./log-summary.js";
import { NatsLink } from "./nats.js";
import { objectKey } from "./outbox.js";
import { refOf, SecretFollower, type ServiceRef } from "./secrets.js";
import { toWirePersistentVolume, VolumeFilter } from "./volumes.js";
import { ClusterWatch, type WatchEvent } from "./watch.js";

export const AGENT_VERSION = RELEASE_VERSION;
/** The reason of the Warning Event on an object too large to be sent to the hub. */
export const REASON_TOO_LARGE = "TooLargeForHub";

export interface AgentOptions {
  readonly cluster: string;
  readonly kubeConfig: KubeConfig;
  readonly hub: {
    readonly address: string;
    /** The hub token, or how to read it at each connection (a rotated Secret then needs no restart). */
    readonly token: string | (() => string);
    readonly insecure: boolean;
    readonly caPem?: Buffer;
    /** Mutual TLS: a client certificate naming this cluster, reloaded from its files. */
    readonly tlsFiles?: ClientTlsFiles;
    /** How often the hub is pinged (default 60 s): a dead or frozen hub is left within this and 10 s. */
    readonly pingIntervalMs?: number;
  };
  readonly nats: {
    readonly servers: readonly string[];
    readonly user?: string;
    readonly password?: string;
    /** A .creds file's content (NATS decentralized auth). */
    readonly creds?: string;
    /** How long refused credentials are tried again at the start (NatsOptions.authWaitMs). */
    readonly authWaitMs?: number;
  };
  readonly logger: Logger;
  /** Patches applied in parallel (different objects). */
  readonly applyConcurrency?: number;
  readonly countBytes?: boolean;
  /** How often the Secrets Services name are read again (default 60 s). */
  readonly secretRefreshMs?: number;
}

type Job =
  | { kind: "node"; desired: NodeDesired; stream: number }
  | { kind: "service"; desired: ServiceDesired }
  | { kind: "persistentVolume"; desired: PersistentVolumeDesired }
  | { kind: "event"; event: ClusterEvent };

/**
 * The per-cluster agent: watches Nodes and Services and streams them to the
 * hub; receives desired state over NATS and applies it as patches. It holds
 * no cloud credential and decides nothing.
 */
export class Agent {
  private readonly api: KubeClient;
  /** The caches the stream's snapshots come from; absent until the first Welcome. */
  private watch: ClusterWatch | undefined;
  /** A watch being listed for a Welcome that asks for other annotations than `watch` keeps. */
  private pendingWatch: ClusterWatch | undefined;
  /** What the last Welcome asked for, and whether the caches are ready for it. */
  private prepared:
    | {
        readonly filter: AnnotationFilter;
        readonly volumes: VolumeFilter;
        readonly references: readonly SecretReference[];
        readonly watched: Promise<boolean>;
        readonly ready: Promise<boolean>;
      }
    | undefined;
  /** The Secrets the Welcome's references name (none asked: no Secret is read). */
  private secrets: SecretFollower | undefined;
  private readonly secretsOf: SecretsOf = (s) => this.secrets?.forService(s) ?? [];
  /** Connecting and subscribing to NATS, started with the agent; the first snapshot waits for it. */
  private natsReady: Promise<boolean> | undefined;
  private stopped = false;
  private readonly stream: HubStream;
  private readonly events: EventRecorder;
  private readonly dispatcher: KeyedDispatcher<Job>;
  private readonly nats: NatsLink;
  private kubernetesVersion = "";
  private readonly log: Logger;
  private eventSeq = 0;
  /** Hub streams welcomed so far: the one desired state was received on. */
  private streams = 0;
  private readonly applyFailures: FailureSummary;
  natsBytesReceived = 0;
  applied = 0;

  constructor(private readonly opts: AgentOptions) {
    this.log = opts.logger;
    this.applyFailures = new FailureSummary(
      this.log,
      "patch not applied: the API server refused it (the hub publishes it again with backoff)",
    );
    withConnectionReuse(opts.kubeConfig);
    this.api = new KubeClient(opts.kubeConfig);
    this.events = new EventRecorder(this.api, `fleet-ccm-agent/${hostname()}`);
    this.stream = new HubStream({
      address: opts.hub.address,
      cluster: opts.cluster,
      token: opts.hub.token,
      insecure: opts.hub.insecure,
      caPem: opts.hub.caPem,
      tlsFiles: opts.hub.tlsFiles,
      pingIntervalMs: opts.hub.pingIntervalMs,
      agentVersion: AGENT_VERSION,
      kubernetesVersion: () => this.kubernetesVersion,
      logger: this.log.child({ component: "hub-stream" }),
      countBytes: opts.countBytes,
      onTooLarge: (o) => this.onTooLarge(o),
      prepare: (w) => {
        this.streams++;
        return this.prepare(w);
      },
      snapshot: () => {
        const watch = this.watch;
        if (watch === undefined) throw new Error("snapshot asked for before the caches synced");
        return {
          nodes: watch.listNodes().map(toWireNode),
          services: watch.listServices().map((s) => toWireService(s, this.secretsOf)),
          persistentVolumes: watch
            .listPersistentVolumes()
            .map((pv) => toWirePersistentVolume(pv, watch.volumeFilter))
            .filter((pv) => pv !== undefined),
        };
      },
    });
    this.nats = new NatsLink({
      ...opts.nats,
      cluster: opts.cluster,
      logger: this.log.child({ component: "nats" }),
      // NATS does not redeliver: ask the hub, through a new stream, for what it published meanwhile.
      onReconnect: () => this.stream.restart(),
    });
    this.dispatcher = new KeyedDispatcher(opts.applyConcurrency ?? 16, (job) => this.apply(job));
  }

  get hubBytesSent(): number {
    return this.stream.bytesSent;
  }

  get hubDeltasSent(): number {
    return this.stream.deltasSent;
  }

  get connectedToHub(): boolean {
    return this.stream.streaming;
  }

  async start(): Promise<void> {
    try {
      const v = await this.api.version();
      this.kubernetesVersion = v.gitVersion;
    } catch {
      // Optional: only reported to the hub.
    }
    this.natsReady = this.startNats();
    // The Welcome says which annotations to keep, so the caches are filled after it (prepare).
    this.stream.start();
    // Refused NATS credentials (NatsAuthError) are thrown from here: a configuration error.
    await this.natsReady;
  }

  /**
   * The caches for a Welcome: listed with its annotation prefixes the first time; listed again
   * into new caches when a later Welcome asks for other prefixes (another hub version or
   * provider), the old caches serving until the new ones are complete. Nothing reaches the hub
   * before every list has succeeded: a partial view is never reported.
   */
  private prepare(welcome: Welcome): Promise<boolean> {
    const filter = new AnnotationFilter(welcome.forwardAnnotationPrefixes);
    const volumes = VolumeFilter.of(welcome);
    const references = welcome.secretReferences;
    const p = this.prepared;
    const sameCaches = p?.filter.sameAs(filter) === true && p.volumes.sameAs(volumes);
    if (sameCaches && sameReferences(p.references, references)) return p.ready;
    const watched = sameCaches ? p.watched : this.rewatch(filter, volumes);
    // The Secrets are read after the caches, before the first snapshot: it carries them.
    const ready = watched.then((ok) => ok && this.follow(references));
    this.prepared = { filter, volumes, references, watched, ready };
    return ready;
  }

  /** Reads the Secrets the cached Services name under `references`, then follows them. */
  private async follow(references: readonly SecretReference[]): Promise<boolean> {
    const previous = this.secrets;
    // The same references (new caches: other annotation prefixes) keep their follower.
    const kept = previous !== undefined && sameReferences(previous.references, references);
    const follower = kept
      ? previous
      : new SecretFollower({
          api: this.api,
          references,
          logger: this.log.child({ component: "secrets" }),
          services: () => this.watch?.listServices() ?? [],
          onChanged: (services) => this.resend(services),
          ...(this.opts.secretRefreshMs !== undefined && { refreshMs: this.opts.secretRefreshMs }),
        });
    await follower.readAll(false);
    await follower.readMissing();
    if (kept) return !this.stopped;
    if (this.stopped) {
      await follower.stop();
      return false;
    }
    this.secrets = follower;
    follower.start();
    await previous?.stop();
    return true;
  }

  /** The Services' latest cached state, sent again (their Secrets changed). */
  private resend(services: readonly ServiceRef[]): void {
    for (const r of services) {
      const cur = this.watch?.service(r.namespace, r.name);
      if (cur !== undefined && cur.metadata?.uid === r.uid)
        this.stream.sendChange(changeOf({ kind: "service", type: "upsert", obj: cur }, this.secretsOf));
    }
  }

  private async rewatch(filter: AnnotationFilter, volumes: VolumeFilter): Promise<boolean> {
    // A watch still listing for an earlier Welcome is superseded.
    const superseded = this.pendingWatch;
    const watch: ClusterWatch = new ClusterWatch(
      this.opts.kubeConfig,
      this.api,
      this.log.child({ component: "watch" }),
      filter,
      volumes,
      (e) => {
        if (this.watch === watch) this.onWatch(e);
      },
    );
    this.pendingWatch = watch;
    if (superseded !== undefined) await superseded.stop();
    if (this.stopped || !(await watch.start()) || this.pendingWatch !== watch) return false;
    this.pendingWatch = undefined;
    const previous = this.watch;
    this.watch = watch;
    this.log.info(
      {
        nodes: watch.listNodes().length,
        services: watch.listServices().length,
        persistentVolumes: watch.listPersistentVolumes().length,
        annotationPrefixes: filter.prefixes,
      },
      "caches synced",
    );
    if (previous !== undefined) await previous.stop();
    // Subscribed before the snapshot, so no desired state the hub publishes for it is missed.
    return (await this.natsReady) === true && !this.stopped;
  }

  private async startNats(): Promise<boolean> {
    const { cluster } = this.opts;
    const nc = await this.nats.connect();
    if (nc === undefined) return false;
    nc.subscribe(clusterSubjectFilter(cluster), {
      callback: (err, msg) => {
        if (err) {
          this.log.error({ err: err.message }, "NATS subscription failed");
          return;
        }
        this.natsBytesReceived += msg.data.length;
        let batch: DesiredBatch;
        try {
          batch = DesiredBatch.decode(msg.data);
        } catch (e) {
          this.log.warn({ subject: msg.subject, err: String(e) }, "undecodable message ignored");
          return;
        }
        let newest = 0;
        for (const d of batch.nodes) {
          newest = Math.max(newest, d.generation);
          this.dispatcher.submit(
            `node/${d.name}`,
            { kind: "node", desired: d, stream: this.streams },
            nodeDesiredSlot(d),
          );
        }
        for (const d of batch.services) {
          newest = Math.max(newest, d.generation);
          this.dispatcher.submit(`service/${d.namespace}/${d.name}`, { kind: "service", desired: d });
        }
        for (const d of batch.persistentVolumes) {
          newest = Math.max(newest, d.generation);
          this.dispatcher.submit(`persistentVolume/${d.name}`, { kind: "persistentVolume", desired: d });
        }
        if (newest > 0) this.stream.noteReceived(newest);
        for (const e of batch.events)
          this.dispatcher.submit(`event/${++this.eventSeq}`, { kind: "event", event: e });
      },
    });
    return true;
  }

  /** An object too large for the hub: logged, and a Warning Event on it (the rest keeps flowing). */
  private onTooLarge(o: TooLarge): void {
    const object = o.namespace === "" ? o.name : `${o.namespace}/${o.name}`;
    const kind = { node: "Node", service: "Service", persistentVolume: "PersistentVolume" }[o.kind];
    const message = `${kind} ${object} is not sent to the fleet-ccm hub: its forwarded fields take ${o.bytes} bytes, more than the hub's message limit of ${o.limitBytes} bytes (limits.maxMessageBytes); the hub keeps what it last had of it`;
    this.log.warn(
      { kind: o.kind, object, bytes: o.bytes, limitBytes: o.limitBytes },
      "object too large for the hub: left out",
    );
    this.dispatcher.submit(`event/${++this.eventSeq}`, {
      kind: "event",
      event: {
        kind: {
          node: ObjectKind.OBJECT_KIND_NODE,
          service: ObjectKind.OBJECT_KIND_SERVICE,
          persistentVolume: ObjectKind.OBJECT_KIND_PERSISTENT_VOLUME,
        }[o.kind],
        namespace: o.namespace,
        name: o.name,
        uid: o.uid,
        type: "Warning",
        reason: REASON_TOO_LARGE,
        message,
        sourceComponent: "fleet-ccm-agent",
      },
    });
  }

  private onWatch(e: WatchEvent): void {
    const follower = this.secrets;
    if (
      e.kind === "service" &&
      e.type === "upsert" &&
      follower !== undefined &&
      follower.named(e.obj).length > 0
    ) {
      // Its Secrets are read again on every change of the Service; one never read yet is read
      // before the Service is sent, so the hub never sees it without them.
      const ref = refOf(e.obj);
      const complete = follower.hasAll(e.obj);
      if (complete) this.stream.sendChange(changeOf(e, this.secretsOf));
      follower.readFor(e.obj).then(
        (changed) => {
          if (changed || !complete) this.resend([ref]);
        },
        (err: unknown) =>
          this.log.warn({ service: `${ref.namespace}/${ref.name}`, err: String(err) }, "Secrets not read"),
      );
      return;
    }
    this.stream.sendChange(changeOf(e, this.secretsOf, this.watch?.volumeFilter));
  }

  private async apply(job: Job): Promise<void> {
    if (job.kind === "event") {
      try {
        await this.events.record(job.event);
      } catch (err) {
        const f = apiFailure(err);
        this.log.warn(
          { reason: job.event.reason, object: job.event.name, status: f.code, err: f.message },
          "event not recorded",
        );
      }
      return;
    }
    const result =
      job.kind === "node"
        ? job.desired.podCidrs.length > 0 && job.stream !== this.streams
          ? podCidrsFromEarlierStream(job.desired)
          : await this.applyNode(job.desired)
        : job.kind === "persistentVolume"
          ? await applyPersistentVolumeDesired(
              this.api,
              job.desired,
              this.watch?.persistentVolume(job.desired.name),
            )
          : await applyServiceDesired(
              this.api,
              job.desired,
              this.watch?.service(job.desired.namespace, job.desired.name),
            );
    const object = result.namespace === "" ? result.name : `${result.namespace}/${result.name}`;
    if (result.outcome === ApplyOutcome.APPLY_OUTCOME_APPLIED) this.applied++;
    else if (result.outcome === ApplyOutcome.APPLY_OUTCOME_FAILED)
      this.applyFailures.failed(`${job.kind}/${object}`, {
        status: result.httpStatus,
        reason: result.reason,
        message: result.message,
      });
    else
      this.log.info(
        { kind: job.kind, object, outcome: ApplyOutcome[result.outcome], message: result.message },
        "patch not applied",
      );
    this.stream.sendApplyResult(result);
  }

  /**
   * The node's changes are held while the patch is applied, so the hub gets one delta for the
   * status write and the object write (addresses first, so the taint never goes before them).
   */
  private async applyNode(d: NodeDesired): Promise<ApplyResult> {
    if (d.delete) return applyNodeDesired(this.api, d, this.watch?.node(d.name));
    const hold = this.stream.holdChanges(objectKey("node", "", d.name, d.uid));
    try {
      return await applyNodeDesired(this.api, d, this.watch?.node(d.name), () => hold.wrote());
    } finally {
      hold.done();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.applyFailures.stop();
    this.stream.stop();
    await Promise.all([this.watch?.stop(), this.pendingWatch?.stop(), this.secrets?.stop()]);
    await this.nats.stop();
  }
}
