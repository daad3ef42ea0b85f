/**
 * Load balancers as cloud-provider-azure builds them (azure_loadbalancer.go): one shared Standard
 * load balancer per cluster (`<cluster>`, `<cluster>-internal`), in it per Service a frontend IP
 * configuration `a<uid>` (public: the Service's public IP `<cluster>-a<uid>` or the one
 * `azure-pip-name` names; internal: on the cluster's subnet), a rule and (TCP, or Local) a probe
 * per port and protocol (`a<uid>-<Protocol>-<port>`), and the cluster's backend pool `<cluster>`; NSG rules
 * `a<uid>-<Protocol>-<port>-<source>` admit the source ranges (or service tags) to the frontend
 * (with floating IP off, to the backends' node ports), and the Service's addresses leave the
 * shared rules cloud-provider-azure made (vendor-rules.ts).
 *
 * The backend pool holds the nodes by IP address (loadBalancerBackendAddresses), upstream's
 * `nodeIP` mode, not by NIC IP configuration (its default): a node-set change is then one write
 * of the load balancer, not one NIC PUT per node. Every Service's change to the load balancer
 * and to the NSG goes through SharedWriter: the changes pending at once are one PUT with If-Match.
 * The shared pool holds the cluster's backend set (every Service of a cluster has the same).
 */
import type {
  BackendAddressPool,
  FrontendIPConfiguration,
  LoadBalancer,
  LoadBalancingRule,
  NetworkInterface,
  NetworkSecurityGroup,
  Probe,
  PublicIPAddress,
  SecurityRule,
} from "@azure/arm-network";
import { AnnotationError } from "../../annotation-bounds.js";
import { CloudError, NeedsEnsureError, OperationFailedError } from "../../errors.js";
import { backendsDigest, loadBalancerSpecDigest } from "../../naming.js";
import {
  checksHealthCheckNodePort,
  type InProgress,
  inProgress,
  type LbIngress,
  type LbServiceHints,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  lbOwner,
  type OwnedLoadBalancer,
  type OwnedLoadBalancerPage,
  type ProviderContext,
  type ServiceTarget,
} from "../../provider.js";
import { AZURE_ANNOTATIONS, type AzureLbAnnotations, readAzureAnnotations } from "./annotations.js";
import type { AzureApi } from "./api.js";
import { hasCode, isNotFound } from "./errors.js";
import { type AzureInstances, firstPage, primaryIpConfig } from "./instances.js";
import {
  fromTemplate,
  frontendName,
  loadBalancerName,
  publicIpName,
  ruleName,
  securityRuleName,
  UPSTREAM_CLUSTER_TAG,
  UPSTREAM_SERVICE_TAG,
} from "./names.js";
import { NicPools, type PoolMode, poolMode } from "./nic-pool.js";
import type { AzureOptions } from "./options.js";
import { readServices, TAG_BACKENDS, TAG_CLUSTER, TAG_SERVICE_UID, withServices } from "./records.js";
import { type ObjectIo, SharedWriter, type WriteResult } from "./shared-writer.js";
import {
  destinationsOf,
  MAX_PRIORITY,
  MIN_PRIORITY,
  type Withdrawal,
  withDestinations,
  withdrawFromVendorRules,
} from "./vendor-rules.js";

const NETWORK = "Microsoft.Network";

const strip = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const lower = (s: string | undefined) => (s ?? "").toLowerCase();

