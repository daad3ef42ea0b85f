/**
 * Hetzner Cloud load balancers, one per Service, found as the Hetzner CCM finds them: by the
 * label `hcloud-ccm/service-uid=<uid>`. fleet-ccm's own labels (`fleet-ccm.io/cluster`,
 * `fleet-ccm.io/service-uid`) say whose it is; one with the upstream label alone was built by
 * the Hetzner CCM and is adopted (labelled as the owner's) only with the cluster's
 * `adoptFrom`. Created with its type, location or network zone, algorithm, services (one per
 * Service port, tcp, http or https with their certificates (certificates.ts) and HTTP
 * settings, with the health check) and server targets in one call; afterwards
 * each change is one action (change_type, change_algorithm, attach_to_network,
 * delete/update/add_service, remove/add_target, disable/enable_public_interface, change_dns_ptr), polled
 * once: a running action answers in-progress, and the next call reads the load balancer's
 * actions before changing anything.
 * An action ending in error is OperationFailedError, recorded on the load balancer
 * (`fleet-ccm.io/failure-reported=<action id>`) so every replica reports it once; a failed
 * create is deleted, and built again by the next call. The digests are labels, written last.
 * One with delete protection is left in place on delete, as the Hetzner CCM leaves it.
 * No lockKey: a load balancer is the Service's own, and the network it joins is only read.
 */
import type { LabelSelector } from "../../../k8s/label-selector.js";
import { sameRecord } from "../../../util/same.js";
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
  type BackendAnnotations,
  type InProgress,
  isInProgress,
  type LbIngress,
  type LbListener,
  type LbOwner,
  type LbQuota,
  type LbServiceHints,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  lbOwner,
  type OwnedLoadBalancerPage,
  type ServiceTarget,
} from "../../provider.js";
import { describeFailure, pollOnce, recentActions } from "./actions.js";
import {
  A,
  type AccountLbDefaults,
  checkRefused,
  DEFAULT_ALGORITHM,
  DEFAULT_LB_TYPE,
  type HetznerLbSettings,
  type LbTypeName,
  lbSettingsOf,
  nodeSelectorOf,
} from "./annotations.js";
import { HetznerCertificates } from "./certificates.js";
import type { HetznerClient } from "./client.js";
import { type HetznerHttpSettings, httpSettingsOf } from "./http-settings.js";
import type { NetworkResolver } from "./networks.js";
import type { WireAction, WireLbService, WireLoadBalancer } from "./wire.js";

/** The Hetzner CCM's label holding the Service UID (internal/hcops/load_balancer.go, LabelServiceUID). */
export const UPSTREAM_UID_LABEL = "hcloud-ccm/service-uid";
/** Whether the targets use private IPs (read by updateBackends, which has no annotations). */
export const PRIVATE_IP_LABEL = "fleet-ccm.io/use-private-ip";

export const LB_OPS = {
  list: "lb.list",
  get: "lb.get",
  actions: "lb.actions",
  create: "lb.create",
  labels: "lb.labels.update",
  delete: "lb.delete",
  type: "lb.type.update",
  algorithm: "lb.algorithm.update",
  attach: "lb.network.update",
  publicInterface: "lb.public.update",
  reverseDns: "lb.dns.update",
  addService: "lb.service.create",
  updateService: "lb.service.update",
  deleteService: "lb.service.delete",
  addTarget: "lb.target.create",
  removeTarget: "lb.target.delete",
} as const;

/** Services per load balancer of each type (docs.hetzner.cloud, "Load Balancer Types"). */
export const MAX_SERVICES: Readonly<Record<LbTypeName, number>> = { lb11: 5, lb21: 15, lb31: 30 };
/** Certificates assigned per load balancer of each type (docs.hetzner.cloud, "Load Balancer Types"). */
export const MAX_CERTIFICATES: Readonly<Record<LbTypeName, number>> = { lb11: 10, lb21: 25, lb31: 50 };

const LABEL_VALUE = /^([a-z0-9A-Z]|[a-z0-9A-Z][a-z0-9A-Z._-]{0,61}[a-z0-9A-Z])$/;

function labelValue(what: string, v: string): string {
  if (!LABEL_VALUE.test(v))
    throw new CloudError(
      `${what} ${JSON.stringify(v)} cannot be a Hetzner label value (63 alphanumerics, '-', '_', '.')`,
    );
  return v;
}

