/**
 * The service.beta.kubernetes.io/aws-load-balancer-* annotations only AWS has (the type,
 * certificates, subnets, security groups, tags, Elastic IPs, target group attributes), with
 * cloud-provider-aws's meaning. Those that stand for unified settings (health check, idle
 * timeout, proxy protocol, internal) are read by the hub (reconcilers/service/annotations.ts)
 * and arrive in the LoadBalancerSpec.
 */
import {
  AnnotationError,
  GO_BOOLEAN,
  type LengthBound,
  length,
  oneOf,
  parseBoolean,
  parseEnum,
  parseLength,
  range,
  type SettingBounds,
} from "../../annotation-bounds.js";
import type { LbQuota, LoadBalancerCapabilities } from "../../provider.js";

export const AWS_ANNOTATION_PREFIX = "service.beta.kubernetes.io/aws-load-balancer-";

/**
 * What AWS takes for the unified settings, from the botocore models (elb-2012-06-01,
 * elbv2-2015-12-01): where the two kinds differ, the classic ELB's (its default kind), so one
 * range holds for both and a change of type never makes a valid Service invalid.
 */
export const AWS_SETTING_BOUNDS = {
  // ELB HealthCheck.Target "HTTP:<port><path>" is at most 1024 characters: 1014 for the path
  // after "HTTP:65535" (ELBv2's HealthCheckPath takes 1024).
  healthCheckPath: length(1014),
  // ELB HealthCheckInterval 5..300; ELBv2 HealthCheckIntervalSeconds 5..300.
  healthCheckIntervalSeconds: range(5, 300, "seconds"),
  // ELB HealthCheckTimeout 2..60 (ELBv2 HealthCheckTimeoutSeconds 2..120).
  healthCheckTimeoutSeconds: range(2, 60, "seconds"),
  // ELB HealthyThreshold/UnhealthyThreshold 2..10; ELBv2 HealthCheckThresholdCount 2..10.
  healthyThreshold: range(2, 10),
  unhealthyThreshold: range(2, 10),
  // ELB ConnectionSettings.IdleTimeout 1..3600.
  idleTimeoutSeconds: range(1, 3600, "seconds"),
} as const satisfies SettingBounds;

/** cloud-provider-aws's healthcheck-protocol values (ELB HealthCheck.Target protocols). */
export const AWS_HEALTH_CHECK_PROTOCOLS = oneOf(["TCP", "HTTP", "HTTPS", "SSL"] as const);
/** ELB/ELBv2 Scheme. */
export const AWS_SCHEMES = oneOf(["internal", "internet-facing"] as const);

/**
 * AWS's default quotas a Service can exceed by itself ("Quotas for your Classic Load
 * Balancers", "Quotas for your Network Load Balancers", "Amazon VPC quotas"): one listener per
 * port; on the managed security group (none when `security-groups` names the groups) one
 * inbound rule per listener and source range (classic ELB: plus upstream's ICMP path-MTU rule
 * per range); 5 security groups per load balancer.
 */
export function awsLbQuotas(
  s: Pick<AwsLbSettings, "type" | "securityGroups" | "extraSecurityGroups">,
): LbQuota[] {
  const classic = s.type === "classic";
  const groups = new Set([...(s.securityGroups ?? ["managed"]), ...s.extraSecurityGroups]);
  return [
    classic
      ? { name: "listeners per Classic Load Balancer", limit: 100, counts: "listeners" }
      : { name: "listeners per Network Load Balancer", limit: 50, counts: "listeners" },
    ...(s.securityGroups === undefined
      ? [
          {
            name: "inbound rules per security group",
            limit: 60,
            counts: "sourceRules",
            ...(classic && { extraRulesPerSource: 1 }),
          } as const,
        ]
      : []),
    {
      name: `security groups per ${classic ? "Classic" : "Network"} Load Balancer`,
      limit: 5,
      counts: "annotations",
      used: groups.size,
    },
  ];
}

