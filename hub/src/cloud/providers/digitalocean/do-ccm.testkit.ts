// Load balancers built as the DigitalOcean CCM (@70d527e, do/loadbalancers.go
// buildLoadBalancerRequest) builds a REGIONAL one, through the DigitalOcean API v2 (the fake's,
// or any endpoint), for the tests that adopt them: one POST /v2/load_balancers named as upstream
// names it (`a` and the Service uid without dashes, 32 characters), in the cluster's VPC, a TCP
// forwarding rule per Service port to its node port (with a certificate: 443, or the tls ports,
// as https to http with it, as upstream's tls-ports and certificate-id build them), upstream's
// default health check (buildHealthCheck: HTTP /healthz on kube-proxy's 10256, or on
// healthCheckNodePort for externalTrafficPolicy Local, `proxy_protocol: false`, interval 3,
// timeout 5, unhealthy 3, healthy 5), enable-proxy-protocol, the nodes' Droplet ids, the
// firewall from loadBalancerSourceRanges; then reads until it is active, as its retries do.
// Not as upstream: its `tags: ["k8s:<cluster id>"]` are left out (neither DigitalOcean's OpenAPI
// document nor the fake has load-balancer tags), and type and network stack are sent as REGIONAL
// and IPV4, where upstream defaults to REGIONAL_NETWORK (port-to-port rules) and, for REGIONAL,
// DUALSTACK: fleet-ccm defaults to REGIONAL/IPV4 and cannot change a network stack, so adopting
// upstream's defaults is refused today (audit findings 4 and 5, not this testkit's to decide).
// Hub code, testkits included, never imports the simulators: this speaks the API.
import { vendorDefaultName } from "./load-balancers.js";

/** kube-proxy's health port, which upstream checks by default (kubeProxyHealthPort). */
export const KUBE_PROXY_HEALTH_PORT = 10256;

export interface DoApiAccess {
  readonly url: string;
  readonly token: string;
}

export interface CcmService {
  readonly serviceUid: string;
  readonly region: string;
  readonly vpcUuid?: string;
  readonly ports: readonly { readonly port: number; readonly nodePort: number }[];
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
  const made = await call<{ load_balancer: { id: string; name: string } }>(api, "POST", "/load_balancers", {
    name: vendorDefaultName(svc.serviceUid),
    region: svc.region,
    ...(svc.vpcUuid !== undefined && { vpc_uuid: svc.vpcUuid }),
    size_unit: 1,
    forwarding_rules: svc.ports.map((p) =>
      svc.tls !== undefined && (svc.tls.ports ?? [443]).includes(p.port)
        ? {
            entry_protocol: "https",
            entry_port: p.port,
            target_protocol: "http",
            target_port: p.nodePort,
            certificate_id: svc.tls.certificateId,
          }
        : { entry_protocol: "tcp", entry_port: p.port, target_protocol: "tcp", target_port: p.nodePort },
    ),
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
    type: "REGIONAL",
    network_stack: "IPV4",
    sticky_sessions: { type: "none" },
    droplet_ids: [...svc.dropletIds],
    firewall: { allow: (svc.sourceRanges ?? []).map((r) => `cidr:${r}`), deny: [] },
  });
  for (let n = 0; n < 50; n++) {
    const got = await call<{ load_balancer: { id: string; name: string; status: string; ip: string } }>(
      api,
      "GET",
      `/load_balancers/${made.load_balancer.id}`,
    );
    if (got.load_balancer.status === "active") return got.load_balancer;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`load balancer ${made.load_balancer.id} never became active`);
}
