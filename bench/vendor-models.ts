/**
 * Models of the vendor CCMs' cloud calls, one instance per cluster, as upstream behaves with
 * its defaults (read from the upstream repositories; commits named below). Each model answers
 * calls per hour in steady state (every Node Ready, nothing changing) and calls for one node
 * joining one cluster. The k8s.io/cloud-provider framework's periods are the same for all:
 * the cloud node controller's UpdateNodeStatus every 5 min (--node-status-update-frequency),
 * which asks InstanceMetadata for every initialized node; the lifecycle controller calls nothing
 * for Ready nodes; the service controller calls nothing while Services and the node set are
 * unchanged (its informer resyncs compare equal); the route controller runs only with
 * --allocate-node-cidrs and --configure-cloud-routes, every 10 s.
 */

/** The framework's periods (k8s.io/cloud-provider defaults). */
export const FRAMEWORK = {
  nodeStatusUpdateS: 300,
  routeReconciliationS: 10,
} as const;

// ---- DigitalOcean ---------------------------------------------------------------------------

/**
 * digitalocean/digitalocean-cloud-controller-manager at 70d527e (v0.1.68's manifest runs it
 * with only DO_ACCESS_TOKEN): `cloud-controller-manager/do/droplets.go` InstanceMetadata is
 * `GET /v2/droplets/{id}` for a node with a providerID, `GET /v2/droplets?name=` without one
 * (no cache: every call reaches the API); `loadbalancers.go` UpdateLoadBalancer finds the load
 * balancer by its `load-balancer-id` annotation (`GET /v2/load_balancers/{id}`) and writes it
 * whole (`PUT`). The tags syncer of `resources.go` runs only with DO_CLUSTER_ID and the
 * firewall controller only with PUBLIC_ACCESS_FIREWALL_NAME: neither is set by default. No
 * routes (DigitalOcean has no route API).
 */
export const DO_CCM = {
  /** Per node and status period: one GET /v2/droplets/{id}. */
  callsPerNodePerStatusUpdate: 1,
  /** A joining node: GET /v2/droplets?name= (one page). */
  joinLookupCalls: 1,
  /** Per LoadBalancer Service when the node set changes: GET the load balancer, PUT it. */
  callsPerServiceOnNodeChange: 2,
  /** DigitalOcean: 5,000 requests an hour per token (and 250 a minute). */
  hourlyLimit: 5000,
} as const;

export function doCcmSteadyCallsPerHour(nodesPerCluster: number): number {
  return (nodesPerCluster * DO_CCM.callsPerNodePerStatusUpdate * 3600) / FRAMEWORK.nodeStatusUpdateS;
}

export function doCcmCallsPerNodeJoin(services: number): number {
  return DO_CCM.joinLookupCalls + services * DO_CCM.callsPerServiceOnNodeChange;
}

// ---- Hetzner Cloud --------------------------------------------------------------------------

/**
 * hetznercloud/hcloud-cloud-controller-manager at 6485324: every server lookup goes through
 * one server cache (`internal/cache`, `internal/config/config.go`: mode "all", max age 10 s):
 * a lookup that finds its entry older than 10 s refreshes the whole cache with `Server.All`,
 * every page of the project's `GET /v1/servers` (hcloud-go, 50 a page, Hetzner's maximum).
 * `hcloud/instances.go` InstanceMetadata looks servers up by id through it (by name without a
 * providerID). With HCLOUD_NETWORK set (the networks manifest, `--allocate-node-cidrs`), the
 * route controller is on (HCLOUD_NETWORK_ROUTES_ENABLED defaults to true): `hcloud/routes.go`
 * ListRoutes every 10 s reloads the network (`GET /v1/networks/{id}`) and calls the cache's
 * All, which refreshes it when older than 10 s. UpdateLoadBalancer (`hcloud/load_balancers.go`)
 * finds the load balancer by its `hcloud-ccm/service-uid` label (one GET), adds the target
 * (`POST .../actions/add_target`) and waits on the action (`GET /v1/actions`).
 */
export const HCLOUD_CCM = {
  serverCacheMaxAgeS: 10,
  serverPageSize: 50,
  /** Per LoadBalancer Service when the node set changes: GET by label, add_target, action poll. */
  callsPerServiceOnNodeChange: 3,
  /** Hetzner Cloud: 3,600 requests an hour per project. */
  hourlyLimit: 3600,
} as const;

/**
 * One Hetzner CCM over one virtual hour: its status updates (every node looked up through the
 * cache at once) and, with routes, its route controller every 10 s, against the shared 10 s
 * cache. A cache refresh takes `pages` calls of `callS` seconds each (its age counts from when
 * the list ends, as upstream stamps entries after the fetch), so with a long list the routes
 * loop refreshes every other tick.
 */
