import {
  AnnotationFilter,
  type NodeDesired,
  type ServiceDesired,
  UNIFIED_ANNOTATION_PREFIXES,
} from "@fleet-ccm/proto";
import { describe, expect, test } from "@jest/globals";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { specPatch, statusPatch } from "./apply/node.js";
import { serviceStatusPatch } from "./apply/service.js";
import { toWireNode, toWireService } from "./convert.js";
import { slimNode, slimService } from "./slim.js";

/** A Node as a kubelet registers it, with the bulky parts the agent drops. */
function fullNode(): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "n1",
      uid: "u1",
      resourceVersion: "42",
      creationTimestamp: "2026-01-02T03:04:05Z" as unknown as Date,
      labels: { "kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux" },
      annotations: {
        "alpha.kubernetes.io/provided-node-ip": "10.0.0.9",
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "lifecycle.fleet-ccm.io/confirm-deletion": "true",
      },
      managedFields: [{ manager: "kubelet", operation: "Update", fieldsV1: { "f:status": {} } }],
      finalizers: ["example.com/keep"],
    },
    spec: {
      podCIDR: "10.244.1.0/24",
      podCIDRs: ["10.244.1.0/24", "fd00:1::/64"],
      taints: [
        { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" },
      ],
    },
    status: {
      addresses: [{ type: "Hostname", address: "n1" }],
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "KubeletReady",
          message: "kubelet is posting ready status",
          lastHeartbeatTime: "2026-01-02T03:04:05Z" as unknown as Date,
          lastTransitionTime: "2026-01-02T03:04:05Z" as unknown as Date,
        },
        { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" },
      ],
      capacity: { cpu: "4", memory: "16Gi" },
      allocatable: { cpu: "4", memory: "15Gi" },
      images: Array.from({ length: 50 }, (_, i) => ({
        names: [`registry.example/img-${i}:v1`],
        sizeBytes: 1e8,
      })),
      nodeInfo: {
        architecture: "amd64",
        bootID: "b",
        containerRuntimeVersion: "containerd://2.0.0",
        kernelVersion: "6.1",
        kubeProxyVersion: "",
        kubeletVersion: "v1.31.0",
        machineID: "m",
        operatingSystem: "linux",
        osImage: "Debian",
        systemUUID: "s",
      },
    },
  };
}

function fullService(): V1Service {
  return {
    metadata: {
      namespace: "shop",
      name: "web",
      uid: "s1",
      resourceVersion: "77",
      labels: { app: "web" },
      annotations: {
        "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
        "lb.fleet-ccm.io/health-check-interval": "5s",
        "kubectl.kubernetes.io/last-applied-configuration": "{".repeat(2000),
      },
      finalizers: ["service.kubernetes.io/load-balancer-cleanup"],
    },
    spec: {
      type: "LoadBalancer",
      selector: { app: "web" },
      clusterIP: "10.96.0.10",
      clusterIPs: ["10.96.0.10"],
      ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080, nodePort: 30080 }],
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 31000,
      ipFamilies: ["IPv4"],
      sessionAffinity: "ClientIP",
      loadBalancerSourceRanges: ["192.0.2.0/24"],
    },
    status: { loadBalancer: { ingress: [{ ip: "203.0.113.1", ipMode: "VIP" }] } },
  };
}

