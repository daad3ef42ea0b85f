// Requests the benchmark sends to its fleet worker process over the Node IPC channel, and their answers.

export interface AgentCredentials {
  readonly cluster: string;
  readonly token: string;
  readonly natsPassword: string;
}

export interface NodeRef {
  readonly cluster: string;
  readonly name: string;
}

export interface ServiceSpecRef {
  readonly cluster: string;
  readonly name: string;
  /** Changes the Service's spec: variant 0 is the original; others change a port and an annotation. */
  readonly variant: number;
  /** Default true: type LoadBalancer (else ClusterIP). */
  readonly loadBalancer?: boolean;
  /** Its position in the caller's whole list (targetPort 8080 + index % 10); default: in this request's. */
  readonly index?: number;
}

export interface WorkerStats {
  readonly pid: number;
  readonly agents: number;
  /** Protobuf bytes the in-process agents wrote on their hub streams (countBytes). */
  readonly agentHubBytes: number;
  /** Deltas the in-process agents wrote on their hub streams. */
  readonly agentHubDeltas: number;
  /** NATS payload bytes the in-process agents received. */
  readonly agentNatsBytes: number;
  readonly agentsConnected: number;
  readonly kubeRequests: number;
}

export interface WorkerApi {
  init: {
    req: { clusters: readonly string[]; watchHistory: number };
    res: { kube: Record<string, { url: string; kubeconfig: string }> };
  };
  startAgents: {
    req: {
      hubAddress: string;
      natsUrl: string;
      agents: readonly AgentCredentials[];
      logLevel: string;
    };
    res: { started: number };
  };
  stopAgents: { req: Record<string, never>; res: { stopped: number } };
  /** Registers nodes as kubelet does; answers each node's creation time (epoch ms). */
  createNodes: {
    req: { nodes: readonly NodeRef[]; ready?: boolean };
    res: { createdAt: [string, number][] };
  };
  deleteNodes: { req: { nodes: readonly NodeRef[] }; res: { deleted: number } };
  setReady: { req: { nodes: readonly NodeRef[]; ready: boolean }; res: { changed: number } };
  upsertServices: { req: { services: readonly ServiceSpecRef[] }; res: { createdAt: [string, number][] } };
  deleteServices: { req: { services: readonly NodeRef[] }; res: { deleted: number } };
  /** Node names per cluster, and how many still carry the uninitialized taint. */
  listNodes: { req: Record<string, never>; res: { nodes: Record<string, string[]>; tainted: number } };
  stats: { req: Record<string, never>; res: WorkerStats };
  stop: { req: Record<string, never>; res: { ok: true } };
}

export type Method = keyof WorkerApi;

// ---- The vendor cloud worker (bench/cloud-worker.ts): one vendor's fake in a process of its own.

/** What the vendor benchmarks read of the fake: calls by operation and its load balancers. */
export interface CloudStats {
  /** Calls the fake answered, by operation (the vendor's own API only). */
  readonly byOperation: Record<string, number>;
  /** Machines in the account. */
  readonly instances: number;
  /** Backends of each load balancer the hub made. */
  readonly lbBackendCounts: number[];
  /** Every load-balancing rule's frontend port, where the cloud tells them (Azure). */
  readonly lbFrontendPorts?: number[];
}

export interface CloudWorkerApi {
  init: {
    req: {
      vendor: string;
      timeScale: number;
      rateLimitPerSecond: number;
      requestTimeoutMs: number;
    };
    res: {
      provider: string;
      accounts: Record<string, unknown>[];
      env: Record<string, string>;
      changesSlackMs?: number;
    };
  };
  /** Each cluster's entry in the hub configuration (account, scope; a network made for it). */
  clusterConfigs: {
    req: { clusters: readonly string[] };
    res: Record<string, { account: string; region?: string; scope: Record<string, unknown> }>;
  };
  /** Creates the machines of these nodes; answers the node names kubelet registers, in order. */
  addMachines: { req: { machines: readonly { cluster: string; index: number }[] }; res: { names: string[] } };
  stats: { req: Record<string, never>; res: CloudStats };
  stop: { req: Record<string, never>; res: { ok: true } };
}
