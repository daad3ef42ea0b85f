/**
 * Load balancers on DigitalOcean, one per Service, as the DigitalOcean CCM builds them: created
 * with their forwarding rules (one per Service port, to its node port on every Droplet, TLS ones
 * with the Service's certificate or passthrough: forwarding-rules.ts, certificates.ts), health
 * check, sticky sessions, Droplet ids, firewall (allow from loadBalancerSourceRanges, or the
 * allow-rules/deny-rules annotations) and VPC (the cluster's network); changed with a
 * whole-object PUT; `status: new` is InProgress, `errored` an OperationFailedError once, then
 * the failed one is deleted and built again.
 *
 * DigitalOcean load balancers carry no tags, so the name is the ownership mark:
 * `<loadBalancerName(cluster, uid)>.<cluster>.<uid>` (naming.ts' deterministic name first, so a
 * name is the owner's only if its hash matches the rest), and a creation the cloud failed, once
 * reported, is renamed with `.failed` after it (the FAILURE_REPORTED_TAG of clouds with tags):
 * any replica reads both from the cloud. Each load balancer is an object of its own: no lockKey.
 * Its id is reported as the DigitalOcean CCM's `kubernetes.digitalocean.com/load-balancer-id`
 * Service annotation (LbServiceHints.annotate), so going back to that CCM keeps it. As that
 * CCM: with adoptFrom, a Service's own load balancer of it goes with the Service even if never
 * adopted, and `service.kubernetes.io/do-loadbalancer-disown` makes every call leave it alone.
 *
 * Type and network stack: a new load balancer is the type annotation's (else the account's
 * defaultLoadBalancerType, REGIONAL unless set) and the network-stack annotation's (else IPV4);
 * an existing one (adopted or the hub's) keeps its own where the Service has no annotation, as
 * DigitalOcean cannot change a network stack and upstream's defaults (REGIONAL_NETWORK, and
 * DUALSTACK for REGIONAL) are not the hub's. The type is written back as
 * `service.beta.kubernetes.io/do-loadbalancer-type`, as upstream does, so going back to it keeps it.
 */

import { AnnotationError } from "../../annotation-bounds.js";
import {
  CloudError,
  ImplementedElsewhereError,
  isRetryable,
  NeedsEnsureError,
  OperationFailedError,
  SuspectAnswerError,
} from "../../errors.js";
import { loadBalancerName } from "../../naming.js";
import {
  type InProgress,
  inProgress,
  type LbIngress,
  type LbOwner,
  type LbServiceHints,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  lbOwner,
  type OwnedLoadBalancerPage,
  type ProviderContext,
  type ServiceTarget,
} from "../../provider.js";
import {
  A,
  ANNOTATION_PREFIX,
  CERTIFICATE_ID,
  createOnlyRefusal,
  DISOWN,
  DO_BOUNDS,
  type DoLbSettings,
  isDisowned,
  LB_TYPE,
  LOAD_BALANCER_ID,
  parseDoAnnotations,
  proxyRuleKeysSet,
  type VendorRefs,
  vendorRefs,
} from "./annotations.js";
import { certificateToUse, serviceCertificateId } from "./certificates.js";
import type { DigitalOceanClient } from "./client.js";
import { isNotFound } from "./errors.js";
import { forwardingRules } from "./forwarding-rules.js";
import type { LbNetworkStack, LbType, WireForwardingRule, WireLbRequest, WireLoadBalancer } from "./wire.js";

export const LB_OPS = {
  list: "loadBalancers.list",
  get: "loadBalancers.get",
  create: "loadBalancers.create",
  update: "loadBalancers.update",
  delete: "loadBalancers.delete",
} as const;

/** After the owner's name: the cloud failed this creation, and an ensure has reported it. */
export const FAILED_SUFFIX = ".failed";
const DO_NAME_MAX = 255;
const UID_FORM = /^[A-Za-z0-9-]{1,128}$/;

