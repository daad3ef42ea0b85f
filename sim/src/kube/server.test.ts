// CRUD, patch, status subresource, delete/finalizers and validation through the real client-node 1.4.

import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
  type V1Service,
} from "@kubernetes/client-node";
import type { Status } from "./errors.js";
import { type KubeApiServer, startKubeApiServer } from "./index.js";

let sim: KubeApiServer;
let kc: KubeConfig;
let core: CoreV1Api;

beforeAll(async () => {
  sim = await startKubeApiServer();
  kc = new KubeConfig();
  kc.loadFromOptions(sim.kubeConfigOptions());
  core = kc.makeApiClient(CoreV1Api);
});

afterAll(async () => {
  await sim.close();
});

/** Runs a client-node call that must fail and returns the HTTP code and parsed Status body. */
async function apiError(p: Promise<unknown>): Promise<{ code: number; status: Status }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException) {
      const body = typeof e.body === "string" ? e.body : "{}";
      return { code: e.code, status: JSON.parse(body) as Status };
    }
    throw e;
  }
  throw new Error("expected the call to fail");
}

const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const smp = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);

function node(name: string, extra: Partial<V1Node> = {}): V1Node {
  return { apiVersion: "v1", kind: "Node", metadata: { name }, ...extra };
}

function lbService(name: string, namespace = "default"): V1Service {
  return {
    metadata: { name, namespace },
    spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
  };
}

describe("wire basics", () => {
  test("every API response is application/json, errors are exact Status bodies", async () => {
    const list = await fetch(`${sim.url}/api/v1/nodes`);
    expect(list.status).toBe(200);
    expect(list.headers.get("content-type")).toBe("application/json");
    const missing = await fetch(`${sim.url}/api/v1/nodes/nope`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toBe("application/json");
    expect(await missing.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'nodes "nope" not found',
      reason: "NotFound",
      details: { name: "nope", kind: "nodes" },
      code: 404,
    });
    const unknown = await fetch(`${sim.url}/api/v1/widgets`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      message: "the server could not find the requested resource",
      reason: "NotFound",
      details: {},
    });
    const version = await (await fetch(`${sim.url}/version`)).json();
    expect(version).toMatchObject({ gitVersion: "v1.31.0-sim", major: "1", minor: "31" });
    const health = await fetch(`${sim.url}/healthz`);
    expect(await health.text()).toBe("ok");
  });

  test("405 for a verb the route does not support", async () => {
    const r = await fetch(`${sim.url}/api/v1/nodes/x/status`, { method: "DELETE" });
    expect(r.status).toBe(405);
    expect(await r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "the server does not allow this method on the requested resource",
      reason: "MethodNotAllowed",
      details: {},
      code: 405,
    });
  });

  test("kubeconfig YAML points at the server", () => {
    const kc2 = new KubeConfig();
    kc2.loadFromString(sim.kubeconfigYaml());
    expect(kc2.getCurrentCluster()?.server).toBe(sim.url);
    expect(kc2.getCurrentCluster()?.skipTLSVerify).toBe(true);
  });
});

