/**
 * The `linode` provider: Linodes as instances, NodeBalancers (with Cloud Firewalls) as load
 * balancers, and VPC interface ranges as routes, through our own Linode API v4 client.
 * A drop-in for the Linode CCM: the same providerIDs, labels, addresses and annotations.
 */
import { z } from "zod";
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { ANNOTATION_PREFIX, NODE_PRIVATE_IP, NODE_PUBLIC_IPV6, TLS_SECRET_REFERENCE } from "./annotations.js";
import { DEFAULT_LINODE_URL, LinodeClient, MAX_PAGE_SIZE, MIN_PAGE_SIZE } from "./client.js";
import { LinodeInstances, PROVIDER_NAME } from "./instances.js";
import { isOurTag, LinodeLoadBalancers } from "./load-balancers.js";
import { LinodeRoutes } from "./routes.js";
import { LinodeVolumes } from "./volumes.js";
import { VpcResolver } from "./vpc.js";

/** `accounts[].options` of a Linode account. */
export const LinodeOptionsSchema = z
  .object({
    /** Items per list page (Linode allows 25..500). */
    pageSize: z.number().int().min(MIN_PAGE_SIZE).max(MAX_PAGE_SIZE).default(MAX_PAGE_SIZE),
    /** Program VPC routes (accounts[].network names the VPC). */
    routes: z.boolean().default(true),
    /** New NodeBalancers reach their nodes over the VPC (with accounts[].network), as the Linode CCM does. */
    vpcBackends: z.boolean().default(true),
    /** Tags on every NodeBalancer of the account, as the Linode CCM's --nodebalancer-tags. */
    nodeBalancerTags: z
      .array(
        z
          .string()
          .min(3, "a Linode tag has 3 to 50 characters")
          .max(50, "a Linode tag has 3 to 50 characters")
          .refine((t) => !isOurTag(t), "fleet-ccm's own tags are set by fleet-ccm"),
      )
      .max(50)
      .default([]),
  })
  .strict();
export type LinodeOptions = z.infer<typeof LinodeOptionsSchema>;

/** The one credential: a personal access token. */
const TOKEN = "token";

export const linodeProvider: ProviderFactory<LinodeOptions> = {
  name: PROVIDER_NAME,
  // The two node keys alone (not node.k8s.linode.com/*): each is a backend fact, so any other
  // key forwarded would re-sync backends for nothing.
  annotationPrefixes: [ANNOTATION_PREFIX, NODE_PRIVATE_IP, NODE_PUBLIC_IPV6],
  // port-<N>: {"protocol": "https", "tls-secret-name": "<kubernetes.io/tls Secret>"}, as the Linode CCM.
  secretReferences: [TLS_SECRET_REFERENCE],
  options: LinodeOptionsSchema,
  // `credentials: {token: <ref>}`, or just `<ref>` (a personal access token).
  credentials: { required: [TOKEN], bare: TOKEN },
  endpoint: { default: DEFAULT_LINODE_URL },
  async create(ctx: ProviderContext, options: LinodeOptions): Promise<CloudProvider> {
    const { account } = ctx;
    // The declared default where the account names none (bind-provider.ts).
    const endpoint = account.endpoint ?? DEFAULT_LINODE_URL;
    const client = new LinodeClient({
      endpoint,
      token: () => account.secret?.(TOKEN) ?? account.credential,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
      call: ctx.call,
      pageSize: options.pageSize,
    });
    const vpc = new VpcResolver(ctx, client);
    ctx.logger.debug({ account: account.name, region: account.region, endpoint }, "linode provider bound");
    return {
      name: PROVIDER_NAME,
      instances: new LinodeInstances(ctx, client, vpc),
      loadBalancers: new LinodeLoadBalancers(ctx, client, vpc, options.vpcBackends, options.nodeBalancerTags),
      ...(options.routes && { routes: new LinodeRoutes(ctx, client, vpc) }),
      volumes: new LinodeVolumes(ctx, client),
    };
  },
};