export function ownerOfLabels(labels: Readonly<Record<string, string>>): LbOwner | undefined {
  const cluster = labels[OWNER_TAG_CLUSTER];
  const serviceUid = labels[OWNER_TAG_SERVICE_UID];
  return cluster === undefined || serviceUid === undefined ? undefined : { cluster, serviceUid };
}

const sameOwner = (a: LbOwner | undefined, b: LbOwner) =>
  a !== undefined && a.cluster === b.cluster && a.serviceUid === b.serviceUid;

export function checkLoadBalancer(body: unknown): WireLoadBalancer {
  const lb = body as Partial<WireLoadBalancer> | null;
  if (
    typeof lb !== "object" ||
    lb === null ||
    !Number.isSafeInteger(lb.id) ||
    typeof lb.name !== "string" ||
    typeof lb.labels !== "object" ||
    lb.labels === null ||
    !Array.isArray(lb.services) ||
    !Array.isArray(lb.targets) ||
    !Array.isArray(lb.private_net) ||
    typeof lb.public_net !== "object" ||
    lb.public_net === null
  )
    throw new SuspectAnswerError("Hetzner Cloud API answered something that is not a load balancer");
  return lb as WireLoadBalancer;
}

/** What the Service's load balancer is found as. */
interface Found {
  readonly mine?: WireLoadBalancer;
  /** Built by the Hetzner CCM for this UID (no fleet-ccm owner). */
  readonly vendor?: WireLoadBalancer;
  /** Another owner's (a cluster reporting a UID that is another's). */
  readonly foreign?: WireLoadBalancer;
}

/** Hetzner's defaults of an HTTP health check and of a service's HTTP settings (docs.hetzner.cloud). */
const DEFAULT_STATUS_CODES = ["2??", "3??"] as const;
const DEFAULT_COOKIE = { name: "HCLBSTICKY", lifetimeSeconds: 300 } as const;

const TCP_ONLY: HetznerHttpSettings = {
  protocol: "tcp",
  certificates: [],
  redirectHttp: false,
  stickySessions: false,
};

/**
 * The Hetzner service a listener becomes: the Service's one protocol (tcp, http or https), an
 * https one with its certificates. Every HTTP setting is written whole, Hetzner's defaults
 * where the Service names none, so removing a key puts the default back (the idle timeout,
 * which the converted spec does not know, only when set).
 */
export function desiredService(
  l: LbListener,
  spec: LoadBalancerSpec,
  http: HetznerHttpSettings = TCP_ONLY,
  certificates: readonly number[] = [],
): WireLbService {
  const hc = spec.healthCheck;
  // Upstream checks each service on its own destination port; a health-check node port of its
  // own (externalTrafficPolicy: Local) is kept.
  const ownPort = spec.listeners.some((x) => x.nodePort === hc.port);
  return {
    protocol: http.protocol,
    listen_port: l.port,
    destination_port: l.nodePort,
    proxyprotocol: l.proxyProtocol,
    health_check: {
      protocol: hc.protocol === "HTTP" ? "http" : "tcp",
      // health-check-port wins, on every service, as upstream sends it.
      port: http.healthPort ?? (ownPort ? l.nodePort : hc.port),
      interval: hc.intervalSeconds,
      timeout: hc.timeoutSeconds,
      retries: hc.unhealthyThreshold,
      ...(hc.protocol === "HTTP" && {
        http: {
          domain: http.healthDomain ?? null,
          path: hc.path === "" ? "/" : hc.path,
          status_codes: [...(http.healthStatusCodes ?? DEFAULT_STATUS_CODES)],
          tls: http.healthTls ?? false,
        },
      }),
    },
    ...(http.protocol !== "tcp" && {
      http: {
        cookie_name: http.cookieName ?? DEFAULT_COOKIE.name,
        cookie_lifetime: http.cookieLifetime ?? DEFAULT_COOKIE.lifetimeSeconds,
        certificates: [...certificates],
        redirect_http: http.redirectHttp,
        sticky_sessions: http.stickySessions,
        ...(http.timeoutIdle !== undefined && { timeout_idle: http.timeoutIdle }),
      },
    }),
  };
}

const sameList = (a: readonly (string | number)[] = [], b: readonly (string | number)[] = []) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

