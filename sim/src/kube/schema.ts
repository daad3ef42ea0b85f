// The fields of the served kinds (k8s.io/api types), for what kube-apiserver does with them: dropping
// unknown fields from what it stores, reporting them by `fieldValidation` (Ignore / Warn / Strict), and
// describing the kinds in /openapi/v3. Pod spec and status are left open (not modelled field by field).

import { isObject, type JsonObject, type JsonValue } from "./json.js";
import type { KindName } from "./resources.js";

export type Schema =
  | {
      readonly k: "scalar";
      readonly type: "string" | "integer" | "boolean" | "number";
      readonly format?: string;
    }
  | { readonly k: "object"; readonly name?: string; readonly props: Readonly<Record<string, Schema>> }
  | { readonly k: "map"; readonly values: Schema }
  | { readonly k: "array"; readonly items: Schema }
  | { readonly k: "any"; readonly intOrString?: boolean };

const str: Schema = { k: "scalar", type: "string" };
const int: Schema = { k: "scalar", type: "integer", format: "int64" };
const int32: Schema = { k: "scalar", type: "integer", format: "int32" };
const bool: Schema = { k: "scalar", type: "boolean" };
const time: Schema = { k: "scalar", type: "string", format: "date-time" };
const any: Schema = { k: "any" };
const intOrString: Schema = { k: "any", intOrString: true };
const quantity: Schema = { k: "any", intOrString: true };
const arr = (items: Schema): Schema => ({ k: "array", items });
const map = (values: Schema): Schema => ({ k: "map", values });
const obj = (props: Record<string, Schema>, name?: string): Schema =>
  name === undefined ? { k: "object", props } : { k: "object", name, props };

