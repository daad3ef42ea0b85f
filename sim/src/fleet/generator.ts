import type { SimInstance, SimulatedCloud } from "../cloud/index.js";

/** The taint kubelet registers with under --cloud-provider=external. */
export const UNINITIALIZED_TAINT = {
  key: "node.cloudprovider.kubernetes.io/uninitialized",
  value: "true",
  effect: "NoSchedule",
} as const;

export interface KubeletNodeOptions {
  readonly ready?: boolean;
  readonly podCIDRs?: readonly string[];
  readonly providedNodeIP?: string;
  readonly extraLabels?: Readonly<Record<string, string>>;
}

/** A Node as kubelet with --cloud-provider=external registers it: tainted, no providerID, Hostname only. */
export function kubeletNode(name: string, opts: KubeletNodeOptions = {}): Record<string, unknown> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const annotations: Record<string, string> = {
    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
  };
  if (opts.providedNodeIP !== undefined)
    annotations["alpha.kubernetes.io/provided-node-ip"] = opts.providedNodeIP;
  const spec: Record<string, unknown> = { taints: [{ ...UNINITIALIZED_TAINT }] };
  if (opts.podCIDRs !== undefined && opts.podCIDRs.length > 0) {
    spec["podCIDR"] = opts.podCIDRs[0];
    spec["podCIDRs"] = [...opts.podCIDRs];
  }
  const ready = opts.ready ?? true;
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        ...(opts.extraLabels ?? {}),
      },
      annotations,
    },
    spec,
    status: {
      conditions: [
        {
          type: "Ready",
          status: ready ? "True" : "False",
          reason: ready ? "KubeletReady" : "KubeletNotReady",
          message: ready ? "kubelet is posting ready status" : "container runtime network not ready",
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
      addresses: [{ type: "Hostname", address: name }],
      nodeInfo: {
        kubeletVersion: "v1.31.0",
        kubeProxyVersion: "v1.31.0",
        operatingSystem: "linux",
        architecture: "amd64",
        containerRuntimeVersion: "containerd://1.7.0",
        kernelVersion: "6.1.0",
        osImage: "Debian GNU/Linux 12 (bookworm)",
        machineID: "",
        systemUUID: "",
        bootID: "",
      },
    },
  };
}

/** The cloud tag that says which cluster an instance belongs to (the demo's cluster scope). */
export const CLUSTER_TAG = "fleet-ccm.io/cluster";

export interface MachineSpec {
  readonly cluster: string;
  readonly name: string;
  readonly account: string;
  readonly region: string;
  readonly zones?: readonly string[];
  readonly instanceTypes?: readonly string[];
  readonly index?: number;
}

/** Creates the cloud instance a node will run on (what a node pool does before kubelet starts). */
export function createMachine(cloud: SimulatedCloud, m: MachineSpec): SimInstance {
  const i = m.index ?? 0;
  const zones = m.zones ?? [`${m.region}a`, `${m.region}b`, `${m.region}c`];
  const types = m.instanceTypes ?? ["sim.small", "sim.medium", "sim.large"];
  return cloud.createInstance(m.account, {
    name: m.name,
    region: m.region,
    zone: zones[i % zones.length] ?? `${m.region}a`,
    instanceType: types[i % types.length] ?? "sim.small",
    tags: { [CLUSTER_TAG]: m.cluster },
  });
}

export function nodeName(cluster: string, index: number): string {
  return `${cluster}-node-${String(index).padStart(4, "0")}`;
}
