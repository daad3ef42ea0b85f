// Load balancers built as the DigitalOcean CCM (@70d527e, do/loadbalancers.go
// buildLoadBalancerRequestWithNodeState) builds them, through the DigitalOcean API v2 (the fake's,
// or any endpoint), for the tests that adopt them: one POST /v2/load_balancers named as upstream
// names it (`a` and the Service uid without dashes, 32 characters), in the cluster's VPC,
// upstream's default health check (buildHealthCheck: HTTP /healthz on kube-proxy's 10256, or on
// healthCheckNodePort for externalTrafficPolicy Local, `proxy_protocol: false`, interval 3,
// timeout 5, unhealthy 3, healthy 5), enable-proxy-protocol, the nodes' Droplet ids, the
// firewall from loadBalancerSourceRanges; then reads until it is active, as its retries do.
// Its mode is the type and network stack upstream chose (getType, getNetworkStack):
// - "REGIONAL_NETWORK", upstream's default type (cloud.go, DEFAULT_LB_TYPE unset) on nodes not
//   all dual-stack: IPV4, one rule per Service port, tcp (or udp for a UDP port) from the port
//   to the same port (buildRegionalNetworkForwardingRule), no TLS;
// - "REGIONAL_DUALSTACK", REGIONAL (type annotation or DEFAULT_LB_TYPE) without the network-stack
//   annotation: DUALSTACK (since v0.1.63, d0931bd56);
// - "REGIONAL_IPV4" (the default here), REGIONAL with network-stack IPV4 annotated.
// Both REGIONAL modes build buildForwardingRules' rules: tcp (udp for a UDP port) to the node port,
// or, with a certificate, 443 (or the tls ports) as https to http with it.
// `annotations` are the Service's after upstream's ensure: the ones the mode needs, and the id and
// type it writes back (retrieveAndAnnotateLoadBalancer, since 6db9a8781).
// Not as upstream: its `tags: ["k8s:<cluster id>"]` are left out (neither DigitalOcean's OpenAPI
// document nor the fake has load-balancer tags).
// Hub code, testkits included, never imports the simulators: this speaks the API.
import { vendorDefaultName } from "./load-balancers.js";

/** kube-proxy's health port, which upstream checks by default (kubeProxyHealthPort). */
export const KUBE_PROXY_HEALTH_PORT = 10256;

export type CcmMode = "REGIONAL_IPV4" | "REGIONAL_DUALSTACK" | "REGIONAL_NETWORK";

const TYPE = "service.beta.kubernetes.io/do-loadbalancer-type";
const STACK = "service.beta.kubernetes.io/do-loadbalancer-network-stack";
const ID = "kubernetes.digitalocean.com/load-balancer-id";

export interface DoApiAccess {
  readonly url: string;
  readonly token: string;
}

export interface CcmService {
  readonly serviceUid: string;
  readonly region: string;
  readonly vpcUuid?: string;
  /** Upstream's type and network stack (default REGIONAL_IPV4). */
  readonly mode?: CcmMode;
  readonly ports: readonly {
    readonly port: number;
    readonly nodePort: number;
    /** The Service port's protocol (default TCP). */
    readonly protocol?: "TCP" | "UDP";
  }[];
  readonly dropletIds: readonly number[];
  /** externalTrafficPolicy Local's healthCheckNodePort (none: Cluster, kube-proxy's own port checked). */
  readonly healthCheckNodePort?: number;
  /** enable-proxy-protocol. */
  readonly proxyProtocol?: boolean;
  /** loadBalancerSourceRanges (none: open to all, an empty firewall). */
  readonly sourceRanges?: readonly string[];
  /** certificate-id, with tls-ports (default 443, as upstream) and redirect-http-to-https. */
  readonly tls?: {
    readonly certificateId: string;
    readonly ports?: readonly number[];
    readonly redirectHttpToHttps?: boolean;
  };
}

