/** The fake's tables as Linode API v4 answers them (the spec's shapes, TLS keys redacted). */
import type {
  FakeFirewall,
  FakeLinode,
  FakeNbConfig,
  FakeNbNode,
  FakeNodeBalancer,
  FakeVolume,
  FakeVpc,
} from "./store.js";

/** Linode's date-times carry no offset. */
export function linodeTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

export function wireLinode(l: FakeLinode): Record<string, unknown> {
  const created = linodeTime(l.createdAtMs);
  return {
    alerts: { cpu: 180, io: 10000, network_in: 10, network_out: 10, transfer_quota: 80 },
    backups: {
      available: false,
      enabled: false,
      last_successful: created,
      schedule: { day: null, window: null },
    },
    capabilities: [],
    created,
    group: "",
    has_user_data: false,
    host_uuid: `0b3ad4f2-0c9c-4c2c-9a7f-${l.id.toString(16).padStart(12, "0")}`,
    hypervisor: "kvm",
    id: l.id,
    image: "linode/ubuntu22.04",
    interface_generation: l.interfaceGeneration,
    ipv4: l.privateIPv4 === null ? [l.publicIPv4] : [l.publicIPv4, l.privateIPv4],
    ipv6: l.ipv6,
    label: l.label,
    lke_cluster_id: null,
    placement_group: null,
    region: l.region,
    specs: { disk: 81920, gpus: 0, memory: 4096, transfer: 4000, vcpus: 2 },
    status: l.status,
    tags: [...l.tags],
    type: l.type,
    updated: created,
    watchdog_enabled: true,
  };
}

function ipObject(
  l: FakeLinode,
  address: string,
  kind: "public" | "private",
  type: "ipv4" | "ipv6",
): Record<string, unknown> {
  const isV6 = type === "ipv6";
  return {
    address,
    gateway: isV6 ? "fe80::1" : address.replace(/\.\d+$/, ".1"),
    linode_id: l.id,
    prefix: isV6 ? 128 : kind === "public" ? 24 : 17,
    public: kind === "public",
    // The spec's private and IPv6 entries allow no nulls; public ones may have no rDNS.
    rdns: kind === "public" && !isV6 ? null : "",
    region: l.region,
    subnet_mask: isV6 ? "ffff:ffff:ffff:ffff::" : kind === "public" ? "255.255.255.0" : "255.255.128.0",
    type,
  };
}

/** GET /linode/instances/{id}/ips. */
export function wireLinodeIps(l: FakeLinode): Record<string, unknown> {
  const v6 = l.ipv6.replace(/\/128$/, "");
  const vpc = l.interfaces.find((i) => i.purpose === "vpc" && i.vpcIPv4 !== null);
  return {
    ipv4: {
      private: l.privateIPv4 === null ? [] : [ipObject(l, l.privateIPv4, "private", "ipv4")],
      public: [ipObject(l, l.publicIPv4, "public", "ipv4")],
      reserved: [],
      shared: [],
      vpc:
        vpc === undefined
          ? []
          : [
              {
                active: true,
                address: vpc.vpcIPv4,
                address_range: null,
                config_id: l.configId,
                gateway: null,
                interface_id: vpc.id,
                linode_id: l.id,
                nat_1_1: l.publicIPv4,
                prefix: 24,
                region: l.region,
                subnet_id: vpc.subnetId,
                subnet_mask: "255.255.255.0",
                vpc_id: vpc.vpcId,
              },
            ],
    },
    ipv6: {
      global: [],
      link_local: { ...ipObject(l, "fe80::f03c:91ff:fe24:3a2f", "public", "ipv6"), public: false },
      slaac: ipObject(l, v6, "public", "ipv6"),
    },
  };
}

/** GET /linode/instances/{id}/configs: one config holding the Linode's interfaces. */
export function wireLinodeConfig(l: FakeLinode): Record<string, unknown> {
  return {
    comments: null,
    devices: { sda: { disk_id: l.id * 10 } },
    helpers: {
      devtmpfs_automount: true,
      distro: true,
      modules_dep: true,
      network: true,
      updatedb_disabled: true,
    },
    id: l.configId,
    interfaces: l.interfaces.map(wireInterface),
    kernel: "linode/grub2",
    label: "My Ubuntu 22.04 Disk Profile",
    memory_limit: 0,
    run_level: "default",
    virt_mode: "paravirt",
  };
}

export function wireInterface(i: FakeLinode["interfaces"][number]): Record<string, unknown> {
  return {
    active: true,
    id: i.id,
    ip_ranges: i.purpose === "vpc" ? [...i.ipRanges] : [],
    ipam_address: null,
    ipv4: i.purpose === "vpc" ? { nat_1_1: null, vpc: i.vpcIPv4 } : {},
    label: null,
    primary: i.primary,
    purpose: i.purpose,
    subnet_id: i.subnetId,
    vpc_id: i.vpcId,
  };
}

