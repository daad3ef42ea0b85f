/**
 * The `openstack` provider: Nova servers as instances, Octavia load balancers with Neutron
 * floating IPs, through our own small client (there is no official JavaScript SDK), one per
 * account (a project) and region, authenticated with Keystone v3 (an application credential or a
 * password). A drop-in for openstack-cloud-controller-manager: the same providerIDs, labels,
 * addresses, load-balancer names and annotations (docs/providers/openstack.md).
 */
import { z } from "zod";
import { fetchTrusting } from "../../http/trusted-fetch.js";
import type { CloudProvider, ProviderContext, ProviderFactory } from "../../provider.js";
import { AccountConfigError } from "../../provider.js";
import { INTERNAL_KEY, LB_METHODS, LB_PREFIX, vendorLbSettings } from "./annotations.js";
import { OpenStackClient } from "./client.js";
import { OpenStackInstances, PROVIDER_NAME } from "./instances.js";
import { KeystoneAuth, type KeystoneCredentials } from "./keystone.js";
import { OpenStackLoadBalancers } from "./load-balancers.js";
import { OpenStackRoutes } from "./routes.js";
import { OpenStackVolumes } from "./volumes.js";

const url = z.string().url();

/** `accounts[].options` of an OpenStack account: a project (clouds.yaml's `auth` and more, camelCased). */
export const OpenStackOptionsSchema = z
  .object({
    /** clouds.yaml `auth.application_credential_id`; its secret is the credential `applicationCredentialSecret`. */
    applicationCredentialId: z.string().min(1).optional(),
    /** clouds.yaml `auth.username` (password authentication; the password is the credential `password`). */
    username: z.string().min(1).optional(),
    /** clouds.yaml `auth.user_domain_name`. */
    userDomainName: z.string().min(1).default("Default"),
    /** clouds.yaml `auth.project_id` (or `project_name` with `project_domain_name`). */
    projectId: z.string().min(1).optional(),
    projectName: z.string().min(1).optional(),
    projectDomainName: z.string().min(1).default("Default"),
    /** clouds.yaml `interface` (`endpoint_type` in cloud.conf): which catalog endpoints to call. */
    interface: z.enum(["public", "internal"]).default("public"),
    /** Per service, an endpoint that replaces the catalog's (clouds.yaml `<service>_endpoint_override`). */
    endpoints: z
      .object({
        compute: url.optional(),
        network: url.optional(),
        "load-balancer": url.optional(),
        "block-storage": url.optional(),
      })
      .strict()
      .default({}),
    /**
     * The CA certificates (PEM) the cloud's endpoints are trusted by, instead of the system's
     * (clouds.yaml `cacert`, the file's content): a private cloud's own CA.
     */
    caCertificates: z.string().min(1).optional(),
    /** Items per list page (Nova's and Neutron's default max_limit is 1000). */
    pageSize: z.number().int().min(1).max(1000).default(500),
    /** providerIDs as `openstack://<region>/<uuid>` (upstream's regional form) instead of `openstack:///<uuid>`. */
    regionalProviderID: z.boolean().default(false),
    /** How often the periodic server refresh lists every server again instead of Nova's changes-since the last. */
    fullListIntervalSeconds: z.number().int().min(0).max(86_400).default(600),
    /** Upstream's [Networking] internal-network-name / public-network-name. */
    internalNetworkName: z.array(z.string().min(1)).default([]),
    publicNetworkName: z.array(z.string().min(1)).default([]),
    /**
     * Upstream's [BlockStorage] ignore-volume-az: Cinder's availability zones are not the
     * servers' (zone labels and affinity left out, the region label only).
     */
    ignoreVolumeAZ: z.boolean().default(false),
    /** Upstream's [Route] router-id: pod-CIDR routes as this router's extra routes (absent: no routes). */
    routerId: z.string().min(1).optional(),
    /** Upstream's [LoadBalancer] section; a Service's annotations win. */
    loadBalancer: z
      .object({
        subnetId: z.string().min(1).optional(),
        networkId: z.string().min(1).optional(),
        floatingNetworkId: z.string().min(1).optional(),
        floatingSubnetId: z.string().min(1).optional(),
        memberSubnetId: z.string().min(1).optional(),
        lbMethod: z.enum(LB_METHODS).default("ROUND_ROBIN"),
        /** A health monitor per pool (upstream's create-monitor; fleet-ccm's default is on: the hub always has a health check). */
        createMonitor: z.boolean().default(true),
        flavorId: z.string().min(1).optional(),
        availabilityZone: z.string().min(1).optional(),
        /** An ERROR load balancer is deleted and built anew once its failure was reported (default: reported only). */
        recreateOnError: z.boolean().default(false),
        /** Upstream's default-tls-container-ref: the TCP ports of every Service terminate TLS with this certificate. */
        tlsContainerRef: z.string().min(1).optional(),
        /** Octavia's provider (upstream's lb-provider): `ovn` also changes the security groups' rule sources. */
        provider: z.string().min(1).optional(),
        /** Upstream's manage-security-groups: a node-port security group per load balancer on the members' ports. */
        manageSecurityGroups: z.boolean().default(false),
      })
      .strict()
      .default({
        lbMethod: "ROUND_ROBIN",
        createMonitor: true,
        recreateOnError: false,
        manageSecurityGroups: false,
      }),
  })
  .strict();