describe("create", () => {
  test("server sets uid, creationTimestamp, resourceVersion; nodes keep status", async () => {
    const created = await core.createNode({
      body: node("create-1", {
        metadata: { name: "create-1", uid: "client-uid", labels: { a: "b" } },
        status: { addresses: [{ type: "InternalIP", address: "10.0.0.1" }] },
      }),
    });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(created.metadata?.uid).not.toBe("client-uid");
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
    expect(created.status?.addresses).toEqual([{ type: "InternalIP", address: "10.0.0.1" }]);
  });

  test("existing name → 409 AlreadyExists; client resourceVersion → 500", async () => {
    await core.createNode({ body: node("create-2") });
    const dup = await apiError(core.createNode({ body: node("create-2") }));
    expect(dup.code).toBe(409);
    expect(dup.status).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'nodes "create-2" already exists',
      reason: "AlreadyExists",
      details: { name: "create-2", kind: "nodes" },
      code: 409,
    });
    const withRV = await apiError(
      core.createNode({ body: { metadata: { name: "create-3", resourceVersion: "12" } } }),
    );
    expect(withRV.code).toBe(500);
    expect(withRV.status).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "resourceVersion should not be set on objects to be created",
      code: 500,
    });
  });

  test("service defaults, allocations, status dropped on create", async () => {
    const svc = await core
      .createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name: "web" },
          spec: {
            type: "LoadBalancer",
            externalTrafficPolicy: "Local",
            ports: [{ port: 80 }, { port: 443, name: "https" }],
          },
          status: { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
        },
      })
      .catch((e: unknown) => e);
    // two ports without a name on one → 422 (port names are required when there are several)
    expect(svc).toBeInstanceOf(ApiException);
    const ok = await core.createNamespacedService({
      namespace: "default",
      body: {
        metadata: { name: "web" },
        spec: {
          type: "LoadBalancer",
          externalTrafficPolicy: "Local",
          ports: [
            { name: "http", port: 80 },
            { name: "https", port: 443, targetPort: 8443 },
          ],
        },
        status: { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } },
      },
    });
    expect(ok.spec?.sessionAffinity).toBe("None");
    expect(ok.spec?.ports?.[0]?.protocol).toBe("TCP");
    expect(ok.spec?.ports?.[0]?.targetPort).toBe(80);
    expect(ok.spec?.ports?.[1]?.targetPort).toBe(8443);
    for (const p of ok.spec?.ports ?? []) {
      expect(p.nodePort).toBeGreaterThanOrEqual(30000);
      expect(p.nodePort).toBeLessThanOrEqual(32767);
    }
    expect(ok.spec?.healthCheckNodePort).toBeGreaterThanOrEqual(30000);
    expect(ok.spec?.clusterIP).toMatch(/^10\.96\.\d+\.\d+$/);
    expect(ok.spec?.clusterIPs).toEqual([ok.spec?.clusterIP]);
    expect(ok.spec?.allocateLoadBalancerNodePorts).toBe(true);
    expect(ok.status).toEqual({ loadBalancer: {} });
    const plain = await core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "plain" }, spec: { ports: [{ port: 53, protocol: "UDP" }] } },
    });
    expect(plain.spec?.type).toBe("ClusterIP");
    expect(plain.spec?.externalTrafficPolicy).toBeUndefined();
    expect(plain.spec?.ports?.[0]?.nodePort).toBeUndefined();
    const np = await core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "np" }, spec: { type: "NodePort", ports: [{ port: 80 }] } },
    });
    expect(np.spec?.externalTrafficPolicy).toBe("Cluster");
    expect(np.spec?.ports?.[0]?.nodePort).not.toBe(ok.spec?.ports?.[0]?.nodePort);
  });

  test("bad names are rejected with the DNS messages", async () => {
    const bad = await apiError(
      core.createNamespacedService({
        namespace: "default",
        body: { metadata: { name: "1abc" }, spec: { ports: [{ port: 1 }] } },
      }),
    );
    expect(bad.code).toBe(422);
    expect(bad.status.message).toBe(
      "Service \"1abc\" is invalid: metadata.name: Invalid value: \"1abc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    );
    const badNode = await apiError(core.createNode({ body: node("Bad_Node") }));
    expect(badNode.status.details?.causes?.[0]).toEqual({
      reason: "FieldValueInvalid",
      message:
        "Invalid value: \"Bad_Node\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      field: "metadata.name",
    });
  });
});

describe("update (PUT)", () => {
  test("stale resourceVersion → 409 Conflict with the exact message", async () => {
    const n = await core.createNode({ body: node("put-1") });
    const fresh = await core.readNode({ name: "put-1" });
    fresh.metadata = { ...fresh.metadata, labels: { x: "1" } };
    await core.replaceNode({ name: "put-1", body: fresh });
    const stale = { ...n, metadata: { ...n.metadata, labels: { x: "2" } } };
    const err = await apiError(core.replaceNode({ name: "put-1", body: stale }));
    expect(err.code).toBe(409);
    expect(err.status).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        'Operation cannot be fulfilled on nodes "put-1": the object has been modified; please apply your changes to the latest version and try again',
      reason: "Conflict",
      details: { name: "put-1", kind: "nodes" },
      code: 409,
    });
  });

  test("body uid ≠ stored → 409 precondition; no RV → unconditional update", async () => {
    const n = await core.createNode({ body: node("put-2") });
    const err = await apiError(
      core.replaceNode({ name: "put-2", body: { metadata: { name: "put-2", uid: "other-uid" } } }),
    );
    expect(err.code).toBe(409);
    expect(err.status.message).toBe(
      `Operation cannot be fulfilled on nodes "put-2": StorageError: invalid object, Code: 4, Key: /registry/minions/put-2, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other-uid, UID in object meta: ${n.metadata?.uid}`,
    );
    const updated = await core.replaceNode({
      name: "put-2",
      body: { metadata: { name: "put-2", labels: { u: "1" } }, spec: { unschedulable: true } },
    });
    expect(updated.metadata?.labels).toEqual({ u: "1" });
    expect(updated.metadata?.uid).toBe(n.metadata?.uid);
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(Number(n.metadata?.resourceVersion));
  });

  test("PUT on a missing node → 404, on a missing service → 201 create", async () => {
    const err = await apiError(core.replaceNode({ name: "ghost", body: node("ghost") }));
    expect(err.code).toBe(404);
    const r = await fetch(`${sim.url}/api/v1/namespaces/default/services/made-by-put`, {
      method: "PUT",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ metadata: { name: "made-by-put" }, spec: { ports: [{ port: 80 }] } }),
    });
    expect(r.status).toBe(201);
    expect(((await r.json()) as { metadata: { name: string } }).metadata.name).toBe("made-by-put");
  });

  test("no-op writes do not bump the resourceVersion", async () => {
    const n = await core.createNode({
      body: node("noop-1", { metadata: { name: "noop-1", labels: { a: "1" } } }),
    });
    const before = sim.resourceVersion();
    const same = await core.patchNode({ name: "noop-1", body: { metadata: { labels: { a: "1" } } } }, merge);
    expect(same.metadata?.resourceVersion).toBe(n.metadata?.resourceVersion);
    const put = await core.replaceNode({ name: "noop-1", body: await core.readNode({ name: "noop-1" }) });
    expect(put.metadata?.resourceVersion).toBe(n.metadata?.resourceVersion);
    expect(sim.resourceVersion()).toBe(before);
  });
});

