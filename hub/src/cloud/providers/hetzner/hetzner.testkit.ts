// The Hetzner fake's truth as the conformance suite reads it. The test starts the fake
// (sim/src/hetzner) and hands it over: hub code, testkits included, never imports the simulators.
import type { FakeResource } from "../../conformance/conformance.testkit.js";
import type { LbOwner, LoadBalancerSpec } from "../../provider.js";
import { managedCertificateName } from "./http-settings.js";
import { ownerOfLabels, UPSTREAM_UID_LABEL } from "./load-balancers.js";
import { routeClaim } from "./routes.js";

/** What hetznerResources reads of the fake's store. */
export interface HetznerStoreView {
  readonly store: {
    loadBalancersOf(account: string): readonly {
      readonly id: number;
      readonly labels: Readonly<Record<string, string>>;
      readonly services: readonly { readonly listen_port: number }[];
    }[];
    certificatesOf(account: string): readonly {
      readonly id: number;
      readonly labels: Readonly<Record<string, string>>;
    }[];
    networksOf(account: string): readonly {
      readonly id: number;
      readonly labels: Readonly<Record<string, string>>;
      readonly routes: readonly { readonly destination: string }[];
    }[];
  };
}

/** Load balancers and their services with the owner their labels record; routes with their claims. */
export function hetznerResources(fake: HetznerStoreView, account: string): FakeResource[] {
  const out: FakeResource[] = [];
  for (const lb of fake.store.loadBalancersOf(account)) {
    const o = ownerOfLabels(lb.labels);
    const owner = o === undefined ? {} : { lbOwner: o };
    out.push({ kind: "load-balancer", id: String(lb.id), ...owner });
    // Services are sub-resources; targets are the backends (their count follows the node set).
    for (const s of lb.services) out.push({ kind: "service", id: `${lb.id}:${s.listen_port}`, ...owner });
  }
  // Certificates fleet-ccm requested (managed ones) carry the owner's labels; uploaded ones none.
  for (const c of fake.store.certificatesOf(account)) {
    const o = ownerOfLabels(c.labels);
    out.push({ kind: "certificate", id: String(c.id), ...(o !== undefined && { lbOwner: o }) });
  }
  for (const n of fake.store.networksOf(account))
    for (const r of n.routes) {
      const claim = routeClaim(n.labels, r.destination);
      out.push({
        kind: "route",
        id: `${n.id}/${r.destination}`,
        destinationCIDR: r.destination,
        ...(claim !== undefined && { routeOwner: claim }),
      });
    }
  return out;
}

/** What the Hetzner CCM's HTTP/HTTPS annotations asked of the load balancer it built. */
export interface HetznerCcmHttp {
  readonly protocol: "http" | "https";
  /** Certificate ids the services terminate TLS with (https). */
  readonly certificates?: readonly number[];
  readonly redirectHttp?: boolean;
  readonly stickySessions?: boolean;
}

/**
 * A load balancer as the Hetzner CCM builds one for `owner`'s Service with `spec`
 * (internal/hcops/load_balancer.go, Create then ReconcileHCLBServices and
 * ReconcileHCLBTargets, no health-check annotations): named `a<uid without dashes>` (the
 * cloud-provider default name, 32 characters at most), labelled with the Service UID alone,
 * lb11 in `location`, public, one service per port on its node port with the given protocol
 * and HTTP options (Hetzner's defaults for the rest), a TCP health check on the node port with
 * Hetzner's defaults (15s, 10s, 3 retries), the backends as public server targets. In the shape
 * of the fake's putLoadBalancer input; `extraPorts` are services of ports the Service no longer
 * has (what the Hetzner CCM left from an older spec).
 */
export function hetznerCcmLoadBalancer(
  owner: LbOwner,
  spec: LoadBalancerSpec,
  opts: { account: string; location: string; http?: HetznerCcmHttp; extraPorts?: readonly number[] },
) {
  const http = opts.http;
  const service = (port: number, nodePort: number) => ({
    protocol: http?.protocol ?? ("tcp" as const),
    listen_port: port,
    destination_port: nodePort,
    proxyprotocol: false,
    health_check: { protocol: "tcp" as const, port: nodePort, interval: 15, timeout: 10, retries: 3 },
    ...(http !== undefined && {
      http: {
        cookie_name: "HCLBSTICKY",
        cookie_lifetime: 300,
        certificates: [...(http.certificates ?? [])],
        redirect_http: http.redirectHttp ?? false,
        sticky_sessions: http.stickySessions ?? false,
      },
    }),
  });
  return {
    account: opts.account,
    name: `a${owner.serviceUid.replaceAll("-", "")}`.slice(0, 32),
    type: "lb11",
    location: opts.location,
    algorithm: "round_robin" as const,
    labels: { [UPSTREAM_UID_LABEL]: owner.serviceUid },
    publicEnabled: true,
    privateNet: [],
    services: [
      ...spec.listeners.map((l) => service(l.port, l.nodePort)),
      ...(opts.extraPorts ?? []).map((p) => service(p, 30000 + p)),
    ],
    targets: spec.backends.map((id) => ({
      type: "server" as const,
      server: Number(id),
      use_private_ip: false,
    })),
  };
}

/** The managed certificate the Hetzner CCM requests for `owner`'s Service (reconcileManagedCertificate), as POST /certificates takes it. */
export function hetznerCcmManagedCertificate(owner: LbOwner, domains: readonly string[]) {
  return {
    name: managedCertificateName(owner.serviceUid),
    type: "managed" as const,
    domain_names: [...domains],
    labels: { [UPSTREAM_UID_LABEL]: owner.serviceUid },
  };
}
