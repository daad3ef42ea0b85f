/** The parts of DigitalOcean API v2 objects this provider reads and writes (from its OpenAPI document, sim/fixtures/digitalocean/). */

export interface WireNetworkV4 {
  readonly ip_address: string;
  readonly type: "public" | "private";
}

export interface WireNetworkV6 {
  readonly ip_address: string;
  readonly type: "public";
}

export interface WireDroplet {
  readonly id: number;
  readonly name: string;
  readonly status: "new" | "active" | "off" | "archive";
  readonly size_slug: string;
  readonly region: { readonly slug: string };
  readonly networks: { readonly v4?: readonly WireNetworkV4[]; readonly v6?: readonly WireNetworkV6[] };
  readonly tags: readonly string[];
  readonly vpc_uuid?: string;
}

export type EntryProtocol = "http" | "https" | "http2" | "http3" | "tcp" | "udp";
export type TargetProtocol = "http" | "https" | "http2" | "tcp" | "udp";

export interface WireForwardingRule {
  readonly entry_protocol: EntryProtocol;
  readonly entry_port: number;
  readonly target_protocol: TargetProtocol;
  readonly target_port: number;
  readonly certificate_id?: string;
  readonly tls_passthrough?: boolean;
}

export interface WireHealthCheck {
  readonly protocol: "http" | "https" | "tcp";
  readonly port: number;
  readonly path?: string;
  readonly check_interval_seconds: number;
  readonly response_timeout_seconds: number;
  readonly unhealthy_threshold: number;
  readonly healthy_threshold: number;
  /**
   * Whether the check itself sends PROXY protocol; unset, it follows `enable_proxy_protocol`.
   * Not in the OpenAPI document: godo's HealthCheck.ProxyProtocol (`json:"proxy_protocol,omitempty"`),
   * which the DigitalOcean CCM sets false for its kube-proxy check.
   */
  readonly proxy_protocol?: boolean;
}

export interface WireStickySessions {
  readonly type: "none" | "cookies";
  readonly cookie_name?: string;
  readonly cookie_ttl_seconds?: number;
}

export type LbNetwork = "EXTERNAL" | "INTERNAL";
export type LbNetworkStack = "IPV4" | "DUALSTACK";
export type LbType = "REGIONAL" | "REGIONAL_NETWORK";

/** The writable fields: what POST takes and PUT replaces whole. */
export interface WireLbRequest {
  readonly name: string;
  readonly region: string;
  readonly size_unit?: number;
  readonly size?: string;
  readonly forwarding_rules: readonly WireForwardingRule[];
  readonly health_check: WireHealthCheck;
  readonly sticky_sessions: WireStickySessions;
  readonly redirect_http_to_https: boolean;
  readonly enable_proxy_protocol: boolean;
  readonly enable_backend_keepalive: boolean;
  readonly http_idle_timeout_seconds: number;
  readonly vpc_uuid?: string;
  readonly disable_lets_encrypt_dns_records: boolean;
  readonly firewall: { readonly allow: readonly string[]; readonly deny: readonly string[] };
  readonly network: LbNetwork;
  readonly network_stack: LbNetworkStack;
  readonly type: LbType;
  readonly droplet_ids: readonly number[];
}

export interface WireLoadBalancer extends Omit<WireLbRequest, "region" | "droplet_ids" | "type"> {
  readonly id: string;
  readonly ip: string;
  readonly ipv6?: string;
  readonly status: "new" | "active" | "errored";
  readonly region: { readonly slug: string };
  readonly droplet_ids?: readonly number[];
  readonly tag?: string;
  readonly type?: string;
}

/** resources/certificates/models/certificate.yml (the fields read). */
export interface WireCertificate {
  readonly id: string;
  readonly name: string;
  readonly type?: "custom" | "lets_encrypt";
  readonly state?: "pending" | "verified" | "error";
}