describe("patch", () => {
  test("merge patch: null deletes keys, arrays are replaced", async () => {
    await core.createNode({
      body: node("mp-1", {
        metadata: { name: "mp-1", labels: { keep: "1", drop: "1" } },
        spec: {
          taints: [
            { key: "a", effect: "NoSchedule" },
            { key: "b", effect: "NoSchedule" },
          ],
        },
      }),
    });
    const r = await core.patchNode(
      {
        name: "mp-1",
        body: {
          metadata: { labels: { drop: null, add: "2" } },
          spec: { taints: [{ key: "c", effect: "NoExecute" }] },
        },
      },
      merge,
    );
    expect(r.metadata?.labels).toEqual({ keep: "1", add: "2" });
    expect(r.spec?.taints).toEqual([{ key: "c", effect: "NoExecute" }]);
  });

  test("client-node default is JSON patch; failing test op → 422 generic Invalid; object body → 400", async () => {
    await core.createNode({
      body: node("jp-1", { metadata: { name: "jp-1", labels: { "team.io/x": "1" } } }),
    });
    const ok = await core.patchNode({
      name: "jp-1",
      body: [
        { op: "test", path: "/metadata/labels/team.io~1x", value: "1" },
        {
          op: "add",
          path: "/metadata/labels/node.kubernetes.io~1exclude-from-external-load-balancers",
          value: "",
        },
      ],
    });
    expect(ok.metadata?.labels?.["node.kubernetes.io/exclude-from-external-load-balancers"]).toBe("");
    const failed = await apiError(
      core.patchNode({
        name: "jp-1",
        body: [{ op: "test", path: "/metadata/labels/team.io~1x", value: "2" }],
      }),
    );
    expect(failed.code).toBe(422);
    expect(failed.status).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "the server rejected our request due to an error in our request",
      reason: "Invalid",
      details: {},
      code: 422,
    });
    const missing = await apiError(
      core.patchNode({ name: "jp-1", body: [{ op: "replace", path: "/spec/nope/deeper", value: 1 }] }),
    );
    expect(missing.code).toBe(422);
    const objectBody = await apiError(
      core.patchNode({ name: "jp-1", body: { metadata: { labels: { a: "b" } } } }),
    );
    expect(objectBody.code).toBe(400);
    expect(objectBody.status.reason).toBe("BadRequest");
    expect(objectBody.status.message).toContain("json: cannot unmarshal object into Go value of type");
  });

  test("unsupported patch content type → 415 with the exact message", async () => {
    await core.createNode({ body: node("ct-1") });
    const r = await fetch(`${sim.url}/api/v1/nodes/ct-1`, {
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(415);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(await r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml",
      reason: "UnsupportedMediaType",
      code: 415,
    });
  });

  test("patch with a stale resourceVersion → 409; with a different uid → 422 field is immutable; missing → 404", async () => {
    const n = await core.createNode({ body: node("pc-1") });
    await core.patchNode({ name: "pc-1", body: { metadata: { labels: { bump: "1" } } } }, merge);
    const stale = await apiError(
      core.patchNode(
        {
          name: "pc-1",
          body: {
            metadata: {
              uid: n.metadata?.uid,
              resourceVersion: n.metadata?.resourceVersion,
              labels: { x: "y" },
            },
          },
        },
        merge,
      ),
    );
    expect(stale.code).toBe(409);
    expect(stale.status.reason).toBe("Conflict");
    expect(stale.status.message).toBe(
      'Operation cannot be fulfilled on nodes "pc-1": the object has been modified; please apply your changes to the latest version and try again',
    );
    const wrongUid = await apiError(
      core.patchNode(
        { name: "pc-1", body: { metadata: { uid: "00000000-0000-0000-0000-000000000000" } } },
        merge,
      ),
    );
    expect(wrongUid.code).toBe(422);
    expect(wrongUid.status.message).toBe(
      'Node "pc-1" is invalid: metadata.uid: Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable',
    );
    expect(wrongUid.status.details?.causes?.[0]).toEqual({
      reason: "FieldValueInvalid",
      message: 'Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable',
      field: "metadata.uid",
    });
    const current = await core.readNode({ name: "pc-1" });
    const good = await core.patchNode(
      {
        name: "pc-1",
        body: {
          metadata: {
            uid: current.metadata?.uid,
            resourceVersion: current.metadata?.resourceVersion,
            labels: { ok: "1" },
          },
        },
      },
      merge,
    );
    expect(good.metadata?.labels?.["ok"]).toBe("1");
    const missing = await apiError(
      core.patchNode({ name: "pc-nope", body: { metadata: { labels: { a: "b" } } } }, merge),
    );
    expect(missing.code).toBe(404);
    expect(missing.status.message).toBe('nodes "pc-nope" not found');
  });

  test("strategic merge on node status: addresses and conditions by type, $patch: replace", async () => {
    await core.createNode({
      body: node("smp-1", {
        status: {
          addresses: [
            { type: "Hostname", address: "smp-1" },
            { type: "InternalIP", address: "10.0.0.1" },
          ],
          conditions: [
            { type: "Ready", status: "True", reason: "KubeletReady" },
            { type: "MemoryPressure", status: "False" },
          ],
        },
      }),
    });
    const merged = await core.patchNodeStatus(
      {
        name: "smp-1",
        body: {
          status: {
            addresses: [{ type: "ExternalIP", address: "203.0.113.5" }],
            conditions: [
              { type: "NetworkUnavailable", status: "False", reason: "RouteCreated" },
              { type: "Ready", status: "False" },
            ],
          },
        },
      },
      smp,
    );
    expect(merged.status?.addresses).toEqual([
      { type: "Hostname", address: "smp-1" },
      { type: "InternalIP", address: "10.0.0.1" },
      { type: "ExternalIP", address: "203.0.113.5" },
    ]);
    expect(merged.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Ready", "False", "KubeletReady"],
      ["MemoryPressure", "False", undefined],
      ["NetworkUnavailable", "False", "RouteCreated"],
    ]);
    // component-helpers node/util/status.go style: replace the whole list.
    const replaced = await core.patchNodeStatus(
      {
        name: "smp-1",
        body: {
          status: {
            addresses: [{ type: "InternalIP", address: "10.0.0.9" }, { $patch: "replace" }],
            conditions: [{ type: "MemoryPressure", $patch: "delete" }],
          },
        },
      },
      smp,
    );
    expect(replaced.status?.addresses).toEqual([{ type: "InternalIP", address: "10.0.0.9" }]);
    expect(replaced.status?.conditions?.map((c) => c.type)).toEqual(["Ready", "NetworkUnavailable"]);
  });

  test("strategic merge: taints are replaced wholesale, finalizers set-merged and deleted by directive", async () => {
    await core.createNode({
      body: node("smp-2", {
        metadata: { name: "smp-2", finalizers: ["example.com/a"] },
        spec: { taints: [{ key: "x", effect: "NoSchedule" }] },
      }),
    });
    const r = await core.patchNode(
      {
        name: "smp-2",
        body: {
          metadata: { finalizers: ["example.com/b", "example.com/a"] },
          spec: {
            taints: [
              { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" },
            ],
          },
        },
      },
      smp,
    );
    expect(r.metadata?.finalizers).toEqual(["example.com/a", "example.com/b"]);
    expect(r.spec?.taints).toEqual([
      { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" },
    ]);
    const d = await core.patchNode(
      { name: "smp-2", body: { metadata: { "$deleteFromPrimitiveList/finalizers": ["example.com/a"] } } },
      smp,
    );
    expect(d.metadata?.finalizers).toEqual(["example.com/b"]);
  });

  test("service finalizer via SMP on /status is persisted (cloud-provider service controller)", async () => {
    await core.createNamespacedService({ namespace: "default", body: lbService("fin-svc") });
    const withFin = await core.patchNamespacedServiceStatus(
      {
        name: "fin-svc",
        namespace: "default",
        body: { metadata: { finalizers: ["service.kubernetes.io/load-balancer-cleanup"] } },
      },
      smp,
    );
    expect(withFin.metadata?.finalizers).toEqual(["service.kubernetes.io/load-balancer-cleanup"]);
    const removed = await core.patchNamespacedServiceStatus(
      {
        name: "fin-svc",
        namespace: "default",
        body: {
          metadata: {
            "$deleteFromPrimitiveList/finalizers": ["service.kubernetes.io/load-balancer-cleanup"],
          },
        },
      },
      smp,
    );
    expect(removed.metadata?.finalizers).toBeUndefined();
  });
});