const OBJECT_META = obj(
  {
    name: str,
    generateName: str,
    namespace: str,
    selfLink: str,
    uid: str,
    resourceVersion: str,
    generation: int,
    creationTimestamp: time,
    deletionTimestamp: time,
    deletionGracePeriodSeconds: int,
    labels: map(str),
    annotations: map(str),
    ownerReferences: arr(
      obj({ apiVersion: str, kind: str, name: str, uid: str, controller: bool, blockOwnerDeletion: bool }),
    ),
    finalizers: arr(str),
    managedFields: arr(
      obj({
        manager: str,
        operation: str,
        apiVersion: str,
        time,
        fieldsType: str,
        fieldsV1: any,
        subresource: str,
      }),
    ),
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
);

const OBJECT_REFERENCE = obj(
  { kind: str, namespace: str, name: str, uid: str, apiVersion: str, resourceVersion: str, fieldPath: str },
  "io.k8s.api.core.v1.ObjectReference",
);

const META_CONDITION = obj({
  type: str,
  status: str,
  observedGeneration: int,
  lastTransitionTime: time,
  reason: str,
  message: str,
});

function kind(name: string, props: Record<string, Schema>): Schema {
  return obj({ apiVersion: str, kind: str, metadata: OBJECT_META, ...props }, name);
}

const NODE = kind("io.k8s.api.core.v1.Node", {
  spec: obj(
    {
      podCIDR: str,
      podCIDRs: arr(str),
      providerID: str,
      unschedulable: bool,
      taints: arr(obj({ key: str, value: str, effect: str, timeAdded: time }, "io.k8s.api.core.v1.Taint")),
      configSource: any,
      externalID: str,
    },
    "io.k8s.api.core.v1.NodeSpec",
  ),
  status: obj(
    {
      capacity: map(quantity),
      allocatable: map(quantity),
      phase: str,
      conditions: arr(
        obj({
          type: str,
          status: str,
          lastHeartbeatTime: time,
          lastTransitionTime: time,
          reason: str,
          message: str,
        }),
      ),
      addresses: arr(obj({ type: str, address: str }, "io.k8s.api.core.v1.NodeAddress")),
      daemonEndpoints: obj({ kubeletEndpoint: obj({ Port: int32 }) }),
      nodeInfo: obj(
        {
          machineID: str,
          systemUUID: str,
          bootID: str,
          kernelVersion: str,
          osImage: str,
          containerRuntimeVersion: str,
          kubeletVersion: str,
          kubeProxyVersion: str,
          operatingSystem: str,
          architecture: str,
          swap: any,
        },
        "io.k8s.api.core.v1.NodeSystemInfo",
      ),
      images: arr(obj({ names: arr(str), sizeBytes: int })),
      volumesInUse: arr(str),
      volumesAttached: arr(obj({ name: str, devicePath: str })),
      config: any,
      runtimeHandlers: arr(any),
      features: any,
      declaredFeatures: arr(str),
    },
    "io.k8s.api.core.v1.NodeStatus",
  ),
});

const SERVICE = kind("io.k8s.api.core.v1.Service", {
  spec: obj(
    {
      ports: arr(
        obj(
          {
            name: str,
            protocol: str,
            appProtocol: str,
            port: int32,
            targetPort: intOrString,
            nodePort: int32,
          },
          "io.k8s.api.core.v1.ServicePort",
        ),
      ),
      selector: map(str),
      clusterIP: str,
      clusterIPs: arr(str),
      type: str,
      externalIPs: arr(str),
      sessionAffinity: str,
      loadBalancerIP: str,
      loadBalancerSourceRanges: arr(str),
      externalName: str,
      externalTrafficPolicy: str,
      healthCheckNodePort: int32,
      publishNotReadyAddresses: bool,
      sessionAffinityConfig: obj({ clientIP: obj({ timeoutSeconds: int32 }) }),
      ipFamilies: arr(str),
      ipFamilyPolicy: str,
      allocateLoadBalancerNodePorts: bool,
      loadBalancerClass: str,
      internalTrafficPolicy: str,
      trafficDistribution: str,
    },
    "io.k8s.api.core.v1.ServiceSpec",
  ),
  status: obj(
    {
      loadBalancer: obj({
        ingress: arr(
          obj(
            {
              ip: str,
              hostname: str,
              ipMode: str,
              ports: arr(obj({ port: int32, protocol: str, error: str })),
            },
            "io.k8s.api.core.v1.LoadBalancerIngress",
          ),
        ),
      }),
      conditions: arr(META_CONDITION),
    },
    "io.k8s.api.core.v1.ServiceStatus",
  ),
});

const EVENT = kind("io.k8s.api.core.v1.Event", {
  involvedObject: OBJECT_REFERENCE,
  reason: str,
  message: str,
  source: obj({ component: str, host: str }),
  firstTimestamp: time,
  lastTimestamp: time,
  count: int32,
  type: str,
  eventTime: time,
  series: obj({ count: int32, lastObservedTime: time }),
  action: str,
  related: OBJECT_REFERENCE,
  reportingComponent: str,
  reportingInstance: str,
});

const NAMESPACE = kind("io.k8s.api.core.v1.Namespace", {
  spec: obj({ finalizers: arr(str) }),
  status: obj({
    phase: str,
    conditions: arr(obj({ type: str, status: str, lastTransitionTime: time, reason: str, message: str })),
  }),
});

const LEASE = kind("io.k8s.api.coordination.v1.Lease", {
  spec: obj({
    holderIdentity: str,
    leaseDurationSeconds: int32,
    acquireTime: time,
    renewTime: time,
    leaseTransitions: int32,
    strategy: str,
    preferredHolder: str,
  }),
});

const POD = kind("io.k8s.api.core.v1.Pod", { spec: any, status: any });

const SECRET = kind("io.k8s.api.core.v1.Secret", { type: str, data: any, stringData: any, immutable: any });

// spec is left open like Pod's (its twenty volume sources are not modelled field by field).
const PERSISTENT_VOLUME = kind("io.k8s.api.core.v1.PersistentVolume", {
  spec: any,
  status: obj({ phase: str, message: str, reason: str, lastPhaseTransitionTime: time }),
});

export const KIND_SCHEMAS: Readonly<Record<KindName, Schema>> = {
  Node: NODE,
  Service: SERVICE,
  Event: EVENT,
  Namespace: NAMESPACE,
  Lease: LEASE,
  Pod: POD,
  Secret: SECRET,
  PersistentVolume: PERSISTENT_VOLUME,
};

/**
 * The paths of the fields `schema` does not declare (`spec.foo`, `spec.ports[0].bar`), in document
 * order, removing them from `value` when `prune` (what decoding into the Go types does).
 */
export function unknownFields(schema: Schema, value: JsonValue | undefined, prune: boolean): string[] {
  const out: string[] = [];
  walk(schema, value, "", prune, out);
  return out;
}

function walk(s: Schema, v: JsonValue | undefined, path: string, prune: boolean, out: string[]): void {
  if (v === undefined || v === null) return;
  switch (s.k) {
    case "object": {
      if (!isObject(v)) return;
      for (const key of Object.keys(v)) {
        const p = path === "" ? key : `${path}.${key}`;
        const child = s.props[key];
        if (child === undefined) {
          out.push(p);
          if (prune) delete (v as JsonObject)[key];
        } else walk(child, v[key], p, prune, out);
      }
      return;
    }
    case "map":
      if (!isObject(v)) return;
      for (const [key, child] of Object.entries(v))
        walk(s.values, child, path === "" ? key : `${path}.${key}`, prune, out);
      return;
    case "array":
      if (!Array.isArray(v)) return;
      v.forEach((child, i) => {
        walk(s.items, child, `${path}[${i}]`, prune, out);
      });
      return;
    default:
      return;
  }
}
