/**
 * NodeBalancers for LoadBalancer Services, as the Linode CCM builds them: one NodeBalancer per
 * Service, one config per port, the backends' private IPv4 addresses as nodes, rebuilt when
 * they change with the ids of nodes that stay; a Cloud Firewall from loadBalancerSourceRanges
 * or the firewall-acl annotation (or the one firewall-id names); its ingress shape.
 *
 * Ownership is in the NodeBalancer's tags (`fleet-ccm`, `fccm:c=<cluster>`, `fccm:u=<uid>`), and
 * the hub's deterministic name is its label, so a lost create is found again and never made
 * twice. A NodeBalancer the Linode CCM made for the Service (named by the nodebalancer-id
 * annotation, or carrying the Service's ingress IP) is adopted: tagged as ours, never duplicated.
 * A firewall this provider makes is labelled with the same name and tagged the same way. Two
 * digest tags, written last, say what the NodeBalancer was made to match, so the account's
 * listing tells a restarted hub which Services are current.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { CloudError, NeedsEnsureError, SuspectAnswerError, TransientCloudError } from "../../errors.js";
import {
  backendsDigest,
  DIGEST_TAG_BACKENDS,
  DIGEST_TAG_SPEC,
  loadBalancerName,
  loadBalancerSpecDigest,
} from "../../naming.js";
import type {
  AdoptFrom,
  BackendAnnotations,
  LbIngress,
  LbListener,
  LbOwner,
  LbServiceHints,
  LoadBalancerCapabilities,
  LoadBalancerSpec,
  LoadBalancerState,
  LoadBalancers,
  OwnedLoadBalancer,
  OwnedLoadBalancerPage,
  ProviderContext,
  ServiceTarget,
} from "../../provider.js";
import { lbOwner } from "../../provider.js";
import {
  type Algorithm,
  ANNOTATION_PREFIX,
  type CheckType,
  LINODE_SETTING_BOUNDS,
  type LinodeLbSettings,
  type NbProto,
  nodeBackendOverrides,
  type PortSettings,
  type ProxyProtocol,
  parseLinodeAnnotations,
  type Stickiness,
} from "./annotations.js";
import type { LinodeClient } from "./client.js";
import { isNotFound } from "./errors.js";
import { checkLinode, isPrivateIPv4 } from "./instances.js";
import { hasVpc, type VpcName, type VpcResolver } from "./vpc.js";
import type {
  WireFirewall,
  WireFirewallDevice,
  WireFirewallRule,
  WireFirewallRules,
  WireLinode,
  WireNbConfig,
  WireNbNode,
  WireNodeBalancer,
} from "./wire.js";

export const OWNED_TAG = "fleet-ccm";
const CLUSTER_TAG = "fccm:c=";
const UID_TAG = "fccm:u=";
/**
 * What a NodeBalancer was last made to match, as tags (Linode tags are single strings of 3 to 50
 * characters): `fleet-ccm.io/spec-digest=<16 hex>[:<ingress shape>]` and
 * `fleet-ccm.io/backends-digest=<16 hex>`, 41 to 45 characters.
 */
export const SPEC_DIGEST_TAG = `${DIGEST_TAG_SPEC}=`;
export const BACKENDS_DIGEST_TAG = `${DIGEST_TAG_BACKENDS}=`;

export const LB_OPS = {
  list: "nodebalancers.list",
  get: "nodebalancers.get",
  create: "nodebalancers.create",
  update: "nodebalancers.update",
  delete: "nodebalancers.delete",
  configsList: "nodebalancers.configs.list",
  configCreate: "nodebalancers.configs.create",
  configDelete: "nodebalancers.configs.delete",
  rebuild: "nodebalancers.configs.rebuild",
  nodesList: "nodebalancers.nodes.list",
  nbFirewalls: "nodebalancers.firewalls.list",
  firewallsList: "firewalls.list",
  firewallGet: "firewalls.get",
  firewallCreate: "firewalls.create",
  firewallRulesUpdate: "firewalls.rules.update",
  firewallUpdate: "firewalls.update",
  firewallDelete: "firewalls.delete",
  deviceCreate: "firewalls.devices.create",
  deviceDelete: "firewalls.devices.delete",
  devicesList: "firewalls.devices.list",
  backends: "instances.backends",
  reservedIPDelete: "reservedips.delete",
} as const;

/** The Linode CCM's Warning Event reason for a reserved-ipv4 change it cannot apply. */
export const IP_CHANGE_IGNORED = "NodeBalancerIPChangeIgnored";

export const CAPABILITIES: LoadBalancerCapabilities = Object.freeze({
  sessionAffinity: true,
  proxyProtocol: true,
  internal: false,
  protocols: ["TCP", "UDP", "HTTP", "HTTPS"] as const,
  ingressIpWithHostname: true,
  settingBounds: LINODE_SETTING_BOUNDS,
});

/** At most this many addresses in one firewall rule (the Linode CCM's limit). */
const MAX_RULE_ADDRESSES = 255;
/** At most this many rules in a firewall, inbound and outbound together. */
const MAX_RULES = 25;
/** At most this many pieces (a port is one) in one rule's ports. */
const MAX_RULE_PORTS = 15;
const IDS_PER_FILTER = 100;

export function ownerTags(owner: LbOwner): string[] {
  return [OWNED_TAG, `${CLUSTER_TAG}${owner.cluster}`, `${UID_TAG}${owner.serviceUid}`];
}

/**
 * A NodeBalancer's tags: the owner's, then as the Linode CCM tags it the cluster name, the
 * account's tags (its --nodebalancer-tags) and the tags annotation's.
 */
export function nodeBalancerTags(
  owner: LbOwner,
  extra: readonly string[],
  accountTags: readonly string[] = [],
): string[] {
  const cluster = owner.cluster.length >= 3 && owner.cluster.length <= 50 ? [owner.cluster] : [];
  return [
    ...new Set([...ownerTags(owner), ...cluster, ...[...accountTags, ...extra].filter((t) => !isOurTag(t))]),
  ];
}

/** The owner a NodeBalancer's or firewall's tags record, if any. */
export function ownerOfTags(tags: readonly string[]): LbOwner | undefined {
  const cluster = tags.find((t) => t.startsWith(CLUSTER_TAG))?.slice(CLUSTER_TAG.length);
  const serviceUid = tags.find((t) => t.startsWith(UID_TAG))?.slice(UID_TAG.length);
  return cluster && serviceUid ? { cluster, serviceUid } : undefined;
}

function sameOwner(a: LbOwner | undefined, b: LbOwner): boolean {
  return a !== undefined && a.cluster === b.cluster && a.serviceUid === b.serviceUid;
}

/** A tag fleet-ccm sets and reads for ownership and digests (never taken from users). */
export function isOurTag(t: string): boolean {
  return t === OWNED_TAG || t.startsWith(CLUSTER_TAG) || t.startsWith(UID_TAG) || isDigestTag(t);
}

function isDigestTag(t: string): boolean {
  return t.startsWith(SPEC_DIGEST_TAG) || t.startsWith(BACKENDS_DIGEST_TAG);
}

/** How the ingress is shown (the spec digest tag records it, so listOwned answers as ensure did). */
type IngressShape = "" | "h" | "6";

function shapeOf(s: LinodeLbSettings): IngressShape {
  return s.hostnameOnlyIngress ? "h" : s.enableIPv6Ingress ? "6" : "";
}

