// Hetzner Cloud API v1 wire shapes of the fake's tables, every field the spec requires.
import {
  type FakeAction,
  type FakeCertificate,
  type FakeLoadBalancer,
  type FakeNetwork,
  type FakeServer,
  type FakeVolume,
  LB_TYPES,
  LOCATIONS,
} from "./store.js";

type Json = Record<string, unknown>;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
const PRICE = { gross: "1.0000", net: "1.0000" };

export function wireLocation(name: string): Json {
  const l = LOCATIONS[name] ?? { city: name, country: "DE", zone: "eu-central" };
  return {
    id: Object.keys(LOCATIONS).indexOf(name) + 1,
    name,
    description: `${l.city} DC Park 1`,
    country: l.country,
    city: l.city,
    latitude: 50.47612,
    longitude: 12.370071,
    network_zone: l.zone,
  };
}

function wireServerType(name: string): Json {
  return {
    id: 22,
    name,
    description: name.toUpperCase(),
    architecture: "x86",
    category: "shared",
    cores: 2,
    cpu_type: "shared",
    deprecated: false,
    deprecation: null,
    disk: 40,
    memory: 4,
    storage_type: "local",
    locations: [],
    prices: [],
  };
}

export function wireServer(s: FakeServer): Json {
  return {
    id: s.id,
    name: s.name,
    status: s.status,
    created: iso(s.createdMs),
    labels: { ...s.labels },
    locked: false,
    backup_window: null,
    image: null,
    iso: null,
    included_traffic: 21990232555520,
    ingoing_traffic: 0,
    outgoing_traffic: 0,
    primary_disk_size: 40,
    rescue_enabled: false,
    placement_group: null,
    protection: { delete: false, rebuild: false },
    load_balancers: [],
    volumes: [],
    location: wireLocation(s.location),
    datacenter: {
      id: 1,
      name: `${s.location}-dc1`,
      description: `${s.location} DC 1`,
      location: wireLocation(s.location),
      server_types: { available: [], available_for_migration: [], supported: [] },
    },
    server_type: wireServerType(s.serverType),
    public_net: {
      ipv4:
        s.ipv4 === null
          ? null
          : { id: s.id, ip: s.ipv4, blocked: false, dns_ptr: `static.${s.ipv4}.example` },
      ipv6: s.ipv6 === null ? null : { id: s.id + 1, ip: s.ipv6, blocked: false, dns_ptr: [] },
      floating_ips: [],
      firewalls: [],
    },
    private_net: s.privateNet.map((p) => ({
      network: p.network,
      ip: p.ip,
      alias_ips: [],
      mac_address: "86:00:00:2a:7d:e0",
    })),
  };
}

export function wireNetwork(n: FakeNetwork, servers: readonly number[], lbs: readonly number[]): Json {
  return {
    id: n.id,
    name: n.name,
    ip_range: n.ipRange,
    created: iso(n.createdMs),
    labels: { ...n.labels },
    protection: { delete: false },
    expose_routes_to_vswitch: false,
    routes: n.routes.map((r) => ({ destination: r.destination, gateway: r.gateway })),
    servers: [...servers],
    load_balancers: [...lbs],
    subnets: [
      {
        type: "cloud",
        ip_range: n.ipRange,
        network_zone: n.networkZone,
        gateway: n.ipRange.replace(/\.0\/\d+$/, ".1"),
        vswitch_id: null,
      },
    ],
  };
}

