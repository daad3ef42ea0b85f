/**
 * The service.beta.kubernetes.io/aws-load-balancer-* annotations only AWS has (the type,
 * certificates, subnets, security groups, tags, Elastic IPs, target group attributes), with
 * cloud-provider-aws's meaning. Those that stand for unified settings (health check, idle
 * timeout, proxy protocol, internal) are read by the hub (reconcilers/service/annotations.ts)
 * and arrive in the LoadBalancerSpec.
 */
import { CloudError } from "../../errors.js";
import type { LoadBalancerCapabilities } from "../../provider.js";

export const AWS_ANNOTATION_PREFIX = "service.beta.kubernetes.io/aws-load-balancer-";

/** Classic ELBs and NLBs together: UDP only on an NLB, proxy protocol on both, no session affinity (as upstream). */
export const AWS_LB_CAPABILITIES: LoadBalancerCapabilities = {
  sessionAffinity: false,
  proxyProtocol: true,
  internal: true,
  protocols: ["TCP", "UDP", "HTTP", "HTTPS"],
};

export const AWS_ANNOTATIONS = {
  type: `${AWS_ANNOTATION_PREFIX}type`,
  sslCert: `${AWS_ANNOTATION_PREFIX}ssl-cert`,
  sslPorts: `${AWS_ANNOTATION_PREFIX}ssl-ports`,
  backendProtocol: `${AWS_ANNOTATION_PREFIX}backend-protocol`,
  healthCheckPort: `${AWS_ANNOTATION_PREFIX}healthcheck-port`,
  subnets: `${AWS_ANNOTATION_PREFIX}subnets`,
  securityGroups: `${AWS_ANNOTATION_PREFIX}security-groups`,
  extraSecurityGroups: `${AWS_ANNOTATION_PREFIX}extra-security-groups`,
  additionalTags: `${AWS_ANNOTATION_PREFIX}additional-resource-tags`,
  eipAllocations: `${AWS_ANNOTATION_PREFIX}eip-allocations`,
  targetGroupAttributes: `${AWS_ANNOTATION_PREFIX}target-group-attributes`,
  crossZone: `${AWS_ANNOTATION_PREFIX}cross-zone-load-balancing-enabled`,
} as const;

export type AwsLbType = "classic" | "nlb" | "external";

export interface AwsLbSettings {
  readonly type: AwsLbType;
  /** ACM/IAM certificate ARN for TLS (NLB) / SSL and HTTPS (classic) listeners. */
  readonly sslCert?: string;
  /** Service ports (numbers or names) that terminate TLS; undefined = every port ("*"). */
  readonly sslPorts?: ReadonlySet<string>;
  /** classic: the instance protocol behind the listener. */
  readonly backendProtocol?: "http" | "https" | "ssl" | "tcp";
  /** "traffic-port" or a port number. */
  readonly healthCheckPort?: string;
  readonly subnets?: readonly string[];
  /** Replaces the managed security group (upstream: then none is created). */
  readonly securityGroups?: readonly string[];
  readonly extraSecurityGroups: readonly string[];
  readonly additionalTags: Readonly<Record<string, string>>;
  readonly eipAllocations?: readonly string[];
  readonly targetGroupAttributes: Readonly<Record<string, string>>;
  readonly crossZone?: boolean;
}

const list = (v: string | undefined): string[] | undefined =>
  v === undefined
    ? undefined
    : v
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");

function pairs(key: string, v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of list(v) ?? []) {
    const eq = p.indexOf("=");
    if (eq <= 0) throw new CloudError(`annotation ${key}: "${p}" is not key=value`);
    out[p.slice(0, eq).trim()] = p.slice(eq + 1).trim();
  }
  return out;
}

function ids(key: string, v: string | undefined, prefix: string): string[] | undefined {
  const out = list(v);
  for (const id of out ?? [])
    if (!id.startsWith(prefix)) throw new CloudError(`annotation ${key}: "${id}" is not a ${prefix}… id`);
  return out;
}