export class AzureLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    sessionAffinity: true,
    proxyProtocol: false,
    internal: true,
    protocols: ["TCP", "UDP"],
    // Azure Standard Load Balancer: 1,000 backend instances per pool (networking limits).
    maxBackends: 1_000,
    // Nothing built depends on a node's annotations: backends digests are of the ids alone.
    readsNodeAnnotations: false,
    // Floating IP sends traffic to the Service port; a TCP probe still goes to the node port,
    // an HTTP probe (externalTrafficPolicy Local, or a path set) to its own port.
    usesNodePorts: (spec) =>
      !(
        readAzureAnnotations(spec.annotations ?? {}).floatingIp &&
        spec.healthCheck.protocol === "HTTP" &&
        spec.healthCheck.port > 0
      ),
  };
  readonly lbWriter = new SharedWriter<LoadBalancer>();
  readonly nsgWriter = new SharedWriter<NetworkSecurityGroup>();
  private readonly rg: string;
  private readonly nicPools: NicPools;
  /** The NIC listings `backendIps` last started because a recent one lacked a backend. */
  private freshNics:
    | {
        readonly atMs: number;
        readonly nics: ReadonlyMap<string, Promise<ReadonlyMap<string, NetworkInterface>>>;
      }
    | undefined;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: AzureApi,
    private readonly instances: AzureInstances,
    private readonly options: AzureOptions,
  ) {
    this.rg = options.resourceGroup;
    this.nicPools = new NicPools(api, instances);
  }

  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    readAzureAnnotations(annotations);
  }

  /** The cluster's name in Azure's names: the vendor CCM's when adopting from it, else the cluster's. */
  private clusterName(t: ServiceTarget): string {
    return t.scope.adoptFrom?.vendorCcmClusterName ?? t.cluster;
  }

  private names(
    t: ServiceTarget,
    spec: { internal: boolean; annotations?: Readonly<Record<string, string>> },
  ) {
    const a = readAzureAnnotations(spec.annotations ?? {});
    const cluster = this.clusterName(t);
    const internalSubnet = spec.internal ? a.internalSubnet : undefined;
    return {
      a,
      cluster,
      lb: loadBalancerName(cluster, spec.internal),
      frontend: frontendName(t.serviceUid, internalSubnet),
      prefix: frontendName(t.serviceUid),
      pip: a.pipName ?? publicIpName(cluster, t.serviceUid),
      pipRg: a.pipResourceGroup ?? this.rg,
      subnet: internalSubnet ?? this.options.subnetName,
    };
  }

  /** The cluster's virtual network (internal frontends' subnets, backend addresses). */
  private vnetId(t: ServiceTarget): string {
    const vnet = t.network ?? this.ctx.account.network ?? "";
    return this.api.id(this.options.vnetResourceGroup ?? this.rg, `${NETWORK}/virtualNetworks`, vnet);
  }

  /**
   * Removes the Service's frontend, probes, rules and record from a load balancer, decided on the
   * object the cluster's coalesced write fetches (no read of its own: a wave of Services looking
   * at the load balancer of the other kind reads it once). It goes with its last frontend, after
   * the NICs that name its pool leave it (NIC-based pools).
   */
  private async removeFrontend(
    t: ServiceTarget,
    n: { readonly lb: string; readonly prefix: string; readonly cluster: string },
    signal?: AbortSignal,
  ): Promise<WriteResult<LoadBalancer>> {
    const io = this.lbIo(n.lb, signal);
    let nicPool: string | undefined;
    const removed = await this.lbWriter.apply(n.lb, io, (cur) => {
      nicPool = undefined;
      const after = removeOwner(cur, n.prefix, t.serviceUid);
      if (cur === undefined || after !== undefined) return after;
      const pool = cur.backendAddressPools?.find((p) => p.name === n.cluster);
      if (pool?.id === undefined || poolMode(pool, "nodeIP") !== "nodeIPConfiguration") return after;
      // The last frontend of a NIC-based pool: kept until its NICs have left the pool.
      nicPool = pool.id;
      return cur;
    });
    // Another write of it still running: nothing to wait for when none of it is the Service's.
    if (removed.pending && !holdsOwner(removed.value, n.prefix, t.serviceUid))
      return { value: removed.value, pending: false };
    if (removed.pending || nicPool === undefined) return removed;
    const synced = await this.nicPools.sync(nicPool, [], signal);
    if (synced.pending) return { value: removed.value, pending: true };
    return this.lbWriter.apply(n.lb, io, (cur) => removeOwner(cur, n.prefix, t.serviceUid));
  }

  private lbId(name: string): string {
    return this.api.id(this.rg, `${NETWORK}/loadBalancers`, name);
  }

  // ---- reads -----------------------------------------------------------------------------------

  private async readLb(name: string, signal?: AbortSignal): Promise<LoadBalancer | undefined> {
    try {
      return await this.api.call(
        "loadBalancers.get",
        (c, o) => c.network.loadBalancers.get(this.rg, name, o),
        signal,
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async readPip(
    rg: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<PublicIPAddress | undefined> {
    try {
      return await this.api.call(
        "publicIPAddresses.get",
        (c, o) => c.network.publicIPAddresses.get(rg, name, o),
        signal,
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async get(t: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const found = await this.frontendOf(t, signal);
    if (found === undefined) return undefined;
    const { n, lb, fe } = found;
    const ingress = await this.ingressOf(fe, signal);
    const pool = lb.backendAddressPools?.find((p) => p.name === n.cluster);
    return {
      id: fe.id ?? "",
      name: `${n.lb}/${fe.name}`,
      owner: lbOwner(t),
      ingress,
      backends: await this.backendsOf(pool, signal),
    };
  }

  /** The Service's frontend and the load balancer holding it: the public one, else the internal. */
  private async frontendOf(t: ServiceTarget, signal?: AbortSignal) {
    for (const internal of [false, true]) {
      const n = this.names(t, { internal });
      const lb = await this.readLb(n.lb, signal);
      const fe = lb?.frontendIPConfigurations?.find(
        (f) => f.name === n.prefix || f.name?.startsWith(`${n.prefix}-`) === true,
      );
      if (lb === undefined || fe === undefined) continue;
      return { n, lb, fe };
    }
    return undefined;
  }

  private async ingressOf(fe: FrontendIPConfiguration, signal?: AbortSignal): Promise<LbIngress[]> {
    if (fe.privateIPAddress !== undefined) return [{ ip: fe.privateIPAddress }];
    const id = fe.publicIPAddress?.id;
    if (id === undefined) return [];
    const pip = await this.pipById(id, signal);
    return pip?.ipAddress === undefined ? [] : [{ ip: pip.ipAddress }];
  }

  /** The instance ids behind a pool: the NICs holding its addresses, or naming it (NIC-based). */
  private async backendsOf(pool: BackendAddressPool | undefined, signal?: AbortSignal): Promise<string[]> {
    const ips = new Set((pool?.loadBalancerBackendAddresses ?? []).map((b) => b.ipAddress ?? ""));
    const nics = new Set(
      (pool?.backendIPConfigurations ?? []).map((b) =>
        lower(b.id?.replace(/\/ipConfigurations\/[^/]+$/i, "")),
      ),
    );
    if (ips.size === 0 && nics.size === 0) return [];
    const out: string[] = [];
    for (const rg of this.instances.groups)
      for (const nic of (await this.instances.nicsOf(rg, signal)).values()) {
        const ip = primaryIpConfig(nic)?.privateIPAddress;
        const vm = nic.virtualMachine?.id;
        if (vm !== undefined && ((ip !== undefined && ips.has(ip)) || nics.has(lower(nic.id))))
          out.push(this.instances.parseProviderID(`azure://${vm}`) ?? vm);
      }
    return out.sort();
  }

  /**
   * Backend instance id → its primary private IP (the NICs of the nodes' resource groups): from
   * the groups' recent listings while they hold every backend, else from fresh ones (a node newer
   * than the listing), so a pool never lacks a backend because of a listing's age.
   */
  private async backendIps(backends: readonly string[], signal?: AbortSignal): Promise<Map<string, string>> {
    const want = new Set(backends.map(lower));
    if (want.size === 0) return new Map();
    const missedAt = this.api.now();
    const recent = await this.ipsOf(want, (rg) => this.instances.recentNicsOf(rg, () => true, signal));
    if (recent.size === want.size) return recent;
    // Every Service of a node's join misses it at once: one fresh listing serves them all.
    let fresh = this.freshNics;
    if (fresh === undefined || fresh.atMs < missedAt) {
      const nics = new Map<string, Promise<ReadonlyMap<string, NetworkInterface>>>();
      for (const rg of this.instances.groups) nics.set(rg, this.instances.nicsOf(rg, signal));
      fresh = { atMs: this.api.now(), nics };
      this.freshNics = fresh;
    }
    const listed = fresh.nics;
    return this.ipsOf(want, (rg) => listed.get(rg) ?? this.instances.nicsOf(rg, signal));
  }

  private async ipsOf(
    want: ReadonlySet<string>,
    nicsOf: (rg: string) => Promise<ReadonlyMap<string, NetworkInterface>>,
  ): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const rg of this.instances.groups)
      for (const nic of (await nicsOf(rg)).values()) {
        const vm = nic.virtualMachine?.id;
        const id = vm === undefined ? undefined : this.instances.parseProviderID(`azure://${vm}`);
        const ip = primaryIpConfig(nic)?.privateIPAddress;
        if (id !== undefined && ip !== undefined && want.has(lower(id))) out.set(lower(id), ip);
      }
    return out;
  }

  // ---- writes ----------------------------------------------------------------------------------

  private lbIo(name: string, signal?: AbortSignal): ObjectIo<LoadBalancer> {
    return {
      read: async () => {
        const lb = await this.readLb(name, signal);
        return lb === undefined ? undefined : { value: strip(lb), etag: lb.etag };
      },
      put: async (value, etag) => {
        const r = await this.api.call(
          "loadBalancers.createOrUpdate",
          async (c, o) => {
            const poller = await c.network.loadBalancers.beginCreateOrUpdate(this.rg, name, value, {
              ...o,
              ...(etag !== undefined && { requestOptions: { customHeaders: { "If-Match": etag } } }),
            });
            return { done: poller.isDone(), result: poller.getResult() };
          },
          signal,
        );
        return { value: r.result ?? value, pending: !r.done };
      },
      delete: async (etag) => {
        const r = await this.api.call(
          "loadBalancers.delete",
          async (c, o) => {
            const poller = await c.network.loadBalancers.beginDelete(this.rg, name, {
              ...o,
              ...(etag !== undefined && { requestOptions: { customHeaders: { "If-Match": etag } } }),
            });
            return poller.isDone();
          },
          signal,
        );
        return { value: undefined, pending: !r };
      },
      same: (a, b) => JSON.stringify(comparable(a)) === JSON.stringify(comparable(b)),
    };
  }

  private nsgIo(name: string, signal?: AbortSignal): ObjectIo<NetworkSecurityGroup> {
    return {
      read: async () => {
        try {
          const nsg = await this.api.call(
            "networkSecurityGroups.get",
            (c, o) => c.network.networkSecurityGroups.get(this.rg, name, o),
            signal,
          );
          return { value: strip(nsg), etag: nsg.etag };
        } catch (err) {
          if (isNotFound(err))
            throw new CloudError(`the cluster's network security group ${this.rg}/${name} does not exist`);
          throw err;
        }
      },
      put: async (value, etag) => {
        const done = await this.api.call(
          "networkSecurityGroups.createOrUpdate",
          async (c, o) => {
            const poller = await c.network.networkSecurityGroups.beginCreateOrUpdate(this.rg, name, value, {
              ...o,
              ...(etag !== undefined && { requestOptions: { customHeaders: { "If-Match": etag } } }),
            });
            return poller.isDone();
          },
          signal,
        );
        return { value, pending: !done };
      },
      delete: () => Promise.reject(new Error("the provider never deletes a cluster's NSG")),
      same: (a, b) =>
        JSON.stringify(comparableRules(a?.securityRules)) ===
        JSON.stringify(comparableRules(b?.securityRules)),
    };
  }

  async ensure(
    t: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress> {
    // The cluster's load balancer and NSG are held while this Service reads what its edits need:
    // the writes of a wave of Service changes wait for each other's edits (shared-writer.ts).
    const n = this.names(t, spec);
    // Both kinds of ranges are refused before any write (upstream's ErrSetBothLoadBalancerSourceRanges…).
    allowedSources(spec, n.a);
    // The other kind's frontend of this Service (internal switched to public, say) goes first,
    // before the holds: a Service waiting on the other load balancer's write holds nothing.
    const other = this.names(t, { ...spec, internal: !spec.internal });
    const removed = await this.removeFrontend(t, other, signal);
    if (removed.pending) return inProgress(this.options.operationPollMs, "load balancer updating");
    const template = this.options.securityGroupName;
    const release = {
      lb: this.lbWriter.hold(n.lb),
      nsg: template === undefined ? () => undefined : this.nsgWriter.hold(fromTemplate(template, t.cluster)),
    };
    try {
      return await this.ensureHeld(t, spec, release, signal, hints);
    } finally {
      release.lb();
      release.nsg();
    }
  }

  private async ensureHeld(
    t: ServiceTarget,
    spec: LoadBalancerSpec,
    release: { readonly lb: () => void; readonly nsg: () => void },
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress> {
    const n = this.names(t, spec);
    const poll = this.options.operationPollMs;
    let pipId: string | undefined;
    let pipIp: string | undefined;
    if (!spec.internal) {
      const pip = await this.ensurePip(t, n, spec, signal, hints);
      if (pip === "pending") return inProgress(poll, "public IP provisioning");
      pipId = pip.id;
      pipIp = pip.ipAddress;
    }
    const ips = await this.backendIps(spec.backends, signal);
    const vnetId = this.vnetId(t);
    const subnetId = `${vnetId}/subnets/${n.subnet}`;
    const lbId = this.lbId(n.lb);
    const floating = n.a.floatingIp;
    const privateIp = spec.internal ? (n.a.ipv4 ?? spec.loadBalancerIP) : undefined;
    const digest = loadBalancerSpecDigest(spec);
    // The NSG rules go first when the frontend's address is known before the load-balancer write
    // (a public IP, a static internal address): that write then records the spec digest. An
    // internal address Azure picks is known only after it: the digest takes one more write then.
    const known = spec.internal ? privateIp : pipIp;
    const nsgTarget = (frontendIp: string): NsgTarget =>
      floating
        ? { frontendIp }
        : { frontendIp, nodeIps: [...ips.values()], nodePorts: nodePortsOf(spec.listeners) };
    if (known !== undefined) {
      const nsg = await this.ensureNsg(t, n, spec, nsgTarget(known), signal, release.nsg);
      if (nsg?.pending === true) return inProgress(poll, "network security group updating");
    }
    const nsgAfter = this.options.securityGroupName !== undefined && known === undefined;
    // Its NSG rules come after the load balancer's write: others' NSG writes do not wait for it.
    if (nsgAfter) release.nsg();
    const backends = backendsDigest(spec.backends);
    let mode: PoolMode = this.options.backendPoolType;
    const written = await this.lbWriter.apply(
      n.lb,
      this.lbIo(n.lb, signal),
      (cur) => {
        const recorded = readServices(cur?.tags).get(t.serviceUid);
        mode = poolMode(
          cur?.backendAddressPools?.find((p) => p.name === n.cluster),
          this.options.backendPoolType,
        );
        const lb = removeOwner(cur, n.prefix, t.serviceUid, n.frontend) ?? newLb(this.api.region);
        // NIC-based: the backends are the NICs', written after this; until then no digest claims them.
        const pool = mode === "nodeIP" || lb.tags?.[TAG_BACKENDS] === backends ? { backends } : undefined;
        if (pool === undefined && lb.tags !== undefined) delete lb.tags[TAG_BACKENDS];
        lb.tags = record(
          lb.tags,
          t.cluster,
          t.serviceUid,
          nsgAfter && recorded !== digest ? undefined : digest,
          pool,
        );
        const props = lb;
        const feId = `${lbId}/frontendIPConfigurations/${n.frontend}`;
        const poolId = `${lbId}/backendAddressPools/${n.cluster}`;
        const fe: FrontendIPConfiguration = spec.internal
          ? {
              name: n.frontend,
              subnet: { id: subnetId },
              ...(privateIp !== undefined
                ? { privateIPAddress: privateIp, privateIPAllocationMethod: "Static" }
                : { privateIPAllocationMethod: "Dynamic" }),
            }
          : { name: n.frontend, publicIPAddress: { id: pipId } };
        const existing = props.frontendIPConfigurations?.find((f) => f.name === n.frontend);
        // A dynamic internal address stays what Azure gave it.
        const keepIp = spec.internal && privateIp === undefined ? existing?.privateIPAddress : undefined;
        props.frontendIPConfigurations = [
          ...(props.frontendIPConfigurations ?? []).filter((f) => f.name !== n.frontend),
          { ...fe, ...(keepIp !== undefined && { privateIPAddress: keepIp }) },
        ];
        setPool(lb, n.cluster, mode === "nodeIP" ? { backends: spec.backends, ips, vnetId } : undefined);
        const idle = Math.min(100, Math.max(4, Math.ceil(spec.idleTimeoutSeconds / 60)));
        const http = spec.healthCheck.protocol === "HTTP";
        const local = checksHealthCheckNodePort(spec);
        for (const l of spec.listeners) {
          const protocol = l.protocol === "UDP" ? "Udp" : "Tcp";
          const name = ruleName(n.frontend, l.protocol, l.port);
          // Upstream probes no UDP port (healthprobe.go:57-59) but for externalTrafficPolicy
          // Local, whose HTTP probe on the health-check node port serves every rule.
          const probed = protocol === "Tcp" || local;
          const probe: Probe = {
            name,
            protocol: http ? "Http" : "Tcp",
            port: http ? spec.healthCheck.port : l.nodePort,
            ...(http && { requestPath: spec.healthCheck.path || "/healthz" }),
            intervalInSeconds: spec.healthCheck.intervalSeconds,
            numberOfProbes: spec.healthCheck.unhealthyThreshold,
          };
          const rule: LoadBalancingRule = {
            name,
            protocol,
            frontendPort: l.port,
            backendPort: floating ? l.port : l.nodePort,
            frontendIPConfiguration: { id: feId },
            backendAddressPool: { id: poolId },
            ...(probed && { probe: { id: `${lbId}/probes/${name}` } }),
            enableFloatingIP: floating,
            loadDistribution: spec.sessionAffinity === "ClientIP" ? "SourceIP" : "Default",
            ...(protocol === "Tcp" && { idleTimeoutInMinutes: idle, enableTcpReset: true }),
            disableOutboundSnat: false,
          };
          if (probed) props.probes = [...(props.probes ?? []), probe];
          props.loadBalancingRules = [...(props.loadBalancingRules ?? []), rule];
        }
        return lb;
      },
      release.lb,
    );
    if (written.pending) return inProgress(poll, "load balancer updating");
    if (written.value?.provisioningState === "Failed")
      throw new OperationFailedError(`load balancer ${n.lb}: provisioning failed`);
    const fe = written.value?.frontendIPConfigurations?.find((f) => f.name === n.frontend);
    const ip = spec.internal ? fe?.privateIPAddress : pipIp;
    if (ip === undefined) return inProgress(poll, "frontend address pending");
    if (nsgAfter) {
      const nsg = await this.ensureNsg(t, n, spec, nsgTarget(ip), signal);
      if (nsg?.pending === true) return inProgress(poll, "network security group updating");
    }
    const nicBased = mode === "nodeIPConfiguration";
    if (nicBased) {
      const synced = await this.nicPools.sync(
        `${lbId}/backendAddressPools/${n.cluster}`,
        spec.backends,
        signal,
      );
      if (synced.pending) return inProgress(poll, "network interfaces updating");
    }
    if (nsgAfter || nicBased) {
      // What the writes above made true, recorded last (one PUT for every Service pending).
      const recorded = await this.lbWriter.apply(n.lb, this.lbIo(n.lb, signal), (cur) => {
        if (cur?.frontendIPConfigurations?.some((f) => f.name === n.frontend) !== true) return cur;
        const made = nsgAfter ? digest : readServices(cur.tags).get(t.serviceUid);
        return {
          ...cur,
          tags: record(cur.tags, t.cluster, t.serviceUid, made, nicBased ? { backends } : undefined),
        };
      });
      if (recorded.pending) return inProgress(poll, "load balancer updating");
    }
    return [{ ip }];
  }

  /** The Service's public IP: made (tagged for its owner), adopted from upstream with the opt-in, or the user's. */
  private async ensurePip(
    t: ServiceTarget,
    n: ReturnType<AzureLoadBalancers["names"]>,
    spec: LoadBalancerSpec,
    signal: AbortSignal | undefined,
    _hints: LbServiceHints | undefined,
  ): Promise<PublicIPAddress | "pending"> {
    const existing = await this.readPip(n.pipRg, n.pip, signal);
    const userNamed = n.a.pipName !== undefined;
    if (existing !== undefined) {
      const tags = existing.tags ?? {};
      const ours = tags[TAG_CLUSTER] === t.cluster && tags[TAG_SERVICE_UID] === t.serviceUid;
      const upstreams =
        t.scope.adoptFrom !== undefined &&
        tags[UPSTREAM_CLUSTER_TAG] === t.scope.adoptFrom.vendorCcmClusterName;
      if (!ours && !upstreams && !userNamed)
        throw new CloudError(
          `public IP ${n.pipRg}/${n.pip} exists and is not this Service's (no owner tags)`,
        );
      const ready = existing.provisioningState === "Succeeded";
      if (!ready) {
        if (existing.provisioningState === "Failed")
          throw new OperationFailedError(`public IP ${n.pip}: provisioning failed`);
        return "pending";
      }
      if (ours || userNamed) return existing;
      // Adopted from cloud-provider-azure: marked as the owner's, the address kept.
    } else if (userNamed) {
      throw new AnnotationError(
        AZURE_ANNOTATIONS.pipName,
        n.a.pipName ?? "",
        "the name of an existing public IP",
      );
    }
    const body: PublicIPAddress = {
      ...(existing !== undefined ? strip(existing) : {}),
      location: this.api.region,
      sku: { name: "Standard" },
      publicIPAllocationMethod: "Static",
      publicIPAddressVersion: "IPv4",
      ...(n.a.dnsLabelName !== undefined && { dnsSettings: { domainNameLabel: n.a.dnsLabelName } }),
      tags: {
        ...(existing?.tags ?? {}),
        [TAG_CLUSTER]: t.cluster,
        [TAG_SERVICE_UID]: t.serviceUid,
        [UPSTREAM_CLUSTER_TAG]: n.cluster,
        ...(spec.serviceName !== undefined && { [UPSTREAM_SERVICE_TAG]: spec.serviceName }),
      },
    };
    const r = await this.api.call(
      "publicIPAddresses.createOrUpdate",
      async (c, o) => {
        const poller = await c.network.publicIPAddresses.beginCreateOrUpdate(n.pipRg, n.pip, body, o);
        return { done: poller.isDone(), result: poller.getResult() };
      },
      signal,
    );
    if (!r.done || r.result?.ipAddress === undefined) return "pending";
    return r.result;
  }

  private async ensureNsg(
    t: ServiceTarget,
    n: ReturnType<AzureLoadBalancers["names"]>,
    spec: LoadBalancerSpec | undefined,
    target: NsgTarget | undefined,
    signal?: AbortSignal,
    release?: () => void,
  ): Promise<WriteResult<NetworkSecurityGroup> | undefined> {
    const template = this.options.securityGroupName;
    if (template === undefined) return undefined;
    const name = fromTemplate(template, t.cluster);
    return this.nsgWriter.apply(
      name,
      this.nsgIo(name, signal),
      (cur) => {
        if (cur === undefined) return cur;
        const mine = (r: SecurityRule) => r.name?.startsWith(`${n.prefix}-`) === true;
        const others = (cur.securityRules ?? []).filter((r) => !mine(r));
        const kept = withdrawals(target).reduce(withdrawFromVendorRules, others);
        if (spec === undefined || target === undefined) return { ...cur, securityRules: kept };
        const used = new Set(kept.map((r) => r.priority));
        const old = new Map((cur.securityRules ?? []).filter(mine).map((r) => [r.name, r.priority]));
        // A rule keeps its priority; a new one takes the first free from the start (allows) or
        // the end (the deny), as upstream's nextRulePriority.
        const priorityOf = (ruleNameOf: string, fromEnd = false) => {
          let priority = old.get(ruleNameOf);
          if (priority === undefined || used.has(priority)) {
            const step = fromEnd ? -1 : 1;
            priority = fromEnd ? MAX_PRIORITY - 1 : MIN_PRIORITY;
            while (used.has(priority) && priority + step >= MIN_PRIORITY && priority + step <= MAX_PRIORITY)
              priority += step;
          }
          used.add(priority);
          return priority;
        };
        const destinations = target.nodeIps ?? [target.frontendIp];
        if (destinations.length === 0) return { ...cur, securityRules: kept };
        const rules: SecurityRule[] = [];
        for (const l of spec.listeners)
          for (const source of allowedSources(spec, n.a)) {
            const ruleNameOf = securityRuleName(n.frontend, l.protocol, l.port, source);
            rules.push(
              withDestinations(
                {
                  name: ruleNameOf,
                  protocol: l.protocol === "UDP" ? "Udp" : "Tcp",
                  sourcePortRange: "*",
                  destinationPortRange: String(target.nodeIps === undefined ? l.port : l.nodePort),
                  sourceAddressPrefix: source,
                  access: "Allow",
                  direction: "Inbound",
                  priority: priorityOf(ruleNameOf),
                },
                destinations,
              ),
            );
          }
        if (denyAllElse(spec, n.a)) {
          const denyName = `${n.frontend}-deny-all`;
          rules.push(
            withDestinations(
              {
                name: denyName,
                protocol: "*",
                sourcePortRange: "*",
                destinationPortRange: "*",
                sourceAddressPrefix: "*",
                access: "Deny",
                direction: "Inbound",
                priority: priorityOf(denyName, true),
              },
              destinations,
            ),
          );
        }
        return { ...cur, securityRules: [...kept, ...rules] };
      },
      release,
    );
  }

  /**
   * Where the Service's frontend meets the NSG now, read before a delete removes it: its address,
   * and with floating IP off (its rules' `enableFloatingIP`) the backends' addresses and node ports.
   */
  private async currentNsgTarget(t: ServiceTarget, signal?: AbortSignal): Promise<NsgTarget | undefined> {
    const found = await this.frontendOf(t, signal);
    if (found === undefined) return undefined;
    const { n, lb, fe } = found;
    const ip = (await this.ingressOf(fe, signal))[0]?.ip;
    if (ip === undefined) return undefined;
    const fixed = (lb.loadBalancingRules ?? []).filter(
      (r) => r.name?.startsWith(`${n.prefix}-`) === true && r.enableFloatingIP === false,
    );
    if (fixed.length === 0) return { frontendIp: ip };
    const pool = lb.backendAddressPools?.find((p) => p.name === n.cluster);
    const nodeIps = await this.backendIps(await this.backendsOf(pool, signal), signal);
    const nodePorts = new Map<string, number[]>();
    for (const r of fixed)
      nodePorts.set(r.protocol ?? "", [...(nodePorts.get(r.protocol ?? "") ?? []), r.backendPort ?? 0]);
    return { frontendIp: ip, nodeIps: [...nodeIps.values()], nodePorts };
  }

  /**
   * The Service's backends written into the load balancer that holds its frontend (public, else
   * internal), decided on the object the cluster's coalesced write fetches: one read per `PUT`
   * for every Service pending, none of its own. A NIC-based pool has its NICs synced first and
   * the digest recorded by a second write.
   */
  async updateBackends(
    t: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const poll = this.options.operationPollMs;
    const digest = backendsDigest(backends);
    // Addresses for an IP-based pool (the default): known before the write's edit runs.
    const ips = await this.backendIps(backends, signal);
    const vnetId = this.vnetId(t);
    for (const internal of [false, true]) {
      const n = this.names(t, { internal });
      const holds = (cur: LoadBalancer | undefined): cur is LoadBalancer =>
        cur?.frontendIPConfigurations?.some((f) => f.name?.startsWith(n.prefix) === true) === true;
      let found = false;
      let fixed = false;
      let mode: PoolMode = this.options.backendPoolType;
      // Decided on the fetched object (again on each 412 re-read: the last run is what is written).
      const r = await this.lbWriter.apply(n.lb, this.lbIo(n.lb, signal), (cur) => {
        found = holds(cur);
        // Floating IP off: the NSG rules name the backends' addresses, which a whole ensure writes.
        fixed =
          this.options.securityGroupName !== undefined &&
          (cur?.loadBalancingRules ?? []).some(
            (l) => l.name?.startsWith(`${n.prefix}-`) === true && l.enableFloatingIP === false,
          );
        if (!found || fixed || cur === undefined) return cur;
        mode = poolMode(
          cur.backendAddressPools?.find((p) => p.name === n.cluster),
          this.options.backendPoolType,
        );
        if (mode !== "nodeIP") return cur;
        cur.tags = { ...cur.tags, [TAG_BACKENDS]: digest };
        setPool(cur, n.cluster, { backends, ips, vnetId });
        return cur;
      });
      if (r.pending) return inProgress(poll, "load balancer updating");
      if (!found) continue;
      if (fixed) throw new NeedsEnsureError("floating IP off: the NSG rules name the backends' addresses");
      if (mode === "nodeIP") return undefined;
      // NIC-based: the NICs name the pool; only then does the digest claim them.
      const synced = await this.nicPools.sync(
        `${this.lbId(n.lb)}/backendAddressPools/${n.cluster}`,
        backends,
        signal,
      );
      if (synced.pending) return inProgress(poll, "network interfaces updating");
      const recorded = await this.lbWriter.apply(n.lb, this.lbIo(n.lb, signal), (cur) => {
        if (!holds(cur)) return cur;
        cur.tags = { ...cur.tags, [TAG_BACKENDS]: digest };
        return cur;
      });
      return recorded.pending ? inProgress(poll, "load balancer updating") : undefined;
    }
    throw new NeedsEnsureError("the Service's frontend is gone from its cluster's load balancer");
  }

  /**
   * One page of the resource group's load balancers (one read) and its public IPs (one more):
   * in each load balancer the hub marked as a cluster's, the frontends of the Services it
   * records, with their addresses and digests. A load balancer still being written (or failed)
   * gives no digests: what it will be is not known yet.
   */
  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const page = await this.api.call(
      "loadBalancers.list",
      (c, o) =>
        firstPage<LoadBalancer>(
          c.network.loadBalancers
            .list(this.rg, o)
            .byPage(pageToken === undefined ? {} : { continuationToken: pageToken }),
          c.continuationOf,
        ),
      signal,
    );
    const owned = page.items.filter((lb) => lb.tags?.[TAG_CLUSTER] !== undefined);
    const last = page.link === undefined;
    const needsPips =
      last || owned.some((lb) => lb.frontendIPConfigurations?.some((f) => f.publicIPAddress?.id));
    const pips = needsPips
      ? await this.instances.publicIpsOf(this.rg, signal)
      : new Map<string, PublicIPAddress>();
    const items: OwnedLoadBalancer[] = [];
    for (const lb of owned) {
      const cluster = lb.tags?.[TAG_CLUSTER] as string;
      const settled = lb.provisioningState === "Succeeded";
      const backends = lb.tags?.[TAG_BACKENDS];
      for (const [uid, spec] of readServices(lb.tags)) {
        const prefix = frontendName(uid);
        const fe = lb.frontendIPConfigurations?.find(
          (f) => f.name === prefix || f.name?.startsWith(`${prefix}-`) === true,
        );
        if (fe === undefined) continue;
        const pipId = fe.publicIPAddress?.id;
        const pip =
          pipId === undefined ? undefined : (pips.get(lower(pipId)) ?? (await this.pipById(pipId, signal)));
        const ip = fe.privateIPAddress ?? pip?.ipAddress;
        items.push({
          id: fe.id ?? "",
          name: `${lb.name}/${fe.name}`,
          owner: { cluster, serviceUid: uid },
          ingress: ip === undefined ? [] : [{ ip }],
          ...(settled && spec !== undefined && { specDigest: spec }),
          ...(settled && spec !== undefined && backends !== undefined && { backendsDigest: backends }),
        });
      }
    }
    // A public IP of the owner's that no frontend holds (a create interrupted before its
    // load-balancer write): listed once, on the last page, so a cluster's cleanup finds it too.
    if (last)
      for (const pip of pips.values()) {
        const cluster = pip.tags?.[TAG_CLUSTER];
        const uid = pip.tags?.[TAG_SERVICE_UID];
        if (cluster === undefined || uid === undefined || pip.ipConfiguration !== undefined) continue;
        items.push({
          id: pip.id ?? "",
          name: pip.name ?? "",
          owner: { cluster, serviceUid: uid },
          ingress: [],
        });
      }
    return { items, ...(page.link !== undefined && { nextPageToken: page.link }) };
  }

  /** A public IP outside the resource group (`azure-load-balancer-resource-group`). */
  private pipById(id: string, signal?: AbortSignal): Promise<PublicIPAddress | undefined> {
    const parts = id.split("/");
    return this.readPip(parts[4] ?? this.rg, parts[8] ?? "", signal);
  }

  async ensureDeleted(
    t: ServiceTarget,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<undefined | InProgress> {
    const poll = this.options.operationPollMs;
    const annotations = hints?.annotations ?? {};
    const n = this.names(t, { internal: false, annotations });
    // The NSG first, as upstream: the frontend tells which addresses leave its shared rules.
    if (this.options.securityGroupName !== undefined) {
      const target = await this.currentNsgTarget(t, signal);
      const nsg = await this.ensureNsg(t, n, undefined, target, signal);
      if (nsg?.pending === true) return inProgress(poll, "network security group updating");
    }
    for (const internal of [false, true]) {
      const r = await this.removeFrontend(t, this.names(t, { internal, annotations }), signal);
      if (r.pending) return inProgress(poll, "load balancer updating");
    }
    // The Service's own public IP, only if it carries this owner's tags (never a user's).
    const pip = await this.readPip(n.pipRg, n.pip, signal);
    const tags = pip?.tags ?? {};
    if (pip?.provisioningState === "Deleting") return inProgress(poll, "public IP deleting");
    if (pip !== undefined && tags[TAG_CLUSTER] === t.cluster && tags[TAG_SERVICE_UID] === t.serviceUid) {
      try {
        const done = await this.api.call(
          "publicIPAddresses.delete",
          async (c, o) => (await c.network.publicIPAddresses.beginDelete(n.pipRg, n.pip, o)).isDone(),
          signal,
        );
        if (!done) return inProgress(poll, "public IP deleting");
      } catch (err) {
        if (hasCode(err, "PublicIPAddressInUse")) return inProgress(poll, "public IP still in use");
        if (!isNotFound(err)) throw err;
      }
    }
    return undefined;
  }
}

/**
 * Sets the cluster's pool: with the backends' addresses (IP-based), or, without `byIp`, the pool
 * alone (NIC-based: the NICs name it).
 */
function setPool(
  lb: LoadBalancer,
  name: string,
  byIp:
    | {
        readonly backends: readonly string[];
        readonly ips: ReadonlyMap<string, string>;
        readonly vnetId: string;
      }
    | undefined,
): void {
  const pool: BackendAddressPool =
    byIp === undefined
      ? { name }
      : {
          name,
          loadBalancerBackendAddresses: [...byIp.backends]
            .map((b) => byIp.ips.get(lower(b)))
            .filter((ip): ip is string => ip !== undefined)
            .sort()
            .map((ip) => ({ name: ip, ipAddress: ip, virtualNetwork: { id: byIp.vnetId } })),
        };
  lb.backendAddressPools = [...(lb.backendAddressPools ?? []).filter((p) => p.name !== name), pool];
}

/**
 * Where the Service's traffic meets the NSG (azure_loadbalancer.go:3474-3482): its frontend
 * address, or with floating IP off the backends' addresses on the node ports.
 */
interface NsgTarget {
  readonly frontendIp: string;
  readonly nodeIps?: readonly string[];
  /** With nodeIps: protocol (`Tcp`, `Udp`) → the Service's node ports. */
  readonly nodePorts?: ReadonlyMap<string, readonly number[]>;
}

/** What the Service takes out of upstream's shared rules: its frontend address, its node ports at the backends'. */
function withdrawals(target: NsgTarget | undefined): Withdrawal[] {
  if (target === undefined) return [];
  const nodes =
    target.nodeIps === undefined ? [] : [{ addresses: target.nodeIps, ports: target.nodePorts ?? new Map() }];
  return [{ addresses: [target.frontendIp] }, ...nodes];
}

function nodePortsOf(listeners: LoadBalancerSpec["listeners"]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const l of listeners) {
    const protocol = l.protocol === "UDP" ? "Udp" : "Tcp";
    out.set(protocol, [...(out.get(protocol) ?? []), l.nodePort]);
  }
  return out;
}

/**
 * The NSG rules' sources (upstream's AccessControl): the service tags, else the source ranges or
 * `azure-allowed-ip-ranges`, else the Internet. Both kinds of ranges at once are refused, as upstream does.
 */
function allowedSources(spec: LoadBalancerSpec, a: AzureLbAnnotations): readonly string[] {
  if (a.allowedIpRanges.length > 0 && spec.sourceRanges.length > 0)
    throw new AnnotationError(
      AZURE_ANNOTATIONS.allowedIpRanges,
      a.allowedIpRanges.join(","),
      "no spec.loadBalancerSourceRanges beside it",
      "cannot set both spec.loadBalancerSourceRanges and this annotation",
    );
  if (a.serviceTags.length > 0) return a.serviceTags;
  const ranges = [...spec.sourceRanges, ...a.allowedIpRanges];
  return ranges.length > 0 ? ranges : ["Internet"];
}

/** Upstream's DenyAllExceptSourceRanges: the annotation with ranges to allow. */
function denyAllElse(spec: LoadBalancerSpec, a: AzureLbAnnotations): boolean {
  return a.denyAllExceptSourceRanges && (spec.sourceRanges.length > 0 || a.allowedIpRanges.length > 0);
}

function newLb(location: string): LoadBalancer {
  return { location, sku: { name: "Standard", tier: "Regional" } };
}

/**
 * The load-balancer tags with the Service's record (and the cluster's owner mark, and the pool's
 * backends digest when given): `spec` undefined records the Service without a digest.
 */
function record(
  tags: Record<string, string> | undefined,
  cluster: string,
  uid: string,
  spec: string | undefined,
  pool?: { readonly backends: string },
): Record<string, string> {
  const services = readServices(tags);
  services.set(uid, spec);
  // The owner marks first: the Services' records take the room left.
  const marked = {
    ...tags,
    [TAG_CLUSTER]: cluster,
    ...(pool !== undefined && { [TAG_BACKENDS]: pool.backends }),
  };
  return withServices(marked, services);
}

/**
 * The load balancer without the owner's frontends, probes, rules and record; undefined once no
 * frontend is left.
 */
function removeOwner(
  lb: LoadBalancer | undefined,
  prefix: string,
  uid: string,
  keepFrontend?: string,
): LoadBalancer | undefined {
  if (lb === undefined) return undefined;
  const mine = (name: string | undefined) => name === prefix || name?.startsWith(`${prefix}-`) === true;
  const out: LoadBalancer = {
    ...lb,
    frontendIPConfigurations: (lb.frontendIPConfigurations ?? []).filter(
      (f) => !mine(f.name) || f.name === keepFrontend,
    ),
    probes: (lb.probes ?? []).filter((p) => !mine(p.name)),
    loadBalancingRules: (lb.loadBalancingRules ?? []).filter((r) => !mine(r.name)),
  };
  if ((out.frontendIPConfigurations ?? []).length === 0 && keepFrontend === undefined) return undefined;
  const services = readServices(lb.tags);
  if (services.delete(uid)) out.tags = withServices(lb.tags, services);
  return out;
}

/** Whether the load balancer holds any of the owner's parts (removeOwner would change it). */
function holdsOwner(lb: LoadBalancer | undefined, prefix: string, uid: string): boolean {
  if (lb === undefined) return false;
  const after = removeOwner(lb, prefix, uid);
  return after === undefined || JSON.stringify(comparable(after)) !== JSON.stringify(comparable(lb));
}

/** What a write changes of a load balancer (read-only fields and ids left out). */
function comparable(lb: LoadBalancer | undefined): unknown {
  if (lb === undefined) return undefined;
  const pick = <T extends object>(items: readonly T[] | undefined, keys: readonly (keyof T)[]) =>
    (items ?? [])
      .map((i) => Object.fromEntries(keys.map((k) => [k, normal(i[k])])))
      .sort((a, b) => String(a["name"]).localeCompare(String(b["name"])));
  return {
    tags: Object.entries(lb.tags ?? {}).sort(([a], [b]) => a.localeCompare(b)),
    fe: pick(lb.frontendIPConfigurations ?? [], [
      "name",
      "publicIPAddress",
      "subnet",
      "privateIPAllocationMethod",
    ]),
    feStatic: (lb.frontendIPConfigurations ?? [])
      .filter((f) => f.privateIPAllocationMethod === "Static")
      .map((f) => f.privateIPAddress),
    pools: (lb.backendAddressPools ?? [])
      .map((p) => ({
        name: p.name,
        ips: (p.loadBalancerBackendAddresses ?? []).map((a) => a.ipAddress).sort(),
      }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name))),
    probes: pick(lb.probes ?? [], [
      "name",
      "protocol",
      "port",
      "requestPath",
      "intervalInSeconds",
      "numberOfProbes",
    ]),
    rules: pick(lb.loadBalancingRules ?? [], [
      "name",
      "protocol",
      "frontendPort",
      "backendPort",
      "frontendIPConfiguration",
      "backendAddressPool",
      "probe",
      "enableFloatingIP",
      "loadDistribution",
      "idleTimeoutInMinutes",
    ]),
  };
}

function comparableRules(rules: readonly SecurityRule[] | undefined): unknown {
  const sorted = (one: string | undefined, many: readonly string[] | undefined) =>
    [...(one ? [one] : []), ...(many ?? [])].sort();
  return (rules ?? [])
    .map((r) => [
      r.name,
      r.protocol,
      sorted(r.sourceAddressPrefix, r.sourceAddressPrefixes),
      destinationsOf(r).sort(),
      sorted(r.destinationPortRange, r.destinationPortRanges),
      r.priority,
      r.access,
    ])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
}

/** ARM ids compare case-insensitively. */
function normal(v: unknown): unknown {
  if (typeof v === "object" && v !== null && "id" in v)
    return { id: lower(String((v as { id: unknown }).id)) };
  return v;
}
