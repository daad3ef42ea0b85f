/**
 * Octavia load balancers as openstack-cloud-controller-manager builds them: named
 * `kube_service_<cluster>_<namespace>_<name>`, a VIP on the configured (or annotated) subnet
 * or network, per Service port a listener, its default pool (members `nodeIP:nodePort`,
 * replaced in one batch PUT) and a health monitor, and for a public Service a Neutron floating
 * IP on the VIP port, and with `manageSecurityGroups` a node-port security group on the members'
 * ports (security-groups.ts). Ownership is in Octavia's tags (`fleet-ccm.io/cluster=<c>`,
 * `fleet-ccm.io/service-uid=<uid>`), found again by a tag filter, never by a remembered id.
 *
 * Octavia is asynchronous: every mutation leaves the load balancer PENDING_* and refuses the
 * next with 409 until it is ACTIVE again. A call makes its changes one at a time, reading the
 * load balancer after each; the moment it is not ACTIVE the call answers in progress and ends
 * (the hub calls again later): no call ever waits. A 409 "immutable" (another writer's change
 * in flight) is in progress too. An ERROR load balancer is reported (OperationFailedError, read
 * from the cloud); with `recreateOnError` it is reported once and, on the next call, deleted and
 * built anew.
 *
 * What openstack-cloud-controller-manager built is adopted with the operator's opt-in
 * (adoptFrom): found by the Service's `loadbalancer.openstack.org/load-balancer-id` or by
 * upstream's name for the vendor cluster, tagged as the owner's, then reconciled like our own.
 * The id is written back to that annotation, as upstream does.
 */
import { CloudError, NeedsEnsureError, OperationFailedError, SuspectAnswerError } from "../../errors.js";
import {
  backendsDigest,
  DIGEST_TAG_BACKENDS,
  DIGEST_TAG_SPEC,
  FAILURE_REPORTED_TAG,
  loadBalancerName,
  loadBalancerSpecDigest,
  OWNER_TAG_CLUSTER,
  OWNER_TAG_SERVICE_UID,
} from "../../naming.js";
import {
  checksHealthCheckNodePort,
  type InProgress,
  inProgress,
  type LbIngress,
  type LbOwner,
  type LbServiceHints,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  type OwnedLoadBalancerPage,
  type ServiceTarget,
} from "../../provider.js";
import { A, type LbMethod, type OpenStackLbAnnotations, parseAnnotations } from "./annotations.js";
import type { OpenStackClient } from "./client.js";
import { isGone, isImmutable } from "./errors.js";
import { NodeSecurityGroups, type SgPort } from "./security-groups.js";

export const LB_OPS = {
  list: "loadbalancers.list",
  get: "loadbalancers.get",
  create: "loadbalancers.create",
  update: "loadbalancers.update",
  delete: "loadbalancers.delete",
  listeners: "listeners.list",
  listenerCreate: "listener.create",
  listenerUpdate: "listener.update",
  listenerDelete: "listener.delete",
  pools: "pools.list",
  poolCreate: "pool.create",
  poolUpdate: "pool.update",
  poolDelete: "pool.delete",
  members: "members.list",
  membersReplace: "members.update",
  monitors: "healthmonitors.list",
  monitorCreate: "healthmonitor.create",
  monitorUpdate: "healthmonitor.update",
  monitorDelete: "healthmonitor.delete",
  fips: "floatingips.list",
  fipCreate: "floatingip.create",
  fipUpdate: "floatingip.update",
  fipDelete: "floatingip.delete",
  ports: "ports.list",
} as const;

/** How soon to look again at a PENDING_* load balancer: Octavia's amphorae take seconds to minutes. */
export const PENDING_RETRY_MS = 2_000;
/** The node port (and health-check port) a pool's members take, kept on the pool for updateBackends. */
const NODE_PORT_TAG = "fleet-ccm.io/node-port=";
const MONITOR_PORT_TAG = "fleet-ccm.io/monitor-port=";
/** How upstream (and this provider) describe the floating IPs they create: only those are deleted. */
const OWN_FIP_DESCRIPTION = "Floating IP for Kubernetes external service";

export interface WireLb {
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  readonly provisioning_status: string;
  readonly vip_address: string;
  readonly vip_port_id: string;
  readonly vip_subnet_id?: string;
  readonly vip_network_id?: string;
  readonly tags?: readonly string[];
}

interface WireListener {
  readonly id: string;
  readonly protocol: string;
  readonly protocol_port: number;
  readonly default_pool_id: string | null;
  readonly allowed_cidrs?: readonly string[] | null;
  readonly insert_headers?: Readonly<Record<string, string>> | null;
  readonly [timeout: string]: unknown;
}

interface WirePool {
  readonly id: string;
  readonly protocol: string;
  readonly lb_algorithm: string;
  readonly session_persistence: { readonly type?: string } | null;
  readonly healthmonitor_id: string | null;
  readonly listeners: readonly { readonly id: string }[];
  readonly tags?: readonly string[];
}

interface WireMember {
  readonly id: string;
  readonly address: string;
  readonly protocol_port: number;
  readonly monitor_port?: number | null;
  readonly subnet_id?: string | null;
  readonly name?: string;
}

interface WireMonitor {
  readonly id: string;
  readonly type: string;
  readonly delay: number;
  readonly timeout: number;
  readonly max_retries: number;
  readonly max_retries_down: number;
  readonly url_path?: string;
}

interface WireFip {
  readonly id: string;
  readonly floating_ip_address: string;
  readonly port_id: string | null;
  readonly description?: string;
}