export function wireLoadBalancer(lb: FakeLoadBalancer): Json {
  const t = LB_TYPES.find((x) => x.name === lb.type) ?? LB_TYPES[0];
  return {
    id: lb.id,
    name: lb.name,
    created: iso(lb.createdMs),
    labels: { ...lb.labels },
    algorithm: { type: lb.algorithm },
    load_balancer_type: {
      id: t?.id,
      name: t?.name,
      description: t?.name.toUpperCase(),
      deprecated: null,
      max_assigned_certificates: t?.maxCertificates,
      max_connections: t?.maxConnections,
      max_services: t?.maxServices,
      max_targets: t?.maxTargets,
      prices: [
        {
          location: lb.location,
          included_traffic: 654321,
          price_hourly: PRICE,
          price_monthly: PRICE,
          price_per_tb_traffic: PRICE,
        },
      ],
    },
    location: wireLocation(lb.location),
    included_traffic: 654321,
    ingoing_traffic: 0,
    outgoing_traffic: 0,
    protection: { delete: lb.deleteProtected ?? false },
    public_net: {
      enabled: lb.publicEnabled,
      ipv4: lb.publicEnabled
        ? { ip: lb.ipv4, dns_ptr: lb.dnsPtr?.[lb.ipv4] ?? `lb.${lb.ipv4}.example` }
        : { ip: null, dns_ptr: null },
      ipv6: lb.publicEnabled
        ? { ip: lb.ipv6, dns_ptr: lb.dnsPtr?.[lb.ipv6] ?? null }
        : { ip: null, dns_ptr: null },
    },
    private_net: lb.privateNet.map((p) => ({ network: p.network, ip: p.ip })),
    services: lb.services.map((s) => ({
      protocol: s.protocol,
      listen_port: s.listen_port,
      destination_port: s.destination_port,
      proxyprotocol: s.proxyprotocol,
      health_check: s.health_check,
      ...(s.http !== undefined && { http: s.http }),
    })),
    targets: lb.targets.map((t) => ({
      type: t.type,
      ...(t.server !== undefined && { server: { id: t.server } }),
      ...(t.ip !== undefined && { ip: { ip: t.ip } }),
      use_private_ip: t.use_private_ip,
      health_status: lb.services.map((s) => ({ listen_port: s.listen_port, status: "healthy" })),
    })),
  };
}

/** A certificate as Hetzner answers it; `usedBy` the load balancers whose services name it. */
export function wireCertificate(c: FakeCertificate, usedBy: readonly number[]): Json {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    labels: { ...c.labels },
    created: iso(c.createdMs),
    certificate: c.certificate,
    fingerprint: c.fingerprint,
    domain_names: [...c.domainNames],
    not_valid_before: c.notValidBefore === null ? null : iso(c.notValidBefore),
    not_valid_after: c.notValidAfter === null ? null : iso(c.notValidAfter),
    status: c.status === null ? null : { ...c.status },
    used_by: usedBy.map((id) => ({ id, type: "load_balancer" })),
  };
}

export function wireAction(a: FakeAction): Json {
  return {
    id: a.id,
    command: a.command,
    status: a.status,
    progress: a.status === "running" ? 50 : 100,
    started: iso(a.startedMs),
    finished: a.finishedMs === null ? null : iso(a.finishedMs),
    resources: a.resources.map((r) => ({ id: r.id, type: r.type })),
    error: a.error,
  };
}

/** Hetzner's meta.pagination for page `page` of `total` items, `perPage` a page. */
export function wirePagination(page: number, perPage: number, total: number): Json {
  const last = Math.max(1, Math.ceil(total / perPage));
  return {
    pagination: {
      page,
      per_page: perPage,
      previous_page: page > 1 ? page - 1 : null,
      next_page: page < last ? page + 1 : null,
      last_page: last,
      total_entries: total,
    },
  };
}

/** A volume (schema `volume`): the location as a whole object, the server's id or null. */
export function wireVolume(v: FakeVolume): Json {
  return {
    id: v.id,
    created: iso(v.createdMs),
    name: v.name,
    server: v.server,
    location: wireLocation(v.location),
    size: v.size,
    linux_device: `/dev/disk/by-id/scsi-0HC_Volume_${v.id}`,
    protection: { delete: false },
    labels: { ...v.labels },
    status: "available",
    format: "ext4",
  };
}