/** One interface of the newer Linode interfaces API (the parts routes read). */
export function wireLinodeInterface(i: FakeLinode["interfaces"][number]): Record<string, unknown> {
  return {
    id: i.id,
    vpc:
      i.purpose === "vpc"
        ? {
            vpc_id: i.vpcId,
            subnet_id: i.subnetId,
            ipv4: {
              addresses: i.vpcIPv4 === null ? [] : [{ address: i.vpcIPv4 }],
              ranges: i.ipRanges.map((range) => ({ range })),
            },
          }
        : null,
  };
}

export function wireNodeBalancer(n: FakeNodeBalancer): Record<string, unknown> {
  return {
    client_conn_throttle: n.clientConnThrottle,
    created: linodeTime(n.createdAtMs),
    hostname: n.hostname,
    id: n.id,
    ipv4: n.ipv4,
    ipv6: n.ipv6,
    label: n.label,
    region: n.region,
    tags: [...n.tags],
    transfer: { in: null, out: null, total: null },
    type: n.type,
    frontend_address_type: n.frontendSubnetId === null ? "public" : "vpc",
    frontend_vpc_subnet_id: n.frontendSubnetId,
    updated: linodeTime(n.updatedAtMs),
  };
}

export function wireNbConfig(c: FakeNbConfig): Record<string, unknown> {
  const up = c.nodes.filter((n) => n.mode !== "reject").length;
  return {
    algorithm: c.algorithm,
    check: c.check,
    check_attempts: c.checkAttempts,
    check_body: c.checkBody,
    check_interval: c.checkInterval,
    check_passive: c.checkPassive,
    check_path: c.checkPath,
    check_timeout: c.checkTimeout,
    cipher_suite: c.cipherSuite,
    id: c.id,
    nodebalancer_id: c.nodeBalancerId,
    nodes_status: { down: c.nodes.length - up, up },
    port: c.port,
    protocol: c.protocol,
    proxy_protocol: c.proxyProtocol,
    // Linode never answers the certificate or key it holds.
    ssl_cert: c.sslCert === null ? null : "<REDACTED>",
    ssl_commonname: c.sslCommonName,
    ssl_fingerprint: c.sslFingerprint,
    ssl_key: c.sslKey === null ? null : "<REDACTED>",
    stickiness: c.stickiness,
    udp_check_port: c.udpCheckPort,
  };
}

export function wireNbNode(c: FakeNbConfig, n: FakeNbNode): Record<string, unknown> {
  return {
    address: n.address,
    config_id: c.id,
    id: n.id,
    label: n.label,
    mode: n.mode,
    nodebalancer_id: c.nodeBalancerId,
    status: "UP",
    subnet_id: n.subnetId,
    weight: n.weight,
  };
}

export function wireFirewall(f: FakeFirewall): Record<string, unknown> {
  return {
    created: linodeTime(f.createdAtMs),
    id: f.id,
    label: f.label,
    rules: { ...f.rules, fingerprint: `fp${f.version}`, version: f.version },
    status: "enabled",
    tags: [...f.tags],
    updated: linodeTime(f.createdAtMs),
  };
}

export function wireFirewallRules(f: FakeFirewall): Record<string, unknown> {
  return { ...f.rules, fingerprint: `fp${f.version}`, version: f.version };
}

export function wireFirewallDevice(
  f: FakeFirewall,
  d: FakeFirewall["devices"][number],
  label: string,
): Record<string, unknown> {
  const created = linodeTime(f.createdAtMs);
  return {
    created,
    entity: {
      id: d.entityId,
      label,
      type: d.type,
      url: `https://api.linode.com/v4/${d.type === "linode" ? "linode/instances" : "nodebalancers"}/${d.entityId}`,
    },
    id: d.id,
    updated: created,
  };
}

export function wireVpc(v: FakeVpc, linodesOf: (subnetId: number) => { id: number; iface: number }[]) {
  return {
    created: "2024-01-01T00:00:00",
    id: v.id,
    label: v.label,
    region: v.region,
    subnets: v.subnets.map((s) => wireSubnet(s, linodesOf(s.id))),
    updated: null,
  };
}

export function wireSubnet(
  s: FakeVpc["subnets"][number],
  linodes: readonly { id: number; iface: number }[],
): Record<string, unknown> {
  return {
    created: "2024-01-01T00:00:00",
    id: s.id,
    ipv4: s.ipv4,
    label: s.label,
    linodes: linodes.map((l) => ({ id: l.id, interfaces: [{ active: true, id: l.iface }] })),
    updated: null,
  };
}

export function wireVolume(v: FakeVolume, linodeLabel: string | null): Record<string, unknown> {
  const created = linodeTime(v.createdAtMs);
  return {
    created,
    encryption: "disabled",
    filesystem_path: `/dev/disk/by-id/scsi-0Linode_Volume_${v.label}`,
    hardware_type: "nvme",
    id: v.id,
    label: v.label,
    linode_id: v.linodeId,
    linode_label: linodeLabel,
    region: v.region,
    size: v.size,
    status: v.status,
    tags: [...v.tags],
    updated: created,
  };
}