export type OpenStackOptions = z.infer<typeof OpenStackOptionsSchema>;

const APP_SECRET = "applicationCredentialSecret";
const PASSWORD = "password";

function credentialsOf(ctx: ProviderContext, o: OpenStackOptions): KeystoneCredentials {
  const { account } = ctx;
  const names = account.credentialNames ?? [];
  const read = (name: string) => () => account.secret?.(name) ?? account.credential;
  if (names.includes(APP_SECRET)) {
    if (o.applicationCredentialId === undefined)
      throw new AccountConfigError(
        "options.applicationCredentialId",
        "required with credentials.applicationCredentialSecret",
      );
    return { kind: "application_credential", id: o.applicationCredentialId, secret: read(APP_SECRET) };
  }
  if (o.username === undefined)
    throw new AccountConfigError("options.username", "required with credentials.password");
  if (o.projectId === undefined && o.projectName === undefined)
    throw new AccountConfigError(
      "options.projectName",
      "projectId or projectName is required with credentials.password",
    );
  return {
    kind: "password",
    username: o.username,
    userDomainName: o.userDomainName,
    password: read(PASSWORD),
    projectId: o.projectId,
    projectName: o.projectName,
    projectDomainName: o.projectDomainName,
  };
}

/** clouds.yaml's auth_url may leave out the version: Keystone v3 is the one spoken. */
export function keystoneV3(authUrl: string): string {
  const base = authUrl.replace(/\/+$/, "");
  return /\/v3$/.test(base) ? base : `${base}/v3`;
}

export const openstackProvider: ProviderFactory<OpenStackOptions> = {
  name: PROVIDER_NAME,
  annotationPrefixes: [LB_PREFIX, INTERNAL_KEY],
  options: OpenStackOptionsSchema,
  credentials: { required: [], optional: [APP_SECRET, PASSWORD], oneOf: [APP_SECRET, PASSWORD] },
  // Keystone's URL (clouds.yaml auth_url): a private cloud has no public address to default to.
  endpoint: "required",
  // Rate limits, where an operator sets them, are per service endpoint of a region.
  rateLimitScope: "region",
  lbSettings: vendorLbSettings,
  async create(ctx: ProviderContext, options: OpenStackOptions): Promise<CloudProvider> {
    const { account } = ctx;
    if (account.endpoint === undefined)
      throw new AccountConfigError("endpoint", "Keystone's URL is required");
    // One agent per account: its CA bundle trusted for Keystone and every catalog endpoint.
    const fetch = options.caCertificates === undefined ? undefined : fetchTrusting(options.caCertificates);
    const auth = new KeystoneAuth({
      authUrl: keystoneV3(account.endpoint),
      credentials: credentialsOf(ctx, options),
      clock: ctx.clock,
      call: ctx.call,
      requestTimeoutMs: account.requestTimeoutMs,
      userAgent: account.userAgent,
      fetch,
    });
    const client = new OpenStackClient({
      auth,
      region: account.region,
      interface: options.interface,
      endpoints: options.endpoints,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
      call: ctx.call,
      pageSize: options.pageSize,
      userAgent: account.userAgent,
      fetch,
    });
    const lbs = new OpenStackLoadBalancers(client, {
      ...options.loadBalancer,
      networkId: options.loadBalancer.networkId ?? account.network,
    });
    const routes = options.routerId === undefined ? undefined : new OpenStackRoutes(client, options.routerId);
    ctx.logger.debug({ account: account.name, region: account.region }, "openstack provider bound");
    return {
      name: PROVIDER_NAME,
      instances: new OpenStackInstances(ctx, client, {
        regionalProviderID: options.regionalProviderID,
        internalNetworkName: options.internalNetworkName,
        publicNetworkName: options.publicNetworkName,
        fullListIntervalMs: options.fullListIntervalSeconds * 1000,
      }),
      loadBalancers: {
        capabilities: lbs.capabilities,
        checkAnnotations: (a) => lbs.checkAnnotations(a),
        get: (t, s) => lbs.get(t, s),
        ensure: (t, spec, s, hints) => lbs.ensure(t, spec, s, hints),
        updateBackends: (t, b, s, ba) => lbs.updateBackends(t, b, s, ba),
        ensureDeleted: (t, s, hints) => lbs.ensureDeleted(t, s, hints),
        listOwned: (token, s) => lbs.listOwned(token, s),
      },
      volumes: new OpenStackVolumes(client, { ignoreVolumeAZ: options.ignoreVolumeAZ }),
      ...(routes !== undefined && {
        routes: {
          lockKey: () => routes.lockKey(),
          list: (c, s) => routes.list(c, s),
          create: (c, r, s) => routes.create(c, r, s),
          delete: (c, r, s) => routes.delete(c, r, s),
        },
      }),
    };
  },
};