describe("status subresource", () => {
  test("main-resource writes keep status; /status writes keep spec but persist metadata", async () => {
    await core.createNode({
      body: node("st-1", {
        spec: { podCIDR: "10.244.0.0/24" },
        status: { conditions: [{ type: "Ready", status: "True" }] },
      }),
    });
    const main = await core.patchNode(
      {
        name: "st-1",
        body: { spec: { unschedulable: true }, status: { conditions: [{ type: "Ready", status: "False" }] } },
      },
      merge,
    );
    expect(main.spec?.unschedulable).toBe(true);
    expect(main.status?.conditions?.[0]?.status).toBe("True");
    const status = await core.patchNodeStatus(
      {
        name: "st-1",
        body: {
          metadata: { labels: { via: "status" } },
          spec: { unschedulable: false },
          status: { conditions: [{ type: "Ready", status: "False" }] },
        },
      },
      merge,
    );
    expect(status.metadata?.labels).toEqual({ via: "status" });
    expect(status.spec?.unschedulable).toBe(true);
    expect(status.status?.conditions?.[0]?.status).toBe("False");
    const replaced = await core.replaceNodeStatus({
      name: "st-1",
      body: { ...status, spec: { podCIDR: "10.9.9.0/24" }, status: { ...status.status, phase: "Running" } },
    });
    expect(replaced.spec?.podCIDR).toBe("10.244.0.0/24");
    expect(replaced.status?.phase).toBe("Running");
  });

  test("load balancer ingress: ipMode defaulted, IP/hostname validated, only on type LoadBalancer", async () => {
    await core.createNamespacedService({ namespace: "default", body: lbService("ing-1") });
    const ok = await core.patchNamespacedServiceStatus(
      {
        name: "ing-1",
        namespace: "default",
        body: {
          status: { loadBalancer: { ingress: [{ ip: "203.0.113.10" }, { hostname: "lb.example.com" }] } },
        },
      },
      merge,
    );
    expect(ok.status?.loadBalancer?.ingress).toEqual([
      { ip: "203.0.113.10", ipMode: "VIP" },
      { hostname: "lb.example.com" },
    ]);
    const badIp = await apiError(
      core.patchNamespacedServiceStatus(
        {
          name: "ing-1",
          namespace: "default",
          body: { status: { loadBalancer: { ingress: [{ ip: "foo" }] } } },
        },
        merge,
      ),
    );
    expect(badIp.code).toBe(422);
    expect(badIp.status.message).toBe(
      'Service "ing-1" is invalid: status.loadBalancer.ingress[0].ip: Invalid value: "foo": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    );
    const ipHost = await apiError(
      core.patchNamespacedServiceStatus(
        {
          name: "ing-1",
          namespace: "default",
          body: { status: { loadBalancer: { ingress: [{ hostname: "1.2.3.4" }] } } },
        },
        merge,
      ),
    );
    expect(ipHost.status.details?.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        message: 'Invalid value: "1.2.3.4": must be a DNS name, not an IP address',
        field: "status.loadBalancer.ingress[0].hostname",
      },
    ]);
    await core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "ing-2" }, spec: { ports: [{ port: 80 }] } },
    });
    const notLb = await apiError(
      core.patchNamespacedServiceStatus(
        {
          name: "ing-2",
          namespace: "default",
          body: { status: { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } } },
        },
        merge,
      ),
    );
    expect(notLb.status.message).toBe(
      "Service \"ing-2\" is invalid: status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
    );
    // changing the type away from LoadBalancer clears status.loadBalancer
    const cleared = await core.patchNamespacedService(
      {
        name: "ing-1",
        namespace: "default",
        body: { spec: { type: "ClusterIP" } },
      },
      merge,
    );
    expect(cleared.spec?.type).toBe("ClusterIP");
    expect(cleared.status?.loadBalancer).toEqual({});
    expect(cleared.spec?.ports?.[0]?.nodePort).toBeUndefined();
  });
});

