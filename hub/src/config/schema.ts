import { CLUSTER_NAME_PATTERN } from "@fleet-ccm/proto";
import { z } from "zod";
import { parseControllerList } from "../controllers.js";
import { PodNetworkPoolSchema, PodNetworkSchema, podNetworkOverlaps } from "./pod-network.js";
import { CredentialRefsSchema, SecretRefSchema } from "./secret.js";

/**
 * Reconciles in flight by default. A join storm of 50,000 nodes has every node's initialization
 * awaiting the account's coalesced instance list at once: with 32,768 the rest waited seconds in
 * the queue (hub-internal p99 2.5-5 s); with 65,536 none waits, for ~90 MiB more at that peak.
 */
export const DEFAULT_RECONCILE_WORKERS = 65_536;

/** The replicas' lease bucket unless `replicas.bucket` names another (NATS permissions name it). */
export const DEFAULT_LEASE_BUCKET = "fleet-ccm-leases";

const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/, "expected host:port, e.g. 0.0.0.0:7443");

const controllers = z
  .array(z.string())
  .min(1)
  .superRefine((list, ctx) => {
    try {
      parseControllerList(list);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
    }
  })
  .transform((list) => parseControllerList(list));

export const AccountSchema = z
  .object({
    name: z.string().regex(CLUSTER_NAME_PATTERN, "must be a DNS-1123 label"),
    provider: z.string().min(1),
    /** Shorthand for `regions: [region]`. */
    region: z.string().min(1).optional(),
    /** Regions the account serves (one provider client, instance cache per region). */
    regions: z.array(z.string().min(1)).min(1).optional(),
    /** VPC / network the account's clusters live in, where the cloud has one. */
    network: z.string().min(1).optional(),
    /** API endpoint override: private endpoints, and the simulators in tests and the demo. */
    endpoint: z.url().optional(),
    /** One secret reference, or named ones the provider defines (checked by the provider). */
    credentials: CredentialRefsSchema,
    /**
     * Cloud API calls per second for the whole account, shared by every cluster in it.
     * Default: the provider's published vendor limit, else 20 a second with bursts of 40.
     */
    rateLimit: z
      .object({ perSecond: z.number().positive(), burst: z.number().int().positive() })
      .strict()
      .optional(),
    requestTimeoutMs: z.number().int().positive().default(10_000),
    /**
     * Load-balancer syncs of the account's clusters running at once (each holds a few cloud
     * answers; the rate limit paces them anyway). Per account, so a slow cloud never takes
     * another account's share.
     */
    maxConcurrentLoadBalancerOps: z.number().int().positive().default(64),
    /** Provider-specific settings, validated by the provider when the account is bound. */
    options: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (a.region === undefined && a.regions === undefined)
      ctx.addIssue({ code: "custom", path: ["region"], message: "required (or regions)" });
    if (a.region !== undefined && a.regions !== undefined && !a.regions.includes(a.region))
      ctx.addIssue({ code: "custom", path: ["region"], message: "must be one of regions" });
  })
  .transform((a) => {
    const regions = [...new Set(a.regions ?? (a.region === undefined ? [] : [a.region]))];
    return { ...a, regions, region: a.region ?? regions[0] ?? "" };
  });

const TokenHashSchema = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/, "expected sha256:<64 lower-case hex digits>");

