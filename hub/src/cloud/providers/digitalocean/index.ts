/**
 * The `digitalocean` provider: Droplets as instances and DigitalOcean Load Balancers as load
 * balancers, through our own DigitalOcean API v2 client. A drop-in for the DigitalOcean CCM:
 * the same providerIDs, labels, addresses and (the supported) annotations. No routes:
 * DigitalOcean has no route table API (its VPCs route every Droplet address themselves).
 */
import { z } from "zod";
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { ANNOTATION_PREFIX, DISOWN, doVendorLbSettings, LOAD_BALANCER_ID } from "./annotations.js";
import { DEFAULT_DO_URL, DigitalOceanClient, MAX_PAGE_SIZE } from "./client.js";
import { DigitalOceanInstances, PROVIDER_NAME } from "./instances.js";
import { DigitalOceanLoadBalancers } from "./load-balancers.js";
import { DigitalOceanVolumes } from "./volumes.js";

/** `accounts[].options` of a DigitalOcean account. */
export const DigitalOceanOptionsSchema = z
  .object({
    /** Items per list page (DigitalOcean allows 1..200). */
    pageSize: z.number().int().min(1).max(MAX_PAGE_SIZE).default(MAX_PAGE_SIZE),
    /** List only Droplets with this tag for the batched refresh (e.g. a DOKS cluster's `k8s:<id>`). */
    dropletTag: z.string().min(1).max(255).optional(),
    /** How long before a `new` load balancer is looked at again (upstream retries after 15 s). */
    loadBalancerPollMs: z.number().int().min(0).max(600_000).default(15_000),
    /**
     * A new load balancer's type where the Service has no `do-loadbalancer-type` annotation (the
     * DigitalOcean CCM's DEFAULT_LB_TYPE, whose own default is REGIONAL_NETWORK; the hub's stays
     * REGIONAL). An existing load balancer keeps its type.
     */
    defaultLoadBalancerType: z.enum(["REGIONAL", "REGIONAL_NETWORK"]).default("REGIONAL"),
  })
  .strict();
export type DigitalOceanOptions = z.infer<typeof DigitalOceanOptionsSchema>;

/** The one credential: a personal access token (read scopes for droplets, certificates and block storage, read and write for load balancers). */
const TOKEN = "token";

export const digitalOceanProvider: ProviderFactory<DigitalOceanOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: [ANNOTATION_PREFIX, LOAD_BALANCER_ID, DISOWN],
  options: DigitalOceanOptionsSchema,
  credentials: { required: [TOKEN], bare: TOKEN },
  // DigitalOcean takes 5,000 requests an hour and 250 a minute per token ("Current rate limits
  // are 5000 requests per hour and 250 requests per minute", the API's ratelimit-limit header
  // description, https://docs.digitalocean.com/reference/api/): the hourly figure sustained,
  // bursts well inside the minute's. The answers' headers then keep it to what is left.
  defaultRateLimit: { perSecond: 5_000 / 3_600, burst: 100 },
  endpoint: { default: DEFAULT_DO_URL },
  lbSettings: doVendorLbSettings,
  async create(ctx: ProviderContext, options: DigitalOceanOptions): Promise<CloudProvider> {
    const { account } = ctx;
    // The declared default where the account names none (bind-provider.ts).
    const endpoint = account.endpoint ?? DEFAULT_DO_URL;
    const client = new DigitalOceanClient({
      endpoint,
      token: () => account.secret?.(TOKEN) ?? account.credential,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
      call: ctx.call,
      pageSize: options.pageSize,
      userAgent: account.userAgent,
      rateBudget: ctx.rateBudget,
    });
    ctx.logger.debug(
      { account: account.name, region: account.region, endpoint },
      "digitalocean provider bound",
    );
    return {
      name: PROVIDER_NAME,
      instances: new DigitalOceanInstances(ctx, client, options.dropletTag),
      loadBalancers: new DigitalOceanLoadBalancers(
        ctx,
        client,
        options.loadBalancerPollMs,
        options.defaultLoadBalancerType,
      ),
      volumes: new DigitalOceanVolumes(ctx, client),
    };
  },
};
