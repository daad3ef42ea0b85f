// The fleet process: one simulated Kubernetes API server per cluster and the agents of every
// cluster but the one whose agent runs on its own through the CLI. Forked by the benchmark
// (bench/main.ts) and driven over the IPC channel; it never talks to the hub except through
// the agents, exactly like real clusters.

import { Agent } from "@fleet-ccm/agent";
import { type KubeApiServer, type KubeObject, kubeletNode, startKubeApiServer } from "@fleet-ccm/sim";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { type IpcHandlers, serveIpc } from "./ipc.js";
import type { ServiceSpecRef, WorkerApi } from "./protocol.js";

const kube = new Map<string, KubeApiServer>();
const agents = new Map<string, Agent>();

function server(cluster: string): KubeApiServer {
  const k = kube.get(cluster);
  if (k === undefined) throw new Error(`no cluster ${cluster}`);
  return k;
}

function serviceObject(ref: ServiceSpecRef, index: number): KubeObject {
  const lb = ref.loadBalancer ?? true;
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: ref.name,
      namespace: "default",
      labels: { app: ref.name },
      annotations: { "bench.fleet-ccm.io/variant": String(ref.variant) },
    },
    spec: {
      type: lb ? "LoadBalancer" : "ClusterIP",
      selector: { app: ref.name },
      ports: [
        { name: "http", protocol: "TCP", port: 80 + (ref.variant % 100), targetPort: 8080 + (index % 10) },
      ],
    },
  };
}

const handlers: IpcHandlers<WorkerApi> = {
  async init({ clusters, watchHistory }) {
    const out: Record<string, { url: string; kubeconfig: string }> = {};
    // A few at a time: each is an HTTP server; 200 at once is fine, but keep the start orderly.
    for (let i = 0; i < clusters.length; i += 20) {
      await Promise.all(
        clusters.slice(i, i + 20).map(async (c) => {
          // As kube-apiserver --service-node-port-range=30000-44999: the default range (2,768 ports)
          // cannot hold one cluster's 5,000 LoadBalancer Services.
          const k = await startKubeApiServer({
            watchHistory,
            name: c,
            serviceNodePortRange: { min: 30000, max: 44999 },
          });
          kube.set(c, k);
          out[c] = { url: k.url, kubeconfig: k.kubeconfigYaml() };
        }),
      );
    }
    return { kube: out };
  },

  async startAgents({ hubAddress, natsUrl, agents: creds, logLevel }) {
    const logger = pino({ level: logLevel }, pino.destination(2));
    await Promise.all(
      creds.map(async (c) => {
        const kc = new KubeConfig();
        kc.loadFromOptions(server(c.cluster).kubeConfigOptions());
        const agent = new Agent({
          cluster: c.cluster,
          kubeConfig: kc,
          hub: { address: hubAddress, token: c.token, insecure: true },
          nats: { servers: [natsUrl], user: `agent-${c.cluster}`, password: c.natsPassword },
          logger: logger.child({ component: "agent", cluster: c.cluster }),
          countBytes: true,
        });
        await agent.start();
        agents.set(c.cluster, agent);
      }),
    );
    return { started: agents.size };
  },

  async stopAgents() {
    const n = agents.size;
    await Promise.all([...agents.values()].map((a) => a.stop()));
    agents.clear();
    return { stopped: n };
  },

  async createNodes({ nodes, ready }) {
    const createdAt: [string, number][] = [];
    for (const n of nodes) {
      const t = Date.now();
      server(n.cluster).create("Node", kubeletNode(n.name, { ready: ready ?? true }));
      createdAt.push([`${n.cluster}/${n.name}`, t]);
    }
    return { createdAt };
  },

  async deleteNodes({ nodes }) {
    let deleted = 0;
    for (const n of nodes) {
      const k = server(n.cluster);
      if (k.get("Node", undefined, n.name) === undefined) continue;
      k.delete("Node", undefined, n.name);
      deleted++;
    }
    return { deleted };
  },

  async setReady({ nodes, ready }) {
    let changed = 0;
    for (const n of nodes) {
      const k = server(n.cluster);
      const cur = k.get("Node", undefined, n.name);
      if (cur === undefined) continue;
      const obj = structuredClone(cur);
      const status = (obj["status"] ?? {}) as { conditions?: Record<string, unknown>[] };
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      const ready_ = {
        type: "Ready",
        status: ready ? "True" : "False",
        reason: ready ? "KubeletReady" : "NodeStatusUnknown",
        message: ready ? "kubelet is posting ready status" : "Kubelet stopped posting node status.",
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      };
      status.conditions = [...(status.conditions ?? []).filter((c) => c["type"] !== "Ready"), ready_];
      obj["status"] = status;
      k.updateStatus("Node", obj);
      changed++;
    }
    return { changed };
  },

  async upsertServices({ services }) {
    const createdAt: [string, number][] = [];
    services.forEach((ref, i) => {
      const k = server(ref.cluster);
      const cur = k.get("Service", "default", ref.name);
      const t = Date.now();
      if (cur === undefined) {
        k.create("Service", serviceObject(ref, ref.index ?? i));
      } else {
        const obj = structuredClone(cur);
        const want = serviceObject(ref, ref.index ?? i);
        const meta = obj.metadata ?? {};
        meta.annotations = { ...(meta.annotations ?? {}), ...(want.metadata?.annotations ?? {}) };
        const spec = (obj["spec"] ?? {}) as { ports?: Record<string, unknown>[] };
        const port = spec.ports?.[0];
        if (port !== undefined) port["port"] = 80 + (ref.variant % 100);
        k.update("Service", obj);
      }
      createdAt.push([`${ref.cluster}/default/${ref.name}`, t]);
    });
    return { createdAt };
  },

  async deleteServices({ services }) {
    let deleted = 0;
    for (const s of services) {
      const k = server(s.cluster);
      if (k.get("Service", "default", s.name) === undefined) continue;
      k.delete("Service", "default", s.name);
      deleted++;
    }
    return { deleted };
  },

  async listNodes() {
    const nodes: Record<string, string[]> = {};
    let tainted = 0;
    for (const [c, k] of kube) {
      const list = k.list("Node") as {
        metadata?: { name?: string };
        spec?: { taints?: { key?: string }[] };
      }[];
      nodes[c] = list.map((n) => n.metadata?.name ?? "");
      for (const n of list)
        if ((n.spec?.taints ?? []).some((t) => t.key === "node.cloudprovider.kubernetes.io/uninitialized"))
          tainted++;
    }
    return { nodes, tainted };
  },

  async stats() {
    let agentHubBytes = 0;
    let agentHubDeltas = 0;
    let agentNatsBytes = 0;
    let agentsConnected = 0;
    for (const a of agents.values()) {
      agentHubBytes += a.hubBytesSent;
      agentHubDeltas += a.hubDeltasSent;
      agentNatsBytes += a.natsBytesReceived;
      if (a.connectedToHub) agentsConnected++;
    }
    let kubeRequests = 0;
    for (const k of kube.values()) kubeRequests += k.requestCount();
    return {
      pid: process.pid,
      agents: agents.size,
      agentHubBytes,
      agentHubDeltas,
      agentNatsBytes,
      agentsConnected,
      kubeRequests,
    };
  },

  async stop() {
    await Promise.all([...agents.values()].map((a) => a.stop()));
    agents.clear();
    await Promise.all([...kube.values()].map((k) => k.close()));
    kube.clear();
    return { ok: true };
  },
};

serveIpc(handlers);
