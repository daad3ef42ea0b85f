/**
 * The Service annotations cloud-provider-azure reads (pkg/consts/consts.go,
 * `service.beta.kubernetes.io/azure-…`) that this provider honours, with upstream's meaning.
 */
import { parseNetwork } from "../../../util/network.js";
import { AnnotationError } from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";

export const AZURE_ANNOTATIONS = {
  internal: "service.beta.kubernetes.io/azure-load-balancer-internal",
  internalSubnet: "service.beta.kubernetes.io/azure-load-balancer-internal-subnet",
  pipName: "service.beta.kubernetes.io/azure-pip-name",
  ipv4: "service.beta.kubernetes.io/azure-load-balancer-ipv4",
  dnsLabelName: "service.beta.kubernetes.io/azure-dns-label-name",
  probeProtocol: "service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol",
  probePath: "service.beta.kubernetes.io/azure-load-balancer-health-probe-request-path",
  resourceGroup: "service.beta.kubernetes.io/azure-load-balancer-resource-group",
  tcpIdleTimeout: "service.beta.kubernetes.io/azure-load-balancer-tcp-idle-timeout",
  disableFloatingIp: "service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip",
  allowedServiceTags: "service.beta.kubernetes.io/azure-allowed-service-tags",
  allowedIpRanges: "service.beta.kubernetes.io/azure-allowed-ip-ranges",
  denyAllExceptSourceRanges: "service.beta.kubernetes.io/azure-deny-all-except-load-balancer-source-ranges",
} as const;

type A = Readonly<Record<string, string>>;

export interface AzureLbAnnotations {
  readonly internalSubnet: string | undefined;
  readonly pipName: string | undefined;
  readonly ipv4: string | undefined;
  readonly dnsLabelName: string | undefined;
  /** The public IP's resource group (upstream: the PIP's, not the load balancer's). */
  readonly pipResourceGroup: string | undefined;
  readonly floatingIp: boolean;
  readonly serviceTags: readonly string[];
  /** NSG sources as loadBalancerSourceRanges (upstream's AllowedIPRanges); refused beside them. */
  readonly allowedIpRanges: readonly string[];
  /** A Deny of every other source to the Service's destinations, when ranges are set (DenyAllExceptSourceRanges). */
  readonly denyAllExceptSourceRanges: boolean;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

export function readAzureAnnotations(a: A): AzureLbAnnotations {
  const ipv4 = a[AZURE_ANNOTATIONS.ipv4];
  if (ipv4 !== undefined && !IPV4.test(ipv4))
    throw new AnnotationError(AZURE_ANNOTATIONS.ipv4, ipv4, "an IPv4 address");
  const tags = list(a[AZURE_ANNOTATIONS.allowedServiceTags]);
  const ranges = list(a[AZURE_ANNOTATIONS.allowedIpRanges]);
  // Upstream warns and denies everything else on an invalid range; here the Service is refused.
  for (const r of ranges)
    if (parseNetwork(r) === undefined)
      throw new AnnotationError(AZURE_ANNOTATIONS.allowedIpRanges, r, "CIDRs such as 203.0.113.0/24");
  return {
    internalSubnet: a[AZURE_ANNOTATIONS.internalSubnet] || undefined,
    pipName: a[AZURE_ANNOTATIONS.pipName] || undefined,
    ipv4,
    dnsLabelName: a[AZURE_ANNOTATIONS.dnsLabelName] || undefined,
    pipResourceGroup: a[AZURE_ANNOTATIONS.resourceGroup] || undefined,
    floatingIp: a[AZURE_ANNOTATIONS.disableFloatingIp] !== "true",
    serviceTags: tags,
    allowedIpRanges: ranges,
    denyAllExceptSourceRanges: a[AZURE_ANNOTATIONS.denyAllExceptSourceRanges]?.toLowerCase() === "true",
  };
}

/** A comma-separated annotation's entries, trimmed, empty ones left out. */
function list(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
}

/** The factory's lbSettings: internal, the probe's protocol and path, the TCP idle timeout (minutes, 4-100). */
export function azureLbSettings(a: A): VendorLbSettings {
  const out: { -readonly [K in keyof VendorLbSettings]: VendorLbSettings[K] } = {};
  if (a[AZURE_ANNOTATIONS.internal] === "true") out.internal = true;
  const protocol = a[AZURE_ANNOTATIONS.probeProtocol];
  if (protocol !== undefined) {
    const p = protocol.toLowerCase();
    if (p === "tcp") out.healthCheckProtocol = "TCP";
    else if (p === "http" || p === "https") out.healthCheckProtocol = "HTTP";
    else throw new AnnotationError(AZURE_ANNOTATIONS.probeProtocol, protocol, "Tcp, Http or Https");
  }
  const path = a[AZURE_ANNOTATIONS.probePath];
  if (path !== undefined) {
    if (!path.startsWith("/"))
      throw new AnnotationError(AZURE_ANNOTATIONS.probePath, path, "a path starting with /");
    out.healthCheckPath = path;
    out.healthCheckProtocol ??= "HTTP";
  }
  const idle = a[AZURE_ANNOTATIONS.tcpIdleTimeout];
  if (idle !== undefined) {
    const minutes = Number(idle);
    if (!Number.isInteger(minutes) || minutes < 4 || minutes > 100)
      throw new AnnotationError(AZURE_ANNOTATIONS.tcpIdleTimeout, idle, "whole minutes from 4 to 100");
    out.idleTimeoutSeconds = minutes * 60;
  }
  return out;
}