/** The digests a NodeBalancer's tags record, when each is there exactly once and well formed. */
export function digestsOfTags(tags: readonly string[]): {
  specDigest?: string;
  backendsDigest?: string;
  shape: IngressShape;
} {
  const one = (prefix: string, re: RegExp) => {
    const found = tags.filter((t) => t.startsWith(prefix)).map((t) => re.exec(t.slice(prefix.length)));
    return found.length === 1 ? (found[0] ?? undefined) : undefined;
  };
  const spec = one(SPEC_DIGEST_TAG, /^([0-9a-f]{16})(?::([h6]))?$/);
  const backends = one(BACKENDS_DIGEST_TAG, /^([0-9a-f]{16})$/);
  return {
    ...(spec?.[1] !== undefined && { specDigest: spec[1] }),
    ...(backends?.[1] !== undefined && { backendsDigest: backends[1] }),
    shape: (spec?.[2] ?? "") as IngressShape,
  };
}

function checkOwner(owner: LbOwner): void {
  if (owner.cluster === "" || owner.serviceUid === "")
    throw new CloudError("refusing to act without an owner (cluster and Service uid)");
  for (const t of ownerTags(owner))
    if (t.length > 50) throw new CloudError(`owner tag ${t} is longer than Linode's 50 characters`);
}

/** A backend node's label: `<linode id>-<label>`, 3 to 32 characters, so the id can be read back. */
export function nodeLabel(id: number, label: string): string {
  return `${id}-${label}`.replace(/[^a-zA-Z0-9\-_.]/g, "-").slice(0, 32);
}

function idOfNodeLabel(label: string): string | undefined {
  return /^(\d+)-/.exec(label)?.[1];
}

interface DesiredNode {
  readonly address: string;
  readonly label: string;
  readonly weight: number;
  readonly mode: "accept";
}

/** What a config should be, in the API's words. */
interface DesiredConfig {
  readonly port: number;
  readonly protocol: NbProto;
  readonly algorithm: Algorithm;
  readonly stickiness: Stickiness;
  readonly check: CheckType;
  readonly check_interval: number;
  readonly check_timeout: number;
  readonly check_attempts: number;
  readonly check_path?: string;
  readonly check_body?: string;
  readonly check_passive: boolean;
  readonly proxy_protocol: ProxyProtocol;
  /** UDP only (newer than the spec file). */
  readonly udp_check_port?: number;
  /** HTTPS only: the certificate (chain) and key from the port's TLS Secret. Never logged. */
  readonly ssl_cert?: string;
  readonly ssl_key?: string;
  /** HTTPS only: the SHA-1 fingerprint the API reports for ssl_cert (it redacts the cert itself). */
  readonly sslFingerprint?: string;
  /** Where the nodes listen. */
  readonly nodePort: number;
}

const UNIFIED = "lb.fleet-ccm.io/";

function configFields(c: DesiredConfig): Record<string, unknown> {
  const { nodePort: _nodePort, sslFingerprint: _fingerprint, ...fields } = c;
  return fields;
}

/**
 * The certificate and key of an https port, from the kubernetes.io/tls Secret its port
 * annotation names (trimmed, as the Linode CCM sends them), checked before Linode sees them.
 * Errors name the Secret and the key, never their content.
 */
function tlsOf(
  spec: LoadBalancerSpec,
  port: number,
  settings: PortSettings,
): Pick<DesiredConfig, "ssl_cert" | "ssl_key" | "sslFingerprint"> {
  const name = settings.tlsSecretName;
  if (name === undefined)
    throw new CloudError(
      `port ${port}: protocol https needs "tls-secret-name" (a kubernetes.io/tls Secret) in ${ANNOTATION_PREFIX}port-${port}`,
    );
  const secret = spec.secrets?.[name];
  const what = `port ${port}: TLS Secret "${name}"`;
  if (secret === undefined)
    throw new CloudError(
      `${what} was not received from the cluster's agent (an agent that reads no Secrets?)`,
    );
  if (secret.data === undefined) throw new CloudError(`${what}: ${secret.problem}`);
  const cert = (secret.data["tls.crt"] ?? "").trim();
  const key = (secret.data["tls.key"] ?? "").trim();
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new CloudError(`${what}: tls.crt is not a PEM certificate`);
  }
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(key));
  } catch {
    throw new CloudError(`${what}: tls.key is not a PEM private key`);
  }
  if (!matches) throw new CloudError(`${what}: tls.key is not the key of the certificate in tls.crt`);
  return { ssl_cert: cert, ssl_key: key, sslFingerprint: x509.fingerprint.toUpperCase() };
}

function configMatches(have: WireNbConfig, want: DesiredConfig): boolean {
  return (
    have.port === want.port &&
    have.protocol === want.protocol &&
    have.algorithm === want.algorithm &&
    have.stickiness === want.stickiness &&
    have.check === want.check &&
    have.check_interval === want.check_interval &&
    have.check_timeout === want.check_timeout &&
    have.check_attempts === want.check_attempts &&
    (want.check_path === undefined || have.check_path === want.check_path) &&
    (want.check_body === undefined || have.check_body === want.check_body) &&
    have.check_passive === want.check_passive &&
    have.proxy_protocol === want.proxy_protocol &&
    (want.udp_check_port === undefined || have.udp_check_port === want.udp_check_port) &&
    // The API redacts the certificate; its fingerprint tells a rotated one.
    (want.sslFingerprint === undefined || have.ssl_fingerprint?.toUpperCase() === want.sslFingerprint)
  );
}

/** The Linode CCM's per-port settings, the unified keys winning where the Service sets them. */
export function desiredConfigs(spec: LoadBalancerSpec, s: LinodeLbSettings): DesiredConfig[] {
  const a = spec.annotations ?? {};
  const unified = (k: string) => a[UNIFIED + k] !== undefined;
  const hc = spec.healthCheck;
  return spec.listeners.map((l: LbListener) => {
    if (l.protocol === "SCTP") throw new CloudError(`port ${l.port}: NodeBalancers have no SCTP`);
    const port = s.ports.get(l.port) ?? {};
    const unifiedProtocol = unified("protocol") || unified(`protocol.${l.port}`);
    // A UDP port stays UDP (the Linode CCM takes the Service port's protocol).
    const protocol: NbProto =
      l.protocol === "UDP"
        ? "udp"
        : unifiedProtocol
          ? (l.protocol.toLowerCase() as NbProto)
          : (port.protocol ?? s.defaultProtocol ?? (l.protocol.toLowerCase() as NbProto));
    if (protocol === "udp") {
      if (port.tlsSecretName !== undefined)
        throw new CloudError(`port ${l.port}: a TLS Secret (tls-secret-name) is not supported for UDP`);
      return udpConfig(l, port, s);
    }
    // As the Linode CCM: the Secret is used by https ports only.
    const tls = protocol === "https" ? tlsOf(spec, l.port, port) : {};
    const check: CheckType = unified("health-check-protocol")
      ? hc.protocol === "HTTP"
        ? "http"
        : "connection"
      : (s.checkType ?? "connection");
    const httpCheck = check === "http" || check === "http_body";
    const checkPath = unified("health-check-path") ? hc.path : (s.checkPath ?? "/");
    return {
      port: l.port,
      protocol,
      algorithm:
        port.algorithm ??
        s.defaultAlgorithm ??
        (spec.sessionAffinity === "ClientIP" ? "source" : "roundrobin"),
      stickiness: port.stickiness ?? s.defaultStickiness ?? (protocol === "tcp" ? "none" : "table"),
      check,
      check_interval: unified("health-check-interval") ? hc.intervalSeconds : (s.checkInterval ?? 5),
      check_timeout: Math.min(
        30,
        unified("health-check-timeout") ? hc.timeoutSeconds : (s.checkTimeout ?? 3),
      ),
      check_attempts: Math.min(
        30,
        unified("health-check-unhealthy-threshold") ? hc.unhealthyThreshold : (s.checkAttempts ?? 2),
      ),
      ...(httpCheck && { check_path: checkPath }),
      ...(check === "http_body" && { check_body: s.checkBody ?? "" }),
      check_passive: s.checkPassive ?? true,
      proxy_protocol: unified("proxy-protocol")
        ? l.proxyProtocol
          ? "v2"
          : "none"
        : (port.proxyProtocol ?? s.defaultProxyProtocol ?? (l.proxyProtocol ? "v2" : "none")),
      ...tls,
      nodePort: l.nodePort,
    };
  });
}

