// The Hetzner Cloud API v1 shapes the provider reads (docs.hetzner.cloud), only the fields it uses.

export interface WireLocation {
  readonly name: string;
  readonly network_zone: string;
}

export interface WirePrivateNet {
  readonly network: number;
  readonly ip: string;
}

export interface WireServer {
  readonly id: number;
  readonly name: string;
  readonly status: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly location: WireLocation;
  readonly server_type: { readonly name: string };
  readonly public_net: {
    readonly ipv4: { readonly ip: string } | null;
    readonly ipv6: { readonly ip: string } | null;
  };
  readonly private_net: readonly WirePrivateNet[];
}

export interface WireRoute {
  readonly destination: string;
  readonly gateway: string;
}

export interface WireNetwork {
  readonly id: number;
  readonly name: string;
  readonly ip_range: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly routes: readonly WireRoute[];
}

export interface WireHealthCheck {
  readonly protocol: "tcp" | "http";
  readonly port: number;
  readonly interval: number;
  readonly timeout: number;
  readonly retries: number;
  readonly http?: {
    readonly domain: string | null;
    readonly path: string;
    readonly status_codes?: readonly string[];
    readonly tls?: boolean;
  } | null;
}

export interface WireLbServiceHttp {
  readonly cookie_name: string;
  readonly cookie_lifetime: number;
  readonly certificates: readonly number[];
  readonly redirect_http: boolean;
  readonly sticky_sessions: boolean;
  /** Not in the converted spec; Hetzner's API and hcloud-go have it (seconds). */
  readonly timeout_idle?: number;
}

export interface WireLbService {
  readonly protocol: "tcp" | "http" | "https";
  readonly listen_port: number;
  readonly destination_port: number;
  readonly proxyprotocol: boolean;
  readonly health_check: WireHealthCheck;
  readonly http?: WireLbServiceHttp;
}

export interface WireCertificate {
  readonly id: number;
  readonly name: string;
  readonly type: "uploaded" | "managed";
  readonly labels: Readonly<Record<string, string>>;
  readonly domain_names: readonly string[];
  readonly status: {
    readonly issuance?: "pending" | "completed" | "failed";
    readonly error?: { readonly code: string; readonly message: string } | null;
  } | null;
  readonly used_by: readonly { readonly id: number; readonly type: string }[];
}

export interface WireLbTarget {
  readonly type: "server" | "ip" | "label_selector";
  readonly server?: { readonly id: number };
  readonly ip?: { readonly ip: string };
  readonly use_private_ip?: boolean;
}

/** A load balancer's public address and its reverse DNS (null while the public interface is off). */
export interface WireLbPublicIp {
  readonly ip: string | null;
  readonly dns_ptr?: string | null;
}

export interface WireLoadBalancer {
  readonly id: number;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly algorithm: { readonly type: string };
  readonly load_balancer_type: { readonly name: string };
  readonly location: WireLocation;
  readonly public_net: {
    readonly enabled: boolean;
    readonly ipv4: WireLbPublicIp;
    readonly ipv6: WireLbPublicIp;
  };
  readonly private_net: readonly WirePrivateNet[];
  /** `delete`: Hetzner refuses to delete it (the Hetzner CCM then keeps it). */
  readonly protection?: { readonly delete: boolean };
  readonly services: readonly WireLbService[];
  readonly targets: readonly WireLbTarget[];
}

export interface WireAction {
  readonly id: number;
  readonly command: string;
  readonly status: "running" | "success" | "error";
  readonly error: { readonly code: string; readonly message: string } | null;
}

export interface WirePagination {
  readonly page: number;
  readonly next_page: number | null;
  readonly last_page: number | null;
}
