/** The parts of Linode API v4 objects this provider reads (typed from the OpenAPI spec v4.189.0). */

export interface WireLinode {
  readonly id: number;
  readonly label: string;
  readonly region: string;
  readonly type: string;
  readonly status: string;
  readonly ipv4: readonly string[];
  readonly ipv6: string | null;
  readonly tags: readonly string[];
  /** Newer than the spec file: `linode` when the Linode uses the newer interfaces API. */
  readonly interface_generation?: string;
}

export interface WireNodeBalancer {
  readonly id: number;
  readonly label: string;
  readonly region: string;
  readonly hostname: string;
  readonly ipv4: string;
  readonly ipv6: string | null;
  readonly tags: readonly string[];
  readonly client_conn_throttle: number;
  /** Newer than the spec file (hand-added there): common, premium, premium_40gb. */
  readonly type?: string;
}

export type NbProtocol = "http" | "https" | "tcp" | "udp";

export interface WireNbConfig {
  readonly id: number;
  readonly port: number;
  readonly protocol: NbProtocol;
  readonly algorithm: string;
  readonly stickiness: string;
  readonly check: string;
  readonly check_interval: number;
  readonly check_timeout: number;
  readonly check_attempts: number;
  readonly check_path: string;
  readonly check_body: string;
  readonly check_passive: boolean;
  readonly proxy_protocol: string;
  readonly cipher_suite: string;
  readonly ssl_cert: string | null;
  readonly ssl_key: string | null;
  /** SHA-1 fingerprint of ssl_cert, colon-separated hex (the API never returns the cert itself). */
  readonly ssl_fingerprint?: string;
  /** UDP configs (newer than the spec file). */
  readonly udp_check_port?: number;
}

export interface WireNbNode {
  readonly id: number;
  readonly address: string;
  readonly label: string;
  readonly weight: number;
  readonly mode: string;
  /** A VPC backend's subnet (newer than the spec file). */
  readonly subnet_id?: number | null;
}

export interface WireFirewallRule {
  readonly action: "ACCEPT" | "DROP";
  readonly protocol: "TCP" | "UDP" | "ICMP" | "IPENCAP";
  readonly ports?: string | null;
  readonly label?: string;
  readonly addresses: { readonly ipv4?: readonly string[]; readonly ipv6?: readonly string[] };
}

export interface WireFirewallRules {
  readonly inbound: readonly WireFirewallRule[];
  readonly inbound_policy: "ACCEPT" | "DROP";
  readonly outbound: readonly WireFirewallRule[];
  readonly outbound_policy: "ACCEPT" | "DROP";
}

export interface WireFirewall {
  readonly id: number;
  readonly label: string;
  readonly tags: readonly string[];
  readonly rules: WireFirewallRules;
}

export interface WireFirewallDevice {
  readonly id: number;
  readonly entity: { readonly id: number; readonly type: "linode" | "nodebalancer" };
}

export interface WireVpc {
  readonly id: number;
  readonly label: string;
  readonly region: string;
}

/** One entry of GET /vpcs/{id}/ips: an interface address, or a routed range. */
export interface WireVpcIp {
  readonly address: string | null;
  readonly address_range: string | null;
  readonly linode_id: number;
  readonly config_id: number;
  readonly interface_id: number;
  readonly subnet_id: number;
}

export interface WireConfigInterface {
  readonly id: number;
  readonly purpose: "public" | "vlan" | "vpc";
  readonly vpc_id: number | null;
  readonly ip_ranges: readonly string[] | null;
}

export interface WireLinodeConfig {
  readonly id: number;
  readonly interfaces: readonly WireConfigInterface[];
}

/** One interface of the newer Linode interfaces API (newer than the spec file). */
export interface WireLinodeInterface {
  readonly id: number;
  readonly vpc: {
    readonly vpc_id: number;
    readonly ipv4?: { readonly ranges?: readonly { readonly range: string }[] };
  } | null;
}