/**
 * Classic ELBs and NLBs together: UDP only on an NLB, proxy protocol on both, no session
 * affinity (as upstream); the quotas of the kind the Service's annotations (or the account's
 * default kind) select.
 */
export function awsLbCapabilities(defaultType: "classic" | "nlb"): LoadBalancerCapabilities {
  return {
    sessionAffinity: false,
    proxyProtocol: true,
    internal: true,
    protocols: ["TCP", "UDP", "HTTP", "HTTPS"],
    settingBounds: AWS_SETTING_BOUNDS,
    quotas: (annotations) => {
      try {
        return awsLbQuotas(parseAwsLbAnnotations(annotations, defaultType));
      } catch {
        // checkAnnotations refuses the Service on its own.
        return [];
      }
    },
  };
}

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

/** ELB/ELBv2 TagKey 1..128 and TagValue 0..256 characters of letters, digits, spaces and _ . : / = + - @. */
const TAG_KEY = length(
  128,
  { pattern: /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u, form: "letters, digits, spaces and _ . : / = + - @" },
  1,
);
const TAG_VALUE = length(256, {
  pattern: /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u,
  form: "letters, digits, spaces and _ . : / = + - @",
});
/** ELBv2 TargetGroupAttributeKey: at most 256 of [a-zA-Z0-9._]. */
const ATTRIBUTE_KEY = length(256, { pattern: /^[a-zA-Z0-9._]+$/, form: "letters, digits, . and _" }, 1);
/** AWS allows 50 tags per resource (ELB AddTags); cloud-provider-aws adds its two. */
const MAX_EXTRA_TAGS = 48;

/** `key=value` pairs, each key (and value) within its bound; errors name the annotation. */
function pairs(
  key: string,
  v: string | undefined,
  keyBound: LengthBound,
  valueBound?: LengthBound,
  max?: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  const items = list(v) ?? [];
  const raw = v ?? "";
  if (max !== undefined && items.length > max)
    throw new AnnotationError(key, raw, `at most ${max} key=value pairs`, `${items.length} pairs`);
  const check = (what: string, s: string, b: LengthBound) => {
    try {
      parseLength(key, s, b);
    } catch (err) {
      if (!(err instanceof AnnotationError)) throw err;
      throw new AnnotationError(key, raw, `${what} of ${err.expected}`, err.problem);
    }
  };
  for (const p of items) {
    const eq = p.indexOf("=");
    if (eq <= 0) throw new AnnotationError(key, raw, "comma-separated key=value pairs");
    const k = p.slice(0, eq).trim();
    const value = p.slice(eq + 1).trim();
    check("keys", k, keyBound);
    if (valueBound !== undefined) check("values", value, valueBound);
    out[k] = value;
  }
  return out;
}

function ids(key: string, v: string | undefined, prefix: string): string[] | undefined {
  const out = list(v);
  for (const id of out ?? [])
    if (!id.startsWith(prefix))
      throw new AnnotationError(
        key,
        v ?? "",
        `comma-separated ${prefix}… ids`,
        `"${id.slice(0, 64)}" is not one`,
      );
  return out;
}

/** cloud-provider-aws's type values: nlb, external (nlb-ip), the classic ELB by any of its names. */
const TYPES = oneOf(["nlb", "external", "nlb-ip", "clb", "elb", "classic"] as const, true);
/** The classic ELB's InstanceProtocol. */
const BACKEND_PROTOCOLS = oneOf(["http", "https", "ssl", "tcp"] as const, true);
/** ELB ListenerPort / ELBv2 HealthCheckPort: "traffic-port" or 1..65535. */
const HEALTH_CHECK_PORT = length(12, {
  pattern: /^(traffic-port|[1-9]\d{0,4})$/,
  form: "traffic-port or a port",
});
/** ACM/IAM certificate ARNs (ELB SSLCertificateId; ACM's Arn is at most 2048 characters). */
const CERT_ARN = length(2048, { pattern: /^arn:[a-z-]+:(acm|iam):/, form: "an ACM or IAM certificate ARN" });