/** The owner's load balancer name (owner recoverable from it when the uid is name-safe). */
export function ownerName(o: LbOwner): string {
  const base = loadBalancerName(o.cluster, o.serviceUid);
  const full = `${base}.${o.cluster}.${o.serviceUid}`;
  return UID_FORM.test(o.serviceUid) && full.length + FAILED_SUFFIX.length <= DO_NAME_MAX ? full : base;
}

/** The owner a name records, if it is one of the hub's (its hash checked). */
export function ownerOfName(name: string): LbOwner | undefined {
  const bare = name.endsWith(FAILED_SUFFIX) ? name.slice(0, -FAILED_SUFFIX.length) : name;
  const [hash, cluster, serviceUid, ...rest] = bare.split(".");
  if (rest.length > 0 || hash === undefined || cluster === undefined || serviceUid === undefined)
    return undefined;
  return loadBalancerName(cluster, serviceUid) === hash ? { cluster, serviceUid } : undefined;
}

/** The name the DigitalOcean CCM gives a Service's load balancer by default (upstream's DefaultLoadBalancerName). */
export function vendorDefaultName(serviceUid: string): string {
  return `a${serviceUid.replace(/-/g, "")}`.slice(0, 32);
}

/** The names upstream gives (or gave) the Service's load balancer: its default, the name annotation's. */
function upstreamNames(o: LbOwner, refs: VendorRefs): string[] {
  return [vendorDefaultName(o.serviceUid), ...(refs.name === undefined ? [] : [refs.name])];
}

function isOwners(lb: WireLoadBalancer, o: LbOwner): boolean {
  const n = ownerName(o);
  return lb.name === n || lb.name === n + FAILED_SUFFIX;
}

function checkLb(body: unknown): WireLoadBalancer {
  const lb = body as Partial<WireLoadBalancer> | null;
  if (
    typeof lb !== "object" ||
    lb === null ||
    typeof lb.id !== "string" ||
    lb.id === "" ||
    typeof lb.name !== "string" ||
    typeof lb.status !== "string" ||
    !Array.isArray(lb.forwarding_rules)
  )
    throw new SuspectAnswerError("DigitalOcean API answered something that is not a load balancer");
  return lb as WireLoadBalancer;
}

function ingressOf(lb: WireLoadBalancer): LbIngress[] {
  const out: LbIngress[] = [];
  if (typeof lb.ip === "string" && lb.ip !== "") out.push({ ip: lb.ip });
  if (lb.network_stack === "DUALSTACK" && typeof lb.ipv6 === "string" && lb.ipv6 !== "")
    out.push({ ip: lb.ipv6 });
  return out;
}

const backendsOf = (lb: WireLoadBalancer) => [...(lb.droplet_ids ?? [])].map(String).sort();

/**
 * The health check goes to kube-proxy (healthCheckNodePort), not the app: its port is no
 * listener's node port. kube-proxy speaks no PROXY protocol, so that check must not send it.
 */
const checksKubeProxy = (spec: LoadBalancerSpec, port: number) =>
  port > 0 && !spec.listeners.some((l) => l.nodePort === port);

/**
 * What DigitalOcean fixes at creation, or (type) what decides the rules, and the size where the
 * Service names none: a load balancer's, or a new one's.
 */
interface Kind {
  readonly type: LbType;
  readonly networkStack: LbNetworkStack;
  readonly size: Pick<WireLbRequest, "size_unit" | "size">;
}

/**
 * A load balancer's own size. Upstream sends none without a size annotation (omitempty), so one
 * scaled in the console keeps its nodes: the hub sends back what it has.
 */
const sizeOf = (lb: WireLoadBalancer): Kind["size"] =>
  lb.size_unit !== undefined ? { size_unit: lb.size_unit } : lb.size !== undefined ? { size: lb.size } : {};

/** An existing load balancer's type as the hub builds it (GLOBAL ones front load balancers, not Droplets). */
const typeOf = (lb: WireLoadBalancer): LbType =>
  lb.type === "REGIONAL_NETWORK" ? "REGIONAL_NETWORK" : "REGIONAL";