export const ClusterSchema = z
  .object({
    name: z.string().regex(CLUSTER_NAME_PATTERN, "must be a DNS-1123 label (it is a NATS subject token)"),
    /** The cluster's bearer token, by reference; or only its digest in tokenHash. */
    token: SecretRefSchema.optional(),
    /**
     * sha256:<hex> of the cluster's bearer token (what `fleet-ccm register` writes): the hub
     * never holds the token. A list is a rotation's overlap: old and new are both accepted.
     */
    tokenHash: z.union([TokenHashSchema, z.array(TokenHashSchema).min(1).max(4)]).optional(),
    /**
     * Public key (A…) of the cluster's NATS signing key (decentralized auth, nats.operator): the
     * hub lists it in the fleet account JWT, scoped to the cluster's subjects.
     */
    natsSigningKey: z
      .string()
      .regex(/^A[A-Z2-7]{55}$/, "expected an account public key (A…, 56 characters)")
      .optional(),
    account: z.string().min(1),
    /** The account's region this cluster runs in; required when the account serves several. */
    region: z.string().min(1).optional(),
    /** VPC / network of the cluster (overrides the account's; same as scope.network). */
    network: z.string().min(1).optional(),
    /**
     * Program VPC routes for this cluster's pod CIDRs (upstream --configure-cloud-routes with
     * --allocate-node-cidrs). Off by default: overlay networks need no routes.
     */
    configureCloudRoutes: z.boolean().default(false),
    /**
     * Node IPAM: the hub gives each node without spec.podCIDRs a range of every CIDR here
     * (upstream --allocate-node-cidrs with --cluster-cidr). Absent: ranges are someone else's job.
     */
    podNetwork: PodNetworkSchema.optional(),
    /** Overrides the hub-wide controller list for this cluster. */
    controllers: controllers.optional(),
    /**
     * Set by `fleet-ccm unregister --delete-cloud-resources` while it removes the cluster: the
     * hub deletes the load balancers of the cluster's Services and clears their finalizer and
     * ingress through the agent, and does nothing else for the cluster.
     */
    decommission: z.boolean().default(false),
    /**
     * While migrating from the vendor's own CCM: the load balancers it made for this cluster
     * (its --cluster-name) may be adopted by the Services that name them. Absent, a load
     * balancer the hub did not make is never adopted.
     */
    adoptFrom: z
      .object({ vendorCcmClusterName: z.string().min(1).max(253) })
      .strict()
      .optional(),
    /** Instances this cluster may use: anything outside is refused (agents are untrusted). */
    scope: z
      .object({
        network: z.string().min(1).optional(),
        tags: z.record(z.string(), z.string()).optional(),
      })
      .strict()
      .default({}),
  })
  .strict()
  .superRefine((c, ctx) => {
    if ((c.token === undefined) === (c.tokenHash === undefined))
      ctx.addIssue({
        code: "custom",
        path: ["token"],
        message: "exactly one of token and tokenHash is required",
      });
  });