const UDP_ALGORITHMS: readonly Algorithm[] = ["roundrobin", "leastconn", "ring_hash"];
const UDP_STICKINESS: readonly Stickiness[] = ["none", "session", "source_ip"];

/** A UDP config as the Linode CCM builds it: no proxy protocol, session stickiness, no active check. */
function udpConfig(l: LbListener, port: PortSettings, s: LinodeLbSettings): DesiredConfig {
  const algorithm = port.algorithm ?? s.defaultAlgorithm ?? "roundrobin";
  if (!UDP_ALGORITHMS.includes(algorithm))
    throw new CloudError(
      `port ${l.port}: algorithm ${algorithm} is not one of ${UDP_ALGORITHMS.join(", ")} for UDP`,
    );
  const stickiness = port.stickiness ?? s.defaultStickiness ?? "session";
  if (!UDP_STICKINESS.includes(stickiness))
    throw new CloudError(
      `port ${l.port}: stickiness ${stickiness} is not one of ${UDP_STICKINESS.join(", ")} for UDP`,
    );
  const proxy = port.proxyProtocol ?? s.defaultProxyProtocol ?? "none";
  if (proxy !== "none") throw new CloudError(`port ${l.port}: UDP takes no proxy protocol`);
  const check = s.checkType ?? "none";
  return {
    port: l.port,
    protocol: "udp",
    algorithm,
    stickiness,
    check,
    check_interval: s.checkInterval ?? 5,
    check_timeout: s.checkTimeout ?? 3,
    check_attempts: s.checkAttempts ?? 2,
    ...((check === "http" || check === "http_body") && { check_path: s.checkPath ?? "/" }),
    ...(check === "http_body" && { check_body: s.checkBody ?? "" }),
    check_passive: false,
    proxy_protocol: "none",
    udp_check_port: port.udpCheckPort ?? s.udpCheckPort ?? 80,
    nodePort: l.nodePort,
  };
}

/** The firewall protocol of a Service port: its own, TCP for every port but a UDP one (HTTP and HTTPS are TCP). */
function firewallProtocol(l: LbListener): "TCP" | "UDP" {
  return l.protocol === "UDP" ? "UDP" : "TCP";
}

/** The firewall rules a Service asks for (ACL annotation, else loadBalancerSourceRanges), or undefined. */
export function desiredRules(
  spec: LoadBalancerSpec,
  s: LinodeLbSettings,
  label: string,
): WireFirewallRules | undefined {
  let kind: "allowList" | "denyList";
  let ipv4: string[];
  let ipv6: string[];
  if (s.firewallAcl !== undefined) {
    kind = s.firewallAcl.kind;
    ipv4 = [...s.firewallAcl.ipv4];
    ipv6 = [...s.firewallAcl.ipv6];
  } else if (spec.sourceRanges.length > 0) {
    kind = "allowList";
    ipv4 = spec.sourceRanges.filter((r) => !r.includes(":"));
    ipv6 = spec.sourceRanges.filter((r) => r.includes(":"));
  } else {
    return undefined;
  }
  const action = kind === "allowList" ? "ACCEPT" : "DROP";
  const rules: WireFirewallRule[] = [];
  const chunk = <T>(xs: readonly T[], size: number) => {
    const out: T[][] = [];
    for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
    return out;
  };
  const ruleLabel = `${action}-${label}`.slice(0, 32);
  // A rule filters one protocol: one set of rules per protocol among the Service's ports, each
  // with that protocol's ports (a UDP port behind TCP-only rules would be dropped by an allow
  // list and left open by a deny list). TCP first, so a TCP-only Service's rules are as before.
  for (const protocol of ["TCP", "UDP"] as const) {
    const portsOf = [
      ...new Set(spec.listeners.filter((l) => firewallProtocol(l) === protocol).map((l) => l.port)),
    ].sort((x, y) => x - y);
    // The API takes at most 15 pieces (single ports) in one rule's ports.
    for (const group of chunk(portsOf, MAX_RULE_PORTS)) {
      const ports = group.join(",");
      for (const part of chunk([...ipv4].sort(), MAX_RULE_ADDRESSES))
        rules.push({ action, protocol, ports, label: ruleLabel, addresses: { ipv4: part } });
      for (const part of chunk([...ipv6].sort(), MAX_RULE_ADDRESSES))
        rules.push({ action, protocol, ports, label: ruleLabel, addresses: { ipv6: part } });
    }
  }
  if (rules.length > MAX_RULES)
    throw new CloudError(`the firewall needs ${rules.length} rules, Linode allows ${MAX_RULES}`);
  return {
    inbound: rules,
    inbound_policy: kind === "allowList" ? "DROP" : "ACCEPT",
    outbound: [],
    outbound_policy: "ACCEPT",
  };
}

function rulesKey(r: WireFirewallRules): string {
  return JSON.stringify({
    inbound: r.inbound.map((x) => ({
      action: x.action,
      protocol: x.protocol,
      ports: x.ports ?? null,
      label: x.label ?? null,
      ipv4: [...(x.addresses.ipv4 ?? [])].sort(),
      ipv6: [...(x.addresses.ipv6 ?? [])].sort(),
    })),
    inbound_policy: r.inbound_policy,
    outbound: r.outbound.length,
    outbound_policy: r.outbound_policy,
  });
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  return JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
}

function ingressOf(nb: WireNodeBalancer, shape: IngressShape): LbIngress[] {
  if (shape === "h") return [{ hostname: nb.hostname }];
  const out: LbIngress[] = [{ ip: nb.ipv4, hostname: nb.hostname }];
  if (shape === "6" && nb.ipv6) out.push({ ip: nb.ipv6, hostname: nb.hostname });
  return out;
}

function settingsOf(annotations: Readonly<Record<string, string>> | undefined): LinodeLbSettings {
  return parseLinodeAnnotations(annotations ?? {});
}

export class LinodeLoadBalancers implements LoadBalancers {
  readonly capabilities = CAPABILITIES;