/** A certificate-name stands for an id only known after its lookup: the shape checks need none. */
const NAMED_CERTIFICATE = "(certificate-name)";

/** The whole writable object of a load balancer as the cloud holds it (a PUT that changes only what the caller changes). */
function requestOf(lb: WireLoadBalancer): WireLbRequest {
  return {
    name: lb.name,
    region: lb.region.slug,
    ...sizeOf(lb),
    forwarding_rules: lb.forwarding_rules,
    health_check: lb.health_check,
    sticky_sessions: lb.sticky_sessions,
    redirect_http_to_https: lb.redirect_http_to_https ?? false,
    enable_proxy_protocol: lb.enable_proxy_protocol ?? false,
    enable_backend_keepalive: lb.enable_backend_keepalive ?? false,
    http_idle_timeout_seconds: lb.http_idle_timeout_seconds ?? 60,
    ...(lb.vpc_uuid !== undefined && lb.vpc_uuid !== "" && { vpc_uuid: lb.vpc_uuid }),
    disable_lets_encrypt_dns_records: lb.disable_lets_encrypt_dns_records ?? false,
    firewall: { allow: lb.firewall?.allow ?? [], deny: lb.firewall?.deny ?? [] },
    network: lb.network ?? "EXTERNAL",
    network_stack: lb.network_stack ?? "IPV4",
    type: typeOf(lb),
    droplet_ids: lb.droplet_ids ?? [],
  };
}

const ruleKey = (r: WireForwardingRule) =>
  `${r.entry_protocol}:${r.entry_port}>${r.target_protocol}:${r.target_port}:${r.certificate_id ?? ""}:${r.tls_passthrough === true}`;

/** JSON with every object's keys sorted: the cloud's key order is not a difference. */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  if (typeof v !== "object" || v === null) return JSON.stringify(v);
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stable(o[k])}`)
    .join(",")}}`;
}

/** What of `want` the cloud's `have` differs in (empty: nothing to PUT). */
export function differences(have: WireLbRequest, want: WireLbRequest): string[] {
  const out: string[] = [];
  const eq = (a: unknown, b: unknown) => stable(a) === stable(b);
  const sorted = (xs: readonly (string | number)[]) => [...xs].map(String).sort();
  if (have.name !== want.name) out.push("name");
  if (!eq(have.forwarding_rules.map(ruleKey).sort(), want.forwarding_rules.map(ruleKey).sort()))
    out.push("forwarding_rules");
  const hc = ({ health_check: h, enable_proxy_protocol }: WireLbRequest) => ({
    ...h,
    path: h.protocol === "tcp" ? "" : (h.path ?? "/"),
    // Unset, the check follows the load balancer's PROXY protocol.
    proxy_protocol: h.proxy_protocol ?? enable_proxy_protocol,
  });
  if (!eq(hc(have), hc(want))) out.push("health_check");
  const sticky = (s: WireLbRequest["sticky_sessions"]) =>
    s.type === "cookies" ? { type: s.type, n: s.cookie_name, t: s.cookie_ttl_seconds } : { type: "none" };
  if (!eq(sticky(have.sticky_sessions), sticky(want.sticky_sessions))) out.push("sticky_sessions");
  for (const k of [
    "enable_proxy_protocol",
    "enable_backend_keepalive",
    "http_idle_timeout_seconds",
    "disable_lets_encrypt_dns_records",
    "redirect_http_to_https",
    "type",
  ] as const)
    if (have[k] !== want[k]) out.push(k);
  if (
    (want.size_unit !== undefined && have.size_unit !== want.size_unit) ||
    (want.size !== undefined && have.size !== want.size)
  )
    out.push("size");
  if (
    !eq(sorted(have.firewall.allow), sorted(want.firewall.allow)) ||
    !eq(sorted(have.firewall.deny), sorted(want.firewall.deny))
  )
    out.push("firewall");
  if (!eq(sorted(have.droplet_ids), sorted(want.droplet_ids))) out.push("droplet_ids");
  return out;
}