export const HubConfigSchema = z
  .object({
    grpc: z
      .object({
        listen: hostPort.default("0.0.0.0:7443"),
        /** Plain TCP. Only with this explicit flag; TLS otherwise. */
        insecure: z.boolean().default(false),
        tls: z
          .object({
            certFile: z.string().min(1),
            keyFile: z.string().min(1),
            /** CA bundle for agents' client certificates: set, every agent needs one (mutual TLS). */
            clientCaFile: z.string().min(1).optional(),
            /** Where a client certificate names its cluster: a URI SAN (clientUriPrefix + name) or the CN. */
            clientIdentity: z.enum(["uri", "cn"]).default("uri"),
            clientUriPrefix: z.string().min(1).default("spiffe://fleet-ccm/cluster/"),
            /** The certificate, key and CA files are read again this often (rotation, no restart). */
            reloadIntervalMs: z.number().int().min(100).default(60_000),
          })
          .strict()
          .optional(),
      })
      .strict()
      .default({ listen: "0.0.0.0:7443", insecure: false }),
    http: z
      .object({ listen: hostPort.default("0.0.0.0:9090") })
      .strict()
      .default({ listen: "0.0.0.0:9090" }),
    /**
     * The read-only fleet API and page (/api/v1/…, /ui/) on a listener of their own, loopback by
     * default, behind a bearer token of their own (never a cluster's token). Off without a token.
     */
    api: z
      .object({
        listen: hostPort.default("127.0.0.1:9091"),
        token: SecretRefSchema,
        /** Nodes waiting for initialization longer than this make their cluster unhealthy. */
        waitingUnhealthyAfterMs: z.number().int().positive().default(300_000),
      })
      .strict()
      .optional(),
    nats: z
      .object({
        servers: z.array(z.string().min(1)).min(1),
        user: z.string().min(1).optional(),
        password: SecretRefSchema.optional(),
        /** The hub's NATS user credentials (.creds: JWT and seed), with decentralized auth. */
        credentials: SecretRefSchema.optional(),
        /**
         * Decentralized auth (`fleet-ccm nats-init`): the hub keeps the fleet account's JWT on
         * the servers, one scoped signing key per cluster (clusters[].natsSigningKey), so a
         * registered cluster's agent is admitted and a removed one refused without touching NATS.
         */
        operator: z
          .object({
            /** Public key (A…) of the fleet account. */
            account: z.string().regex(/^A[A-Z2-7]{55}$/, "expected an account public key (A…)"),
            /** The operator's seed (SO…), which signs the account JWT. */
            signingKey: SecretRefSchema,
            /** A system-account user's .creds, with which the hub pushes the account JWT. */
            systemCredentials: SecretRefSchema,
          })
          .strict()
          .optional(),
      })
      .strict(),
    controllers: controllers.default(["*"]),
    /** spec.loadBalancerClass the service controller handles besides Services without a class. */
    loadBalancerClass: z.string().min(1).max(253).optional(),
    limits: z
      .object({
        maxMessageBytes: z
          .number()
          .int()
          .min(64 * 1024)
          .default(4 * 1024 * 1024),
        maxObjectsPerChunk: z.number().int().positive().default(500),
        maxObjectsPerCluster: z.number().int().positive().default(20_000),
        maxStreamsPerCluster: z.number().int().positive().default(2),
        /** New streams per cluster and minute, sustained, after a burst of 10 (0: unlimited). */
        maxStreamOpensPerMinute: z.number().int().min(0).default(30),
        /** Deltas and apply results per stream and second, sustained, after ten seconds' worth (0: unlimited). */
        maxDeltasPerSecond: z.number().int().min(0).default(2000),
        /** Ports of one LoadBalancer Service (each is a cloud listener and health check). */
        maxServicePorts: z.number().int().positive().default(100),
      })
      .strict()
      .default({
        maxMessageBytes: 4 * 1024 * 1024,
        maxObjectsPerChunk: 500,
        maxObjectsPerCluster: 20_000,
        maxStreamsPerCluster: 2,
        maxStreamOpensPerMinute: 30,
        maxDeltasPerSecond: 2000,
        maxServicePorts: 100,
      }),
    /**
     * A snapshot that would remove more than max(maxObjects, maxPercent % of the cluster's nodes,
     * or Services) from the hub's view at once is held: the objects stay (reconcilers treat them
     * as present) until a snapshot at least confirmAfterMs later still lacks them, or the agent
     * reports their deletion.
     */
    snapshotHold: z
      .object({
        maxObjects: z.number().int().min(0).default(10),
        maxPercent: z.number().min(0).max(100).default(10),
        confirmAfterMs: z.number().int().min(0).default(60_000),
      })
      .strict()
      .default({ maxObjects: 10, maxPercent: 10, confirmAfterMs: 60_000 }),
    reconcile: z
      .object({
        /** Reconciles in flight. Most of their time is spent awaiting cloud I/O (bounded by each
         * account's rate limit), so many workers cost little and keep a join storm from queueing. */
        workers: z.number().int().positive().default(DEFAULT_RECONCILE_WORKERS),
        /** How long a published patch has to show up in the agent's reports before the hub publishes again. */
        convergeDeadlineMs: z.number().int().positive().default(15_000),
        /**
         * How often each agent heartbeats at least (sooner to report receipts or answer an echo
         * request); three intervals silent and the stream is dropped. Not what finds a dead
         * connection: the pings below do, in either direction, at a fraction of a heartbeat's cost.
         */
        heartbeatIntervalMs: z.number().int().positive().default(120_000),
        /**
         * The hub pings every agent connection (HTTP/2 PING) this often and closes one that does
         * not answer within 10 s (or one interval, if shorter): a dead agent, a frozen one, a
         * broken path. Agents ping the hub every 60 s the same way.
         */
        pingIntervalMs: z.number().int().min(100).default(60_000),
      })
      .strict()
      .default({
        workers: DEFAULT_RECONCILE_WORKERS,
        convergeDeadlineMs: 15_000,
        heartbeatIntervalMs: 120_000,
        pingIntervalMs: 60_000,
      }),
    lifecycle: z
      .object({
        /** How often nodes that are not Ready are checked (upstream --node-monitor-period). */
        monitorPeriodMs: z.number().int().positive().default(5000),
        /** A node is deleted only after this many consecutive direct lookups said "not found"… */
        deleteAfterChecks: z.number().int().min(1).default(3),
        /** …spread over at least this long (cloud APIs are eventually consistent). */
        deleteAfterMs: z.number().int().min(0).default(60_000),
        /** Per cluster and window, at most max(maxNodes, maxPercent % of its nodes) deletions. */
        blastRadius: z
          .object({
            maxPercent: z.number().min(0).max(100).default(10),
            maxNodes: z.number().int().min(0).default(2),
            windowMs: z.number().int().positive().default(600_000),
          })
          .strict()
          .default({ maxPercent: 10, maxNodes: 2, windowMs: 600_000 }),
      })
      .strict()
      .default({
        monitorPeriodMs: 5000,
        deleteAfterChecks: 3,
        deleteAfterMs: 60_000,
        blastRadius: { maxPercent: 10, maxNodes: 2, windowMs: 600_000 },
      }),
    refresh: z
      .object({
        /** Initialized nodes' addresses are refreshed this often (upstream --node-status-update-frequency). */
        periodMs: z.number().int().positive().default(300_000),
        /**
         * "account": one instance list per account and period serves every cluster in it.
         * "cluster": one list per cluster, like a per-cluster CCM (the baseline the benchmark compares).
         */
        cacheScope: z.enum(["account", "cluster"]).default("account"),
      })
      .strict()
      .default({ periodMs: 300_000, cacheScope: "account" }),
    routes: z
      .object({
        /** How often route tables are reconciled besides node changes (upstream 10 s). */
        periodMs: z.number().int().positive().default(10_000),
        /** Route create/delete calls in flight per account (upstream caps at 200 per cluster). */
        maxConcurrentPerAccount: z.number().int().positive().default(10),
      })
      .strict()
      .default({ periodMs: 10_000, maxConcurrentPerAccount: 10 }),
    /**
     * Several hub replicas sharing the fleet: each cluster is acted on by the one replica holding
     * its lease in NATS JetStream KV. Absent: one hub, no leases.
     */
    replicas: z
      .object({
        /** Unique per replica (default: HOSTNAME, the pod name). */
        id: z
          .string()
          .regex(/^[A-Za-z0-9_.-]{1,128}$/, "letters, digits, '.', '_' or '-'")
          .optional(),
        /** KV bucket of the leases (created if absent). */
        bucket: z
          .string()
          .regex(/^[A-Za-z0-9_-]+$/)
          .default(DEFAULT_LEASE_BUCKET),
        /** JetStream replicas of the bucket: 3 on a three-node NATS cluster. */
        streamReplicas: z.number().int().min(1).max(5).default(1),
        /** A lease not renewed for this long may be taken over (failover time is about this). */
        leaseTtlMs: z.number().int().min(1000).default(10_000),
        /** The holder stops acting this long before the TTL ends (clock drift, calls in flight). */
        marginMs: z.number().int().min(100).default(2000),
        renewIntervalMs: z.number().int().min(100).default(2500),
        /** How often a replica holding a cluster's stream looks again at a lease held elsewhere. */
        pollIntervalMs: z.number().int().min(50).default(1000),
      })
      .strict()
      .superRefine((r, ctx) => {
        if (r.marginMs >= r.leaseTtlMs)
          ctx.addIssue({ code: "custom", path: ["marginMs"], message: "must be below leaseTtlMs" });
        else if (r.renewIntervalMs >= r.leaseTtlMs - r.marginMs)
          ctx.addIssue({
            code: "custom",
            path: ["renewIntervalMs"],
            message: "must be below leaseTtlMs - marginMs (a renewal must land before the fence)",
          });
      })
      .optional(),
    /** Blocks `fleet-ccm register --pod-network auto` gives new clusters as their pod network. */
    podNetworkPool: PodNetworkPoolSchema.optional(),
    accounts: z.array(AccountSchema).min(1),
    clusters: z.array(ClusterSchema),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    for (const o of podNetworkOverlaps(cfg.clusters))
      ctx.addIssue({
        code: "custom",
        path: ["clusters", o.index, "podNetwork", "cidrs", o.cidrIndex],
        message: o.message,
      });
  });

