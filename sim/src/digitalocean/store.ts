/** The fake DigitalOcean API's tables: Droplets, certificates, load balancers and Block Storage volumes. */

export type DropletStatus = "new" | "active" | "off" | "archive";

export interface FakeDroplet {
  readonly id: number;
  readonly account: string;
  name: string;
  readonly region: string;
  readonly sizeSlug: string;
  status: DropletStatus;
  readonly publicIPv4: string;
  readonly privateIPv4: string | null;
  readonly ipv6: string | null;
  readonly vpcUuid: string | null;
  tags: string[];
  readonly createdAtMs: number;
  /** More `networks.v4` entries after the usual private and public one (a reserved IP's anchor, a second NIC). */
  readonly extraV4?: readonly { readonly ip: string; readonly type: "public" | "private" }[];
}

export type CertificateType = "custom" | "lets_encrypt";

export interface FakeCertificate {
  readonly id: string;
  readonly account: string;
  readonly seq: number;
  readonly name: string;
  readonly type: CertificateType;
  readonly dnsNames: readonly string[];
  readonly createdAtMs: number;
  readonly notAfterMs: number;
}

export interface FakeVolume {
  readonly id: string;
  readonly account: string;
  readonly seq: number;
  readonly name: string;
  readonly region: string;
  readonly sizeGigabytes: number;
  readonly description: string;
  dropletIds: number[];
  tags: string[];
  readonly createdAtMs: number;
}

export type LbStatus = "new" | "active" | "errored";

export interface FakeForwardingRule {
  entry_protocol: string;
  entry_port: number;
  target_protocol: string;
  target_port: number;
  certificate_id?: string;
  tls_passthrough?: boolean;
}

/** What a load balancer's create or whole-object update sets (the writable fields the fake keeps). */
export interface LbSettings {
  name: string;
  region: string;
  size_unit?: number;
  size?: string;
  forwarding_rules: FakeForwardingRule[];
  health_check: Record<string, unknown>;
  sticky_sessions: Record<string, unknown>;
  redirect_http_to_https: boolean;
  enable_proxy_protocol: boolean;
  enable_backend_keepalive: boolean;
  http_idle_timeout_seconds: number;
  vpc_uuid: string;
  disable_lets_encrypt_dns_records: boolean;
  firewall: { allow: string[]; deny: string[] };
  network: "EXTERNAL" | "INTERNAL";
  network_stack: "IPV4" | "DUALSTACK";
  type: "REGIONAL" | "REGIONAL_NETWORK" | "GLOBAL";
  droplet_ids: number[];
  tag: string;
}

export interface FakeLoadBalancer extends LbSettings {
  readonly id: string;
  readonly account: string;
  readonly seq: number;
  status: LbStatus;
  ip: string;
  ipv6: string;
  readonly createdAtMs: number;
  /** Reads (get or list) that saw it while `new`. */
  polls: number;
  /** Ends in `errored` instead of `active`. */
  readonly fails: boolean;
}

export class DigitalOceanStore {
  readonly droplets = new Map<number, FakeDroplet>();
  readonly loadBalancers = new Map<string, FakeLoadBalancer>();
  readonly certificates = new Map<string, FakeCertificate>();
  readonly volumes = new Map<string, FakeVolume>();
  private seq = 0;
  private hosts = 0;

  nextSeq(): number {
    return ++this.seq;
  }

  dropletsOf(account: string): FakeDroplet[] {
    return [...this.droplets.values()].filter((d) => d.account === account).sort((a, b) => a.id - b.id);
  }

  loadBalancersOf(account: string): FakeLoadBalancer[] {
    return [...this.loadBalancers.values()]
      .filter((l) => l.account === account)
      .sort((a, b) => a.seq - b.seq);
  }

  certificatesOf(account: string): FakeCertificate[] {
    return [...this.certificates.values()].filter((c) => c.account === account).sort((a, b) => a.seq - b.seq);
  }

  volumesOf(account: string): FakeVolume[] {
    return [...this.volumes.values()].filter((v) => v.account === account).sort((a, b) => a.seq - b.seq);
  }

  /** Addresses never handed out twice. */
  freshAddresses(): { public: string; private: string; ipv6: string; host: number } {
    const n = ++this.hosts;
    const a = Math.floor(n / 250) % 250;
    const b = (n % 250) + 2;
    return {
      public: `104.131.${a}.${b}`,
      private: `10.110.${a}.${b}`,
      ipv6: `2604:a880:800:10::${n.toString(16)}:1`,
      host: n,
    };
  }
}

/** A UUID from a counter (the spec's ids are `format: uuid`). */
export function uuidOf(n: number, prefix = "4de7ac8b"): string {
  const hex = n.toString(16).padStart(12, "0");
  return `${prefix}-495b-4884-9a69-${hex}`;
}