describe("delete and finalizers", () => {
  test("node delete → Status Success with uid; service delete → the Service", async () => {
    const n = await core.createNode({ body: node("del-1") });
    const r = await fetch(`${sim.url}/api/v1/nodes/del-1`, { method: "DELETE" });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: { name: "del-1", kind: "nodes", uid: n.metadata?.uid },
    });
    await core.createNamespacedService({ namespace: "default", body: lbService("del-svc") });
    const svc = await core.deleteNamespacedService({ name: "del-svc", namespace: "default" });
    expect(svc.kind).toBe("Service");
    expect(svc.metadata?.name).toBe("del-svc");
    const again = await apiError(core.deleteNode({ name: "del-1" }));
    expect(again.code).toBe(404);
  });

  test("uid precondition mismatch → 409 with the Kind-form message", async () => {
    const n = await core.createNode({ body: node("del-2") });
    const err = await apiError(
      core.deleteNode({ name: "del-2", body: { preconditions: { uid: "not-the-uid" } } }),
    );
    expect(err.code).toBe(409);
    expect(err.status).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `Operation cannot be fulfilled on Node "del-2": the UID in the precondition (not-the-uid) does not match the UID in record (${n.metadata?.uid}). The object might have been deleted and then recreated`,
      reason: "Conflict",
      details: { name: "del-2", kind: "Node" },
      code: 409,
    });
    const rvErr = await apiError(
      core.deleteNode({ name: "del-2", body: { preconditions: { resourceVersion: "1" } } }),
    );
    expect(rvErr.status.message).toBe(
      `Operation cannot be fulfilled on Node "del-2": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${n.metadata?.resourceVersion}). The object might have been modified`,
    );
    const ok = await core.deleteNode({ name: "del-2", body: { preconditions: { uid: n.metadata?.uid } } });
    expect(ok.status).toBe("Success");
  });

  test("finalizers: deletionTimestamp, kept object, no new finalizers, last finalizer removal deletes", async () => {
    await core.createNamespacedService({
      namespace: "default",
      body: {
        ...lbService("del-fin"),
        metadata: { name: "del-fin", finalizers: ["service.kubernetes.io/load-balancer-cleanup"] },
      },
    });
    const marked = await core.deleteNamespacedService({ name: "del-fin", namespace: "default" });
    expect(marked.metadata?.deletionTimestamp).toBeInstanceOf(Date);
    expect(marked.metadata?.deletionGracePeriodSeconds).toBe(0);
    const still = await core.readNamespacedService({ name: "del-fin", namespace: "default" });
    expect(still.metadata?.finalizers).toEqual(["service.kubernetes.io/load-balancer-cleanup"]);
    const repeat = await core.deleteNamespacedService({ name: "del-fin", namespace: "default" });
    expect(repeat.metadata?.resourceVersion).toBe(still.metadata?.resourceVersion);
    const recreate = await apiError(
      core.createNamespacedService({ namespace: "default", body: lbService("del-fin") }),
    );
    expect(recreate.code).toBe(409);
    expect(recreate.status.message).toBe('object is being deleted: services "del-fin" already exists');
    const adding = await apiError(
      core.patchNamespacedService(
        {
          name: "del-fin",
          namespace: "default",
          body: {
            metadata: { finalizers: ["service.kubernetes.io/load-balancer-cleanup", "example.com/f"] },
          },
        },
        merge,
      ),
    );
    expect(adding.code).toBe(422);
    expect(adding.status.message).toBe(
      'Service "del-fin" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/f"}',
    );
    const last = await core.patchNamespacedServiceStatus(
      { name: "del-fin", namespace: "default", body: { metadata: { finalizers: null } } },
      merge,
    );
    expect(last.metadata?.finalizers).toBeUndefined();
    const gone = await apiError(core.readNamespacedService({ name: "del-fin", namespace: "default" }));
    expect(gone.code).toBe(404);
  });

  test("propagationPolicy=Foreground adds foregroundDeletion, which the simulated GC removes", async () => {
    await core.createNode({ body: node("del-gc") });
    // the generated client types this response as V1Status, so read the raw body
    const r = await fetch(`${sim.url}/api/v1/nodes/del-gc?propagationPolicy=Foreground`, {
      method: "DELETE",
    });
    expect(r.status).toBe(200);
    const marked = (await r.json()) as V1Node;
    expect(marked.kind).toBe("Node");
    expect(marked.metadata?.finalizers).toEqual(["foregroundDeletion"]);
    expect(typeof marked.metadata?.deletionTimestamp).toBe("string");
    for (let i = 0; i < 50 && sim.get("Node", undefined, "del-gc") !== undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sim.get("Node", undefined, "del-gc")).toBeUndefined();
  });
});