/** Whether `have` (the cloud's) already is `want` (desiredService's) in every field fleet-ccm sets. */
function sameService(have: WireLbService, want: WireLbService): boolean {
  const ha = have.health_check;
  const hb = want.health_check;
  const sameHealth =
    ha.protocol === hb.protocol &&
    ha.port === hb.port &&
    ha.interval === hb.interval &&
    ha.timeout === hb.timeout &&
    ha.retries === hb.retries &&
    (hb.protocol !== "http" ||
      ((ha.http?.path ?? "") === (hb.http?.path ?? "") &&
        (ha.http?.domain ?? null) === (hb.http?.domain ?? null) &&
        sameList(ha.http?.status_codes ?? DEFAULT_STATUS_CODES, hb.http?.status_codes) &&
        (ha.http?.tls ?? false) === (hb.http?.tls ?? false)));
  const hh = have.http;
  const wh = want.http;
  const sameHttp =
    wh === undefined ||
    (hh !== undefined &&
      hh.cookie_name === wh.cookie_name &&
      hh.cookie_lifetime === wh.cookie_lifetime &&
      hh.redirect_http === wh.redirect_http &&
      hh.sticky_sessions === wh.sticky_sessions &&
      sameList(hh.certificates, wh.certificates) &&
      (wh.timeout_idle === undefined || hh.timeout_idle === wh.timeout_idle));
  return (
    have.protocol === want.protocol &&
    have.destination_port === want.destination_port &&
    have.proxyprotocol === want.proxyprotocol &&
    sameHealth &&
    sameHttp
  );
}

function serverIds(backends: readonly string[]): number[] {
  return backends.map((b) => {
    if (!/^\d+$/.test(b)) throw new CloudError(`backend ${JSON.stringify(b)} is not a Hetzner server id`);
    return Number(b);
  });
}

/** Services a load balancer of this type (a name the cloud answered) takes; undefined: unknown here. */
const maxServicesOf = (type: string): number | undefined =>
  (MAX_SERVICES as Readonly<Record<string, number>>)[type];

/** The Hetzner services of the Service's TCP ports: upstream skips the others (warned by ensure). */
function desiredServices(
  spec: LoadBalancerSpec,
  http: HetznerHttpSettings,
  certificates: readonly number[],
): WireLbService[] {
  return spec.listeners
    .filter((l) => l.protocol === "TCP")
    .map((l) => desiredService(l, spec, http, certificates));
}

/**
 * Refuses listeners Hetzner cannot build as fleet-ccm was asked (HTTP and HTTPS from the unified
 * keys), and a Service without a TCP port; warns of the UDP and SCTP ports skipped, as the
 * Hetzner CCM does (UnsupportedProtocolConfigured). Answers how many services it takes.
 */
function checkListeners(spec: LoadBalancerSpec, hints: LbServiceHints | undefined): number {
  if (spec.listeners.some((l) => l.protocol === "HTTP" || l.protocol === "HTTPS"))
    throw new CloudError(
      "Hetzner Cloud load balancers take TCP Service ports (HTTP and HTTPS are load-balancer.hetzner.cloud/protocol)",
    );
  const skipped = spec.listeners.filter((l) => l.protocol !== "TCP");
  if (skipped.length === spec.listeners.length)
    throw new CloudError("Hetzner Cloud load balancers take TCP Service ports only: this Service has none");
  for (const l of skipped)
    hints?.warn?.(
      "UnsupportedProtocolConfigured",
      `Service port ${l.port}/${l.protocol} is skipped: Hetzner Cloud load balancers take TCP ports only`,
    );
  return spec.listeners.length - skipped.length;
}

/** One step of making the cloud match: a mutation answering an action. */
interface Step {
  readonly op: string;
  readonly path: string;
  readonly body: unknown;
  readonly what: string;
}

/** PROXY protocol on the Service's ports (uses-proxyprotocol or the unified key). */
const proxied = (spec: LoadBalancerSpec): boolean => spec.listeners.some((l) => l.proxyProtocol);