export interface LbDefaults {
  readonly subnetId?: string | undefined;
  readonly networkId?: string | undefined;
  readonly floatingNetworkId?: string | undefined;
  readonly floatingSubnetId?: string | undefined;
  readonly memberSubnetId?: string | undefined;
  readonly lbMethod: LbMethod;
  readonly createMonitor: boolean;
  /** An ERROR load balancer is deleted and built anew after its failure was reported once (opt-in). */
  readonly recreateOnError: boolean;
  readonly flavorId?: string | undefined;
  readonly availabilityZone?: string | undefined;
  /** A certificate reference every Service's TCP ports terminate TLS with (upstream's default-tls-container-ref). */
  readonly tlsContainerRef?: string | undefined;
  /** Octavia's provider (`amphora`, `ovn`, ...); absent: the cloud's default. */
  readonly provider?: string | undefined;
  /** A node-port security group per load balancer on the members' ports (upstream's manage-security-groups). */
  readonly manageSecurityGroups: boolean;
}

/** A backend's member address and the Neutron port it is on. */
interface NodeIP {
  readonly ip: string;
  readonly port: SgPort;
}

const tag = (k: string, v: string) => `${k}=${v}`;
const tagValue = (tags: readonly string[] | undefined, k: string): string | undefined =>
  tags?.find((t) => t.startsWith(`${k}=`))?.slice(k.length + 1);

export function ownerOfTags(tags: readonly string[] | undefined): LbOwner | undefined {
  const cluster = tagValue(tags, OWNER_TAG_CLUSTER);
  const serviceUid = tagValue(tags, OWNER_TAG_SERVICE_UID);
  return cluster === undefined || serviceUid === undefined ? undefined : { cluster, serviceUid };
}

/** Upstream's name: `kube_service_<cluster>_<namespace>_<name>`, cut at Octavia's 255. */
export function upstreamName(cluster: string, serviceName: string): string {
  const [ns, name] = serviceName.includes("/") ? serviceName.split("/", 2) : ["default", serviceName];
  return `kube_service_${cluster}_${ns}_${name}`.slice(0, 255);
}

/** `<namespace>/<name>` from upstream's load-balancer name (neither has an underscore); undefined if not one. */
export function serviceNameOf(lbName: string): string | undefined {
  if (!lbName.startsWith("kube_service_")) return undefined;
  const parts = lbName.split("_");
  const [ns, name] = parts.slice(-2);
  return parts.length >= 5 && ns !== undefined && name !== undefined ? `${ns}/${name}` : undefined;
}

/**
 * Octavia's protocol of a Service port: UDP, HTTP, TCP; with a certificate reference (upstream's
 * default-tls-container-ref) a TCP or HTTP port terminates TLS (TERMINATED_HTTPS).
 */
function listenerProtocol(
  p: LoadBalancerSpec["listeners"][number],
  tlsContainerRef: string | undefined,
): string {
  if (p.protocol === "UDP") return "UDP";
  if (tlsContainerRef !== undefined) return "TERMINATED_HTTPS";
  if (p.protocol === "HTTP") return "HTTP";
  return "TCP";
}

/**
 * externalTrafficPolicy Local's health-check node port (kube-proxy's /healthz, predicates.ts: an
 * HTTP check on a port that is no listener's node port), else undefined.
 */
function healthCheckNodePort(spec: LoadBalancerSpec): number | undefined {
  return checksHealthCheckNodePort(spec) ? spec.healthCheck.port : undefined;
}

/** Listeners that speak HTTP to clients: X-Forwarded-For can be inserted, their pools speak HTTP. */
const httpish = (protocol: string) => protocol === "HTTP" || protocol === "TERMINATED_HTTPS";

type Step = () => Promise<unknown>;