describe("validation", () => {
  test("spec.providerID is immutable once set", async () => {
    await core.createNode({ body: node("pid-1") });
    const set = await core.patchNode(
      { name: "pid-1", body: { spec: { providerID: "simulated://a" } } },
      merge,
    );
    expect(set.spec?.providerID).toBe("simulated://a");
    const err = await apiError(
      core.patchNode({ name: "pid-1", body: { spec: { providerID: "simulated://b" } } }, merge),
    );
    expect(err.code).toBe(422);
    expect(err.status).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        'Node "pid-1" is invalid: spec.providerID: Forbidden: node updates may not change providerID except from "" to valid',
      reason: "Invalid",
      details: {
        name: "pid-1",
        kind: "Node",
        causes: [
          {
            reason: "FieldValueForbidden",
            message: 'Forbidden: node updates may not change providerID except from "" to valid',
            field: "spec.providerID",
          },
        ],
      },
      code: 422,
    });
    const cidr = await core.patchNode(
      { name: "pid-1", body: { spec: { podCIDRs: ["10.1.0.0/24"] } } },
      merge,
    );
    expect(cidr.spec?.podCIDR).toBe("10.1.0.0/24");
    const cidrErr = await apiError(
      core.patchNode({ name: "pid-1", body: { spec: { podCIDRs: ["10.2.0.0/24"] } } }, merge),
    );
    expect(cidrErr.status.details?.causes?.map((c) => c.field)).toEqual(["spec.podCIDRs"]);
  });

  test("label key and value validation → 422 on metadata.labels", async () => {
    const err = await apiError(
      core.createNode({
        body: node("lbl-1", { metadata: { name: "lbl-1", labels: { "bad key": "ok", good: "-bad-" } } }),
      }),
    );
    expect(err.code).toBe(422);
    expect(err.status.details?.kind).toBe("Node");
    expect(err.status.details?.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        message:
          "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        field: "metadata.labels",
      },
      {
        reason: "FieldValueInvalid",
        message:
          "Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        field: "metadata.labels",
      },
    ]);
    await core.createNode({ body: node("lbl-2") });
    const long = await apiError(
      core.patchNode({ name: "lbl-2", body: { metadata: { labels: { k: "v".repeat(64) } } } }, merge),
    );
    expect(long.status.message).toContain("metadata.labels: Invalid value:");
    expect(long.status.message).toContain("must be no more than 63 bytes");
    expect(long.status.details?.causes?.every((c) => c.field === "metadata.labels")).toBe(true);
  });

  test("taint validation: key, effect, duplicates at metadata.taints[i]", async () => {
    await core.createNode({ body: node("taint-1") });
    const err = await apiError(
      core.patchNode(
        {
          name: "taint-1",
          body: {
            spec: {
              taints: [
                { key: "a", effect: "Sometimes" },
                { key: "b", effect: "" },
                { key: "c", value: "1", effect: "NoSchedule" },
                { key: "c", value: "2", effect: "NoSchedule" },
                { key: "bad key!", effect: "NoExecute" },
              ],
            },
          },
        },
        merge,
      ),
    );
    expect(err.code).toBe(422);
    const causes = err.status.details?.causes ?? [];
    expect(causes).toContainEqual({
      reason: "FieldValueNotSupported",
      message:
        'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
      field: "metadata.taints[0].effect",
    });
    expect(causes).toContainEqual({
      reason: "FieldValueRequired",
      message: "Required value",
      field: "metadata.taints[1].effect",
    });
    expect(causes).toContainEqual({
      reason: "FieldValueDuplicate",
      message:
        'Duplicate value: {"key":"c","value":"2","effect":"NoSchedule"}: taints must be unique by key and effect pair',
      field: "metadata.taints[3]",
    });
    expect(causes.some((c) => c.field === "metadata.taints[4].key" && c.reason === "FieldValueInvalid")).toBe(
      true,
    );
  });

  test("finalizer names must be qualified", async () => {
    const err = await apiError(
      core.createNode({ body: node("fn-1", { metadata: { name: "fn-1", finalizers: ["custom"] } }) }),
    );
    expect(err.status.message).toBe(
      'Node "fn-1" is invalid: metadata.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified',
    );
  });
});

