/**
 * What cloud-provider-gcp leaves in a project for a Service (gce_loadbalancer_external.go),
 * put in the fake as it stands once upstream's ensure finished, for adoption tests: the
 * firewall `k8s-fw-<lbName>` (source ranges → the nodes' tags, destination the IP), the
 * health check and its firewall for Google's checkers (the cluster's shared legacy check
 * `k8s-<clusterid>-node` and `k8s-<clusterid>-node-http-hc`, or with externalTrafficPolicy
 * Local the Service's own `<lbName>` on healthCheckNodePort and `k8s-<lbName>-http-hc`), the
 * target pool `<lbName>` and the forwarding rule `<lbName>` — and no address: upstream releases
 * its reservation once the rule holds the IP (the IP stays the rule's, ephemeral).
 *
 * Every firewall is upstream's firewallObject: description, network, source ranges, the
 * nodes' tags, one `allowed` with the ports as getPortRanges joins them (`80-81`), priority
 * 1000 (firewallPriorityDefault; the deny-rule flag off) and destination the IP — the
 * health-check ones too (ensureHTTPHealthCheckFirewall passes the IP). The shared firewall,
 * like the shared check, is made by the cluster's first Service and left as it is by the
 * others (upstream compares neither destination nor tags), so it names the first one's IP.
 */
import { GCE_BASE, type GcpComputeFake, type Json } from "./fake.js";

/** Upstream's L4LBSrcRanges: Google's health checkers. */
const HEALTH_CHECK_RANGES = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"];
/** Upstream's firewallPriorityDefault. */
const FIREWALL_PRIORITY = 1000;

/** Upstream's getPortRanges (gce_loadbalancer_internal.go): sorted, runs of ports joined as `a-b`. */
export function upstreamPortRanges(ports: readonly number[]): string[] {
  const sorted = [...new Set(ports)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === (sorted[j] ?? 0) + 1) j++;
    out.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return out;
}

/** Upstream's makeFirewallDescription. */
const firewallDescription = (serviceName: string, ip: string) =>
  `{"kubernetes.io/service-name":"${serviceName}", "kubernetes.io/service-ip":"${ip}"}`;

export interface UpstreamExternalLb {
  /** Upstream's --cluster-name / cluster id. */
  readonly clusterId: string;
  /** `a` + the Service uid without dashes, 32 characters. */
  readonly lbName: string;
  /** namespace/name */
  readonly serviceName: string;
  readonly ports: readonly number[];
  readonly protocol?: "TCP" | "UDP";
  /** Instance ids `<zone>/<name>`. */
  readonly backends: readonly string[];
  /** The tags upstream's computeHostTags picks for the nodes. */
  readonly nodeTags: readonly string[];
  readonly sourceRanges?: readonly string[];
  readonly network?: string;
  /** externalTrafficPolicy Local: the Service's healthCheckNodePort (its own check and firewall). */
  readonly healthCheckNodePort?: number;
}

/** Builds it; answers the forwarding rule's IP. */
export function putUpstreamExternalLb(
  fake: GcpComputeFake,
  project: string,
  region: string,
  lb: UpstreamExternalLb,
): string {
  const base = `${GCE_BASE}projects/${project}`;
  const svc = JSON.stringify({ "kubernetes.io/service-name": lb.serviceName });
  const network = `${base}/global/networks/${lb.network ?? "default"}`;
  const local = lb.healthCheckNodePort !== undefined;
  const hcName = local ? lb.lbName : `k8s-${lb.clusterId}-node`;
  const hcPort = lb.healthCheckNodePort ?? 10256;
  const hcFwName = local ? `k8s-${lb.lbName}-http-hc` : `${hcName}-http-hc`;
  const ports = [...lb.ports].sort((a, b) => a - b);
  const protocol = lb.protocol ?? "TCP";
  // The IP the (released) address had: the rule's, allocated by the fake as an external one.
  const rule: Json = fake.put(project, `regions/${region}`, "forwardingRules", {
    name: lb.lbName,
    description: svc,
    IPProtocol: protocol,
    portRange: `${ports[0]}-${ports.at(-1)}`,
    target: `${base}/regions/${region}/targetPools/${lb.lbName}`,
    loadBalancingScheme: "EXTERNAL",
    networkTier: "PREMIUM",
  });
  const ip = String(rule.IPAddress);
  fake.put(project, "global", "firewalls", {
    name: `k8s-fw-${lb.lbName}`,
    description: firewallDescription(lb.serviceName, ip),
    network,
    sourceRanges: [...(lb.sourceRanges ?? ["0.0.0.0/0"])],
    destinationRanges: [ip],
    targetTags: [...lb.nodeTags],
    allowed: [{ IPProtocol: protocol.toLowerCase(), ports: upstreamPortRanges(ports) }],
    priority: FIREWALL_PRIORITY,
  });
  // makeHTTPHealthCheck: the description names the check (the Service's own: the lbName too).
  if (!fake.list(project, "httpHealthChecks").some((h) => h.name === hcName))
    fake.put(project, "global", "httpHealthChecks", {
      name: hcName,
      description: JSON.stringify({ "kubernetes.io/service-name": hcName }),
      port: hcPort,
      requestPath: "/healthz",
      checkIntervalSec: 8,
      timeoutSec: 1,
      healthyThreshold: 1,
      unhealthyThreshold: 3,
    });
  if (!fake.list(project, "firewalls").some((f) => f.name === hcFwName))
    fake.put(project, "global", "firewalls", {
      name: hcFwName,
      description: local
        ? firewallDescription(lb.serviceName, ip)
        : JSON.stringify({ "kubernetes.io/cluster-id": lb.clusterId }),
      network,
      sourceRanges: [...HEALTH_CHECK_RANGES],
      destinationRanges: [ip],
      targetTags: [...lb.nodeTags],
      allowed: [{ IPProtocol: "tcp", ports: [String(hcPort)] }],
      priority: FIREWALL_PRIORITY,
    });
  fake.put(project, `regions/${region}`, "targetPools", {
    name: lb.lbName,
    description: svc,
    instances: lb.backends.map((b) => {
      const [zone, name] = b.split("/");
      return `${base}/zones/${zone}/instances/${name}`;
    }),
    healthChecks: [`${base}/global/httpHealthChecks/${hcName}`],
    sessionAffinity: "NONE",
  });
  return ip;
}