export function hcloudCcmSteadyCallsPerHour(
  pages: number,
  opts: { routes: boolean; callS?: number; statusOffsetS?: number },
): { calls: number; serverListPages: number; networkGets: number } {
  const callS = opts.callS ?? 0.05;
  let refreshedAt = Number.NEGATIVE_INFINITY;
  let serverListPages = 0;
  let networkGets = 0;
  const lookup = (t: number) => {
    if (t - refreshedAt > HCLOUD_CCM.serverCacheMaxAgeS) {
      serverListPages += pages;
      refreshedAt = t + pages * callS;
    }
  };
  const events: { t: number; kind: "status" | "routes" }[] = [];
  for (let t = opts.statusOffsetS ?? 7; t < 3600; t += FRAMEWORK.nodeStatusUpdateS)
    events.push({ t, kind: "status" });
  if (opts.routes)
    for (let t = 0; t < 3600; t += FRAMEWORK.routeReconciliationS) events.push({ t, kind: "routes" });
  events.sort((a, b) => a.t - b.t);
  for (const e of events) {
    if (e.kind === "status") {
      // Every node's lookup within the same instant: the first one refreshes, the rest hit.
      lookup(e.t);
      continue;
    }
    networkGets++;
    lookup(e.t + callS);
  }
  return { calls: serverListPages + networkGets, serverListPages, networkGets };
}

/** A joining node: its name is not cached, so the cache is refreshed (every page); then each Service. */
export function hcloudCcmCallsPerNodeJoin(pages: number, services: number): number {
  return pages + services * HCLOUD_CCM.callsPerServiceOnNodeChange;
}

// ---- Google Cloud ---------------------------------------------------------------------------

/**
 * kubernetes/cloud-provider-gcp at 4e24531, `providers/gce/gce_instances.go`: InstanceMetadata
 * is one `instances.get` (no cache); a node without a providerID is first found by
 * `getInstanceByName`, an `instances.get` in each managed zone until one answers (zones in
 * order: 1, 2 or 3 calls over a regional cluster's three zones); InstanceShutdown answers
 * NotImplemented. UpdateLoadBalancer of the target-pool NetLB
 * (`gce_loadbalancer_external.go` updateExternalLoadBalancer → updateTargetPool): the hosts by
 * `getInstancesByNames` (one `instances.list` per managed zone with a name filter, stopping
 * when all are found), `targetPools.get`, `targetPools.addInstance` (an Operation, waited on:
 * at least one `regionOperations` read) and `targetPools.get` again to verify the count.
 * ListRoutes (`gce_routes.go`) is one filtered `routes.list` (one page per cluster at 500).
 */
export const GCE_CCM = {
  zones: 3,
  /** Per LoadBalancer Service on a node change: instances.list × zones, get, addInstance, operation, get. */
  callsPerServiceOnNodeChange: 3 + 1 + 1 + 1 + 1,
  /** Compute Engine: 1,500 read requests a minute per project (ReadRequestsPerMinutePerProject, the read/list groups' default). */
  perMinuteQuota: 1500,
} as const;

export function gceCcmSteadyCallsPerMinute(nodesPerCluster: number, routes: boolean): number {
  const status = (nodesPerCluster * 60) / FRAMEWORK.nodeStatusUpdateS;
  return status + (routes ? 60 / FRAMEWORK.routeReconciliationS : 0);
}

/** A joining node in zone `zoneIndex` (0-based): the zone search, InstanceMetadata's get, then each Service. */
export function gceCcmCallsPerNodeJoin(zoneIndex: number, services: number): number {
  return zoneIndex + 1 + 1 + services * GCE_CCM.callsPerServiceOnNodeChange;
}

// ---- OpenStack ------------------------------------------------------------------------------

/**
 * kubernetes/cloud-provider-openstack (`pkg/openstack/instancesv2.go`, `loadbalancer.go`,
 * `routes.go`, read at 0facb5b / 13d7b04): InstanceMetadata is `servers.Get` by the providerID's
 * id (one Nova call; a node without a providerID is `servers.List` with `name=^<node>$`), then
 * `getAttachedPorts` (one Neutron `GET /ports?device_id=`); the flavor name comes from the
 * server's embedded flavor where Nova answers it (a `flavors.Get` more otherwise: not counted).
 * No cache: every status update reaches Nova and Neutron. UpdateLoadBalancer
 * (updateOctaviaLoadBalancer) per Service port: the load balancer by its id annotation, its
 * listeners, the listener's pool, the pool's members, the batch member update and at least one
 * read of the load balancer until ACTIVE (6 Octavia calls; create-monitor is off by default).
 * Each CCM holds its own Keystone token (gophercloud re-authenticates when it expires: Keystone's
 * default lifetime is an hour). With `[Route] router-id` the route controller's ListRoutes, every
 * 10 s: `routers.Get`, the router's ports twice (`getRouterNetworkIDs` before and after), and
 * `getPortByIP` for each route whose next hop is a node.
 */
