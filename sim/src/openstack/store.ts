/**
 * What the fake OpenStack cloud holds: projects and their credentials (Keystone), servers
 * (Nova), volumes (Cinder), networks, ports, floating IPs, routers and security groups (Neutron), and load balancers with their
 * listeners, pools, members and health monitors (Octavia). Plain records in creation order;
 * the rules between them are the fake's (fake.ts).
 */

export type ServerStatus =
  | "ACTIVE"
  | "BUILD"
  | "SHUTOFF"
  | "SUSPENDED"
  | "PAUSED"
  | "SHELVED_OFFLOADED"
  | "ERROR"
  | "SOFT_DELETED"
  | "DELETED";

export interface FakeProject {
  readonly id: string;
  readonly name: string;
  readonly domain: string;
}

export interface FakeServer {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  name: string;
  status: ServerStatus;
  readonly az: string;
  readonly flavor: {
    readonly name: string;
    readonly vcpus: number;
    readonly ram: number;
    readonly disk: number;
  };
  readonly metadata: Record<string, string>;
  readonly createdMs: number;
  updatedMs: number;
}

/** A Cinder volume of a project in a region's availability zone. */
export interface FakeVolume {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly name: string;
  readonly size: number;
  status: string;
  readonly az: string;
  /** The server it is attached to (one attachment; Cinder's multiattach is not modelled). */
  serverId?: string;
  readonly metadata: Record<string, string>;
  readonly createdMs: number;
}

export interface FakeNetwork {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly name: string;
  readonly external: boolean;
  readonly subnets: { readonly id: string; readonly cidr: string }[];
  nextHost: number;
}

export interface FakePort {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly networkId: string;
  deviceId: string;
  readonly deviceOwner: string;
  readonly mac: string;
  readonly fixedIps: { readonly subnet_id: string; readonly ip_address: string }[];
  /** Neutron's port status (`ACTIVE`, `DOWN`, `BUILD`, `ERROR`); absent: `ACTIVE`. */
  status?: "ACTIVE" | "DOWN" | "BUILD" | "ERROR";
  allowedAddressPairs: { ip_address: string; mac_address: string }[];
  readonly name: string;
  securityGroups: string[];
  portSecurityEnabled: boolean;
  tags: string[];
  /** Neutron's revision_number: one more on every update of the port. */
  revision: number;
}

export interface FakeSecurityGroupRule {
  readonly id: string;
  readonly direction: "ingress" | "egress";
  readonly ethertype: "IPv4" | "IPv6";
  readonly protocol: string | null;
  readonly portRangeMin: number | null;
  readonly portRangeMax: number | null;
  readonly remoteIpPrefix: string | null;
}

export interface FakeSecurityGroup {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly name: string;
  readonly description: string;
  rules: FakeSecurityGroupRule[];
  tags: string[];
}

export interface FakeFloatingIp {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly floatingNetworkId: string;
  readonly address: string;
  portId: string | null;
  fixedIp: string | null;
  description: string;
  readonly tags: string[];
  readonly createdMs: number;
}

export interface FakeRouter {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  readonly name: string;
  routes: { destination: string; nexthop: string }[];
  tags: string[];
}

export type Provisioning =
  | "ACTIVE"
  | "PENDING_CREATE"
  | "PENDING_UPDATE"
  | "PENDING_DELETE"
  | "ERROR"
  | "DELETED";

export interface FakeLoadBalancer {
  readonly id: string;
  readonly account: string;
  readonly region: string;
  name: string;
  description: string;
  readonly vipSubnetId: string;
  readonly vipNetworkId: string;
  readonly vipAddress: string;
  readonly vipPortId: string;
  tags: string[];
  readonly flavorId: string | null;
  readonly az: string | null;
  readonly provider: string;
  /** The settled status; a pending one ends at `pendingUntilMs`. */
  status: Provisioning;
  pendingUntilMs: number;
  /** The pending create ends in ERROR. */
  failing: boolean;
  readonly createdMs: number;
}

export interface FakeListener {
  readonly id: string;
  readonly lbId: string;
  name: string;
  description: string;
  readonly protocol: string;
  readonly port: number;
  defaultPoolId: string | null;
  settings: Record<string, unknown>;
  tags: string[];
}

export interface FakeMember {
  readonly id: string;
  readonly address: string;
  readonly port: number;
  readonly subnetId: string | null;
  readonly monitorPort: number | null;
  readonly name: string;
}

export interface FakePool {
  readonly id: string;
  readonly lbId: string;
  readonly listenerId: string | null;
  name: string;
  description: string;
  readonly protocol: string;
  lbAlgorithm: string;
  sessionPersistence: Record<string, unknown> | null;
  members: FakeMember[];
  tags: string[];
}

export interface FakeHealthMonitor {
  readonly id: string;
  readonly poolId: string;
  name: string;
  readonly type: string;
  settings: Record<string, unknown>;
  tags: string[];
}

export class OpenStackStore {
  readonly projects = new Map<string, FakeProject>();
  readonly servers = new Map<string, FakeServer>();
  /** Deleted servers as Nova keeps them: listed (DELETED) only to a `changes-since` query. */
  readonly deletedServers = new Map<string, FakeServer>();
  readonly networks = new Map<string, FakeNetwork>();
  readonly volumes = new Map<string, FakeVolume>();
  readonly ports = new Map<string, FakePort>();
  readonly floatingIps = new Map<string, FakeFloatingIp>();
  readonly routers = new Map<string, FakeRouter>();
  readonly securityGroups = new Map<string, FakeSecurityGroup>();
  readonly loadBalancers = new Map<string, FakeLoadBalancer>();
  readonly listeners = new Map<string, FakeListener>();
  readonly pools = new Map<string, FakePool>();
  readonly healthMonitors = new Map<string, FakeHealthMonitor>();
  private seq = 0;
  private publicHost = 10;

  /** A fresh UUID, never reused (deterministic: the n-th id of the fake). */
  uuid(): string {
    const n = (++this.seq).toString(16).padStart(12, "0");
    return `5e0c0000-0000-4000-8000-${n}`;
  }

  mac(): string {
    const n = this.seq.toString(16).padStart(6, "0");
    return `fa:16:3e:${n.slice(0, 2)}:${n.slice(2, 4)}:${n.slice(4, 6)}`;
  }

  freshPublicIp(): string {
    const n = this.publicHost++;
    return `203.0.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
  }

  hostIn(network: FakeNetwork): string {
    const subnet = network.subnets[0];
    if (subnet === undefined) throw new Error(`network ${network.id} has no subnet`);
    const base = subnet.cidr.split("/")[0]?.split(".").map(Number) ?? [];
    const n = network.nextHost++;
    return `${base[0]}.${base[1]}.${(base[2] ?? 0) + Math.floor(n / 250)}.${(n % 250) + 2}`;
  }
}