/** A load balancer the Service's annotations or name point at that the hub did not make. */
interface Candidate {
  readonly lb: WireLoadBalancer;
  readonly how: string;
}

export class DigitalOceanLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = {
    // DigitalOcean's stickiness is by cookie (sticky-sessions-type), not by client IP.
    sessionAffinity: false,
    proxyProtocol: true,
    internal: true,
    protocols: ["TCP", "UDP", "HTTP"],
    settingBounds: DO_BOUNDS,
    serviceAnnotationKeys: [LOAD_BALANCER_ID, CERTIFICATE_ID, LB_TYPE],
  };

  /** Where the owner's load balancer was last seen: a hint checked by its name on every use, never the truth. */
  private readonly seen = new Map<string, string>();
  /** Owners whose last ensure was disowned: their backend updates change nothing either. */
  private readonly disowned = new Set<string>();

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: DigitalOceanClient,
    /** How long to wait before looking at a `new` load balancer again (upstream: 15 s). */
    private readonly pollMs: number,
    /** A new load balancer's type without the type annotation (upstream's DEFAULT_LB_TYPE). */
    private readonly defaultType: LbType = "REGIONAL",
  ) {}

  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    parseDoAnnotations(annotations, this.defaultType);
  }

  /** A new load balancer's type and stack: the annotations', else the account's default type and IPV4; size_unit 1. */
  private newKind(s: DoLbSettings): Kind {
    return {
      type: s.type ?? this.defaultType,
      networkStack: s.networkStack ?? "IPV4",
      size: { size_unit: 1 },
    };
  }

  private key(o: LbOwner): string {
    return `${o.cluster}\u0000${o.serviceUid}`;
  }

  private all(signal?: AbortSignal): Promise<WireLoadBalancer[]> {
    return this.client
      .list<unknown>(LB_OPS.list, "/load_balancers", "load_balancers", {}, signal)
      .then((lbs) => lbs.map(checkLb));
  }

  private async byId(id: string, signal?: AbortSignal): Promise<WireLoadBalancer | undefined> {
    try {
      const answer = await this.client.get<{ load_balancer?: unknown }>(
        LB_OPS.get,
        `/load_balancers/${encodeURIComponent(id)}`,
        signal,
      );
      const lb = checkLb(answer.load_balancer);
      if (lb.id !== id)
        throw new SuspectAnswerError(`asked for load balancer ${id}, the API answered ${lb.id}`);
      return lb;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * The owner's load balancer: by the remembered id (or the one the Service's load-balancer-id
   * annotation names, after a restart) if it still bears the owner's name, else by name in the
   * list of all.
   */
  private async find(
    o: LbOwner,
    signal?: AbortSignal,
    annotatedId?: string,
  ): Promise<{ mine?: WireLoadBalancer; all?: WireLoadBalancer[] }> {
    const hint = this.seen.get(this.key(o)) ?? (annotatedId === "" ? undefined : annotatedId);
    if (hint !== undefined) {
      const lb = await this.byId(hint, signal);
      if (lb !== undefined && isOwners(lb, o)) return { mine: lb };
      this.seen.delete(this.key(o));
    }
    const all = await this.all(signal);
    const mine = all.find((lb) => isOwners(lb, o));
    if (mine !== undefined) this.seen.set(this.key(o), mine.id);
    return { ...(mine !== undefined && { mine }), all };
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const { mine } = await this.find(target, signal);
    if (mine === undefined) return undefined;
    return {
      id: mine.id,
      name: mine.name,
      owner: lbOwner(target),
      ingress: ingressOf(mine),
      backends: backendsOf(mine),
    };
  }

  /** What the owner's load balancer of `kind` must be for `spec`, its TLS rules with `certificateId`. */
  private desired(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    s: DoLbSettings,
    certificateId: string | undefined,
    kind: Kind,
  ): WireLbRequest {
    const rules = forwardingRules(spec.listeners, s, certificateId, kind.type);
    let hcPort = spec.healthCheck.port;
    if (s.healthCheckPort !== undefined) {
      const l = spec.listeners.find((x) => x.port === s.healthCheckPort);
      if (l === undefined)
        throw new AnnotationError(
          `${ANNOTATION_PREFIX}${A.healthCheckPort}`,
          String(s.healthCheckPort),
          "one of the Service's ports",
          "the Service has no such port",
        );
      hcPort = l.nodePort;
    }
    const hcProtocol = s.healthCheckProtocol ?? (spec.healthCheck.protocol === "HTTP" ? "http" : "tcp");
    const h = spec.healthCheck;
    const proxyProtocol = spec.listeners.some((l) => l.proxyProtocol);
    return {
      name: ownerName(target),
      region: this.ctx.account.region,
      ...(s.sizeSlug !== undefined
        ? { size: s.sizeSlug }
        : s.sizeUnit !== undefined
          ? { size_unit: s.sizeUnit }
          : kind.size),
      forwarding_rules: rules,
      health_check: {
        protocol: hcProtocol,
        port: hcPort,
        ...(hcProtocol !== "tcp" && { path: h.path === "" ? "/" : h.path }),
        check_interval_seconds: h.intervalSeconds,
        response_timeout_seconds: h.timeoutSeconds,
        unhealthy_threshold: h.unhealthyThreshold,
        healthy_threshold: h.healthyThreshold,
        // As upstream's default check (buildHealthCheck): else every node reads as unhealthy.
        ...(proxyProtocol && checksKubeProxy(spec, hcPort) && { proxy_protocol: false }),
      },
      sticky_sessions: s.stickySessions,
      redirect_http_to_https: s.redirectHttpToHttps,
      enable_proxy_protocol: proxyProtocol,
      enable_backend_keepalive: s.enableBackendKeepalive,
      http_idle_timeout_seconds: spec.idleTimeoutSeconds,
      ...(target.network !== undefined && target.network !== "" && { vpc_uuid: target.network }),
      disable_lets_encrypt_dns_records: s.disableLetsEncryptDnsRecords,
      // loadBalancerSourceRanges win; without them the allow-rules annotation, as upstream.
      firewall: {
        allow: spec.sourceRanges.length > 0 ? spec.sourceRanges.map((r) => `cidr:${r}`) : s.allowRules,
        deny: s.denyRules,
      },
      network: spec.internal ? "INTERNAL" : (s.network ?? "EXTERNAL"),
      network_stack: kind.networkStack,
      type: kind.type,
      droplet_ids: spec.backends.map(Number),
    };
  }

  /**
   * The DigitalOcean CCM's load balancer of this Service, as upstream finds it: the one its
   * load-balancer-id annotation names, else one bearing upstream's name for it.
   */
  private async vendorCandidate(
    target: ServiceTarget,
    refs: VendorRefs,
    all: WireLoadBalancer[] | undefined,
    signal?: AbortSignal,
  ): Promise<Candidate | undefined> {
    if (refs.loadBalancerId !== undefined) {
      const lb = await this.byId(refs.loadBalancerId, signal);
      if (lb !== undefined) return { lb, how: `${LOAD_BALANCER_ID}=${refs.loadBalancerId}` };
    }
    const names = upstreamNames(target, refs);
    const lb = (all ?? (await this.all(signal))).find((x) => names.includes(x.name));
    return lb === undefined ? undefined : { lb, how: `its name ${lb.name}` };
  }

  /**
   * Why the candidate is not this Service's to take over (adopt, or delete with the Service):
   * it is only with the operator's adoptFrom for this cluster, in the cluster's region and VPC,
   * under the name upstream gave it. Undefined: it is.
   */
  private refusal(target: ServiceTarget, { lb, how }: Candidate, refs: VendorRefs): string | undefined {
    const owner = ownerOfName(lb.name);
    if (owner !== undefined)
      return `load balancer ${lb.id} (${how}) belongs to another Service (${owner.cluster}/${owner.serviceUid}) of this hub`;
    const not = (why: string) => `load balancer ${lb.id} (${how}) was not made by this hub and ${why}`;
    if (target.scope.adoptFrom === undefined)
      return not("this cluster has no adoptFrom in the hub's configuration");
    if (lb.region.slug !== this.ctx.account.region)
      return not(`is in region ${lb.region.slug}, not ${this.ctx.account.region}`);
    if (target.network !== undefined && target.network !== "" && lb.vpc_uuid !== target.network)
      return not(`is in VPC ${lb.vpc_uuid ?? "(none)"}, not the cluster's ${target.network}`);
    const names = upstreamNames(target, refs);
    if (!names.includes(lb.name))
      return not(
        `is named ${lb.name}, not as the DigitalOcean CCM names this Service's load balancer (${names.join(" or ")})`,
      );
    return undefined;
  }

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress> {
    const annotations = spec.annotations ?? hints?.annotations ?? {};
    if (isDisowned(annotations)) {
      this.disowned.add(this.key(target));
      // As upstream: no call, and the Service keeps the status it shows.
      const why = `${DISOWN} is true: the load balancer is left as it is (not created, changed or deleted)`;
      this.ctx.logger.info({ serviceUid: target.serviceUid }, why);
      throw new ImplementedElsewhereError(why);
    }
    this.disowned.delete(this.key(target));
    const s = parseDoAnnotations(annotations, this.defaultType);
    if (s.name !== undefined && s.name !== ownerName(target))
      hints?.warn?.(
        "LoadBalancerNameIgnored",
        `${ANNOTATION_PREFIX}${A.name} is not applied: fleet-ccm names the load balancer after its owner (it finds it again by that name)`,
      );
    // Every shape check before any call (the certificate-name lookup included), as a new one of
    // the Service's type would be.
    this.desired(
      target,
      spec,
      s,
      s.certificateId ?? (s.certificateName === undefined ? undefined : NAMED_CERTIFICATE),
      this.newKind(s),
    );
    const serviceCert = await serviceCertificateId(this.client, s, signal);
    const found = await this.find(target, signal, annotations[LOAD_BALANCER_ID]);
    let lb = found.mine;
    if (lb === undefined) {
      const vendor = await this.vendorCandidate(target, s, found.all, signal);
      if (vendor === undefined)
        return this.create(target, this.desired(target, spec, s, serviceCert, this.newKind(s)), s, signal);
      const why = this.refusal(target, vendor, s);
      if (why !== undefined) throw new CloudError(`${why}: not adopted, nothing changed`);
      lb = vendor.lb;
      this.ctx.logger.info({ lb: lb.id, how: vendor.how }, "adopting the DigitalOcean CCM's load balancer");
    }
    const cert = await certificateToUse(this.client, lb, serviceCert, signal);
    if (cert.renewedFrom !== undefined) {
      // As upstream: the Service's certificate-id follows the renewed certificate.
      this.ctx.logger.info(
        { lb: lb.id, certificate: cert.id, annotated: cert.renewedFrom },
        "keeping the load balancer's renewed Let's Encrypt certificate (the Service's certificate's name)",
      );
      if (cert.id !== undefined) hints?.annotate?.(CERTIFICATE_ID, cert.id);
    }
    // An existing load balancer keeps what the Service does not ask otherwise.
    const kind: Kind = {
      type: s.type ?? typeOf(lb),
      networkStack: s.networkStack ?? (lb.network_stack === "DUALSTACK" ? "DUALSTACK" : "IPV4"),
      size: sizeOf(lb),
    };
    const ignored = kind.type === "REGIONAL_NETWORK" ? proxyRuleKeysSet(annotations) : [];
    if (ignored.length > 0)
      hints?.warn?.(
        "LoadBalancerAnnotationIgnored",
        `${ignored.join(", ")} not applied: a REGIONAL_NETWORK load balancer forwards each Service port as tcp or udp to the same port, as the DigitalOcean CCM builds it`,
      );
    // As upstream: the address is create-only, so an existing load balancer keeps its own.
    if (s.reservedIp !== undefined && lb.ip !== s.reservedIp)
      hints?.warn?.(
        "LoadBalancerAnnotationIgnored",
        `${ANNOTATION_PREFIX}${A.ip} ${s.reservedIp} not applied: load balancer ${lb.id} keeps its address ${lb.ip === "" ? "(none yet)" : lb.ip} (the DigitalOcean CCM sets it only at creation)`,
      );
    const want = this.desired(target, spec, s, cert.id, kind);
    if (lb.status === "errored") {
      if (!lb.name.endsWith(FAILED_SUFFIX)) {
        const failed = new OperationFailedError(
          `DigitalOcean load balancer ${lb.id} (${lb.name}) failed to provision (status errored)`,
        );
        try {
          // Reported once, marked in the cloud: any replica's next ensure replaces it.
          await this.client.put(
            LB_OPS.update,
            `/load_balancers/${lb.id}`,
            { ...requestOf(lb), name: ownerName(target) + FAILED_SUFFIX },
            signal,
          );
        } catch (err) {
          // A cloud that will not rename a failed load balancer: delete it now, the failure
          // still reported once (the next ensure finds nothing and creates).
          if (!(err instanceof CloudError) || isRetryable(err)) throw err;
          await this.client.delete(LB_OPS.delete, `/load_balancers/${lb.id}`, signal);
          this.seen.delete(this.key(target));
        }
        throw failed;
      }
      await this.client.delete(LB_OPS.delete, `/load_balancers/${lb.id}`, signal);
      this.seen.delete(this.key(target));
      return this.create(target, want, s, signal);
    }
    if (lb.status === "new") return inProgress(this.pollMs, `load balancer ${lb.id} is new (provisioning)`);
    const have = requestOf(lb);
    if (have.network !== want.network || have.network_stack !== want.network_stack)
      throw new CloudError(
        `load balancer ${lb.id} is ${have.network}/${have.network_stack}; the Service asks ${want.network}/${want.network_stack}, which DigitalOcean cannot change after creation`,
      );
    if (want.vpc_uuid !== undefined && have.vpc_uuid !== undefined && have.vpc_uuid !== want.vpc_uuid)
      throw new CloudError(
        `load balancer ${lb.id} is in VPC ${have.vpc_uuid}, not the cluster's ${want.vpc_uuid}`,
      );
    if (differences(have, want).length > 0) {
      const answer = await this.client.put<{ load_balancer?: unknown }>(
        LB_OPS.update,
        `/load_balancers/${lb.id}`,
        want,
        signal,
      );
      lb = checkLb(answer.load_balancer);
      this.seen.set(this.key(target), lb.id);
    }
    // As upstream: the Service names its load balancer and its type, so the DigitalOcean CCM finds
    // it again and keeps its type (instead of applying its own default).
    hints?.annotate?.(LOAD_BALANCER_ID, lb.id);
    hints?.annotate?.(LB_TYPE, typeOf(lb));
    // The hostname annotation: the Service shows it instead of the addresses, as upstream.
    if (s.hostname !== undefined) return [{ hostname: s.hostname }];
    const ingress = ingressOf(lb);
    if (ingress.length === 0) return inProgress(this.pollMs, `load balancer ${lb.id} has no address yet`);
    return ingress;
  }

  private async create(
    target: ServiceTarget,
    want: WireLbRequest,
    s: DoLbSettings,
    signal?: AbortSignal,
  ): Promise<InProgress> {
    const refused = createOnlyRefusal(s);
    if (refused !== undefined) throw refused;
    const answer = await this.client.post<{ load_balancer?: unknown }>(
      LB_OPS.create,
      "/load_balancers",
      want,
      signal,
    );
    const lb = checkLb(answer.load_balancer);
    this.seen.set(this.key(target), lb.id);
    return inProgress(this.pollMs, `load balancer ${lb.id} created (status ${lb.status})`);
  }

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    // The reconciler updates backends only after an ensure succeeded; a disowned one never does.
    if (this.disowned.has(this.key(target))) return undefined;
    const { mine } = await this.find(target, signal);
    if (mine === undefined || mine.status === "errored")
      throw new NeedsEnsureError(`the owner's load balancer is ${mine === undefined ? "gone" : "errored"}`);
    if (mine.status === "new")
      return inProgress(this.pollMs, `load balancer ${mine.id} is new (provisioning)`);
    const have = requestOf(mine);
    const ids = [...new Set(backends)].map(Number).sort((a, b) => a - b);
    if (differences(have, { ...have, droplet_ids: ids }).length === 0) return undefined;
    await this.client.put(LB_OPS.update, `/load_balancers/${mine.id}`, { ...have, droplet_ids: ids }, signal);
    return undefined;
  }

  async ensureDeleted(
    target: ServiceTarget,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<undefined | InProgress> {
    const annotations = hints?.annotations ?? {};
    this.seen.delete(this.key(target));
    this.disowned.delete(this.key(target));
    // As upstream: a disowned load balancer outlives its Service (the user hands it on).
    if (isDisowned(annotations)) return undefined;
    const all = await this.all(signal);
    // Every load balancer with the owner's name (a failed one included), never another's; without
    // one, the DigitalOcean CCM's, where the operator lets the hub take it over (as ensure would).
    const mine = all.filter((x) => isOwners(x, target));
    const vendor =
      mine.length === 0 && target.scope.adoptFrom !== undefined
        ? await this.vendorToDelete(target, annotations, all, signal)
        : undefined;
    for (const lb of vendor === undefined ? mine : [vendor]) {
      try {
        await this.client.delete(LB_OPS.delete, `/load_balancers/${lb.id}`, signal);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return undefined;
  }

  /** The DigitalOcean CCM's load balancer of a Service going away, if ensure would adopt it. */
  private async vendorToDelete(
    target: ServiceTarget,
    annotations: Readonly<Record<string, string>>,
    all: WireLoadBalancer[],
    signal?: AbortSignal,
  ): Promise<WireLoadBalancer | undefined> {
    let refs: VendorRefs = {};
    try {
      refs = vendorRefs(annotations);
    } catch (err) {
      // A bad reference never blocks a deletion: upstream's name is still looked for.
      if (!(err instanceof AnnotationError)) throw err;
    }
    const found = await this.vendorCandidate(target, refs, all, signal);
    if (found === undefined) return undefined;
    const why = this.refusal(target, found, refs);
    if (why === undefined) return found.lb;
    this.ctx.logger.warn({ lb: found.lb.id }, `${why}: not deleted with the Service`);
    return undefined;
  }

  /** Page tokens are DigitalOcean's page numbers; the owner is read from each name. */
  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const page = pageToken === undefined ? 1 : Number(pageToken);
    if (!Number.isInteger(page) || page < 1) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const answer = await this.client.page<unknown>(
      LB_OPS.list,
      "/load_balancers",
      "load_balancers",
      page,
      {},
      signal,
    );
    const items = answer.items.map(checkLb).flatMap((lb) => {
      const owner = ownerOfName(lb.name);
      if (owner === undefined) return [];
      // A restarted hub lists before it syncs: each Service's next call then reads its own by id.
      if (!lb.name.endsWith(FAILED_SUFFIX)) this.seen.set(this.key(owner), lb.id);
      return [{ id: lb.id, name: lb.name, owner, ingress: ingressOf(lb) }];
    });
    return answer.hasNext && answer.items.length > 0 ? { items, nextPageToken: String(page + 1) } : { items };
  }
}