export const OCCM = {
  /** Per node and status update: servers.Get (Nova) and the ports by device_id (Neutron). */
  novaCallsPerNodePerStatusUpdate: 1,
  neutronCallsPerNodePerStatusUpdate: 1,
  /** Keystone tokens per CCM an hour (one per token lifetime, 3,600 s by default). */
  keystoneTokensPerHour: 1,
  /** A joining node: servers.List by name (Nova) and its ports (Neutron). */
  joinNovaCalls: 1,
  joinNeutronCalls: 1,
  /** Per LoadBalancer Service (one port) when the node set changes: 6 Octavia calls. */
  octaviaCallsPerServiceOnNodeChange: 6,
  /** ListRoutes: router get and the router's ports twice, plus one port lookup per node route. */
  neutronCallsPerListRoutes: 3,
} as const;

export type OpenStackServiceCalls = Record<"keystone" | "nova" | "neutron" | "octavia", number>;

export function occmSteadyCallsPerHour(nodesPerCluster: number, routes: boolean): OpenStackServiceCalls {
  const updates = 3600 / FRAMEWORK.nodeStatusUpdateS;
  const listRoutes = routes
    ? (3600 / FRAMEWORK.routeReconciliationS) * (OCCM.neutronCallsPerListRoutes + nodesPerCluster)
    : 0;
  return {
    keystone: OCCM.keystoneTokensPerHour,
    nova: nodesPerCluster * OCCM.novaCallsPerNodePerStatusUpdate * updates,
    neutron: nodesPerCluster * OCCM.neutronCallsPerNodePerStatusUpdate * updates + listRoutes,
    octavia: 0,
  };
}

export function occmCallsPerNodeJoin(services: number): OpenStackServiceCalls {
  return {
    keystone: 0,
    nova: OCCM.joinNovaCalls,
    neutron: OCCM.joinNeutronCalls,
    octavia: services * OCCM.octaviaCallsPerServiceOnNodeChange,
  };
}

// ---- Azure ----------------------------------------------------------------------------------

/**
 * kubernetes-sigs/cloud-provider-azure (`pkg/provider/`, read at 05f5ce8), standalone VMs (the
 * default vmType `standard`): InstanceMetadata and NodeAddresses read the VM through a timed
 * cache of 60 s (`vmCacheTTLDefaultInSeconds`, azure_wrap.go) and its primary NIC with an
 * uncached `GET` (`getPrimaryInterfaceWithVMSet`, azure_standard.go): with the 5 min status
 * period every update misses the cache, so two reads per node. A node-set change runs each
 * LoadBalancer Service's UpdateLoadBalancer; with the default NIC-based pool
 * (`EnsureHostsInPool`, azure_standard.go) that is, per Service, the NIC `GET` of every node and
 * a NIC `PUT` for a node not yet in the pool (the first Service of a cluster puts it, the
 * others find it there), plus the load balancer's `GET` (cached 120 s:
 * `loadBalancerCacheTTLDefaultInSeconds`). A Service whose spec changes is one load-balancer
 * `PUT` and one NSG `PUT` of its own (the reconcile of one Service at a time).
 */
export const AZURE_CCM = {
  vmCacheTtlS: 60,
  loadBalancerCacheTtlS: 120,
  /** Per node and status update: the VM (cache expired) and its primary NIC. */
  readsPerNodePerStatusUpdate: 2,
  /** Per Service whose spec changes: its load balancer PUT and its NSG PUT. */
  writesPerServiceChange: 2,
  /**
   * ARM's published budgets per subscription ("Understand how Azure Resource Manager throttles
   * requests"): reads refill at 25 a second (bucket 250), writes at 10 (bucket 200).
   */
  readsPerHourLimit: 25 * 3600,
  writesPerHourLimit: 10 * 3600,
} as const;

export function azureCcmSteadyReadsPerHour(nodesPerCluster: number): number {
  return (nodesPerCluster * AZURE_CCM.readsPerNodePerStatusUpdate * 3600) / FRAMEWORK.nodeStatusUpdateS;
}

/**
 * A node joining one cluster: its own InstanceMetadata (VM and NIC), then every Service's
 * EnsureHostsInPool (every node's NIC, the load balancer) and one NIC PUT.
 */
export function azureCcmNodeJoin(
  nodesAfter: number,
  services: number,
): { readonly reads: number; readonly writes: number } {
  return { reads: 2 + services * (nodesAfter + 1), writes: services > 0 ? 1 : 0 };
}

/**
 * A Service whose spec changes (one at a time, behind the CCM's lock): EnsureLoadBalancer reads
 * the load balancer and runs EnsureHostsInPool (every node's NIC, as in a join), then writes its
 * load balancer and its NSG.
 */
export function azureCcmServiceChange(nodes: number): { readonly reads: number; readonly writes: number } {
  return { reads: nodes + 1, writes: AZURE_CCM.writesPerServiceChange };
}