export class HetznerLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities;
  private readonly certificates: HetznerCertificates;

  constructor(
    private readonly client: HetznerClient,
    private readonly networks: NetworkResolver,
    private readonly defaults: AccountLbDefaults,
  ) {
    this.certificates = new HetznerCertificates(
      client,
      (target) => {
        const { [PRIVATE_IP_LABEL]: _, ...labels } = this.ownerLabels(target, false);
        return labels;
      },
      UPSTREAM_UID_LABEL,
    );
    this.capabilities = {
      sessionAffinity: false,
      proxyProtocol: true,
      internal: true,
      protocols: ["TCP"],
      quotas: (annotations): readonly LbQuota[] => {
        // Without a type asked, the default's quota (an existing load balancer may be larger).
        let type: LbTypeName = defaults.type ?? DEFAULT_LB_TYPE;
        try {
          type = lbSettingsOf(annotations, defaults).type ?? type;
        } catch {
          // checkAnnotations reports a bad value; the default type's quota stands meanwhile.
        }
        let certificates = 0;
        try {
          const http = httpSettingsOf(annotations, "uid");
          // Distinct certificates as named (an id and the same certificate's name count twice).
          certificates =
            http.managed !== undefined
              ? 1
              : new Set(http.certificates.map((c) => ("id" in c ? `#${c.id}` : c.name))).size;
        } catch {
          // As above.
        }
        return [
          { name: `services per load balancer (${type})`, limit: MAX_SERVICES[type], counts: "listeners" },
          ...(certificates > 0
            ? [
                {
                  name: `certificates per load balancer (${type})`,
                  limit: MAX_CERTIFICATES[type],
                  counts: "annotations" as const,
                  used: certificates,
                },
              ]
            : []),
        ];
      },
    };
  }

  nodeSelector(annotations: Readonly<Record<string, string>>): LabelSelector | undefined {
    return nodeSelectorOf(annotations);
  }

  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    checkRefused(annotations);
    nodeSelectorOf(annotations);
    lbSettingsOf(annotations, this.defaults);
    // The managed certificate's default name needs the uid; any stands in for the check.
    httpSettingsOf(annotations, "uid");
  }

  /** The Service's load balancer by the upstream UID label (all pages: labels are not unique). */
  private async find(target: ServiceTarget, signal?: AbortSignal): Promise<Found> {
    const uid = labelValue("Service UID", target.serviceUid);
    const all = (
      await this.client.list<unknown>(LB_OPS.list, "/load_balancers", "load_balancers", signal, {
        label_selector: `${UPSTREAM_UID_LABEL}=${uid}`,
      })
    ).map(checkLoadBalancer);
    const out: { mine?: WireLoadBalancer; vendor?: WireLoadBalancer; foreign?: WireLoadBalancer } = {};
    for (const lb of all) {
      if (lb.labels[UPSTREAM_UID_LABEL] !== uid)
        throw new SuspectAnswerError(`label selector for Service ${uid} answered load balancer ${lb.id}`);
      const owner = ownerOfLabels(lb.labels);
      if (sameOwner(owner, target)) out.mine ??= lb;
      else if (owner === undefined) out.vendor ??= lb;
      else out.foreign ??= lb;
    }
    return out;
  }

  /**
   * The Service's ingress. With PROXY protocol (the spec's, else the load balancer's own
   * services') every entry says ipMode Proxy, as the Hetzner CCM writes it: kube-proxy must not
   * short-cut in-cluster traffic for these IPs to pods that expect the PROXY header.
   */
  private ingress(
    lb: WireLoadBalancer,
    s: HetznerLbSettings | undefined,
    proxy = lb.services.some((x) => x.proxyprotocol),
  ): LbIngress[] {
    if (s?.hostname !== undefined) return [{ hostname: s.hostname }];
    const ips: string[] = [];
    if (lb.public_net.enabled) {
      if (lb.public_net.ipv4.ip !== null) ips.push(lb.public_net.ipv4.ip);
      if (s?.ipv6Ingress && lb.public_net.ipv6.ip !== null) ips.push(lb.public_net.ipv6.ip);
    }
    if (s === undefined ? !lb.public_net.enabled : s.privateIngress || !lb.public_net.enabled)
      for (const p of lb.private_net) ips.push(p.ip);
    return ips.map((ip) => (proxy ? { ip, ipMode: "Proxy" } : { ip }));
  }

  private state(lb: WireLoadBalancer, owner: LbOwner): LoadBalancerState {
    return {
      id: String(lb.id),
      name: lb.name,
      owner: lbOwner(owner),
      ingress: this.ingress(lb, undefined),
      backends: lb.targets
        .filter((t) => t.type === "server" && t.server !== undefined)
        .map((t) => String(t.server?.id))
        .sort(),
    };
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const { mine } = await this.find(target, signal);
    return mine === undefined ? undefined : this.state(mine, target);
  }

  /**
   * Before any change: a running action of the load balancer is in progress; one ended in
   * error since the last reported is OperationFailedError (a failed create: deleted first).
   * `reportFailures: false` (delete): only running ones matter.
   */
  private async gate(
    lb: WireLoadBalancer,
    signal: AbortSignal | undefined,
    reportFailures = true,
  ): Promise<InProgress | undefined> {
    const page = await recentActions(
      this.client,
      LB_OPS.actions,
      `/load_balancers/${lb.id}`,
      `load balancer ${lb.name}`,
      signal,
    );
    if (page.running !== undefined) return page.running;
    if (!reportFailures) return undefined;
    const reported = Number(lb.labels[FAILURE_REPORTED_TAG] ?? "0");
    const failed = page.items.find((a) => a.status === "error" && a.id > reported);
    if (failed !== undefined) await this.failed(lb, failed, signal);
    return undefined;
  }

  /** An action of `lb` ended in error: recorded for every replica, then reported. */
  private async failed(lb: WireLoadBalancer, a: WireAction, signal?: AbortSignal): Promise<never> {
    if (a.command === "create_load_balancer") {
      await this.client.delete(LB_OPS.delete, `/load_balancers/${lb.id}`, signal);
      throw new OperationFailedError(
        `creating load balancer ${lb.name}: ${describeFailure(a)}; deleted, the next ensure builds it again`,
      );
    }
    await this.putLabels(lb, { ...lb.labels, [FAILURE_REPORTED_TAG]: String(a.id) }, signal);
    throw new OperationFailedError(`load balancer ${lb.name}: ${describeFailure(a)}`);
  }

  private async putLabels(
    lb: WireLoadBalancer,
    labels: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<WireLoadBalancer> {
    const answer = await this.client.put<{ load_balancer?: unknown }>(
      LB_OPS.labels,
      `/load_balancers/${lb.id}`,
      { labels },
      signal,
    );
    return checkLoadBalancer(answer.load_balancer);
  }

  /** Runs steps in order, each action polled once: the first still running ends the call in progress. */
  private async run(
    lb: WireLoadBalancer,
    steps: readonly Step[],
    signal?: AbortSignal,
  ): Promise<InProgress | undefined> {
    for (const s of steps) {
      const outcome = await pollOnce(
        this.client,
        await this.client.post(s.op, s.path, s.body, signal),
        s.what,
        signal,
      );
      if (isInProgress(outcome)) return outcome;
      if (outcome.kind === "failed") await this.failed(lb, outcome.action, signal);
    }
    return undefined;
  }

  private ownerLabels(target: ServiceTarget, usePrivateIP: boolean): Record<string, string> {
    return {
      [UPSTREAM_UID_LABEL]: labelValue("Service UID", target.serviceUid),
      [OWNER_TAG_CLUSTER]: labelValue("cluster name", target.cluster),
      [OWNER_TAG_SERVICE_UID]: target.serviceUid,
      [PRIVATE_IP_LABEL]: String(usePrivateIP),
    };
  }

  private targetBody(id: number, usePrivateIP: boolean) {
    return { type: "server", server: { id }, use_private_ip: usePrivateIP };
  }

  /** The target changes that make `lb`'s server targets `want`, removals first. */
  private targetSteps(lb: WireLoadBalancer, want: readonly number[], usePrivateIP: boolean): Step[] {
    const steps: Step[] = [];
    const path = `/load_balancers/${lb.id}/actions`;
    const have = new Map<number, boolean>();
    for (const t of lb.targets) {
      const id = t.server?.id;
      const keep =
        t.type === "server" &&
        id !== undefined &&
        want.includes(id) &&
        (t.use_private_ip ?? false) === usePrivateIP;
      if (keep) have.set(id, true);
      else
        steps.push({
          op: LB_OPS.removeTarget,
          path: `${path}/remove_target`,
          body:
            t.type === "server"
              ? { type: "server", server: { id } }
              : t.type === "ip"
                ? { type: "ip", ip: t.ip }
                : { type: t.type },
          what: `load balancer ${lb.name}: removing target ${id ?? t.ip?.ip ?? t.type}`,
        });
    }
    for (const id of want)
      if (!have.has(id))
        steps.push({
          op: LB_OPS.addTarget,
          path: `${path}/add_target`,
          body: this.targetBody(id, usePrivateIP),
          what: `load balancer ${lb.name}: adding server ${id}`,
        });
    return steps;
  }

  /**
   * The public interface as asked (upstream's togglePublicInterface); run after the network
   * and targets it needs.
   */
  private publicInterfaceStep(lb: WireLoadBalancer, want: boolean | undefined): Step[] {
    if (want === undefined || want === lb.public_net.enabled) return [];
    const action = want ? "enable_public_interface" : "disable_public_interface";
    return [
      {
        op: LB_OPS.publicInterface,
        path: `/load_balancers/${lb.id}/actions/${action}`,
        body: undefined,
        what: `load balancer ${lb.name}: ${want ? "enabling" : "disabling"} its public interface`,
      },
    ];
  }

  /**
   * The reverse DNS the Service names where it differs (upstream's changeIPv4RDNS and
   * changeIPv6RDNS). An address the load balancer does not show (public interface off) is warned
   * about and set once it has one.
   */
  private reverseDnsSteps(lb: WireLoadBalancer, s: HetznerLbSettings, hints?: LbServiceHints): Step[] {
    return (["ipv4", "ipv6"] as const).flatMap((family): Step[] => {
      const want = s.reverseDns[family];
      const have = lb.public_net[family];
      if (want === undefined || have.dns_ptr === want) return [];
      if (have.ip === null) {
        hints?.warn?.(
          "HetznerReverseDnsUnchanged",
          `load balancer ${lb.name} shows no public ${family} address: ${A[`${family}Rdns`]} is set once it has one`,
        );
        return [];
      }
      return [
        {
          op: LB_OPS.reverseDns,
          path: `/load_balancers/${lb.id}/actions/change_dns_ptr`,
          body: { ip: have.ip, dns_ptr: want },
          what: `load balancer ${lb.name}: reverse DNS of ${have.ip} ${want}`,
        },
      ];
    });
  }

  private settings(spec: LoadBalancerSpec): HetznerLbSettings {
    const s = lbSettingsOf(spec.annotations ?? {}, this.defaults);
    return spec.internal ? { ...s, publicInterface: false } : s;
  }

  async ensure(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress> {
    const s = this.settings(spec);
    const http = httpSettingsOf(spec.annotations ?? {}, target.serviceUid);
    // The hub filtered the backends by it; a caller without that filter still gets the refusal.
    nodeSelectorOf(spec.annotations ?? {});
    const servers = serverIds(spec.backends);
    const services = checkListeners(spec, hints);
    if (spec.sourceRanges.length > 0)
      hints?.warn?.(
        "LoadBalancerSourceRangesIgnored",
        "Hetzner Cloud load balancers have no source-range filter: loadBalancerSourceRanges is not enforced (as with the Hetzner CCM)",
      );
    const needNetwork = s.usePrivateIP || s.publicInterface === false;
    if (needNetwork && (target.network === undefined || target.network === ""))
      throw new CloudError(
        "use-private-ip and disable-public-network need the cluster's network (clusters[].network or the account's)",
      );
    const netId = needNetwork ? await this.networks.id(target.network ?? "", signal) : undefined;

    const found = await this.find(target, signal);
    let lb = found.mine;
    if (lb === undefined && found.foreign !== undefined)
      throw new CloudError(
        `load balancer ${found.foreign.name} labelled with Service UID ${target.serviceUid} belongs to cluster ${found.foreign.labels[OWNER_TAG_CLUSTER]}`,
      );
    if (lb === undefined && found.vendor !== undefined && target.scope.adoptFrom === undefined)
      throw new CloudError(
        `load balancer ${found.vendor.name} was built by the Hetzner CCM for Service UID ${target.serviceUid}: set clusters[].adoptFrom to adopt it`,
      );
    // The type it will have: as asked, else the existing one's (never downgraded), else the default.
    const type = s.type ?? (lb ?? found.vendor)?.load_balancer_type.name ?? DEFAULT_LB_TYPE;
    const max = maxServicesOf(type);
    if (max !== undefined && services > max)
      throw new CloudError(`load balancer type ${type} takes at most ${max} services`);
    // The https services' certificates before any change of the load balancer: a managed one
    // still being issued answers in progress with nothing else touched.
    const certs = await this.certificates.resolve(target, http, signal, hints);
    if (isInProgress(certs)) return certs;
    if (lb === undefined && found.vendor !== undefined) {
      // Adopted: the owner's labels added, the Hetzner CCM's kept.
      lb = await this.putLabels(
        found.vendor,
        { ...found.vendor.labels, ...this.ownerLabels(target, s.usePrivateIP) },
        signal,
      );
    }
    if (lb === undefined) return this.create(target, spec, s, http, certs, servers, netId, signal, hints);

    const gated = await this.gate(lb, signal);
    if (gated !== undefined) return gated;
    const moved =
      s.location !== undefined ? lb.location.name !== s.location : lb.location.network_zone !== s.networkZone;
    if (moved)
      hints?.warn?.(
        "HetznerLocationUnchanged",
        `load balancer ${lb.name} stays in ${lb.location.name}: a location or network zone is only applied when the load balancer is created`,
      );
    const base = `/load_balancers/${lb.id}/actions`;
    const steps: Step[] = [];
    // Type and algorithm only where asked: upstream keeps what the console set
    // (changeType, changeAlgorithm).
    if (s.type !== undefined && lb.load_balancer_type.name !== s.type)
      steps.push({
        op: LB_OPS.type,
        path: `${base}/change_type`,
        body: { load_balancer_type: s.type },
        what: `load balancer ${lb.name}: type ${s.type}`,
      });
    if (s.algorithm !== undefined && lb.algorithm.type !== s.algorithm)
      steps.push({
        op: LB_OPS.algorithm,
        path: `${base}/change_algorithm`,
        body: { type: s.algorithm },
        what: `load balancer ${lb.name}: algorithm ${s.algorithm}`,
      });
    if (netId !== undefined && !lb.private_net.some((p) => p.network === netId))
      steps.push({
        op: LB_OPS.attach,
        path: `${base}/attach_to_network`,
        body: { network: netId },
        what: `load balancer ${lb.name}: joining network ${netId}`,
      });
    const want = desiredServices(spec, http, certs);
    for (const have of lb.services)
      if (!want.some((w) => w.listen_port === have.listen_port))
        steps.push({
          op: LB_OPS.deleteService,
          path: `${base}/delete_service`,
          body: { listen_port: have.listen_port },
          what: `load balancer ${lb.name}: removing port ${have.listen_port}`,
        });
    for (const w of want) {
      const have = lb.services.find((x) => x.listen_port === w.listen_port);
      if (have === undefined)
        steps.push({
          op: LB_OPS.addService,
          path: `${base}/add_service`,
          body: w,
          what: `load balancer ${lb.name}: adding port ${w.listen_port}`,
        });
      else if (!sameService(have, w))
        steps.push({
          op: LB_OPS.updateService,
          path: `${base}/update_service`,
          body: w,
          what: `load balancer ${lb.name}: updating port ${w.listen_port}`,
        });
    }
    steps.push(...this.targetSteps(lb, servers, s.usePrivateIP));
    // Last: Hetzner disables it only on a network with every target on its private IP.
    steps.push(...this.publicInterfaceStep(lb, s.publicInterface));
    const ran = await this.run(lb, steps, signal);
    if (ran !== undefined) return ran;
    // The addresses the ingress shows changed with the network or the public interface.
    if (steps.some((x) => x.op === LB_OPS.attach || x.op === LB_OPS.publicInterface))
      lb = checkLoadBalancer(
        (await this.client.get<{ load_balancer?: unknown }>(LB_OPS.get, `/load_balancers/${lb.id}`, signal))
          .load_balancer,
      );
    // After the public interface: its addresses are shown only while it is on.
    const named = await this.run(lb, this.reverseDnsSteps(lb, s, hints), signal);
    if (named !== undefined) return named;
    lb = await this.recordDigests(lb, target, s.usePrivateIP, spec, signal);
    return this.ingress(lb, s, proxied(spec));
  }

  private async create(
    target: ServiceTarget,
    spec: LoadBalancerSpec,
    s: HetznerLbSettings,
    http: HetznerHttpSettings,
    certs: readonly number[],
    servers: readonly number[],
    netId: number | undefined,
    signal: AbortSignal | undefined,
    hints: LbServiceHints | undefined,
  ): Promise<readonly LbIngress[] | InProgress> {
    const name = loadBalancerName(target.cluster, target.serviceUid);
    if (s.requestedName !== undefined && s.requestedName !== name)
      hints?.warn?.(
        "HetznerLoadBalancerNameIgnored",
        `load-balancer.hetzner.cloud/name ${s.requestedName} is not used: fleet-ccm names load balancers ${name}`,
      );
    const answer = await this.client.post<{ load_balancer?: unknown; action?: unknown }>(
      LB_OPS.create,
      "/load_balancers",
      {
        name,
        load_balancer_type: s.type ?? DEFAULT_LB_TYPE,
        ...(s.location !== undefined ? { location: s.location } : { network_zone: s.networkZone }),
        algorithm: { type: s.algorithm ?? DEFAULT_ALGORITHM },
        labels: this.ownerLabels(target, s.usePrivateIP),
        public_interface: s.publicInterface ?? true,
        ...(netId !== undefined && { network: netId }),
        services: desiredServices(spec, http, certs),
        targets: servers.map((id) => this.targetBody(id, s.usePrivateIP)),
      },
      signal,
    );
    const lb = checkLoadBalancer(answer.load_balancer);
    const outcome = await pollOnce(this.client, answer, `load balancer ${name}: creating`, signal);
    if (isInProgress(outcome)) return outcome;
    if (outcome.kind === "failed") return this.failed(lb, outcome.action, signal);
    const named = await this.run(lb, this.reverseDnsSteps(lb, s, hints), signal);
    if (named !== undefined) return named;
    return this.ingress(await this.recordDigests(lb, target, s.usePrivateIP, spec, signal), s, proxied(spec));
  }

  /** The last step: the digests (and owner labels) once the cloud matches. */
  private async recordDigests(
    lb: WireLoadBalancer,
    target: ServiceTarget,
    usePrivateIP: boolean,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<WireLoadBalancer> {
    const labels = {
      ...lb.labels,
      ...this.ownerLabels(target, usePrivateIP),
      [DIGEST_TAG_SPEC]: loadBalancerSpecDigest(spec),
      [DIGEST_TAG_BACKENDS]: backendsDigest(spec.backends, spec.backendAnnotations),
    };
    return sameRecord(lb.labels, labels) ? lb : this.putLabels(lb, labels, signal);
  }

  async updateBackends(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
    backendAnnotations?: BackendAnnotations,
  ): Promise<undefined | InProgress> {
    const servers = serverIds(backends);
    const { mine: lb } = await this.find(target, signal);
    const privateLabel = lb?.labels[PRIVATE_IP_LABEL];
    if (lb === undefined || privateLabel === undefined)
      throw new NeedsEnsureError(`the load balancer of Service ${target.serviceUid} is not (fully) built`);
    const gated = await this.gate(lb, signal);
    if (gated !== undefined) return gated;
    const ran = await this.run(lb, this.targetSteps(lb, servers, privateLabel === "true"), signal);
    if (ran !== undefined) return ran;
    const labels = { ...lb.labels, [DIGEST_TAG_BACKENDS]: backendsDigest(backends, backendAnnotations) };
    if (!sameRecord(lb.labels, labels)) await this.putLabels(lb, labels, signal);
    return undefined;
  }

  async ensureDeleted(
    target: ServiceTarget,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<undefined | InProgress> {
    const found = await this.find(target, signal);
    // The Hetzner CCM's load balancer of this Service goes only where the operator opted in.
    const lb = found.mine ?? (target.scope.adoptFrom !== undefined ? found.vendor : undefined);
    // Upstream lets the Service go and keeps a protected one (EnsureLoadBalancerDeleted);
    // Hetzner would refuse the DELETE (`protected`) and the finalizer would stay for ever.
    const kept = lb?.protection?.delete === true ? lb : undefined;
    if (kept !== undefined)
      hints?.warn?.(
        "HetznerLoadBalancerDeleteProtected",
        `load balancer ${kept.name} has delete protection: left in place, as the Hetzner CCM leaves it`,
      );
    else if (lb !== undefined) {
      const gated = await this.gate(lb, signal, false);
      if (gated !== undefined) return gated;
      // Deleting a load balancer removes its services and targets with it; Hetzner answers no action.
      await this.client.delete(LB_OPS.delete, `/load_balancers/${lb.id}`, signal);
    }
    // Then the managed certificate, unused now (a kept load balancer keeps the one it uses);
    // looked for even without a load balancer, as a crash between the two deletes leaves it alone.
    await this.certificates.deleteOwned(target, signal, kept?.id);
    return undefined;
  }

  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const page = pageToken === undefined ? 1 : Number(pageToken);
    if (!Number.isInteger(page) || page < 1) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const answer = await this.client.page<unknown>(
      LB_OPS.list,
      "/load_balancers",
      "load_balancers",
      page,
      signal,
      {
        label_selector: `${OWNER_TAG_CLUSTER},${UPSTREAM_UID_LABEL}`,
      },
    );
    const items = answer.items.map(checkLoadBalancer).flatMap((lb) => {
      const owner = ownerOfLabels(lb.labels);
      if (owner === undefined) return [];
      const spec = lb.labels[DIGEST_TAG_SPEC];
      const back = lb.labels[DIGEST_TAG_BACKENDS];
      return [
        {
          id: String(lb.id),
          name: lb.name,
          owner,
          ingress: this.ingress(lb, undefined),
          ...(spec !== undefined && { specDigest: spec }),
          ...(back !== undefined && { backendsDigest: back }),
        },
      ];
    });
    return answer.next === undefined ? { items } : { items, nextPageToken: String(answer.next) };
  }
}
