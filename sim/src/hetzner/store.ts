// The fake Hetzner Cloud's tables: projects (accounts), servers, networks, load balancers and
// actions. Plain maps: the rules between them (locks, limits, references) live in fake.ts.

export type ServerStatus =
  | "running"
  | "initializing"
  | "starting"
  | "stopping"
  | "off"
  | "deleting"
  | "migrating"
  | "rebuilding"
  | "unknown";

export interface FakePrivateNet {
  readonly network: number;
  readonly ip: string;
}

export interface FakeServer {
  readonly id: number;
  readonly account: string;
  readonly name: string;
  readonly location: string;
  readonly serverType: string;
  status: ServerStatus;
  readonly labels: Record<string, string>;
  readonly ipv4: string | null;
  /** The server's /64, e.g. 2001:db8:0:7::/64. */
  readonly ipv6: string | null;
  readonly privateNet: FakePrivateNet[];
  readonly createdMs: number;
}

export interface FakeVolume {
  readonly id: number;
  readonly account: string;
  readonly name: string;
  readonly location: string;
  readonly size: number;
  server: number | null;
  readonly labels: Record<string, string>;
  readonly createdMs: number;
}

export interface FakeRoute {
  readonly destination: string;
  readonly gateway: string;
}

export interface FakeNetwork {
  readonly id: number;
  readonly account: string;
  readonly name: string;
  readonly ipRange: string;
  readonly networkZone: string;
  labels: Record<string, string>;
  readonly routes: FakeRoute[];
  readonly createdMs: number;
  /** Next host number handed out in the network (10.x.0.<n>). */
  nextHost: number;
}

export interface FakeLbHealthCheck {
  protocol: "tcp" | "http";
  port: number;
  interval: number;
  timeout: number;
  retries: number;
  http?: { domain: string | null; path: string; response?: string; status_codes?: string[]; tls?: boolean };
}

export interface FakeLbService {
  protocol: "tcp" | "http" | "https";
  listen_port: number;
  destination_port: number;
  proxyprotocol: boolean;
  health_check: FakeLbHealthCheck;
  http?: Record<string, unknown>;
}

export interface FakeLbTarget {
  readonly type: "server" | "ip";
  readonly server?: number;
  readonly ip?: string;
  use_private_ip: boolean;
}

export interface FakeLoadBalancer {
  readonly id: number;
  readonly account: string;
  name: string;
  type: string;
  readonly location: string;
  readonly networkZone: string;
  algorithm: "round_robin" | "least_connections";
  labels: Record<string, string>;
  publicEnabled: boolean;
  /** `protection.delete`: a DELETE is refused (`protected`) while it is set. */
  deleteProtected?: boolean;
  /** Reverse DNS set by change_dns_ptr, by public IP; absent: Hetzner's default for that IP. */
  dnsPtr?: Record<string, string>;
  readonly ipv4: string;
  readonly ipv6: string;
  readonly privateNet: FakePrivateNet[];
  readonly services: FakeLbService[];
  readonly targets: FakeLbTarget[];
  readonly createdMs: number;
}

export interface FakeAction {
  readonly id: number;
  readonly account: string;
  readonly command: string;
  readonly resources: readonly { readonly id: number; readonly type: string }[];
  status: "running" | "success" | "error";
  readonly startedMs: number;
  finishedMs: number | null;
  error: { code: string; message: string } | null;
  /** Reads of the action still answered `running`. */
  pollsLeft: number;
  /** Whether it ends in error once its polls are done. */
  readonly fails: boolean;
  /** What an action ending in error undoes (the change it stood for never took). */
  readonly undo?: () => void;
  /** What an action ending in success completes (a managed certificate's issuance). */
  readonly done?: () => void;
}

/** A TLS certificate: uploaded (PEM given) or managed (issued by Let's Encrypt through an action). */
export interface FakeCertificate {
  readonly id: number;
  readonly account: string;
  name: string;
  readonly type: "uploaded" | "managed";
  labels: Record<string, string>;
  readonly domainNames: readonly string[];
  /** The PEM chain: given at upload, issued for a managed one (null until then). */
  certificate: string | null;
  fingerprint: string | null;
  notValidBefore: number | null;
  notValidAfter: number | null;
  /** Managed only: issuance follows its create_certificate action. */
  status: {
    issuance: "pending" | "completed" | "failed";
    renewal: "unavailable";
    error: { code: string; message: string } | null;
  } | null;
  readonly createdMs: number;
}

/** A Hetzner load balancer type: the limits its documentation lists. */
export interface FakeLbType {
  readonly id: number;
  readonly name: string;
  readonly maxServices: number;
  readonly maxTargets: number;
  readonly maxCertificates: number;
  readonly maxConnections: number;
}

/** lb11, lb21, lb31 as docs.hetzner.cloud lists them (services, targets, certificates, connections). */
export const LB_TYPES: readonly FakeLbType[] = [
  { id: 1, name: "lb11", maxServices: 5, maxTargets: 25, maxCertificates: 10, maxConnections: 10_000 },
  { id: 2, name: "lb21", maxServices: 15, maxTargets: 75, maxCertificates: 25, maxConnections: 20_000 },
  { id: 3, name: "lb31", maxServices: 30, maxTargets: 150, maxCertificates: 50, maxConnections: 40_000 },
];

/** Locations and their network zones (docs.hetzner.cloud, "Locations"). */
export const LOCATIONS: Readonly<Record<string, { city: string; country: string; zone: string }>> = {
  fsn1: { city: "Falkenstein", country: "DE", zone: "eu-central" },
  nbg1: { city: "Nuremberg", country: "DE", zone: "eu-central" },
  hel1: { city: "Helsinki", country: "FI", zone: "eu-central" },
  ash: { city: "Ashburn, VA", country: "US", zone: "us-east" },
  hil: { city: "Hillsboro, OR", country: "US", zone: "us-west" },
  sin: { city: "Singapore", country: "SG", zone: "ap-southeast" },
};

export class HetznerStore {
  readonly servers = new Map<number, FakeServer>();
  readonly networks = new Map<number, FakeNetwork>();
  readonly loadBalancers = new Map<number, FakeLoadBalancer>();
  readonly actions = new Map<number, FakeAction>();
  readonly certificates = new Map<number, FakeCertificate>();
  readonly volumes = new Map<number, FakeVolume>();
  private seq = 100;
  private addr = 0;

  nextId(): number {
    return ++this.seq;
  }

  /** A fresh public IPv4 (TEST-NET-3 and beyond) and IPv6 /64. */
  freshPublic(): { ipv4: string; ipv6: string } {
    const n = ++this.addr;
    return {
      ipv4: `203.0.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`,
      ipv6: `2001:db8:0:${n.toString(16)}::/64`,
    };
  }

  serversOf(account: string): FakeServer[] {
    return [...this.servers.values()].filter((s) => s.account === account);
  }

  networksOf(account: string): FakeNetwork[] {
    return [...this.networks.values()].filter((n) => n.account === account);
  }

  certificatesOf(account: string): FakeCertificate[] {
    return [...this.certificates.values()].filter((c) => c.account === account);
  }

  volumesOf(account: string): FakeVolume[] {
    return [...this.volumes.values()].filter((v) => v.account === account);
  }

  loadBalancersOf(account: string): FakeLoadBalancer[] {
    return [...this.loadBalancers.values()].filter((l) => l.account === account);
  }
}
