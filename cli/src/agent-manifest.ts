import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, parse as parseYaml, stringify } from "yaml";

/** deploy/agent, the one source of the agent's manifests (installed next to the CLI). */
const AGENT_DIR = fileURLToPath(new URL("../../deploy/agent/", import.meta.url));
const NAME = "fleet-ccm-agent";

export interface AgentManifestOptions {
  readonly cluster: string;
  /** host:port agents dial for the hub's gRPC. */
  readonly hubAddress: string;
  readonly natsUrl: string;
  /** Secrets: the cluster's hub token and NATS .creds. */
  readonly token: string;
  readonly natsCreds: string;
  /** PEM of the CA that signed the hub's (and NATS') certificate; absent: system roots. */
  readonly caPem?: string;
  /** Replaces the agent image of deploy/agent/deployment.yaml. */
  readonly image?: string;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj {
  return typeof v === "object" && v !== null ? (v as Obj) : {};
}

/** The objects of deploy/agent, in its kustomization's order. */
export function agentBaseObjects(dir = AGENT_DIR): Obj[] {
  if (!existsSync(`${dir}kustomization.yaml`))
    throw new Error(`the agent manifests are not installed (no ${dir}kustomization.yaml)`);
  const kustomization = obj(parseYaml(readFileSync(`${dir}kustomization.yaml`, "utf8")));
  const resources = (kustomization["resources"] as string[] | undefined) ?? [];
  return resources.flatMap((file) =>
    parseAllDocuments(readFileSync(`${dir}${file}`, "utf8"))
      .map((d) => d.toJS() as unknown)
      .filter((o): o is Obj => typeof o === "object" && o !== null),
  );
}

function labels(component = "agent"): Obj {
  return {
    "app.kubernetes.io/name": NAME,
    "app.kubernetes.io/part-of": "fleet-ccm",
    "app.kubernetes.io/component": component,
  };
}

/**
 * The whole install of one member cluster, as one multi-document YAML: deploy/agent's objects
 * (Namespace, ServiceAccount, ClusterRole and binding, ResourceQuota, Deployment) plus the
 * cluster's ConfigMap and Secret. Without a CA the agent trusts the system roots.
 */
export function agentManifest(o: AgentManifestOptions): string {
  const base = agentBaseObjects();
  const deployment = base.find((x) => x["kind"] === "Deployment");
  if (deployment === undefined) throw new Error("deploy/agent has no Deployment");
  const namespace = String(obj(deployment["metadata"])["namespace"] ?? "fleet-ccm-system");
  const pod = obj(obj(obj(deployment["spec"])["template"])["spec"]);
  const container = obj((pod["containers"] as Obj[] | undefined)?.[0]);
  if (o.image !== undefined) container["image"] = o.image;
  if (o.caPem === undefined) {
    const args = (container["args"] as string[] | undefined) ?? [];
    const at = args.indexOf("--ca-file");
    if (at >= 0) args.splice(at, 2);
    container["env"] = ((container["env"] as Obj[] | undefined) ?? []).filter(
      (e) => e["name"] !== "NODE_EXTRA_CA_CERTS",
    );
    for (const v of (pod["volumes"] as Obj[] | undefined) ?? []) {
      const secret = obj(v["secret"]);
      if (Array.isArray(secret["items"]))
        secret["items"] = (secret["items"] as Obj[]).filter((i) => i["key"] !== "ca.crt");
    }
  }
  const configMap: Obj = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: NAME, namespace, labels: labels() },
    data: { CLUSTER_NAME: o.cluster, HUB_ADDRESS: o.hubAddress, NATS_URL: o.natsUrl },
  };
  const secret: Obj = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: NAME, namespace, labels: labels() },
    type: "Opaque",
    stringData: {
      token: o.token,
      "nats.creds": o.natsCreds,
      ...(o.caPem === undefined ? {} : { "ca.crt": o.caPem }),
    },
  };
  const objects = [...base.filter((x) => x !== deployment), configMap, secret, deployment];
  const header = [
    `# fleet-ccm agent for cluster ${o.cluster} (fleet-ccm register). Contains the cluster's`,
    "# credentials: keep it like a Secret. Apply it to the cluster with: kubectl apply -f FILE",
  ].join("\n");
  return `${header}\n${objects.map((x) => stringify(x, { lineWidth: 0 })).join("---\n")}`;
}