/** Throws CloudError naming the annotation and what it takes. */
export function parseAwsLbAnnotations(
  a: Readonly<Record<string, string>>,
  defaultType: "classic" | "nlb",
): AwsLbSettings {
  const typeRaw = a[AWS_ANNOTATIONS.type];
  let type: AwsLbType = defaultType;
  if (typeRaw === "nlb") type = "nlb";
  else if (typeRaw === "external" || typeRaw === "nlb-ip") type = "external";
  else if (typeRaw === "clb" || typeRaw === "elb" || typeRaw === "classic") type = "classic";
  else if (typeRaw !== undefined && typeRaw !== "")
    throw new CloudError(`annotation ${AWS_ANNOTATIONS.type}: "${typeRaw}" is not nlb or external`);
  const backend = a[AWS_ANNOTATIONS.backendProtocol];
  if (backend !== undefined && !["http", "https", "ssl", "tcp"].includes(backend))
    throw new CloudError(
      `annotation ${AWS_ANNOTATIONS.backendProtocol}: "${backend}" is not http, https, ssl or tcp`,
    );
  const hcPort = a[AWS_ANNOTATIONS.healthCheckPort];
  if (hcPort !== undefined && hcPort !== "traffic-port" && !/^\d{1,5}$/.test(hcPort))
    throw new CloudError(
      `annotation ${AWS_ANNOTATIONS.healthCheckPort}: "${hcPort}" is not traffic-port or a port`,
    );
  const cross = a[AWS_ANNOTATIONS.crossZone];
  if (cross !== undefined && cross !== "true" && cross !== "false")
    throw new CloudError(`annotation ${AWS_ANNOTATIONS.crossZone}: "${cross}" is not true or false`);
  const sslPorts = list(a[AWS_ANNOTATIONS.sslPorts]);
  const sslCert = a[AWS_ANNOTATIONS.sslCert];
  const subnets = ids(AWS_ANNOTATIONS.subnets, a[AWS_ANNOTATIONS.subnets], "subnet-");
  const securityGroups = ids(AWS_ANNOTATIONS.securityGroups, a[AWS_ANNOTATIONS.securityGroups], "sg-");
  const eips = ids(AWS_ANNOTATIONS.eipAllocations, a[AWS_ANNOTATIONS.eipAllocations], "eipalloc-");
  return {
    type,
    ...(sslCert !== undefined && sslCert !== "" && { sslCert }),
    ...(sslPorts !== undefined && !sslPorts.includes("*") && { sslPorts: new Set(sslPorts) }),
    ...(backend !== undefined && { backendProtocol: backend as AwsLbSettings["backendProtocol"] & string }),
    ...(hcPort !== undefined && { healthCheckPort: hcPort }),
    ...(subnets !== undefined && { subnets }),
    ...(securityGroups !== undefined && { securityGroups }),
    extraSecurityGroups:
      ids(AWS_ANNOTATIONS.extraSecurityGroups, a[AWS_ANNOTATIONS.extraSecurityGroups], "sg-") ?? [],
    additionalTags: pairs(AWS_ANNOTATIONS.additionalTags, a[AWS_ANNOTATIONS.additionalTags]),
    ...(eips !== undefined && { eipAllocations: eips }),
    targetGroupAttributes: pairs(
      AWS_ANNOTATIONS.targetGroupAttributes,
      a[AWS_ANNOTATIONS.targetGroupAttributes],
    ),
    ...(cross !== undefined && { crossZone: cross === "true" }),
  };
}

/** Whether a Service port terminates TLS under these settings (ssl-cert set; the port listed by number or name, or every port). */
export function isSslPort(s: AwsLbSettings, port: number, name?: string): boolean {
  if (s.sslCert === undefined) return false;
  return (
    s.sslPorts === undefined || s.sslPorts.has(String(port)) || (name !== undefined && s.sslPorts.has(name))
  );
}