export interface CcmMade {
  readonly id: string;
  readonly name: string;
  readonly ip: string;
  readonly ipv6?: string;
  /** The Service's annotations after upstream's ensure (what it needed, and what it wrote back). */
  readonly annotations: Readonly<Record<string, string>>;
}

type Rule = Record<string, string | number>;

function rules(svc: CcmService): Rule[] {
  if (svc.mode === "REGIONAL_NETWORK")
    return svc.ports.map((p) => {
      const proto = p.protocol === "UDP" ? "udp" : "tcp";
      return { entry_protocol: proto, entry_port: p.port, target_protocol: proto, target_port: p.port };
    });
  return svc.ports.map(
    (p): Rule =>
      p.protocol === "UDP"
        ? { entry_protocol: "udp", entry_port: p.port, target_protocol: "udp", target_port: p.nodePort }
        : svc.tls !== undefined && (svc.tls.ports ?? [443]).includes(p.port)
          ? {
              entry_protocol: "https",
              entry_port: p.port,
              target_protocol: "http",
              target_port: p.nodePort,
              certificate_id: svc.tls.certificateId,
            }
          : { entry_protocol: "tcp", entry_port: p.port, target_protocol: "tcp", target_port: p.nodePort },
  );
}

async function call<T>(api: DoApiAccess, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${api.url.replace(/\/+$/, "")}/v2${path}`, {
    method,
    headers: {
      authorization: `Bearer ${api.token}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

export async function ccmLoadBalancer(api: DoApiAccess, svc: CcmService): Promise<CcmMade> {
  const mode = svc.mode ?? "REGIONAL_IPV4";
  if (mode === "REGIONAL_NETWORK" && svc.tls !== undefined)
    throw new Error("upstream builds no TLS rule for a REGIONAL_NETWORK load balancer");
  const type = mode === "REGIONAL_NETWORK" ? "REGIONAL_NETWORK" : "REGIONAL";
  const made = await call<{ load_balancer: { id: string; name: string } }>(api, "POST", "/load_balancers", {
    name: vendorDefaultName(svc.serviceUid),
    region: svc.region,
    ...(svc.vpcUuid !== undefined && { vpc_uuid: svc.vpcUuid }),
    // No size: without size-unit or size-slug upstream sends none (godo's omitempty).
    forwarding_rules: rules(svc),
    ...(svc.tls?.redirectHttpToHttps === true && { redirect_http_to_https: true }),
    health_check: {
      protocol: "http",
      port: svc.healthCheckNodePort ?? KUBE_PROXY_HEALTH_PORT,
      path: "/healthz",
      check_interval_seconds: 3,
      response_timeout_seconds: 5,
      unhealthy_threshold: 3,
      healthy_threshold: 5,
      // Always false on upstream's default check (godo.PtrTo(false)): kube-proxy speaks no PROXY protocol.
      proxy_protocol: false,
    },
    enable_proxy_protocol: svc.proxyProtocol === true,
    type,
    network: "EXTERNAL",
    network_stack: mode === "REGIONAL_DUALSTACK" ? "DUALSTACK" : "IPV4",
    sticky_sessions: { type: "none" },
    droplet_ids: [...svc.dropletIds],
    firewall: { allow: (svc.sourceRanges ?? []).map((r) => `cidr:${r}`), deny: [] },
  });
  for (let n = 0; n < 50; n++) {
    const got = await call<{
      load_balancer: { id: string; name: string; status: string; ip: string; ipv6?: string; type: string };
    }>(api, "GET", `/load_balancers/${made.load_balancer.id}`);
    const lb = got.load_balancer;
    if (lb.status === "active")
      return {
        id: lb.id,
        name: lb.name,
        ip: lb.ip,
        ...(lb.ipv6 !== undefined && lb.ipv6 !== "" && { ipv6: lb.ipv6 }),
        annotations: {
          ...(mode === "REGIONAL_IPV4" && { [STACK]: "IPV4" }),
          [ID]: lb.id,
          [TYPE]: lb.type,
        },
      };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`load balancer ${made.load_balancer.id} never became active`);
}
