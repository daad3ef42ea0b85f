/**
 * The `hetzner` provider: Hetzner Cloud servers as instances, Hetzner load balancers, and the
 * routes of a Hetzner network, through our own Hetzner Cloud API v1 client (Hetzner ships no
 * JavaScript SDK). A drop-in for the Hetzner CCM (hcloud-cloud-controller-manager): the same
 * providerIDs, labels, addresses, load-balancer labels and annotations.
 */
import { z } from "zod";
import type {
  CloudProvider,
  ClusterTarget,
  ProviderContext,
  ProviderFactory,
  ServiceTarget,
} from "../../provider.js";
import { ALGORITHMS, ANNOTATION_PREFIX, LB_TYPE_NAMES, vendorLbSettings } from "./annotations.js";
import { DEFAULT_HETZNER_URL, HetznerClient, MAX_PAGE_SIZE } from "./client.js";
import { HetznerInstances, PROVIDER_NAME } from "./instances.js";
import { HetznerLoadBalancers } from "./load-balancers.js";
import { NetworkResolver } from "./networks.js";
import { HetznerRoutes } from "./routes.js";
import { HetznerVolumes } from "./volumes.js";

/** `accounts[].options` of a Hetzner Cloud account (a project). */
export const HetznerOptionsSchema = z
  .object({
    /** Items per list page (Hetzner allows 1..50). */
    pageSize: z.number().int().min(1).max(MAX_PAGE_SIZE).default(MAX_PAGE_SIZE),
    /**
     * The network (id or name) of the nodes' private IPs, load-balancer private targets and
     * routes for clusters whose clusters[].network and accounts[].network name none
     * (the Hetzner CCM's HCLOUD_NETWORK).
     */
    network: z.string().min(1).optional(),
    /** Program the network's routes (HCLOUD_NETWORK_ROUTES_ENABLED). */
    routes: z.boolean().default(true),
    /** Node addresses: public IPv4, IPv6 or both (HCLOUD_INSTANCES_ADDRESS_FAMILY). */
    addressFamily: z.enum(["ipv4", "ipv6", "dualstack"]).default("ipv4"),
    /** The legacy datacenter name as the zone (HCLOUD_INSTANCES_ZONE_LABEL_ENABLED). */
    zoneLabel: z.boolean().default(true),
    /** Servers the batched refresh lists (a label selector); absent: every server of the project. */
    serverLabelSelector: z.string().min(1).optional(),
    /** Defaults of new load balancers (HCLOUD_LOAD_BALANCERS_*); a Service's annotations win. */
    loadBalancers: z
      .object({
        /** Default: the account's region (a location). */
        location: z.string().min(1).optional(),
        /** Instead of a location (HCLOUD_LOAD_BALANCERS_NETWORK_ZONE). */
        networkZone: z.string().min(1).optional(),
        /**
         * Type and algorithm (HCLOUD_LOAD_BALANCERS_TYPE, _ALGORITHM_TYPE). Unset: lb11 and
         * round_robin at create, and an existing load balancer's kept (one resized in the
         * console is not downgraded), as upstream; set: applied to every load balancer.
         */
        type: z.enum(LB_TYPE_NAMES).optional(),
        algorithm: z.enum(ALGORITHMS).optional(),
        usePrivateIP: z.boolean().default(false),
        /** The private IP in the ingress beside the public one (upstream's default is on; fleet-ccm's off). */
        privateIngress: z.boolean().default(false),
        /** The public IPv6 in the ingress beside the IPv4 (upstream's default is on; fleet-ccm's off). */
        ipv6Ingress: z.boolean().default(false),
      })
      .strict()
      .refine(
        (o) => o.location === undefined || o.networkZone === undefined,
        "set location or networkZone, not both",
      )
      .default({
        usePrivateIP: false,
        privateIngress: false,
        ipv6Ingress: false,
      }),
  })
  .strict();
export type HetznerOptions = z.infer<typeof HetznerOptionsSchema>;