describe("events", () => {
  test("stored as posted; involvedObject.namespace must match; count patch via SMP", async () => {
    const ev = await core.createNamespacedEvent({
      namespace: "default",
      body: {
        metadata: { name: "n1.17a0b0c0d0e0f000", namespace: "default" },
        involvedObject: { kind: "Node", name: "n1", uid: "n1" },
        type: "Normal",
        count: 1,
        source: { component: "fleet-ccm" },
      },
    });
    expect(ev.reason).toBeUndefined();
    expect(ev.involvedObject.name).toBe("n1");
    expect(ev.source?.component).toBe("fleet-ccm");
    const mismatch = await apiError(
      core.createNamespacedEvent({
        namespace: "default",
        body: {
          metadata: { name: "e2" },
          involvedObject: { kind: "Service", name: "s", namespace: "other" },
        },
      }),
    );
    expect(mismatch.code).toBe(422);
    expect(mismatch.status.message).toBe(
      'Event "e2" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace',
    );
    const patched = await core.patchNamespacedEvent(
      {
        name: "n1.17a0b0c0d0e0f000",
        namespace: "default",
        body: { count: 2, lastTimestamp: "2026-01-02T03:04:05Z", message: "again" },
      },
      smp,
    );
    expect(patched.count).toBe(2);
    expect(patched.message).toBe("again");
    const missing = await apiError(
      core.patchNamespacedEvent({ name: "nope", namespace: "default", body: { count: 2 } }, smp),
    );
    expect(missing.code).toBe(404);
    const all = await core.listEventForAllNamespaces({ fieldSelector: "involvedObject.name=n1" });
    expect(all.items.map((e) => e.metadata?.name)).toEqual(["n1.17a0b0c0d0e0f000"]);
  });
});

