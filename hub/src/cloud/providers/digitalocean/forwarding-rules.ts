/**
 * A Service's ports as DigitalOcean forwarding rules, with upstream's meaning of the protocol
 * annotations: every port is `protocol` (tcp by default) unless http-ports, tls-ports or
 * http2-ports name it; a UDP port stays udp; a certificate (or TLS passthrough) without
 * tls-ports makes port 443 https; an https or http2 rule terminates TLS with the certificate
 * (target http) or passes it through (target = entry protocol); http3-port adds an HTTP/3 rule
 * beside the https or http2 rule of that port. Upstream's refusals that need no port (a TLS
 * port with neither a certificate nor passthrough, or both; HTTP/3 with passthrough or without a
 * certificate) are parseDoAnnotations'; an HTTP/3 port with no https or http2 rule is refused
 * here. All are AnnotationErrors before any write.
 *
 * A REGIONAL_NETWORK load balancer (pass-through) is upstream's buildRegionalNetworkForwardingRule
 * instead: one rule per Service port, tcp or udp, entry port = target port = the Service's port,
 * not the node port (traffic reaches the node as VIP:port, which kube-proxy's load-balancer-IP
 * rules take; VIP:nodePort matches none of them), whatever the protocol and TLS annotations say.
 */
import { AnnotationError } from "../../annotation-bounds.js";
import { CloudError } from "../../errors.js";
import type { LbListener } from "../../provider.js";
import { A, ANNOTATION_PREFIX, type DoLbSettings } from "./annotations.js";
import type { EntryProtocol, LbType, WireForwardingRule } from "./wire.js";

/** Upstream's default TLS port when a certificate or passthrough is set without tls-ports. */
export const DEFAULT_SECURE_PORT = 443;

const key = (k: string) => `${ANNOTATION_PREFIX}${k}`;

/**
 * The rules for `listeners` under `s`, TLS ones with `certificateId` (the certificate-id
 * annotation's, or the one certificate-name names; undefined: none).
 */
export function forwardingRules(
  listeners: readonly LbListener[],
  s: DoLbSettings,
  certificateId: string | undefined,
  type: LbType,
): WireForwardingRule[] {
  if (type === "REGIONAL_NETWORK") return networkForwardingRules(listeners);
  const cert = certificateId ?? "";
  const secure = cert !== "" || s.tlsPassthrough;
  const explicitTls = s.tlsPorts.size > 0;
  const tlsPorts =
    secure && !explicitTls && !s.http2Ports.has(DEFAULT_SECURE_PORT)
      ? new Set([DEFAULT_SECURE_PORT])
      : s.tlsPorts;
  const rules = listeners.map((l): WireForwardingRule => {
    if (l.protocol === "UDP")
      return { entry_protocol: "udp", entry_port: l.port, target_protocol: "udp", target_port: l.nodePort };
    if (l.protocol !== "TCP" && l.protocol !== "HTTP")
      throw new CloudError(
        `DigitalOcean: port ${l.port} is ${l.protocol}, which fleet-ccm's DigitalOcean provider does not build`,
      );
    let proto: EntryProtocol = s.protocol === "tcp" && l.protocol === "HTTP" ? "http" : s.protocol;
    if (s.httpPorts.has(l.port)) proto = "http";
    if (tlsPorts.has(l.port)) proto = "https";
    if (s.http2Ports.has(l.port)) proto = "http2";
    if (proto !== "https" && proto !== "http2")
      return { entry_protocol: proto, entry_port: l.port, target_protocol: proto, target_port: l.nodePort };
    // parseDoAnnotations refused a TLS port without a certificate or passthrough, and both.
    return s.tlsPassthrough
      ? {
          entry_protocol: proto,
          entry_port: l.port,
          target_protocol: proto,
          target_port: l.nodePort,
          tls_passthrough: true,
        }
      : {
          entry_protocol: proto,
          entry_port: l.port,
          target_protocol: "http",
          target_port: l.nodePort,
          certificate_id: cert,
        };
  });
  if (s.http3Port === undefined) return rules;
  const shared = rules.find(
    (r) => r.entry_port === s.http3Port && (r.entry_protocol === "https" || r.entry_protocol === "http2"),
  );
  // DigitalOcean serves HTTP/3 only on a port that also serves https or http2 (upstream leaves it
  // to the API's refusal; it is refused here before any write).
  if (shared === undefined)
    throw new AnnotationError(
      key(A.http3Port),
      String(s.http3Port),
      "one of the Service's https or http2 ports (tls-ports, http2-ports, or 443 with a certificate)",
      `port ${s.http3Port} is not one`,
    );
  return [
    ...rules,
    {
      entry_protocol: "http3",
      entry_port: s.http3Port,
      target_protocol: "http",
      target_port: shared.target_port,
      certificate_id: cert,
    },
  ];
}

/**
 * A REGIONAL_NETWORK load balancer's rules, as upstream's buildRegionalNetworkForwardingRule
 * (do/loadbalancers.go @70d527e): the Service's port to the same port, tcp for a TCP port (an
 * HTTP listener is a TCP port), udp for a UDP one; any other protocol is refused, as upstream's
 * "only TCP or UDP protocol is supported".
 */
export function networkForwardingRules(listeners: readonly LbListener[]): WireForwardingRule[] {
  return listeners.map((l): WireForwardingRule => {
    if (l.protocol === "SCTP" || l.protocol === "HTTPS")
      throw new CloudError(
        `DigitalOcean: port ${l.port} is ${l.protocol}; a REGIONAL_NETWORK load balancer forwards TCP or UDP only`,
      );
    const proto = l.protocol === "UDP" ? "udp" : "tcp";
    return { entry_protocol: proto, entry_port: l.port, target_protocol: proto, target_port: l.port };
  });
}