describe("slim objects", () => {
  test("a slim Node gives the hub the same view and the same patches as the full one", () => {
    const full = fullNode();
    const slim = slimNode(fullNode(), new AnnotationFilter());
    expect(toWireNode(slim)).toEqual({
      ...toWireNode(full),
      annotations: {
        "alpha.kubernetes.io/provided-node-ip": "10.0.0.9",
        "lifecycle.fleet-ccm.io/confirm-deletion": "true",
      },
    });
    const d: NodeDesired = {
      name: "n1",
      uid: "u1",
      generation: 1,
      providerId: "simulated://r/i-1",
      labels: { "topology.kubernetes.io/zone": "z1" },
      addresses: { items: [{ type: "InternalIP", address: "10.0.0.9" }] },
      addTaints: [],
      removeTaintKeys: ["node.cloudprovider.kubernetes.io/uninitialized"],
      delete: false,
      conditions: [{ type: "NetworkUnavailable", status: "False", reason: "RouteCreated", message: "m" }],
      podCidrs: [],
    };
    expect(specPatch(slim, d)).toEqual(specPatch(full, d));
    const withoutTimes = (p: ReturnType<typeof statusPatch>) =>
      JSON.parse(JSON.stringify(p).replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, '"T"')) as unknown;
    expect(withoutTimes(statusPatch(slim, d))).toEqual(withoutTimes(statusPatch(full, d)));
    const json = JSON.stringify(slim);
    expect(json).not.toMatch(/images|nodeInfo|managedFields|capacity|ttl/);
    expect(json.length * 4).toBeLessThan(JSON.stringify(full).length);
  });

  test("a slim Service gives the hub the same view and the same status patch", () => {
    const full = fullService();
    const slim = slimService(fullService(), new AnnotationFilter());
    expect(toWireService(slim)).toEqual({
      ...toWireService(full),
      annotations: {
        "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
        "lb.fleet-ccm.io/health-check-interval": "5s",
      },
    });
    const d: ServiceDesired = {
      namespace: "shop",
      name: "web",
      uid: "s1",
      generation: 3,
      addFinalizers: [],
      removeFinalizers: ["service.kubernetes.io/load-balancer-cleanup"],
      setAnnotations: {},
      ingress: { items: [{ ip: "203.0.113.2", hostname: "", ipMode: "" }] },
    };
    expect(serviceStatusPatch(slim, d)).toEqual(serviceStatusPatch(full, d));
    expect(JSON.stringify(slim)).not.toMatch(/last-applied|selector|clusterIP/);
  });
});

describe("forwarded annotations", () => {
  const annotations = {
    "lb.fleet-ccm.io/idle-timeout": "30",
    "lifecycle.fleet-ccm.io/confirm-deletion": "true",
    "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
    "service.beta.kubernetes.io/simulated-load-balancer-idle-timeout": "40",
    "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
    "example.com/secret-note": "s3cret",
  };
  const withAnnotations = (): V1Service => ({
    ...fullService(),
    metadata: { ...fullService().metadata, annotations },
  });

  test("only the Welcome's prefixes are kept, the rest never enters the cache", () => {
    const filter = new AnnotationFilter([
      "lb.fleet-ccm.io/",
      "lifecycle.fleet-ccm.io/",
      "service.beta.kubernetes.io/load-balancer-source-ranges",
      "service.beta.kubernetes.io/simulated-",
    ]);
    const slim = slimService(withAnnotations(), filter);
    expect(slim.metadata?.annotations).toEqual({
      "lb.fleet-ccm.io/idle-timeout": "30",
      "lifecycle.fleet-ccm.io/confirm-deletion": "true",
      "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
      "service.beta.kubernetes.io/simulated-load-balancer-idle-timeout": "40",
    });
    expect(toWireService(slim).annotations).toEqual(slim.metadata?.annotations);
    expect(JSON.stringify(slim)).not.toMatch(/secret|aws-load-balancer/);
  });

  test("a Welcome without prefixes (an older hub): the unified set, no vendor annotation", () => {
    const filter = new AnnotationFilter([]);
    expect(filter.sameAs(new AnnotationFilter(UNIFIED_ANNOTATION_PREFIXES))).toBe(true);
    expect(slimService(withAnnotations(), filter).metadata?.annotations).toEqual({
      "lb.fleet-ccm.io/idle-timeout": "30",
      "lifecycle.fleet-ccm.io/confirm-deletion": "true",
      "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8",
    });
    const node = slimNode(fullNode(), filter);
    expect(node.metadata?.annotations).toEqual({
      "alpha.kubernetes.io/provided-node-ip": "10.0.0.9",
      "lifecycle.fleet-ccm.io/confirm-deletion": "true",
    });
  });

  test("an empty prefix never forwards everything; no forwarded annotation leaves no map", () => {
    expect(new AnnotationFilter([""]).prefixes).toEqual([...UNIFIED_ANNOTATION_PREFIXES].sort());
    const bare = slimService(
      { metadata: { name: "x", annotations: { "example.com/a": "b" } } },
      new AnnotationFilter(["lb.fleet-ccm.io/"]),
    );
    expect(bare.metadata?.annotations).toBeUndefined();
    expect(toWireService(bare).annotations).toEqual({});
  });
});