export class OpenStackLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    sessionAffinity: true,
    proxyProtocol: true,
    internal: true,
    protocols: ["TCP", "UDP", "HTTP"],
    serviceAnnotationKeys: [A.loadBalancerId],
  };

  private readonly sgs: NodeSecurityGroups | undefined;

  constructor(
    private readonly client: OpenStackClient,
    private readonly defaults: LbDefaults,
  ) {
    // Octavia's OVN provider keeps the clients' addresses: the rules then allow the source ranges.
    this.sgs = defaults.manageSecurityGroups
      ? new NodeSecurityGroups(client, defaults.provider === "ovn")
      : undefined;
  }

  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    parseAnnotations(annotations);
  }

  // ---- finding --------------------------------------------------------------------------------

  private async owned(target: LbOwner, signal?: AbortSignal): Promise<WireLb | undefined> {
    const found = await this.client.list<WireLb>(
      "load-balancer",
      LB_OPS.list,
      "/lbaas/loadbalancers",
      "loadbalancers",
      {
        query: { tags: tag(OWNER_TAG_SERVICE_UID, target.serviceUid) },
        signal,
      },
    );
    const mine = found.filter((lb) => {
      const o = ownerOfTags(lb.tags);
      return o?.cluster === target.cluster && o.serviceUid === target.serviceUid;
    });
    if (mine.length > 1)
      throw new SuspectAnswerError(
        `${mine.length} load balancers carry the owner tags of ${target.cluster}/${target.serviceUid}`,
      );
    return mine[0];
  }

  private async byId(id: string, signal?: AbortSignal): Promise<WireLb | undefined> {
    try {
      return (
        await this.client.get<{ loadbalancer: WireLb }>(
          "load-balancer",
          LB_OPS.get,
          `/lbaas/loadbalancers/${encodeURIComponent(id)}`,
          {
            signal,
          },
        )
      ).loadbalancer;
    } catch (err) {
      if (isGone(err)) return undefined;
      throw err;
    }
  }

  /**
   * openstack-cloud-controller-manager's load balancer of this Service: by the Service's
   * load-balancer-id annotation, else by upstream's name for the operator's vendor cluster;
   * adoptable only with adoptFrom and only if nobody of this hub owns it.
   */
  private async vendorCandidate(
    target: ServiceTarget,
    spec: LoadBalancerSpec | undefined,
    s: OpenStackLbAnnotations,
    signal?: AbortSignal,
  ): Promise<WireLb | undefined> {
    const { adoptFrom } = target.scope;
    let lb: WireLb | undefined;
    let how = "";
    if (s.loadBalancerId !== undefined) {
      lb = await this.byId(s.loadBalancerId, signal);
      how = `${A.loadBalancerId}=${s.loadBalancerId}`;
    }
    if (lb === undefined && adoptFrom !== undefined && spec?.serviceName !== undefined) {
      const name = upstreamName(adoptFrom.vendorCcmClusterName, spec.serviceName);
      const found = await this.client.list<WireLb>(
        "load-balancer",
        LB_OPS.list,
        "/lbaas/loadbalancers",
        "loadbalancers",
        {
          query: { name },
          signal,
        },
      );
      lb = found.find((x) => x.name === name);
      how = `its name ${name}`;
    }
    if (lb === undefined) return undefined;
    const owner = ownerOfTags(lb.tags);
    if (owner !== undefined)
      throw new CloudError(
        `load balancer ${lb.id} (${how}) belongs to another Service (${owner.cluster}/${owner.serviceUid}) of this hub: refused`,
      );
    if (adoptFrom === undefined)
      throw new CloudError(
        `load balancer ${lb.id} (${how}) was not made by this hub and this cluster has no adoptFrom in the hub's configuration: not adopted, nothing changed`,
      );
    const expected =
      spec?.serviceName === undefined
        ? undefined
        : upstreamName(adoptFrom.vendorCcmClusterName, spec.serviceName);
    if (
      expected !== undefined &&
      lb.name !== expected &&
      !lb.name.startsWith(`kube_service_${adoptFrom.vendorCcmClusterName}_`)
    )
      throw new CloudError(
        `load balancer ${lb.id} (${how}) is named ${lb.name}, not as openstack-cloud-controller-manager names it for cluster ${adoptFrom.vendorCcmClusterName}: not adopted`,
      );
    return lb;
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const lb = await this.owned(target, signal);
    if (lb === undefined) return undefined;
    const pools = await this.pools(lb, signal);
    const addresses = new Set<string>();
    // Members are named after their server (the backend's instance id), as ensure makes them.
    for (const p of pools) for (const m of await this.members(p, signal)) addresses.add(m.name ?? m.address);
    const fip = await this.fipOf(lb, signal);
    return {
      id: lb.id,
      name: lb.name,
      owner: { cluster: target.cluster, serviceUid: target.serviceUid },
      ingress: [{ ip: fip?.floating_ip_address ?? lb.vip_address }],
      backends: [...addresses].sort(),
    };
  }

  // ---- reads of sub-resources -------------------------------------------------------------------

  private listeners(lb: WireLb, signal?: AbortSignal): Promise<WireListener[]> {
    return this.client.list<WireListener>(
      "load-balancer",
      LB_OPS.listeners,
      "/lbaas/listeners",
      "listeners",
      {
        query: { loadbalancer_id: lb.id },
        signal,
      },
    );
  }

  private pools(lb: WireLb, signal?: AbortSignal): Promise<WirePool[]> {
    return this.client.list<WirePool>("load-balancer", LB_OPS.pools, "/lbaas/pools", "pools", {
      query: { loadbalancer_id: lb.id },
      signal,
    });
  }

  private members(pool: WirePool, signal?: AbortSignal): Promise<WireMember[]> {
    return this.client.list<WireMember>(
      "load-balancer",
      LB_OPS.members,
      `/lbaas/pools/${pool.id}/members`,
      "members",
      {
        signal,
      },
    );
  }

  private async monitor(pool: WirePool, signal?: AbortSignal): Promise<WireMonitor | undefined> {
    if (pool.healthmonitor_id === null) return undefined;
    const all = await this.client.list<WireMonitor & { pools?: { id: string }[] }>(
      "load-balancer",
      LB_OPS.monitors,
      "/lbaas/healthmonitors",
      "healthmonitors",
      { signal },
    );
    return all.find((m) => m.id === pool.healthmonitor_id);
  }

  private async fipOf(lb: WireLb, signal?: AbortSignal): Promise<WireFip | undefined> {
    const fips = await this.client.list<WireFip>("network", LB_OPS.fips, "/floatingips", "floatingips", {
      query: { port_id: lb.vip_port_id },
      signal,
    });
    return fips.find((f) => f.port_id === lb.vip_port_id);
  }

  /** VIP port id → the floating IP on it, for many ports at once (Neutron ORs a repeated filter). */
  private async fipsOn(portIds: readonly string[], signal?: AbortSignal): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < portIds.length; i += 40) {
      const ids = portIds.slice(i, i + 40);
      const fips = await this.client.list<WireFip>("network", LB_OPS.fips, "/floatingips", "floatingips", {
        query: { port_id: ids },
        signal,
      });
      for (const f of fips)
        if (f.port_id !== null && ids.includes(f.port_id)) out.set(f.port_id, f.floating_ip_address);
    }
    return out;
  }

  /** Instance id → its address on the member subnet (else its first fixed IP) and that port, one Neutron call per 40. */
  private async nodeIPs(
    backends: readonly string[],
    subnet: string | undefined,
    signal?: AbortSignal,
  ): Promise<Map<string, NodeIP>> {
    const out = new Map<string, NodeIP>();
    for (let i = 0; i < backends.length; i += 40) {
      const ids = backends.slice(i, i + 40);
      const ports = await this.client.list<SgPort>("network", LB_OPS.ports, "/ports", "ports", {
        query: { device_id: ids },
        signal,
      });
      for (const id of ids) {
        const mine = ports
          .filter((p) => p.device_id === id)
          .flatMap((port) => port.fixed_ips.map((f) => ({ f, port })));
        const at = (subnet === undefined ? undefined : mine.find((m) => m.f.subnet_id === subnet)) ?? mine[0];
        if (at !== undefined) out.set(id, { ip: at.f.ip_address, port: at.port });
      }
    }
    return out;
  }

  // ---- the state machine ------------------------------------------------------------------------

  /** Reads the load balancer's status: undefined when ACTIVE, else the in-progress answer or failure. */
  private async settled(lb: WireLb, signal?: AbortSignal): Promise<InProgress | undefined> {
    const now = await this.byId(lb.id, signal);
    const status = now?.provisioning_status ?? "DELETED";
    if (status === "ACTIVE") return undefined;
    if (status === "ERROR") return undefined;
    return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} ${status}`);
  }

  /** Runs `steps` in order, each once the load balancer is ACTIVE again; in progress when it is not. */
  private async run(
    lb: WireLb,
    steps: readonly Step[],
    signal?: AbortSignal,
  ): Promise<InProgress | undefined> {
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        if (isImmutable(err))
          return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} busy (Octavia 409)`);
        throw err;
      }
      const pending = await this.settled(lb, signal);
      if (pending !== undefined) return pending;
    }
    return undefined;
  }

  private settings(spec: LoadBalancerSpec | undefined, hints?: LbServiceHints): OpenStackLbAnnotations {
    return parseAnnotations(spec?.annotations ?? hints?.annotations ?? {});
  }

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress> {
    const s = this.settings(spec, hints);
    const internal = s.internal ?? spec.internal;
    let lb = await this.owned(target, signal);
    if (lb === undefined) {
      const vendor = await this.vendorCandidate(target, spec, s, signal);
      if (vendor !== undefined) {
        const adopted = await this.putTags(
          vendor,
          [...(vendor.tags ?? []), ...this.ownerTags(target)],
          signal,
        );
        if (adopted !== undefined) return adopted;
        lb = vendor;
      }
    }
    if (lb === undefined) return this.create(target, spec, s, signal);
    if (lb.provisioning_status.startsWith("PENDING_"))
      return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} ${lb.provisioning_status}`);
    if (lb.provisioning_status === "ERROR") return this.failed(lb, signal);

    const current = lb;
    const memberSubnet = s.memberSubnetId ?? this.defaults.memberSubnetId ?? lb.vip_subnet_id;
    const ips = await this.nodeIPs(spec.backends, memberSubnet, signal);
    const missing = spec.backends.filter((b) => !ips.has(b));
    if (missing.length > 0)
      throw new CloudError(`no Neutron port of backend server(s) ${missing.join(", ")}`);
    const pending = await this.reconcile(current, spec, s, memberSubnet, ips, signal);
    if (pending !== undefined) return pending;
    await this.sgs?.ensure(
      target,
      spec,
      memberSubnet,
      [...ips.values()].map((n) => n.port),
      signal,
    );
    // The floating IP of a public Service, on the VIP port (adopting one a lost answer made).
    let fip = await this.fipOf(current, signal);
    if (internal && fip !== undefined) {
      await this.releaseFip(fip, s.keepFloatingIp, signal);
      fip = undefined;
    } else if (!internal && fip === undefined) fip = await this.publicFip(target, spec, s, current, signal);
    const digests = [
      tag(DIGEST_TAG_SPEC, loadBalancerSpecDigest(spec)),
      tag(DIGEST_TAG_BACKENDS, backendsDigest(spec.backends, spec.backendAnnotations)),
    ];
    const fresh = await this.byId(current.id, signal);
    if (fresh === undefined)
      return inProgress(PENDING_RETRY_MS, `load balancer ${current.id} gone meanwhile`);
    const wanted = [
      ...(fresh.tags ?? []).filter(
        (t) => !t.startsWith(`${DIGEST_TAG_SPEC}=`) && !t.startsWith(`${DIGEST_TAG_BACKENDS}=`),
      ),
      ...digests,
    ];
    const tagged = await this.putTags(fresh, wanted, signal);
    if (tagged !== undefined) return tagged;
    hints?.annotate?.(A.loadBalancerId, current.id);
    const ip = internal ? current.vip_address : (fip?.floating_ip_address ?? current.vip_address);
    // As upstream: behind PROXY protocol kube-proxy must not short-cut traffic to the ip.
    return [{ ip, ...(spec.listeners.some((l) => l.proxyProtocol) && { ipMode: "Proxy" as const }) }];
  }

  private ownerTags(target: LbOwner): string[] {
    return [tag(OWNER_TAG_CLUSTER, target.cluster), tag(OWNER_TAG_SERVICE_UID, target.serviceUid)];
  }

  /**
   * A floating IP for the VIP port, as upstream's ensureFloatingIP: the Service's loadBalancerIP
   * when it is a floating IP of the project (attached if free: Neutron refuses to create an
   * address that exists), else a new one from the floating network (with that address if given).
   */
  private async publicFip(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    s: OpenStackLbAnnotations,
    lb: WireLb,
    signal?: AbortSignal,
  ): Promise<WireFip> {
    const reserved =
      spec.loadBalancerIP === undefined ? undefined : await this.reservedFip(spec.loadBalancerIP, signal);
    if (reserved !== undefined) return this.moveFip(reserved, lb.vip_port_id, signal);
    const network = s.floatingNetworkId ?? this.defaults.floatingNetworkId;
    if (network === undefined)
      throw new CloudError(
        `no floating network: set options.loadBalancer.floatingNetworkId or ${A.floatingNetworkId}`,
      );
    const subnet = s.floatingSubnetId ?? this.defaults.floatingSubnetId;
    return (
      await this.client.request<{ floatingip: WireFip }>(
        "network",
        LB_OPS.fipCreate,
        "POST",
        "/floatingips",
        {
          body: {
            floatingip: {
              floating_network_id: network,
              port_id: lb.vip_port_id,
              description: `${OWN_FIP_DESCRIPTION} ${spec.serviceName ?? target.serviceUid} from cluster ${target.cluster}`,
              ...(subnet !== undefined && { subnet_id: subnet }),
              ...(spec.loadBalancerIP !== undefined && { floating_ip_address: spec.loadBalancerIP }),
            },
          },
          signal,
        },
      )
    ).floatingip;
  }

  /** The project's floating IP with this address, if free; one on another port is refused, as upstream. */
  private async reservedFip(address: string, signal?: AbortSignal): Promise<WireFip | undefined> {
    const found = (
      await this.client.list<WireFip>("network", LB_OPS.fips, "/floatingips", "floatingips", {
        query: { floating_ip_address: address },
        signal,
      })
    ).find((f) => f.floating_ip_address === address);
    if (found?.port_id)
      throw new CloudError(
        `floating IP ${address} (loadBalancerIP) is not available: it is on port ${found.port_id}`,
      );
    return found;
  }

  /** The floating IP attached to `portId`, or detached with null (PUT /floatingips/{id}). */
  private async moveFip(fip: WireFip, portId: string | null, signal?: AbortSignal): Promise<WireFip> {
    return (
      await this.client.request<{ floatingip: WireFip }>(
        "network",
        LB_OPS.fipUpdate,
        "PUT",
        `/floatingips/${fip.id}`,
        { body: { floatingip: { port_id: portId } }, signal },
      )
    ).floatingip;
  }

  /**
   * The floating IP off the VIP port, as upstream (deleteFIPIfCreatedByProvider): deleted only
   * when created for a Service (its description) and not kept; else detached, so a user's
   * reserved address outlives the load balancer and a kept one no longer reaches it.
   */
  private async releaseFip(fip: WireFip, keep: boolean, signal?: AbortSignal): Promise<void> {
    if (keep || !fip.description?.includes(OWN_FIP_DESCRIPTION)) await this.moveFip(fip, null, signal);
    else
      await this.client.request("network", LB_OPS.fipDelete, "DELETE", `/floatingips/${fip.id}`, { signal });
  }

  /** The load balancer's tags set to `tags` (unchanged: no call); in progress while Octavia applies it. */
  private async putTags(
    lb: WireLb,
    tags: readonly string[],
    signal?: AbortSignal,
  ): Promise<InProgress | undefined> {
    const want = [...new Set(tags)];
    const have = lb.tags ?? [];
    if (want.length === have.length && want.every((t) => have.includes(t))) return undefined;
    return this.run(
      lb,
      [
        () =>
          this.client.request("load-balancer", LB_OPS.update, "PUT", `/lbaas/loadbalancers/${lb.id}`, {
            body: { loadbalancer: { tags: want } },
            signal,
          }),
      ],
      signal,
    );
  }

  private async create(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    s: OpenStackLbAnnotations,
    signal?: AbortSignal,
  ): Promise<InProgress> {
    // The Service's subnet or network, else the account's subnet, else the cluster's network.
    const subnet = s.subnetId ?? (s.networkId === undefined ? this.defaults.subnetId : undefined);
    const network =
      s.networkId ?? (target.network === "" ? undefined : target.network) ?? this.defaults.networkId;
    if (subnet === undefined && network === undefined)
      throw new CloudError(`no VIP subnet or network: set options.loadBalancer.subnetId or ${A.subnetId}`);
    const flavor = s.flavorId ?? this.defaults.flavorId;
    const az = s.availabilityZone ?? this.defaults.availabilityZone;
    const created = (
      await this.client.request<{ loadbalancer: WireLb }>(
        "load-balancer",
        LB_OPS.create,
        "POST",
        "/lbaas/loadbalancers",
        {
          body: {
            loadbalancer: {
              name:
                spec.serviceName === undefined
                  ? loadBalancerName(target.cluster, target.serviceUid)
                  : upstreamName(target.cluster, spec.serviceName),
              description: `Kubernetes external service ${spec.serviceName ?? target.serviceUid} from cluster ${target.cluster}`,
              ...(subnet !== undefined ? { vip_subnet_id: subnet } : { vip_network_id: network }),
              ...(flavor !== undefined && { flavor_id: flavor }),
              ...(az !== undefined && { availability_zone: az }),
              ...(this.defaults.provider !== undefined && { provider: this.defaults.provider }),
              tags: this.ownerTags(target),
            },
          },
          signal,
        },
      )
    ).loadbalancer;
    return inProgress(PENDING_RETRY_MS, `load balancer ${created.id} ${created.provisioning_status}`);
  }

  /** An ERROR load balancer: reported once (tagged so any replica knows), then deleted to be built anew. */
  private async failed(lb: WireLb, signal?: AbortSignal): Promise<never | InProgress> {
    const message = `Octavia load balancer ${lb.id} (${lb.name}) is in ERROR`;
    if (!this.defaults.recreateOnError)
      throw new OperationFailedError(
        `${message}: delete it (or set options.loadBalancer.recreateOnError) for the hub to build it anew`,
      );
    if ((lb.tags ?? []).includes(FAILURE_REPORTED_TAG)) {
      await this.client.request("load-balancer", LB_OPS.delete, "DELETE", `/lbaas/loadbalancers/${lb.id}`, {
        query: { cascade: "true" },
        signal,
      });
      return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} in ERROR: deleted, to be built anew`);
    }
    await this.client.request("load-balancer", LB_OPS.update, "PUT", `/lbaas/loadbalancers/${lb.id}`, {
      body: { loadbalancer: { tags: [...(lb.tags ?? []), FAILURE_REPORTED_TAG] } },
      signal,
    });
    throw new OperationFailedError(message);
  }

  /** Listeners, pools, members and monitors as the spec says, one change at a time. */
  private async reconcile(
    lb: WireLb,
    spec: LoadBalancerSpec,
    s: OpenStackLbAnnotations,
    memberSubnet: string | undefined,
    ips: Map<string, NodeIP>,
    signal?: AbortSignal,
  ): Promise<InProgress | undefined> {
    const method = s.lbMethod ?? this.defaults.lbMethod;
    const monitorOn = s.enableHealthMonitor ?? this.defaults.createMonitor;
    for (let pass = 0; pass < 8; pass++) {
      const listeners = await this.listeners(lb, signal);
      const pools = await this.pools(lb, signal);
      const step = await this.nextStep(
        lb,
        spec,
        s,
        { method, monitorOn, memberSubnet, ips },
        listeners,
        pools,
        signal,
      );
      if (step === undefined) return undefined;
      const pending = await this.run(lb, [step], signal);
      if (pending !== undefined) return pending;
    }
    return inProgress(0, `load balancer ${lb.id}: more changes to make`);
  }

  /** The first change the cloud still needs, or undefined when it matches. */
  private async nextStep(
    lb: WireLb,
    spec: LoadBalancerSpec,
    s: OpenStackLbAnnotations,
    d: { method: LbMethod; monitorOn: boolean; memberSubnet: string | undefined; ips: Map<string, NodeIP> },
    listeners: readonly WireListener[],
    pools: readonly WirePool[],
    signal?: AbortSignal,
  ): Promise<Step | undefined> {
    const lbApi = (op: string, method: "POST" | "PUT" | "DELETE", path: string, body?: unknown) => () =>
      this.client.request("load-balancer", op, method, path, { ...(body !== undefined && { body }), signal });
    const tlsRef = s.tlsContainerRef ?? this.defaults.tlsContainerRef;
    const wanted = spec.listeners.map((p) => ({ p, protocol: listenerProtocol(p, tlsRef) }));
    // Listeners of ports no longer wanted: their pool first (its members and monitor go with it).
    for (const l of listeners) {
      if (wanted.some((w) => w.protocol === l.protocol && w.p.port === l.protocol_port)) continue;
      const pool = pools.find((p) => p.id === l.default_pool_id);
      if (pool !== undefined) return lbApi(LB_OPS.poolDelete, "DELETE", `/lbaas/pools/${pool.id}`);
      return lbApi(LB_OPS.listenerDelete, "DELETE", `/lbaas/listeners/${l.id}`);
    }
    for (const [i, { p, protocol }] of wanted.entries()) {
      const cidrs = spec.sourceRanges.length === 0 ? null : [...spec.sourceRanges].sort();
      const headers = httpish(protocol) && s.xForwardedFor ? { "X-Forwarded-For": "true" } : {};
      const tls = protocol === "TERMINATED_HTTPS" ? tlsRef : undefined;
      const listenerBody = {
        ...s.timeouts,
        ...(cidrs !== null && { allowed_cidrs: cidrs }),
        ...(httpish(protocol) && { insert_headers: headers }),
        ...(tls !== undefined && { default_tls_container_ref: tls }),
      };
      const l = listeners.find((x) => x.protocol === protocol && x.protocol_port === p.port);
      if (l === undefined)
        return lbApi(LB_OPS.listenerCreate, "POST", "/lbaas/listeners", {
          listener: {
            loadbalancer_id: lb.id,
            protocol,
            protocol_port: p.port,
            name: `listener_${i}_${lb.name}`.slice(0, 255),
            ...listenerBody,
          },
        });
      const haveCidrs =
        l.allowed_cidrs === null || l.allowed_cidrs === undefined || l.allowed_cidrs.length === 0
          ? null
          : [...l.allowed_cidrs].sort();
      const timeoutsDiffer = Object.entries(s.timeouts).some(([k, v]) => l[k] !== v);
      const certificateDiffers = tls !== undefined && l["default_tls_container_ref"] !== tls;
      if (JSON.stringify(haveCidrs) !== JSON.stringify(cidrs) || timeoutsDiffer || certificateDiffers)
        return lbApi(LB_OPS.listenerUpdate, "PUT", `/lbaas/listeners/${l.id}`, {
          listener: { ...listenerBody, allowed_cidrs: cidrs ?? [] },
        });
      // A TERMINATED_HTTPS listener hands plain HTTP to its pool, as upstream builds it.
      const poolProtocol = p.proxyProtocol ? "PROXY" : protocol === "TERMINATED_HTTPS" ? "HTTP" : protocol;
      const persistence = spec.sessionAffinity === "ClientIP" ? { type: "SOURCE_IP" } : null;
      const monitorPort = d.monitorOn && this.httpMonitors() ? healthCheckNodePort(spec) : undefined;
      const poolTags = [
        `${NODE_PORT_TAG}${p.nodePort}`,
        ...(monitorPort === undefined ? [] : [`${MONITOR_PORT_TAG}${monitorPort}`]),
      ];
      const pool = pools.find((x) => x.id === l.default_pool_id);
      if (pool === undefined)
        return lbApi(LB_OPS.poolCreate, "POST", "/lbaas/pools", {
          pool: {
            listener_id: l.id,
            protocol: poolProtocol,
            lb_algorithm: d.method,
            name: `pool_${i}_${lb.name}`.slice(0, 255),
            session_persistence: persistence,
            tags: poolTags,
          },
        });
      if (pool.protocol !== poolProtocol)
        return lbApi(LB_OPS.poolDelete, "DELETE", `/lbaas/pools/${pool.id}`);
      const tagsDiffer =
        poolTags.some((t) => !(pool.tags ?? []).includes(t)) ||
        (pool.tags ?? []).some(
          (t) => (t.startsWith(NODE_PORT_TAG) || t.startsWith(MONITOR_PORT_TAG)) && !poolTags.includes(t),
        );
      if (
        pool.lb_algorithm !== d.method ||
        (pool.session_persistence?.type ?? null) !== (persistence?.type ?? null) ||
        tagsDiffer
      )
        return lbApi(LB_OPS.poolUpdate, "PUT", `/lbaas/pools/${pool.id}`, {
          pool: {
            lb_algorithm: d.method,
            session_persistence: persistence,
            tags: [
              ...(pool.tags ?? []).filter(
                (t) => !t.startsWith(NODE_PORT_TAG) && !t.startsWith(MONITOR_PORT_TAG),
              ),
              ...poolTags,
            ],
          },
        });
      const members = await this.members(pool, signal);
      const desired = this.desiredMembers(spec.backends, d.ips, p.nodePort, monitorPort, d.memberSubnet);
      if (!sameMembers(members, desired))
        return lbApi(LB_OPS.membersReplace, "PUT", `/lbaas/pools/${pool.id}/members`, { members: desired });
      const monitor = await this.monitor(pool, signal);
      const hc = spec.healthCheck;
      const type = this.monitorType(spec, protocol, monitorPort);
      const monitorBody = {
        delay: hc.intervalSeconds,
        timeout: hc.timeoutSeconds,
        max_retries: hc.healthyThreshold,
        max_retries_down: hc.unhealthyThreshold,
        ...(type === "HTTP" && { url_path: hc.path || "/" }),
      };
      if (d.monitorOn && monitor === undefined)
        return lbApi(LB_OPS.monitorCreate, "POST", "/lbaas/healthmonitors", {
          healthmonitor: {
            pool_id: pool.id,
            type,
            name: `monitor_${i}_${lb.name}`.slice(0, 255),
            ...monitorBody,
          },
        });
      if (d.monitorOn && monitor !== undefined) {
        if (monitor.type !== type)
          return lbApi(LB_OPS.monitorDelete, "DELETE", `/lbaas/healthmonitors/${monitor.id}`);
        const differs = Object.entries(monitorBody).some(
          ([k, v]) => (monitor as unknown as Record<string, unknown>)[k] !== v,
        );
        if (differs)
          return lbApi(LB_OPS.monitorUpdate, "PUT", `/lbaas/healthmonitors/${monitor.id}`, {
            healthmonitor: monitorBody,
          });
      }
      if (!d.monitorOn && monitor !== undefined)
        return lbApi(LB_OPS.monitorDelete, "DELETE", `/lbaas/healthmonitors/${monitor.id}`);
    }
    return undefined;
  }

  /**
   * Octavia's OVN provider takes no HTTP monitor (upstream's canUseHTTPMonitor). Upstream also
   * asks Octavia's version for HTTP monitors on UDP pools (API 2.16, Ussuri); it is assumed here.
   */
  private httpMonitors(): boolean {
    return this.defaults.provider !== "ovn";
  }

  /**
   * As upstream's buildMonitorCreateOpts: HTTP GET /healthz on the members' monitor_port (the
   * health-check node port) for externalTrafficPolicy Local, UDP ports included; else the port's
   * own protocol (UDP-CONNECT, TCP), or HTTP where the Service's health check asks for it.
   */
  private monitorType(spec: LoadBalancerSpec, protocol: string, monitorPort: number | undefined): string {
    if (monitorPort !== undefined) return "HTTP";
    if (protocol === "UDP") return "UDP-CONNECT";
    const local = healthCheckNodePort(spec) !== undefined;
    return spec.healthCheck.protocol === "HTTP" && !local && this.httpMonitors() ? "HTTP" : "TCP";
  }

  private desiredMembers(
    backends: readonly string[],
    ips: Map<string, NodeIP>,
    nodePort: number,
    monitorPort: number | undefined,
    subnet: string | undefined,
  ): Record<string, unknown>[] {
    return backends
      .map((b) => ({
        address: ips.get(b)?.ip ?? "",
        protocol_port: nodePort,
        name: b,
        ...(monitorPort !== undefined && { monitor_port: monitorPort }),
        ...(subnet !== undefined && { subnet_id: subnet }),
      }))
      .sort((a, b) => a.address.localeCompare(b.address));
  }

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
    backendAnnotations?: Readonly<Record<string, Readonly<Record<string, string>>>>,
  ): Promise<undefined | InProgress> {
    const lb = await this.owned(target, signal);
    if (lb === undefined)
      throw new NeedsEnsureError(`no load balancer of ${target.cluster}/${target.serviceUid}`);
    if (lb.provisioning_status.startsWith("PENDING_"))
      return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} ${lb.provisioning_status}`);
    if (lb.provisioning_status === "ERROR") throw new NeedsEnsureError(`load balancer ${lb.id} is in ERROR`);
    const pools = await this.pools(lb, signal);
    const members = new Map<string, WireMember[]>();
    for (const pool of pools) members.set(pool.id, await this.members(pool, signal));
    // The subnet the members are on (ensure chose it, annotation included), else the defaults'.
    const memberSubnet =
      [...members.values()].flat()[0]?.subnet_id ?? this.defaults.memberSubnetId ?? lb.vip_subnet_id;
    const ips = await this.nodeIPs(backends, memberSubnet, signal);
    if (backends.some((b) => !ips.has(b))) throw new NeedsEnsureError("a backend has no Neutron port");
    for (const pool of pools) {
      const nodePort = Number(tagValue(pool.tags, NODE_PORT_TAG.slice(0, -1)));
      if (!Number.isSafeInteger(nodePort) || nodePort <= 0)
        throw new NeedsEnsureError(`pool ${pool.id} has no node-port tag`);
      const monitorRaw = tagValue(pool.tags, MONITOR_PORT_TAG.slice(0, -1));
      const have = members.get(pool.id) ?? [];
      const desired = this.desiredMembers(
        backends,
        ips,
        nodePort,
        monitorRaw === undefined ? undefined : Number(monitorRaw),
        memberSubnet,
      );
      if (sameMembers(have, desired)) continue;
      const pending = await this.run(
        lb,
        [
          () =>
            this.client.request(
              "load-balancer",
              LB_OPS.membersReplace,
              "PUT",
              `/lbaas/pools/${pool.id}/members`,
              {
                body: { members: desired },
                signal,
              },
            ),
        ],
        signal,
      );
      if (pending !== undefined) return pending;
    }
    const ports = [...ips.values()].map((n) => n.port);
    if (this.sgs !== undefined && !(await this.sgs.updatePorts(target, ports, signal)))
      throw new NeedsEnsureError(`no node-port security group of ${target.cluster}/${target.serviceUid}`);
    const fresh = await this.byId(lb.id, signal);
    if (fresh === undefined) throw new NeedsEnsureError(`load balancer ${lb.id} gone`);
    const wanted = [
      ...(fresh.tags ?? []).filter((t) => !t.startsWith(`${DIGEST_TAG_BACKENDS}=`)),
      tag(DIGEST_TAG_BACKENDS, backendsDigest(backends, backendAnnotations)),
    ];
    return this.putTags(fresh, wanted, signal);
  }

  /** Cascade delete (Octavia deletes listeners, pools, members and monitors), then the floating IP. */
  async ensureDeleted(
    target: ServiceTarget,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<undefined | InProgress> {
    const s = this.settings(undefined, hints);
    const lb = await this.owned(target, signal);
    if (lb !== undefined) {
      if (lb.provisioning_status.startsWith("PENDING_"))
        return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} ${lb.provisioning_status}`);
      // The node-port security group first, while the load balancer's name still says whose it
      // is (a group a cut-short ensure left untagged is found by that name).
      await this.sgs?.remove(target, serviceNameOf(lb.name), signal);
      // The floating IP next, while the VIP port still names it (on our VIP: ours to release).
      const fip = await this.fipOf(lb, signal);
      if (fip !== undefined) await this.releaseFip(fip, s.keepFloatingIp, signal);
      try {
        await this.client.request("load-balancer", LB_OPS.delete, "DELETE", `/lbaas/loadbalancers/${lb.id}`, {
          query: { cascade: "true" },
          signal,
        });
      } catch (err) {
        if (isImmutable(err))
          return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} busy (Octavia 409)`);
        if (!isGone(err)) throw err;
      }
      const after = await this.byId(lb.id, signal);
      if (after !== undefined)
        return inProgress(PENDING_RETRY_MS, `load balancer ${lb.id} ${after.provisioning_status}`);
    }
    await this.sgs?.remove(target, undefined, signal);
    return undefined;
  }

  /** One page of the project's load balancers that carry this hub's owner tags. */
  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const page = await this.client.page<WireLb>(
      "load-balancer",
      LB_OPS.list,
      "/lbaas/loadbalancers",
      "loadbalancers",
      pageToken,
      {
        signal,
      },
    );
    const mine = page.items.flatMap((lb) => {
      const owner = ownerOfTags(lb.tags);
      return owner === undefined ? [] : [{ lb, owner }];
    });
    // What clients reach is the floating IP of a public Service: one Neutron call per 40 VIP ports.
    const fips = await this.fipsOn(
      mine.map((m) => m.lb.vip_port_id),
      signal,
    );
    const items = mine.map(({ lb, owner }) => {
      const specDigest = tagValue(lb.tags, DIGEST_TAG_SPEC);
      const backends = tagValue(lb.tags, DIGEST_TAG_BACKENDS);
      return {
        id: lb.id,
        name: lb.name,
        owner,
        ingress: [{ ip: fips.get(lb.vip_port_id) ?? lb.vip_address }],
        ...(specDigest !== undefined && { specDigest }),
        ...(backends !== undefined && { backendsDigest: backends }),
      };
    });
    return page.next === undefined ? { items } : { items, nextPageToken: page.next };
  }
}

function sameMembers(have: readonly WireMember[], want: readonly Record<string, unknown>[]): boolean {
  const key = (m: { address?: unknown; protocol_port?: unknown; monitor_port?: unknown }) =>
    `${String(m.address)}:${String(m.protocol_port)}:${m.monitor_port ?? ""}`;
  const a = have.map(key).sort();
  const b = want.map(key).sort();
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
