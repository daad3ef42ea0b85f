/**
 * The fake Linode API's tables: Linodes (with their config interfaces), NodeBalancers with
 * configs and nodes, Cloud Firewalls with devices, VPCs with subnets. Ids are integers, as
 * Linode's are, and never reused. The wire shapes are in wire.ts.
 */

export interface FakeConfigInterface {
  readonly id: number;
  readonly purpose: "public" | "vlan" | "vpc";
  readonly primary: boolean;
  readonly subnetId: number | null;
  readonly vpcId: number | null;
  /** The interface's VPC IPv4 address. */
  readonly vpcIPv4: string | null;
  ipRanges: string[];
}

export interface FakeLinode {
  readonly id: number;
  readonly account: string;
  label: string;
  readonly region: string;
  readonly type: string;
  status: "running" | "offline" | "shutting_down" | "stopped" | "booting" | "provisioning" | "deleting";
  readonly publicIPv4: string;
  readonly privateIPv4: string | null;
  readonly ipv6: string;
  tags: string[];
  readonly configId: number;
  /** `legacy_config`: interfaces live in the config; `linode`: the newer Linode interfaces API. */
  readonly interfaceGeneration: "legacy_config" | "linode";
  readonly interfaces: FakeConfigInterface[];
  readonly createdAtMs: number;
}

export interface FakeNbNode {
  readonly id: number;
  address: string;
  label: string;
  weight: number;
  mode: "accept" | "reject" | "drain" | "backup";
  /** A VPC backend's subnet. */
  subnetId: number | null;
}

export interface FakeNbConfig {
  readonly id: number;
  readonly nodeBalancerId: number;
  port: number;
  protocol: "http" | "https" | "tcp" | "udp";
  algorithm: "roundrobin" | "leastconn" | "source" | "ring_hash";
  stickiness: "none" | "table" | "http_cookie" | "session" | "source_ip";
  udpCheckPort: number;
  check: "none" | "connection" | "http" | "http_body";
  checkInterval: number;
  checkTimeout: number;
  checkAttempts: number;
  checkPath: string;
  checkBody: string;
  checkPassive: boolean;
  proxyProtocol: "none" | "v1" | "v2";
  cipherSuite: "recommended" | "legacy";
  sslCert: string | null;
  sslKey: string | null;
  /** Derived from sslCert, as the API reports them: SHA-1 fingerprint and subject CN. */
  sslFingerprint: string;
  sslCommonName: string;
  nodes: FakeNbNode[];
}

export interface FakeNodeBalancer {
  readonly id: number;
  readonly account: string;
  label: string;
  readonly region: string;
  tags: string[];
  clientConnThrottle: number;
  readonly type: "common" | "premium" | "premium_40gb";
  readonly ipv4: string;
  readonly ipv6: string;
  readonly hostname: string;
  readonly configs: FakeNbConfig[];
  /** Subnets of its VPC backends (set at creation); empty: private-IP backends. */
  readonly backendSubnets: readonly number[];
  /** A VPC frontend's subnet (its ipv4 is then in that subnet), else null. */
  readonly frontendSubnetId: number | null;
  readonly createdAtMs: number;
  updatedAtMs: number;
}

export interface FirewallRule {
  readonly action: "ACCEPT" | "DROP";
  readonly protocol: "TCP" | "UDP" | "ICMP" | "IPENCAP";
  readonly ports?: string | null;
  readonly label?: string;
  readonly addresses: { readonly ipv4?: readonly string[]; readonly ipv6?: readonly string[] };
}

export interface FirewallRules {
  readonly inbound: readonly FirewallRule[];
  readonly inbound_policy: "ACCEPT" | "DROP";
  readonly outbound: readonly FirewallRule[];
  readonly outbound_policy: "ACCEPT" | "DROP";
}

export interface FakeFirewallDevice {
  readonly id: number;
  readonly type: "linode" | "nodebalancer";
  readonly entityId: number;
}

export interface FakeFirewall {
  readonly id: number;
  readonly account: string;
  label: string;
  tags: string[];
  rules: FirewallRules;
  version: number;
  readonly devices: FakeFirewallDevice[];
  readonly createdAtMs: number;
}

export interface FakeSubnet {
  readonly id: number;
  readonly label: string;
  readonly ipv4: string;
}

export interface FakeVpc {
  readonly id: number;
  readonly account: string;
  readonly label: string;
  readonly region: string;
  readonly subnets: FakeSubnet[];
}

/** A reserved IPv4 address, kept by the account until it deletes the reservation. */
export interface FakeReservedIP {
  readonly address: string;
  readonly account: string;
  readonly region: string;
}

/** Every table of the fake; plain maps keyed by id, read in id (creation) order. */
/** A Block Storage Volume: in one region (Linode has no zones), attached to at most one Linode. */
export interface FakeVolume {
  readonly id: number;
  readonly account: string;
  readonly label: string;
  readonly region: string;
  readonly size: number;
  status: "creating" | "active" | "resizing" | "key_rotating";
  linodeId: number | null;
  tags: string[];
  readonly createdAtMs: number;
}

export class LinodeStore {
  readonly linodes = new Map<number, FakeLinode>();
  readonly volumes = new Map<number, FakeVolume>();
  readonly nodeBalancers = new Map<number, FakeNodeBalancer>();
  readonly firewalls = new Map<number, FakeFirewall>();
  readonly vpcs = new Map<number, FakeVpc>();
  readonly reservedIPs = new Map<string, FakeReservedIP>();
  private nextIdValue = 1000;
  private nextAddress = 1;

  nextId(): number {
    return ++this.nextIdValue;
  }

  /** A fresh (public, private, IPv6) address triple; never reused. */
  freshAddresses(): { public: string; private: string; ipv6: string; host: number } {
    const n = this.nextAddress++;
    const hi = Math.floor(n / 250) % 250;
    const lo = (n % 250) + 1;
    return {
      public: `45.79.${hi}.${lo}`,
      private: `192.168.${128 + (hi % 64)}.${lo}`,
      ipv6: `2600:3c03::f03c:91ff:fe${(n >> 8).toString(16).padStart(2, "0")}:${(n & 0xff).toString(16).padStart(4, "0")}/128`,
      host: n,
    };
  }

  linodesOf(account: string): FakeLinode[] {
    return [...this.linodes.values()].filter((l) => l.account === account);
  }

  volumesOf(account: string): FakeVolume[] {
    return [...this.volumes.values()].filter((v) => v.account === account);
  }

  nodeBalancersOf(account: string): FakeNodeBalancer[] {
    return [...this.nodeBalancers.values()].filter((n) => n.account === account);
  }

  firewallsOf(account: string): FakeFirewall[] {
    return [...this.firewalls.values()].filter((f) => f.account === account);
  }

  vpcsOf(account: string): FakeVpc[] {
    return [...this.vpcs.values()].filter((v) => v.account === account);
  }

  /** The firewalls a device is attached to. */
  firewallsOfDevice(account: string, type: "linode" | "nodebalancer", entityId: number): FakeFirewall[] {
    return this.firewallsOf(account).filter((f) =>
      f.devices.some((d) => d.type === type && d.entityId === entityId),
    );
  }
}
