import http from "node:http";
import https from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

type AgentFactory = (cluster: unknown, options: Record<string, unknown>) => http.Agent;

/**
 * client-node 1.4 builds a new HTTP(S) agent for every request, so every patch and Event opens
 * a new TCP connection (and a TLS handshake) to the API server. This gives the KubeConfig one
 * keep-alive agent per distinct connection setting instead; a new setting (rotated client
 * certificate, another CA) gets a new agent and the old one is closed.
 */
export function withConnectionReuse(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as { createAgent: AgentFactory };
  const original = target.createAgent.bind(kc);
  let current: { key: unknown[]; agent: http.Agent } | undefined;
  target.createAgent = (cluster, options) => {
    const c = cluster as { server?: string; proxyUrl?: string } | null;
    // Proxied connections keep client-node's own agents.
    if (c?.proxyUrl) return original(cluster, options);
    // Compared field by field on every request (no hashing of certificates on this hot path).
    const key = [
      c?.server,
      options["rejectUnauthorized"],
      options["servername"],
      options["ca"],
      options["cert"],
      options["key"],
    ];
    if (current !== undefined && key.every((v, i) => sameSetting(v, current?.key[i]))) return current.agent;
    current?.agent.destroy();
    const agentOptions = { ...options, keepAlive: true, keepAliveMsecs: 30_000, maxFreeSockets: 16 };
    const agent = c?.server?.startsWith("http:")
      ? new http.Agent(agentOptions)
      : new https.Agent(agentOptions);
    // The original also refuses plain HTTP without skipTLSVerify; keep that check.
    original(cluster, options);
    current = { key, agent };
    return agent;
  };
  return kc;
}

/** Strings compare by value; certificates and keys read from files arrive as new Buffers each time. */
function sameSetting(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => sameSetting(v, b[i]));
  return a === b;
}