/** Throws AnnotationError naming the annotation and what it takes; makes no call. */
export function parseAwsLbAnnotations(
  a: Readonly<Record<string, string>>,
  defaultType: "classic" | "nlb",
): AwsLbSettings {
  const typeRaw = a[AWS_ANNOTATIONS.type];
  let type: AwsLbType = defaultType;
  if (typeRaw !== undefined && typeRaw !== "") {
    const t = parseEnum(AWS_ANNOTATIONS.type, typeRaw, TYPES);
    type = t === "nlb" ? "nlb" : t === "external" || t === "nlb-ip" ? "external" : "classic";
  }
  const backendRaw = a[AWS_ANNOTATIONS.backendProtocol];
  const backend =
    backendRaw === undefined
      ? undefined
      : parseEnum(AWS_ANNOTATIONS.backendProtocol, backendRaw, BACKEND_PROTOCOLS);
  const hcPort = a[AWS_ANNOTATIONS.healthCheckPort];
  if (hcPort !== undefined) {
    parseLength(AWS_ANNOTATIONS.healthCheckPort, hcPort, HEALTH_CHECK_PORT);
    if (hcPort !== "traffic-port" && Number(hcPort) > 65535)
      throw new AnnotationError(
        AWS_ANNOTATIONS.healthCheckPort,
        hcPort,
        "traffic-port or a port from 1 to 65535",
      );
  }
  const crossRaw = a[AWS_ANNOTATIONS.crossZone];
  // Upstream reads it with Go's strconv.ParseBool.
  const cross =
    crossRaw === undefined ? undefined : parseBoolean(AWS_ANNOTATIONS.crossZone, crossRaw, GO_BOOLEAN);
  const sslPorts = list(a[AWS_ANNOTATIONS.sslPorts]);
  const sslCert = a[AWS_ANNOTATIONS.sslCert];
  if (sslCert !== undefined && sslCert !== "") parseLength(AWS_ANNOTATIONS.sslCert, sslCert, CERT_ARN);
  const subnets = ids(AWS_ANNOTATIONS.subnets, a[AWS_ANNOTATIONS.subnets], "subnet-");
  const securityGroups = ids(AWS_ANNOTATIONS.securityGroups, a[AWS_ANNOTATIONS.securityGroups], "sg-");
  const eips = ids(AWS_ANNOTATIONS.eipAllocations, a[AWS_ANNOTATIONS.eipAllocations], "eipalloc-");
  return {
    type,
    ...(sslCert !== undefined && sslCert !== "" && { sslCert }),
    ...(sslPorts !== undefined && !sslPorts.includes("*") && { sslPorts: new Set(sslPorts) }),
    ...(backend !== undefined && { backendProtocol: backend }),
    ...(hcPort !== undefined && { healthCheckPort: hcPort }),
    ...(subnets !== undefined && { subnets }),
    ...(securityGroups !== undefined && { securityGroups }),
    extraSecurityGroups:
      ids(AWS_ANNOTATIONS.extraSecurityGroups, a[AWS_ANNOTATIONS.extraSecurityGroups], "sg-") ?? [],
    additionalTags: pairs(
      AWS_ANNOTATIONS.additionalTags,
      a[AWS_ANNOTATIONS.additionalTags],
      TAG_KEY,
      TAG_VALUE,
      MAX_EXTRA_TAGS,
    ),
    ...(eips !== undefined && { eipAllocations: eips }),
    targetGroupAttributes: pairs(
      AWS_ANNOTATIONS.targetGroupAttributes,
      a[AWS_ANNOTATIONS.targetGroupAttributes],
      ATTRIBUTE_KEY,
    ),
    ...(cross !== undefined && { crossZone: cross }),
  };
}

/** Whether a Service port terminates TLS under these settings (ssl-cert set; the port listed by number or name, or every port). */
export function isSslPort(s: AwsLbSettings, port: number, name?: string): boolean {
  if (s.sslCert === undefined) return false;
  return (
    s.sslPorts === undefined || s.sslPorts.has(String(port)) || (name !== undefined && s.sslPorts.has(name))
  );
}