export interface UpstreamInternalLb {
  readonly clusterId: string;
  readonly lbName: string;
  readonly serviceName: string;
  readonly ports: readonly number[];
  readonly protocol?: "TCP" | "UDP";
  /** Instance ids `<zone>/<name>`. */
  readonly backends: readonly string[];
  readonly nodeTags: readonly string[];
  readonly subnetwork?: string;
  readonly network?: string;
}

/**
 * The internal load balancer cloud-provider-gcp leaves (gce_loadbalancer_internal.go): the
 * groups `k8s-ig--<clusterid>` (no description) with the backends, the shared health check
 * `k8s-<clusterid>-node` and its firewall `k8s-<clusterid>-node-hc` (no descriptions), the
 * backend service and INTERNAL forwarding rule `<lbName>` and the firewall `k8s-fw-<lbName>` —
 * and no address (upstream holds one only while it changes the rule). Answers the rule's IP.
 */
export function putUpstreamInternalLb(
  fake: GcpComputeFake,
  project: string,
  region: string,
  lb: UpstreamInternalLb,
): string {
  const base = `${GCE_BASE}projects/${project}`;
  const svc = JSON.stringify({ "kubernetes.io/service-name": lb.serviceName });
  const network = `${base}/global/networks/${lb.network ?? "default"}`;
  const subnetwork = `${base}/regions/${region}/subnetworks/${lb.subnetwork ?? lb.network ?? "default"}`;
  const hcName = `k8s-${lb.clusterId}-node`;
  const igName = `k8s-ig--${lb.clusterId}`;
  const protocol = lb.protocol ?? "TCP";
  const ports = [...lb.ports].sort((a, b) => a - b).map(String);
  const zones = [...new Set(lb.backends.map((b) => b.split("/")[0] ?? ""))].sort();
  for (const zone of zones) {
    if (
      !fake
        .list(project, "instanceGroups")
        .some((g) => g.selfLink === `${base}/zones/${zone}/instanceGroups/${igName}`)
    )
      fake.put(project, `zones/${zone}`, "instanceGroups", { name: igName, network });
    fake.setGroupMembers(
      project,
      zone,
      igName,
      lb.backends.filter((b) => b.startsWith(`${zone}/`)),
    );
  }
  if (!fake.list(project, "healthChecks").some((h) => h.name === hcName))
    fake.put(project, "global", "healthChecks", {
      name: hcName,
      description: "",
      type: "HTTP",
      httpHealthCheck: { port: 10256, requestPath: "/healthz" },
      checkIntervalSec: 8,
      timeoutSec: 1,
      healthyThreshold: 1,
      unhealthyThreshold: 3,
    });
  if (!fake.list(project, "firewalls").some((f) => f.name === `${hcName}-hc`))
    fake.put(project, "global", "firewalls", {
      name: `${hcName}-hc`,
      description: "",
      network,
      sourceRanges: [...HEALTH_CHECK_RANGES],
      targetTags: [...lb.nodeTags],
      allowed: [{ IPProtocol: "tcp", ports: ["10256"] }],
    });
  fake.put(project, `regions/${region}`, "backendServices", {
    name: lb.lbName,
    description: svc,
    protocol,
    loadBalancingScheme: "INTERNAL",
    sessionAffinity: "NONE",
    healthChecks: [`${base}/global/healthChecks/${hcName}`],
    backends: zones.map((z) => ({ group: `${base}/zones/${z}/instanceGroups/${igName}` })),
  });
  const rule: Json = fake.put(project, `regions/${region}`, "forwardingRules", {
    name: lb.lbName,
    description: svc,
    IPProtocol: protocol,
    ports,
    loadBalancingScheme: "INTERNAL",
    backendService: `${base}/regions/${region}/backendServices/${lb.lbName}`,
    subnetwork,
    network,
  });
  const ip = String(rule.IPAddress);
  fake.put(project, "global", "firewalls", {
    name: `k8s-fw-${lb.lbName}`,
    description: firewallDescription(lb.serviceName, ip),
    network,
    sourceRanges: ["0.0.0.0/0"],
    destinationRanges: [ip],
    targetTags: [...lb.nodeTags],
    allowed: [{ IPProtocol: protocol.toLowerCase(), ports: upstreamPortRanges(lb.ports) }],
  });
  return ip;
}