describe("leases", () => {
  test("create race → 409 AlreadyExists, PUT without RV → 422, stale PUT → 409", async () => {
    const coord = kc.makeApiClient(CoordinationV1Api);
    const body = {
      metadata: { name: "cloud-controller-manager", namespace: "kube-system" },
      spec: { holderIdentity: "a", leaseDurationSeconds: 15 },
    };
    const l = await coord.createNamespacedLease({ namespace: "kube-system", body });
    expect(l.kind).toBe("Lease");
    expect(l.apiVersion).toBe("coordination.k8s.io/v1");
    const dup = await apiError(coord.createNamespacedLease({ namespace: "kube-system", body }));
    expect(dup.status.message).toBe('leases.coordination.k8s.io "cloud-controller-manager" already exists');
    expect(dup.status.details).toEqual({
      name: "cloud-controller-manager",
      group: "coordination.k8s.io",
      kind: "leases",
    });
    const noRv = await apiError(
      coord.replaceNamespacedLease({ name: "cloud-controller-manager", namespace: "kube-system", body }),
    );
    expect(noRv.code).toBe(422);
    expect(noRv.status.message).toBe(
      'leases.coordination.k8s.io "cloud-controller-manager" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
    );
    const renewed = await coord.replaceNamespacedLease({
      name: "cloud-controller-manager",
      namespace: "kube-system",
      body: { ...l, spec: { ...l.spec, holderIdentity: "a", renewTime: new Date() } },
    });
    expect(renewed.metadata?.resourceVersion).not.toBe(l.metadata?.resourceVersion);
    const stale = await apiError(
      coord.replaceNamespacedLease({ name: "cloud-controller-manager", namespace: "kube-system", body: l }),
    );
    expect(stale.code).toBe(409);
  });
});

describe("direct store access and auth", () => {
  test("direct API goes through the same write path and never exposes stored objects", async () => {
    const created = sim.create("Node", { metadata: { name: "direct-1", labels: { a: "1" } } });
    expect(created.metadata?.uid).toBeDefined();
    const got = sim.get("Node", undefined, "direct-1");
    expect(got?.metadata?.labels).toEqual({ a: "1" });
    if (got?.metadata?.labels) got.metadata.labels["a"] = "mutated";
    expect(sim.get("Node", undefined, "direct-1")?.metadata?.labels).toEqual({ a: "1" });
    const viaHttp = await core.readNode({ name: "direct-1" });
    expect(viaHttp.metadata?.uid).toBe(created.metadata?.uid);
    const st = sim.updateStatus("Node", { metadata: { name: "direct-1" }, status: { phase: "Running" } });
    expect((st["status"] as { phase?: string }).phase).toBe("Running");
    expect(() =>
      sim.update("Node", { metadata: { name: "direct-1" }, spec: { taints: [{ key: "k" }] } }),
    ).toThrow(/metadata\.taints\[0\]\.effect: Required value/);
    const svc = sim.create("Service", { metadata: { name: "direct-svc" }, spec: { ports: [{ port: 80 }] } });
    expect(svc.metadata?.namespace).toBe("default");
    expect(sim.list("Service", "default").some((s) => s.metadata?.name === "direct-svc")).toBe(true);
    sim.delete("Service", "default", "direct-svc");
    expect(sim.get("Service", "default", "direct-svc")).toBeUndefined();
    expect(sim.requestCount()).toBeGreaterThan(10);
    expect(sim.requestCount("PATCH")).toBeGreaterThan(0);
  });

  test("token: missing or wrong bearer → 401 Unauthorized Status", async () => {
    const secured = await startKubeApiServer({ token: "s3cret" });
    try {
      const r = await fetch(`${secured.url}/api/v1/nodes`);
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      });
      const kc2 = new KubeConfig();
      kc2.loadFromOptions(secured.kubeConfigOptions());
      const list = await kc2.makeApiClient(CoreV1Api).listNode();
      expect(list.items).toEqual([]);
    } finally {
      await secured.close();
    }
  });
});

describe("--service-node-port-range", () => {
  test("allocates inside the configured range and says so when it is full", async () => {
    const small = await startKubeApiServer({ serviceNodePortRange: { min: 40000, max: 40001 } });
    try {
      const skc = new KubeConfig();
      skc.loadFromOptions(small.kubeConfigOptions());
      const api = skc.makeApiClient(CoreV1Api);
      const ports: number[] = [];
      for (const name of ["a", "b"]) {
        const s = await api.createNamespacedService({ namespace: "default", body: lbService(name) });
        ports.push(s.spec?.ports?.[0]?.nodePort ?? 0);
      }
      expect(ports.sort()).toEqual([40000, 40001]);
      const full = await apiError(
        api.createNamespacedService({ namespace: "default", body: lbService("c") }),
      );
      expect(full.code).toBe(422);
      expect(full.status.message).toContain("failed to allocate a nodePort: range is full");
      const outside = await apiError(
        api.createNamespacedService({
          namespace: "default",
          body: {
            metadata: { name: "d" },
            spec: { type: "NodePort", ports: [{ port: 80, nodePort: 30000 }] },
          },
        }),
      );
      expect(outside.status.message).toContain("The range of valid ports is 40000-40001");
    } finally {
      await small.close();
    }
  });
});