export interface ConfigIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

function records(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v)
    ? v.map((x) => (typeof x === "object" && x !== null ? (x as Record<string, unknown>) : {}))
    : [];
}

/**
 * Checks across fields (duplicates, references, TLS). Run on the raw document, whatever else
 * is wrong with it, so one pass reports every problem.
 */
export function crossFieldIssues(raw: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const cfg = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  const accounts = new Set<string>();
  records(cfg["accounts"]).forEach((a, i) => {
    if (typeof a["name"] !== "string") return;
    if (accounts.has(a["name"]))
      issues.push({ path: ["accounts", i, "name"], message: `duplicate account "${a["name"]}"` });
    accounts.add(a["name"]);
  });
  const clusters = new Set<string>();
  const natsKeys = new Map<string, unknown>();
  records(cfg["clusters"]).forEach((c, i) => {
    const key = c["natsSigningKey"];
    if (typeof key === "string") {
      if (natsKeys.has(key))
        issues.push({
          path: ["clusters", i, "natsSigningKey"],
          message: `cluster "${String(natsKeys.get(key))}" has the same NATS signing key; each cluster needs its own`,
        });
      natsKeys.set(key, c["name"]);
    }
    const name = c["name"];
    if (typeof name === "string") {
      if (clusters.has(name))
        issues.push({ path: ["clusters", i, "name"], message: `duplicate cluster "${name}"` });
      clusters.add(name);
    }
    const account = c["account"];
    if (typeof account === "string" && account !== "" && !accounts.has(account))
      issues.push({ path: ["clusters", i, "account"], message: `unknown account "${account}"` });
  });
  const nats =
    typeof cfg["nats"] === "object" && cfg["nats"] !== null ? (cfg["nats"] as Record<string, unknown>) : {};
  if (nats["credentials"] !== undefined && (nats["user"] !== undefined || nats["password"] !== undefined))
    issues.push({
      path: ["nats", "credentials"],
      message: "use either nats.credentials (decentralized auth) or nats.user and nats.password",
    });
  const grpc =
    typeof cfg["grpc"] === "object" && cfg["grpc"] !== null ? (cfg["grpc"] as Record<string, unknown>) : {};
  if (grpc["insecure"] !== true && grpc["tls"] === undefined)
    issues.push({
      path: ["grpc", "tls"],
      message: "TLS is required: set grpc.tls.certFile and grpc.tls.keyFile, or grpc.insecure: true",
    });
  return issues;
}

export type HubConfig = z.infer<typeof HubConfigSchema>;
export type AccountConfig = z.infer<typeof AccountSchema>;
export type ClusterConfig = z.infer<typeof ClusterSchema>;
