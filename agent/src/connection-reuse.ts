import { createHash } from "node:crypto";
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
  let current: { key: string; agent: http.Agent } | undefined;
  target.createAgent = (cluster, options) => {
    const c = cluster as { server?: string; proxyUrl?: string } | null;
    // Proxied connections keep client-node's own agents.
    if (c?.proxyUrl) return original(cluster, options);
    const key = createHash("sha256")
      .update(JSON.stringify([c?.server, options["rejectUnauthorized"], options["servername"]]))
      .update(String(options["ca"] ?? ""))
      .update(String(options["cert"] ?? ""))
      .update(String(options["key"] ?? ""))
      .digest("hex");
    if (current?.key === key) return current.agent;
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
