/** The fake's tables rendered in DigitalOcean's wire shapes (resources/droplets/models/droplet.yml, load_balancers/models/load_balancer.yml). */
import type { FakeCertificate, FakeDroplet, FakeLoadBalancer, FakeVolume } from "./store.js";

type Json = Record<string, unknown>;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A size slug's vCPUs and memory (s-2vcpu-4gb: 2 and 4096 MiB); anything else reads as 1 and 1024. */
function sizeOf(slug: string): { vcpus: number; memory: number; disk: number } {
  const m = /^[a-z]+-(\d+)vcpu-(\d+)gb/.exec(slug);
  const vcpus = m === null ? 1 : Number(m[1]);
  const gb = m === null ? 1 : Number(m[2]);
  return { vcpus, memory: gb * 1024, disk: 25 * vcpus };
}

function region(slug: string): Json {
  return {
    name: slug.toUpperCase(),
    slug,
    features: ["private_networking", "backups", "ipv6", "metadata"],
    available: true,
    sizes: ["s-1vcpu-1gb", "s-2vcpu-4gb"],
  };
}

export function wireDroplet(d: FakeDroplet): Json {
  const size = sizeOf(d.sizeSlug);
  const v4 = [
    ...(d.privateIPv4 === null
      ? []
      : [{ ip_address: d.privateIPv4, netmask: "255.255.0.0", gateway: "10.110.0.1", type: "private" }]),
    {
      ip_address: d.publicIPv4,
      netmask: "255.255.240.0",
      gateway: d.publicIPv4.replace(/\.\d+$/, ".1"),
      type: "public",
    },
    ...(d.extraV4 ?? []).map((n) => ({
      ip_address: n.ip,
      netmask: n.type === "private" ? "255.255.0.0" : "255.255.240.0",
      gateway: n.ip.replace(/\.\d+$/, ".1"),
      type: n.type,
    })),
  ];
  const v6 =
    d.ipv6 === null
      ? []
      : [{ ip_address: d.ipv6, netmask: 64, gateway: "2604:a880:800:10::1", type: "public" }];
  return {
    id: d.id,
    name: d.name,
    memory: size.memory,
    vcpus: size.vcpus,
    disk: size.disk,
    locked: false,
    status: d.status,
    created_at: iso(d.createdAtMs),
    features: ["private_networking", ...(d.ipv6 === null ? [] : ["ipv6"])],
    backup_ids: [],
    next_backup_window: null,
    snapshot_ids: [],
    image: {
      id: 106_433_672,
      name: "24.04 (LTS) x64",
      type: "base",
      distribution: "Ubuntu",
      slug: "ubuntu-24-04-x64",
      public: true,
      regions: [d.region],
      created_at: "2024-04-25T15:43:32Z",
      min_disk_size: 7,
      size_gigabytes: 2.5,
      description: "Ubuntu 24.04 (LTS) x64",
      tags: [],
      status: "available",
    },
    volume_ids: [],
    size: {
      slug: d.sizeSlug,
      memory: size.memory,
      vcpus: size.vcpus,
      disk: size.disk,
      transfer: 4,
      price_monthly: 24,
      price_hourly: 0.03571,
      regions: [d.region],
      available: true,
      description: "Basic",
    },
    size_slug: d.sizeSlug,
    networks: { v4, v6 },
    region: region(d.region),
    tags: [...d.tags],
    ...(d.vpcUuid !== null && { vpc_uuid: d.vpcUuid }),
  };
}

export function wireLoadBalancer(lb: FakeLoadBalancer): Json {
  return {
    id: lb.id,
    name: lb.name,
    ip: lb.ip,
    ipv6: lb.ipv6,
    ...(lb.size_unit !== undefined && { size_unit: lb.size_unit }),
    ...(lb.size !== undefined && { size: lb.size }),
    status: lb.status,
    created_at: iso(lb.createdAtMs),
    forwarding_rules: lb.forwarding_rules.map((r) => ({ ...r })),
    health_check: { ...lb.health_check },
    sticky_sessions: { ...lb.sticky_sessions },
    redirect_http_to_https: lb.redirect_http_to_https,
    enable_proxy_protocol: lb.enable_proxy_protocol,
    enable_backend_keepalive: lb.enable_backend_keepalive,
    http_idle_timeout_seconds: lb.http_idle_timeout_seconds,
    ...(lb.vpc_uuid !== "" && { vpc_uuid: lb.vpc_uuid }),
    disable_lets_encrypt_dns_records: lb.disable_lets_encrypt_dns_records,
    firewall: { allow: [...lb.firewall.allow], deny: [...lb.firewall.deny] },
    network: lb.network,
    network_stack: lb.network_stack,
    type: lb.type,
    region: region(lb.region),
    droplet_ids: [...lb.droplet_ids],
    ...(lb.tag !== "" && { tag: lb.tag }),
  };
}

/** resources/certificates/models/certificate.yml. */
export function wireCertificate(c: FakeCertificate): Json {
  return {
    id: c.id,
    name: c.name,
    not_after: iso(c.notAfterMs),
    sha1_fingerprint: c.id.replace(/-/g, "").padEnd(40, "0").slice(0, 40),
    created_at: iso(c.createdAtMs),
    dns_names: [...c.dnsNames],
    state: "verified",
    type: c.type,
  };
}

/** resources/volumes/models/volume_full.yml: the region as a whole object, `droplet_ids` at most one. */
export function wireVolume(v: FakeVolume): Json {
  return {
    id: v.id,
    droplet_ids: [...v.dropletIds],
    name: v.name,
    description: v.description,
    size_gigabytes: v.sizeGigabytes,
    created_at: iso(v.createdAtMs),
    tags: [...v.tags],
    region: region(v.region),
    filesystem_type: "ext4",
    filesystem_label: "",
  };
}