/** The one credential: a project's API token (read & write). */
const TOKEN = "token";

export const hetznerProvider: ProviderFactory<HetznerOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: [ANNOTATION_PREFIX],
  options: HetznerOptionsSchema,
  // `credentials: {token: <ref>}`, or just `<ref>`.
  credentials: { required: [TOKEN], bare: TOKEN },
  endpoint: { default: DEFAULT_HETZNER_URL },
  // Hetzner limits per project (3,600 requests an hour): one bucket per account.
  rateLimitScope: "account",
  // 3,600 requests an hour per project, refilled one a second (https://docs.hetzner.cloud/#rate-limiting).
  // The answers' RateLimit-* headers then keep it to what is left.
  defaultRateLimit: { perSecond: 1, burst: 100 },
  lbSettings: vendorLbSettings,
  async create(ctx: ProviderContext, options: HetznerOptions): Promise<CloudProvider> {
    const { account } = ctx;
    // The declared default where the account names none (bind-provider.ts).
    const endpoint = account.endpoint ?? DEFAULT_HETZNER_URL;
    const client = new HetznerClient({
      endpoint,
      token: () => account.secret?.(TOKEN) ?? account.credential,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
      call: ctx.call,
      pageSize: options.pageSize,
      userAgent: account.userAgent,
      rateBudget: ctx.rateBudget,
    });
    const networks = new NetworkResolver(client);
    // The cluster's network, else the option's (HCLOUD_NETWORK).
    const withNetwork = <T extends ClusterTarget>(t: T): T =>
      t.network === undefined || t.network === "" ? { ...t, network: options.network } : t;
    const scoped: ProviderContext =
      options.network === undefined
        ? ctx
        : {
            ...ctx,
            clusterNetworks: () =>
              (ctx.clusterNetworks?.() ?? [account.network]).map((n) =>
                n === undefined || n === "" ? options.network : n,
              ),
          };
    const lbs = new HetznerLoadBalancers(client, networks, {
      location: options.loadBalancers.location ?? account.region,
      networkZone: options.loadBalancers.networkZone,
      type: options.loadBalancers.type,
      algorithm: options.loadBalancers.algorithm,
      usePrivateIP: options.loadBalancers.usePrivateIP,
      privateIngress: options.loadBalancers.privateIngress,
      ipv6Ingress: options.loadBalancers.ipv6Ingress,
    });
    const routes = new HetznerRoutes(client, networks, ctx.clock);
    ctx.logger.debug({ account: account.name, region: account.region, endpoint }, "hetzner provider bound");
    return {
      name: PROVIDER_NAME,
      instances: new HetznerInstances(scoped, client, networks, {
        addressFamily: options.addressFamily,
        zoneLabel: options.zoneLabel,
        labelSelector: options.serverLabelSelector,
      }),
      volumes: new HetznerVolumes(client),
      loadBalancers: {
        capabilities: lbs.capabilities,
        checkAnnotations: (a) => lbs.checkAnnotations(a),
        nodeSelector: (a) => lbs.nodeSelector(a),
        get: (t: ServiceTarget, s) => lbs.get(withNetwork(t), s),
        ensure: (t, spec, s, hints) => lbs.ensure(withNetwork(t), spec, s, hints),
        updateBackends: (t, b, s, ba) => lbs.updateBackends(withNetwork(t), b, s, ba),
        ensureDeleted: (t, s, hints) => lbs.ensureDeleted(withNetwork(t), s, hints),
        listOwned: (token, s) => lbs.listOwned(token, s),
      },
      ...(options.routes && {
        routes: {
          lockKey: (c) => routes.lockKey(withNetwork(c)),
          list: (c, s) => routes.list(withNetwork(c), s),
          create: (c, r, s) => routes.create(withNetwork(c), r, s),
          delete: (c, r, s) => routes.delete(withNetwork(c), r, s),
        },
      }),
    };
  },
};