  /** The Linode CCM's annotations, read as ensure reads them (no call). */
  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    settingsOf(annotations);
  }

  /**
   * The certificate and key an https config (`<NodeBalancer id>/<port>`) last got from this
   * provider: the API redacts them, and a backends-only rebuild sends them again, as the Linode
   * CCM sends them on every rebuild. In memory only, never logged.
   */
  private readonly tlsSent = new Map<string, { readonly ssl_cert: string; readonly ssl_key: string }>();

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: LinodeClient,
    private readonly vpc: VpcResolver,
    /** New NodeBalancers of a cluster with a VPC get VPC backends: the nodes' VPC IPv4 in their subnet. */
    private readonly vpcBackends = false,
    /** Tags on every NodeBalancer of the account (the Linode CCM's --nodebalancer-tags). */
    private readonly accountTags: readonly string[] = [],
  ) {}

  async get(owner: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    checkOwner(owner);
    const nb = await this.findOwned(owner, signal);
    if (nb === undefined) return undefined;
    const configs = await this.configs(nb.id, signal);
    const backends = new Set<string>();
    for (const c of configs)
      for (const n of await this.nodes(nb.id, c.id, signal)) {
        const id = idOfNodeLabel(n.label);
        if (id !== undefined) backends.add(id);
      }
    return {
      id: String(nb.id),
      name: nb.label,
      owner: lbOwner(owner),
      ingress: ingressOf(nb, ""),
      backends: [...backends].sort(),
    };
  }

  async ensure(
    owner: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[]> {
    checkOwner(owner);
    if (spec.internal)
      throw new CloudError("NodeBalancers are public: an internal load balancer is not supported");
    const s = settingsOf(spec.annotations);
    const name = loadBalancerName(owner.cluster, owner.serviceUid);
    const configs = desiredConfigs(spec, s);
    const rules = desiredRules(spec, s, name);
    const tags = nodeBalancerTags(owner, s.tags, this.accountTags);

    // Before any write: what the annotations name must be this cluster's (agents are untrusted).
    const { adoptFrom } = owner.scope;
    if (s.firewallId !== undefined) await this.checkFirewall(owner, s.firewallId, adoptFrom, signal);
    let nb = await this.findOwned(owner, signal);
    if (s.nodeBalancerId !== undefined && nb !== undefined && nb.id !== s.nodeBalancerId) {
      // The Service now names another NodeBalancer: take it over, let the old one go.
      const previous = nb;
      nb = await this.adopt(owner, s.nodeBalancerId, [], adoptFrom, tags, signal);
      await this.release(owner, previous, s.preserve, signal);
    } else if (nb === undefined) {
      nb = await this.adopt(owner, s.nodeBalancerId, hints?.ingress ?? [], adoptFrom, tags, signal);
    }
    const nodes = await this.desiredNodes(owner.network, spec.backends, signal, spec.backendAnnotations);
    if (nb === undefined) {
      // IPv6 backends take no backend VPC (as the Linode CCM has it).
      const mode: BackendMode = s.enableIPv6Backends ? "ipv6" : this.newBackendMode(owner.network);
      // Linode wants at least one node per config at creation (the Linode CCM refuses too).
      if (nodes.every((n) => addressOf(n, mode) === undefined))
        throw new TransientCloudError(`no node with a ${mode} address to put behind a new NodeBalancer yet`);
      // The annotations' subnet (as the Linode CCM chooses it), else the nodes' own subnets.
      const chosen = mode === "vpc" ? await this.backendSubnet(owner.network, s, signal) : undefined;
      const subnets =
        chosen !== undefined
          ? [chosen]
          : mode === "vpc"
            ? [...new Set(nodes.flatMap((n) => (n.vpc ? [n.vpc.subnetId] : [])))]
            : [];
      // As the Linode CCM: the firewall first, named in the create, so the NodeBalancer is
      // never reachable unfiltered.
      const firewallId =
        s.firewallId ??
        (rules === undefined
          ? undefined
          : (await this.ownFirewall(owner, name, rules, undefined, signal)).id);
      nb = await this.client.post<WireNodeBalancer>(
        LB_OPS.create,
        "/nodebalancers",
        {
          label: name,
          ...(firewallId !== undefined && { firewall_id: firewallId }),
          region: this.ctx.account.region,
          tags,
          client_conn_throttle: s.throttle,
          type: s.nodeBalancerType,
          ...(s.reservedIPv4 !== undefined && { ipv4: s.reservedIPv4 }),
          ...(s.frontend !== undefined && {
            frontend_vpcs: [await this.frontendVpc(owner.network, s.frontend, signal)],
          }),
          ...(subnets.length > 0 && {
            backend_vpcs: subnets
              .sort((a, b) => a - b)
              .map((subnet_id) => ({
                subnet_id,
                ...(chosen !== undefined &&
                  s.backendIPv4Range !== undefined && { ipv4_range: s.backendIPv4Range }),
              })),
          }),
          configs: configs.map((c) => ({
            ...configFields(c),
            nodes: nodesFor(nodes, c.nodePort, [], mode, chosen),
          })),
        },
        { signal },
      );
      nb = checkNodeBalancer(nb);
      this.ctx.logger.info({ nodebalancer: nb.id, label: name }, "NodeBalancer created");
    } else {
      if (s.reservedIPv4 !== undefined && s.reservedIPv4 !== nb.ipv4) {
        // As the Linode CCM: a NodeBalancer's IPv4 is fixed at creation; warn, never recreate.
        this.ctx.logger.warn(
          { nodebalancer: nb.id, ipv4: nb.ipv4, annotation: s.reservedIPv4 },
          "reserved-ipv4 changed, but a NodeBalancer's IPv4 cannot change after creation: ignored",
        );
        hints?.warn?.(
          IP_CHANGE_IGNORED,
          `IPv4 annotation changed to ${s.reservedIPv4}, but NodeBalancer (${nb.id}) IP cannot be updated after creation. It will remain ${nb.ipv4}`,
        );
      }
      nb = await this.updateNodeBalancer(nb, tags, s.throttle, signal);
      await this.reconcileConfigs(owner.network, nb.id, configs, nodes, s, signal);
    }
    for (const c of configs) {
      if (c.ssl_cert !== undefined && c.ssl_key !== undefined)
        this.tlsSent.set(`${nb.id}/${c.port}`, { ssl_cert: c.ssl_cert, ssl_key: c.ssl_key });
      else this.tlsSent.delete(`${nb.id}/${c.port}`);
    }
    await this.reconcileFirewall(owner, nb, name, rules, s, signal);
    // Last: the digests vouch for everything above (a crash before here leaves them stale).
    const shape = shapeOf(s);
    await this.recordDigests(
      nb,
      {
        spec: `${loadBalancerSpecDigest(spec)}${shape === "" ? "" : `:${shape}`}`,
        backends: backendsDigest(spec.backends, spec.backendAnnotations),
      },
      signal,
    );
    return ingressOf(nb, shape);
  }

  async updateBackends(
    owner: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
    backendAnnotations?: BackendAnnotations,
  ): Promise<undefined> {
    checkOwner(owner);
    const nb = await this.findOwned(owner, signal);
    if (nb === undefined) throw new NeedsEnsureError("no NodeBalancer of this Service");
    const nodes = await this.desiredNodes(owner.network, backends, signal, backendAnnotations);
    const configs = await this.configs(nb.id, signal);
    const current = new Map<number, WireNbNode[]>();
    for (const c of configs) current.set(c.id, await this.nodes(nb.id, c.id, signal));
    const all = [...current.values()].flat();
    const mode = this.modeOf(
      owner.network,
      all,
      all.length > 0 && all.every((n) => n.address.startsWith("[")),
    );
    for (const c of configs) {
      const have = current.get(c.id) ?? [];
      // The node port is the Service's, in its spec: never inferred from another Service's state.
      const nodePort = portOf(have);
      if (nodePort === undefined)
        throw new NeedsEnsureError(`config for port ${c.port} has no nodes: its node port is in the spec`);
      const want = nodesFor(nodes, nodePort, have, mode, mode === "vpc" ? soleSubnet(all) : undefined);
      if (sameNodes(have, want)) continue;
      // A rebuild of an https config carries its certificate and key, which Linode never returns:
      // only what this hub sent is known (after a restart: nothing, so ensure sends them).
      const tls = c.protocol === "https" ? this.tlsSent.get(`${nb.id}/${c.port}`) : undefined;
      if (c.protocol === "https" && tls === undefined)
        throw new NeedsEnsureError(
          `config for port ${c.port} is https and its certificate is not known here`,
        );
      await this.client.post(
        LB_OPS.rebuild,
        `/nodebalancers/${nb.id}/configs/${c.id}/rebuild`,
        { nodes: want, ...tls },
        { signal },
      );
    }
    await this.recordDigests(nb, { backends: backendsDigest(backends, backendAnnotations) }, signal);
    return undefined;
  }

  async ensureDeleted(
    owner: ServiceTarget,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<undefined> {
    checkOwner(owner);
    let preserve = false;
    let retainIP = true;
    try {
      ({ preserve, retainReservedIPv4: retainIP } = settingsOf(hints?.annotations));
    } catch {
      // A bad annotation never blocks a deletion; only a valid preserve=true keeps it.
    }
    const name = loadBalancerName(owner.cluster, owner.serviceUid);
    for (const nb of await this.ownedNodeBalancers(owner, signal))
      await this.release(owner, nb, preserve, signal, retainIP);
    // Firewalls of an interrupted create or delete: ours by label and tags, attached to nothing of ours.
    const orphans = await this.client.list<WireFirewall>(LB_OPS.firewallsList, "/networking/firewalls", {
      signal,
      filter: { label: name },
    });
    for (const fw of orphans)
      if (fw.label === name && sameOwner(ownerOfTags(fw.tags), owner))
        await this.releaseFirewall(fw, undefined, false, signal);
    return undefined;
  }

  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const page = pageToken === undefined ? 1 : Number(pageToken);
    if (!Number.isInteger(page) || page < 1) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const answer = await this.client.page<WireNodeBalancer>(LB_OPS.list, "/nodebalancers", page, {
      signal,
      filter: { tags: OWNED_TAG },
    });
    const items: OwnedLoadBalancer[] = [];
    for (const nb of answer.data.map(checkNodeBalancer)) {
      const owner = ownerOfTags(nb.tags);
      if (owner === undefined || !nb.tags.includes(OWNED_TAG)) continue;
      const { shape, ...digests } = digestsOfTags(nb.tags);
      items.push({ id: String(nb.id), name: nb.label, owner, ingress: ingressOf(nb, shape), ...digests });
    }
    return page < answer.pages ? { items, nextPageToken: String(page + 1) } : { items };
  }

  // ---- finding ------------------------------------------------------------------------------

  private async ownedNodeBalancers(owner: LbOwner, signal?: AbortSignal): Promise<WireNodeBalancer[]> {
    const found = await this.client.list<WireNodeBalancer>(LB_OPS.list, "/nodebalancers", {
      signal,
      filter: { tags: `${UID_TAG}${owner.serviceUid}` },
    });
    return found
      .map(checkNodeBalancer)
      .filter((nb) => sameOwner(ownerOfTags(nb.tags), owner))
      .sort((a, b) => a.id - b.id);
  }

  private async findOwned(owner: LbOwner, signal?: AbortSignal): Promise<WireNodeBalancer | undefined> {
    return (await this.ownedNodeBalancers(owner, signal))[0];
  }

  /**
   * The NodeBalancer the Linode CCM made for this Service, found as it finds it (the
   * nodebalancer-id annotation, else the Service's ingress IP), tagged as ours; undefined when none.
   * Only one in the cluster's scope (whyNotAdoptable) is touched; anything else is refused.
   */
  private async adopt(
    owner: LbOwner,
    id: number | undefined,
    ingressList: readonly LbIngress[],
    adoptFrom: AdoptFrom | undefined,
    tags: readonly string[],
    signal?: AbortSignal,
  ): Promise<WireNodeBalancer | undefined> {
    let found: WireNodeBalancer | undefined;
    if (id !== undefined) {
      try {
        found = await this.client.get<WireNodeBalancer>(LB_OPS.get, `/nodebalancers/${id}`, { signal });
      } catch (err) {
        if (isNotFound(err))
          throw new CloudError(`NodeBalancer ${id} (nodebalancer-id annotation) does not exist`);
        throw err;
      }
    } else {
      for (const ingress of ingressList) {
        if (ingress.ip === undefined || ingress.ip === "") continue;
        const family = ingress.ip.includes(":") ? "ipv6" : "ipv4";
        const list = await this.client.list<WireNodeBalancer>(LB_OPS.list, "/nodebalancers", {
          signal,
          filter: { [family]: ingress.ip },
        });
        found = list.find((nb) => nb[family] === ingress.ip);
        if (found !== undefined) break;
      }
    }
    if (found === undefined) return undefined;
    found = checkNodeBalancer(found);
    const why = whyNotAdoptable(found, owner, adoptFrom);
    if (why !== undefined) throw new CloudError(`NodeBalancer ${found.id} ${why}: not adopting it`);
    if (found.region !== this.ctx.account.region)
      throw new CloudError(`NodeBalancer ${found.id} is in ${found.region}, not ${this.ctx.account.region}`);
    const adopted = await this.client.put<WireNodeBalancer>(
      LB_OPS.update,
      `/nodebalancers/${found.id}`,
      { tags: [...new Set([...found.tags.filter((t) => !isOurTag(t)), ...tags])] },
      { signal },
    );
    this.ctx.logger.info({ nodebalancer: found.id, label: found.label }, "NodeBalancer adopted");
    return adopted;
  }

  /**
   * The firewall firewall-id names must be this cluster's to attach: not one the hub made for
   * another Service, not one filtering another cluster's NodeBalancers (their rule changes and
   * deletion would then hit this Service, and this Service's detach theirs). Reads only.
   */
  private async checkFirewall(
    owner: LbOwner,
    id: number,
    adoptFrom: AdoptFrom | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    let fw: WireFirewall;
    try {
      fw = await this.client.get<WireFirewall>(LB_OPS.firewallGet, `/networking/firewalls/${id}`, { signal });
    } catch (err) {
      if (isNotFound(err)) throw new CloudError(`firewall ${id} (firewall-id annotation) does not exist`);
      throw err;
    }
    const tags = Array.isArray(fw.tags) ? fw.tags : [];
    if (tags.some(isOurTag) && !sameOwner(ownerOfTags(tags), owner))
      throw new CloudError(
        `firewall ${id} (firewall-id annotation) is one fleet-ccm made for another Service${clusterOf(tags)}: not attaching it`,
      );
    const devices = await this.client.list<WireFirewallDevice>(
      LB_OPS.devicesList,
      `/networking/firewalls/${id}/devices`,
      { signal },
    );
    for (const d of devices) {
      if (d.entity?.type !== "nodebalancer") continue;
      const nbId = checkId(d.entity.id, "NodeBalancer");
      let nb: WireNodeBalancer;
      try {
        nb = checkNodeBalancer(
          await this.client.get<WireNodeBalancer>(LB_OPS.get, `/nodebalancers/${nbId}`, { signal }),
        );
      } catch (err) {
        if (isNotFound(err)) continue;
        throw err;
      }
      if (!inClusterScope(nb, owner.cluster, adoptFrom))
        throw new CloudError(
          `firewall ${id} (firewall-id annotation) filters NodeBalancer ${nbId}, which is not this cluster's: not attaching it`,
        );
    }
  }

  private configs(nbId: number, signal?: AbortSignal): Promise<WireNbConfig[]> {
    return this.client.list<WireNbConfig>(LB_OPS.configsList, `/nodebalancers/${nbId}/configs`, { signal });
  }

  private nodes(nbId: number, configId: number, signal?: AbortSignal): Promise<WireNbNode[]> {
    return this.client.list<WireNbNode>(
      LB_OPS.nodesList,
      `/nodebalancers/${nbId}/configs/${configId}/nodes`,
      {
        signal,
      },
    );
  }

  /**
   * An existing NodeBalancer keeps the kind of backends it was made with (its nodes' subnet_id
   * tells); one without nodes gets what a new one would.
   */
  private modeOf(network: VpcName, nodes: readonly WireNbNode[], ipv6: boolean): BackendMode {
    if (ipv6) return "ipv6";
    if (nodes.length === 0) return this.newBackendMode(network);
    return nodes.some((n) => n.subnet_id !== undefined && n.subnet_id !== null) ? "vpc" : "private";
  }

  /** A new NodeBalancer reaches its nodes over the cluster's VPC, when it has one (options.vpcBackends), as the Linode CCM does. */
  private newBackendMode(network: VpcName): BackendMode {
    return this.vpcBackends && hasVpc(network) ? "vpc" : "private";
  }

  /** The frontend_vpcs entry of a NodeBalancer with a VPC frontend. */
  private async frontendVpc(
    network: VpcName,
    f: NonNullable<LinodeLbSettings["frontend"]>,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    let subnet: number;
    if ("id" in f.subnet) subnet = f.subnet.id;
    else subnet = await this.vpc.subnetByName(network, f.subnet.vpc, f.subnet.subnet, signal);
    return {
      subnet_id: subnet,
      ...(f.ipv4Range !== undefined && { ipv4_range: f.ipv4Range }),
      ...(f.ipv6Range !== undefined && { ipv6_range: f.ipv6Range }),
    };
  }

  /** The backend subnet the Service's annotations name, if any (checked only when a NodeBalancer is made). */
  private async backendSubnet(
    network: VpcName,
    s: LinodeLbSettings,
    signal?: AbortSignal,
  ): Promise<number | undefined> {
    const b = s.backendSubnet;
    if (b === undefined) return undefined;
    if ("id" in b) return b.id;
    return this.vpc.subnetByName(network, b.vpc, b.subnet, signal);
  }

  /**
   * The backends' private and VPC IPv4 and public IPv6 addresses (one filtered list per hundred
   * Linodes), a node's private-ip and public-ipv6 annotations replacing its Linode's private IPv4
   * and SLAAC address (VPC backends take the VPC address, as the Linode CCM's do).
   */
  private async desiredNodes(
    network: VpcName,
    backends: readonly string[],
    signal?: AbortSignal,
    annotations?: BackendAnnotations,
  ): Promise<BackendNode[]> {
    const out: BackendNode[] = [];
    const vpcAddresses = await this.vpc.addressesByLinode(network, signal);
    const ids = [...new Set(backends)].map(Number).filter((n) => Number.isInteger(n));
    for (let i = 0; i < ids.length; i += IDS_PER_FILTER) {
      const part = ids.slice(i, i + IDS_PER_FILTER);
      const linodes = (
        await this.client.list<WireLinode>(LB_OPS.backends, "/linode/instances", {
          signal,
          filter: idsFilter(part, this.ctx.account.region),
        })
      ).map(checkLinode);
      for (const l of linodes) {
        if (!part.includes(l.id)) continue;
        const overrides = nodeBackendOverrides(annotations?.[String(l.id)]);
        for (const problem of overrides.problems)
          this.ctx.logger.warn({ linode: l.id }, `${problem}: the Linode's own address is used`);
        const ip =
          overrides.privateIP ?? l.ipv4.find((a) => a.startsWith("192.168.")) ?? l.ipv4.find(isPrivateIPv4);
        const vpc = vpcAddresses.get(l.id)?.[0];
        const ipv6 =
          overrides.publicIPv6 ??
          (l.ipv6 === null || l.ipv6 === "" ? undefined : l.ipv6.replace(/\/128$/, ""));
        if (ip === undefined && vpc === undefined && ipv6 === undefined) {
          this.ctx.logger.warn(
            { linode: l.id },
            "backend Linode has no private, VPC or IPv6 address: left out of the NodeBalancer",
          );
          continue;
        }
        out.push({
          label: nodeLabel(l.id, l.label),
          ...(ip !== undefined && { privateIP: ip }),
          ...(ipv6 !== undefined && { ipv6 }),
          ...(vpc !== undefined && { vpc: { ip: vpc.address, subnetId: vpc.subnetId } }),
        });
      }
    }
    return out.sort((a, b) => a.label.localeCompare(b.label));
  }

  // ---- changing -----------------------------------------------------------------------------

  private async updateNodeBalancer(
    nb: WireNodeBalancer,
    tags: readonly string[],
    throttle: number,
    signal?: AbortSignal,
  ): Promise<WireNodeBalancer> {
    const body: Record<string, unknown> = {};
    // The digest tags stay until the ensure's last step replaces them.
    const kept = nb.tags.filter((t) => !isDigestTag(t));
    if (!sameTags(kept, tags)) body["tags"] = [...tags, ...nb.tags.filter(isDigestTag)];
    if (nb.client_conn_throttle !== throttle) body["client_conn_throttle"] = throttle;
    if (Object.keys(body).length === 0) return nb;
    return this.client.put<WireNodeBalancer>(LB_OPS.update, `/nodebalancers/${nb.id}`, body, { signal });
  }

  /** Replaces the NodeBalancer's digest tags given (a spec digest, a backends digest) when they differ. */
  private async recordDigests(
    nb: WireNodeBalancer,
    digests: { readonly spec?: string; readonly backends: string },
    signal?: AbortSignal,
  ): Promise<void> {
    const replaced = (t: string) =>
      t.startsWith(BACKENDS_DIGEST_TAG) || (digests.spec !== undefined && t.startsWith(SPEC_DIGEST_TAG));
    const tags = [
      ...nb.tags.filter((t) => !replaced(t)),
      ...(digests.spec !== undefined ? [`${SPEC_DIGEST_TAG}${digests.spec}`] : []),
      `${BACKENDS_DIGEST_TAG}${digests.backends}`,
    ];
    if (sameTags(nb.tags, tags)) return;
    await this.client.put<WireNodeBalancer>(LB_OPS.update, `/nodebalancers/${nb.id}`, { tags }, { signal });
  }

  private async reconcileConfigs(
    network: VpcName,
    nbId: number,
    want: readonly DesiredConfig[],
    nodes: readonly BackendNode[],
    settings: LinodeLbSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    const ipv6 = settings.enableIPv6Backends;
    const have = await this.configs(nbId, signal);
    const wanted = new Set(want.map((c) => c.port));
    for (const c of have)
      if (!wanted.has(c.port))
        await this.client.delete(LB_OPS.configDelete, `/nodebalancers/${nbId}/configs/${c.id}`, { signal });
    const kept = have.filter((c) => wanted.has(c.port));
    const currentOf = new Map<number, WireNbNode[]>();
    for (const c of kept) currentOf.set(c.id, await this.nodes(nbId, c.id, signal));
    const existing = [...currentOf.values()].flat();
    const mode = this.modeOf(network, existing, ipv6);
    const subnet =
      mode === "vpc"
        ? (soleSubnet(existing) ?? (await this.backendSubnet(network, settings, signal)))
        : undefined;
    for (const w of want) {
      let config = kept.find((c) => c.port === w.port);
      let current: WireNbNode[] = [];
      if (config === undefined) {
        config = await this.client.post<WireNbConfig>(
          LB_OPS.configCreate,
          `/nodebalancers/${nbId}/configs`,
          configFields(w),
          { signal },
        );
      } else {
        current = currentOf.get(config.id) ?? [];
      }
      const nextNodes = nodesFor(nodes, w.nodePort, current, mode, subnet);
      if (configMatches(config, w) && sameNodes(current, nextNodes)) continue;
      await this.client.post(
        LB_OPS.rebuild,
        `/nodebalancers/${nbId}/configs/${config.id}/rebuild`,
        { ...configFields(w), nodes: nextNodes },
        { signal },
      );
    }
  }

  private async reconcileFirewall(
    owner: LbOwner,
    nb: WireNodeBalancer,
    name: string,
    rules: WireFirewallRules | undefined,
    s: LinodeLbSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    const attached = await this.client.unpaged<WireFirewall>(
      LB_OPS.nbFirewalls,
      `/nodebalancers/${nb.id}/firewalls`,
      {
        signal,
      },
    );
    // Ours, or the one the Linode CCM made for this NodeBalancer (it labels it with the NodeBalancer's label).
    const mine = (fw: WireFirewall) =>
      sameOwner(ownerOfTags(fw.tags), owner) || (ownerOfTags(fw.tags) === undefined && fw.label === nb.label);
    if (s.firewallId !== undefined) {
      for (const fw of attached) {
        if (fw.id === s.firewallId) continue;
        if (mine(fw)) await this.releaseFirewall(fw, nb.id, fw.label === name, signal);
        else await this.detach(fw.id, nb.id, signal);
      }
      if (!attached.some((fw) => fw.id === s.firewallId))
        await this.client.post(
          LB_OPS.deviceCreate,
          `/networking/firewalls/${s.firewallId}/devices`,
          { id: nb.id, type: "nodebalancer" },
          { signal },
        );
      return;
    }
    const ours = attached.filter(mine);
    // Any other firewall (one firewall-id named) is let go of: detached, never deleted.
    for (const fw of attached) if (!mine(fw)) await this.detach(fw.id, nb.id, signal);
    if (rules === undefined) {
      for (const fw of ours) await this.releaseFirewall(fw, nb.id, fw.label === name, signal);
      return;
    }
    const [keep, ...extra] = ours;
    for (const fw of extra) await this.releaseFirewall(fw, nb.id, fw.label === name, signal);
    if (keep !== undefined) {
      if (rulesKey(keep.rules) !== rulesKey(rules))
        await this.client.put(LB_OPS.firewallRulesUpdate, `/networking/firewalls/${keep.id}/rules`, rules, {
          signal,
        });
      if (!sameOwner(ownerOfTags(keep.tags), owner))
        await this.client.put(
          LB_OPS.firewallUpdate,
          `/networking/firewalls/${keep.id}`,
          { tags: [...keep.tags.filter((t) => !isOurTag(t)), ...ownerTags(owner)] },
          { signal },
        );
      return;
    }
    const fw = await this.ownFirewall(owner, name, rules, nb.id, signal);
    if (!fw.attached)
      await this.client.post(
        LB_OPS.deviceCreate,
        `/networking/firewalls/${fw.id}/devices`,
        { id: nb.id, type: "nodebalancer" },
        { signal },
      );
  }

  /**
   * The owner's firewall by its label with these rules: one an interrupted ensure made (never a
   * second), else a new one, attached at creation to `nbId` when given.
   */
  private async ownFirewall(
    owner: LbOwner,
    name: string,
    rules: WireFirewallRules,
    nbId: number | undefined,
    signal?: AbortSignal,
  ): Promise<{ readonly id: number; readonly attached: boolean }> {
    const orphan = (
      await this.client.list<WireFirewall>(LB_OPS.firewallsList, "/networking/firewalls", {
        signal,
        filter: { label: name },
      })
    ).find((fw) => fw.label === name && sameOwner(ownerOfTags(fw.tags), owner));
    if (orphan !== undefined) {
      if (rulesKey(orphan.rules) !== rulesKey(rules))
        await this.client.put(LB_OPS.firewallRulesUpdate, `/networking/firewalls/${orphan.id}/rules`, rules, {
          signal,
        });
      return { id: checkId(orphan.id, "firewall"), attached: false };
    }
    const made = await this.client.post<WireFirewall>(
      LB_OPS.firewallCreate,
      "/networking/firewalls",
      {
        label: name,
        tags: ownerTags(owner),
        rules,
        ...(nbId !== undefined && { devices: { nodebalancers: [nbId] } }),
      },
      { signal },
    );
    return { id: checkId(made.id, "firewall"), attached: nbId !== undefined };
  }

  /** Deletes (or, preserved, lets go of) a NodeBalancer of the owner and the firewalls made for it. */
  private async release(
    owner: LbOwner,
    nb: WireNodeBalancer,
    preserve: boolean,
    signal?: AbortSignal,
    retainReservedIPv4 = true,
  ) {
    const attached = await this.client.unpaged<WireFirewall>(
      LB_OPS.nbFirewalls,
      `/nodebalancers/${nb.id}/firewalls`,
      {
        signal,
      },
    );
    const made = attached.filter(
      (fw) =>
        sameOwner(ownerOfTags(fw.tags), owner) ||
        (ownerOfTags(fw.tags) === undefined && fw.label === nb.label),
    );
    if (preserve) {
      for (const fw of made)
        if (fw.tags.some(isOurTag))
          await this.client.put(
            LB_OPS.firewallUpdate,
            `/networking/firewalls/${fw.id}`,
            { tags: fw.tags.filter((t) => !isOurTag(t)) },
            { signal },
          );
      await this.client.put(
        LB_OPS.update,
        `/nodebalancers/${nb.id}`,
        { tags: nb.tags.filter((t) => !isOurTag(t)) },
        { signal },
      );
      this.ctx.logger.info(
        { nodebalancer: nb.id },
        "NodeBalancer preserved (preserve annotation): no longer ours",
      );
      return;
    }
    // The Service is gone: a firewall that filters other devices too is let go of, not kept as ours.
    for (const fw of made) await this.releaseFirewall(fw, nb.id, false, signal);
    if (!retainReservedIPv4) {
      // As the Linode CCM: the NodeBalancer's IPv4 stops being reserved; not reserved is done.
      try {
        await this.client.delete(
          LB_OPS.reservedIPDelete,
          `/networking/reserved/ips/${encodeURIComponent(nb.ipv4)}`,
          { signal },
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    try {
      await this.client.delete(LB_OPS.delete, `/nodebalancers/${nb.id}`, { signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    for (const k of this.tlsSent.keys()) if (k.startsWith(`${nb.id}/`)) this.tlsSent.delete(k);
    this.ctx.logger.info({ nodebalancer: nb.id }, "NodeBalancer deleted");
  }

  /**
   * Deletes a firewall made for NodeBalancer `nbId` (by this hub, or by the Linode CCM) when that
   * NodeBalancer is all it filters (undefined: when it filters nothing). One an operator has also
   * attached to other devices is never deleted under them, as the Linode CCM's DeleteFirewall
   * skips the delete of a firewall with more than one device: it is only detached from the
   * NodeBalancer, and unless `keepOurs` (a Service that may want its firewall back) it is let go
   * of, our tags removed, so nothing of the hub deletes or rewrites it later.
   */
  private async releaseFirewall(
    fw: WireFirewall,
    nbId: number | undefined,
    keepOurs: boolean,
    signal?: AbortSignal,
  ): Promise<void> {
    const id = checkId(fw.id, "firewall");
    let devices: WireFirewallDevice[];
    try {
      devices = await this.client.list<WireFirewallDevice>(
        LB_OPS.devicesList,
        `/networking/firewalls/${id}/devices`,
        { signal },
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    const isThis = (d: WireFirewallDevice) => d.entity?.type === "nodebalancer" && d.entity.id === nbId;
    const others = devices.filter((d) => !isThis(d));
    if (others.length === 0) {
      await this.deleteFirewall(id, signal);
      return;
    }
    for (const d of devices.filter(isThis))
      await this.client.delete(
        LB_OPS.deviceDelete,
        `/networking/firewalls/${id}/devices/${checkId(d.id, "device")}`,
        {
          signal,
        },
      );
    if (!keepOurs && fw.tags.some(isOurTag))
      await this.client.put(
        LB_OPS.firewallUpdate,
        `/networking/firewalls/${id}`,
        { tags: fw.tags.filter((t) => !isOurTag(t)) },
        { signal },
      );
    this.ctx.logger.warn(
      {
        firewall: id,
        ...(nbId !== undefined && { nodebalancer: nbId }),
        devices: others.map((d) => `${d.entity?.type}/${d.entity?.id}`),
      },
      "firewall filters other devices too: detached, not deleted",
    );
  }

  private async deleteFirewall(id: number, signal?: AbortSignal): Promise<void> {
    try {
      await this.client.delete(LB_OPS.firewallDelete, `/networking/firewalls/${id}`, { signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  private async detach(firewallId: number, nbId: number, signal?: AbortSignal): Promise<void> {
    const devices = await this.client.list<{ id: number; entity: { id: number; type: string } }>(
      LB_OPS.devicesList,
      `/networking/firewalls/${firewallId}/devices`,
      { signal },
    );
    for (const d of devices)
      if (d.entity.type === "nodebalancer" && d.entity.id === nbId)
        await this.client.delete(LB_OPS.deviceDelete, `/networking/firewalls/${firewallId}/devices/${d.id}`, {
          signal,
        });
  }
}

/**
 * Linodes by id in the region. The region key keeps the filter a "simple filter" for the spec's
 * oneOf (a filter of operators only matches both of its schemas).
 */
export function idsFilter(ids: readonly number[], region: string): Record<string, unknown> {
  return ids.length === 1 ? { id: ids[0], region } : { "+or": ids.map((id) => ({ id })), region };
}

/** A backend Linode's addresses: private IPv4, and VPC IPv4 with its subnet when in the VPC. */
interface BackendNode {
  readonly label: string;
  readonly privateIP?: string;
  readonly vpc?: { readonly ip: string; readonly subnetId: number };
  /** The public (SLAAC) IPv6, for enable-ipv6-backends. */
  readonly ipv6?: string;
}

/** Which address of a node a NodeBalancer reaches: private IPv4, VPC IPv4 or public IPv6. */
type BackendMode = "private" | "vpc" | "ipv6";

function addressOf(n: BackendNode, mode: BackendMode): string | undefined {
  return mode === "vpc" ? n.vpc?.ip : mode === "ipv6" ? n.ipv6 : n.privateIP;
}

/**
 * The one subnet every existing VPC node is in: the NodeBalancer's backend subnet, which new
 * nodes must use too. Undefined when the nodes span several (one backend VPC each).
 */
function soleSubnet(nodes: readonly WireNbNode[]): number | undefined {
  const ids = new Set(nodes.flatMap((n) => (typeof n.subnet_id === "number" ? [n.subnet_id] : [])));
  return ids.size === 1 ? [...ids][0] : undefined;
}

/** `<ip>:<port>`, IPv6 bracketed (Go's net.JoinHostPort, as the Linode CCM). */
function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function nodesFor(
  nodes: readonly BackendNode[],
  nodePort: number,
  existing: readonly WireNbNode[],
  mode: BackendMode,
  subnetOverride?: number,
): (DesiredNode & { id?: number; subnet_id?: number })[] {
  const out: (DesiredNode & { id?: number; subnet_id?: number })[] = [];
  for (const n of nodes) {
    const ip = addressOf(n, mode);
    if (ip === undefined) continue;
    const address = hostPort(ip, nodePort);
    const id = existing.find((e) => e.address === address)?.id;
    out.push({
      address,
      label: n.label,
      weight: 100,
      mode: "accept",
      ...(id !== undefined && { id }),
      ...(mode === "vpc" && n.vpc !== undefined && { subnet_id: subnetOverride ?? n.vpc.subnetId }),
    });
  }
  return out;
}

function sameNodes(
  have: readonly WireNbNode[],
  want: readonly (DesiredNode & { subnet_id?: number })[],
): boolean {
  const key = (n: {
    address: string;
    label: string;
    weight: number;
    mode: string;
    subnet_id?: number | null;
  }) => `${n.address}|${n.label}|${n.weight}|${n.mode}|${n.subnet_id ?? ""}`;
  return JSON.stringify(have.map(key).sort()) === JSON.stringify(want.map(key).sort());
}

/**
 * Why a NodeBalancer found for the owner is not its to adopt, or undefined: the owner's own, or
 * one the Linode CCM made for the cluster the operator named in clusters[].adoptFrom (it tags
 * its NodeBalancers with its --cluster-name), carrying no fleet-ccm mark. Anything else (another
 * Service's, another cluster's, one that has nothing to do with Kubernetes) is refused.
 */
export function whyNotAdoptable(
  nb: WireNodeBalancer,
  owner: LbOwner,
  adoptFrom: AdoptFrom | undefined,
): string | undefined {
  const holder = ownerOfTags(nb.tags);
  if (sameOwner(holder, owner)) return undefined;
  if (holder !== undefined) return `belongs to another Service (cluster ${holder.cluster})`;
  if (nb.tags.some(isOurTag)) return "carries fleet-ccm tags of no Service";
  if (adoptFrom === undefined)
    return "was not made by this hub, and this cluster has no adoptFrom in the hub's configuration";
  if (!nb.tags.includes(adoptFrom.vendorCcmClusterName))
    return `lacks the tag ${adoptFrom.vendorCcmClusterName} the Linode CCM puts on this cluster's NodeBalancers (adoptFrom)`;
  return undefined;
}

/** A NodeBalancer of the cluster: made by the hub for it, or (adoptFrom) by its Linode CCM. */
function inClusterScope(nb: WireNodeBalancer, cluster: string, adoptFrom: AdoptFrom | undefined): boolean {
  const holder = ownerOfTags(nb.tags);
  if (holder !== undefined) return holder.cluster === cluster;
  return (
    !nb.tags.some(isOurTag) && adoptFrom !== undefined && nb.tags.includes(adoptFrom.vendorCcmClusterName)
  );
}

function clusterOf(tags: readonly string[]): string {
  const holder = ownerOfTags(tags);
  return holder === undefined ? "" : ` (cluster ${holder.cluster})`;
}

/** A NodeBalancer from the API, checked before its id, tags and addresses are used. */
export function checkNodeBalancer(body: unknown): WireNodeBalancer {
  const nb = body as Partial<WireNodeBalancer> | null;
  if (typeof nb !== "object" || nb === null)
    throw new SuspectAnswerError("Linode API answered no NodeBalancer");
  checkId(nb.id, "NodeBalancer");
  if (!Array.isArray(nb.tags) || !nb.tags.every((t) => typeof t === "string"))
    throw new SuspectAnswerError(`NodeBalancer ${nb.id}: tags are not a list of strings`);
  if (typeof nb.ipv4 !== "string" || isIP(nb.ipv4) !== 4)
    throw new SuspectAnswerError(
      `NodeBalancer ${nb.id}: ipv4 ${JSON.stringify(nb.ipv4)} is not an IPv4 address`,
    );
  if (nb.ipv6 !== undefined && nb.ipv6 !== null && (typeof nb.ipv6 !== "string" || isIP(nb.ipv6) !== 6))
    throw new SuspectAnswerError(
      `NodeBalancer ${nb.id}: ipv6 ${JSON.stringify(nb.ipv6)} is not an IPv6 address`,
    );
  if (typeof nb.label !== "string" || typeof nb.region !== "string" || typeof nb.hostname !== "string")
    throw new SuspectAnswerError(`NodeBalancer ${nb.id}: label, region or hostname is not a string`);
  return nb as WireNodeBalancer;
}

/** An id from the API, checked before it goes into a path or a body. */
export function checkId(id: unknown, what: string): number {
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1)
    throw new SuspectAnswerError(`Linode API answered ${JSON.stringify(id)} as a ${what} id`);
  return id;
}

function portOf(nodes: readonly WireNbNode[]): number | undefined {
  const port = nodes[0]?.address.split(":").pop();
  // "[2600::1]:30080" and "192.168.1.2:30080" both end in ":<port>"; anything else is no port.
  if (port === undefined || !/^\d{1,5}$/.test(port)) return undefined;
  const n = Number(port);
  return n >= 1 && n <= 65535 ? n : undefined;
}
