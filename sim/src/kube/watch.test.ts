// LIST / WATCH semantics through client-node 1.4 (Watch, makeInformer) and raw HTTP.

import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
  Watch,
} from "@kubernetes/client-node";
import type { Status } from "./errors.js";
import { type KubeApiServer, type KubeObject, startKubeApiServer } from "./index.js";

interface Ev {
  type: string;
  name: string;
  rv: string;
  labels: Record<string, string> | undefined;
  code?: number;
  reason?: string;
  message?: string;
}

interface Harness {
  sim: KubeApiServer;
  kc: KubeConfig;
  core: CoreV1Api;
}

async function harness(opts: Parameters<typeof startKubeApiServer>[0] = {}): Promise<Harness> {
  const sim = await startKubeApiServer(opts);
  const kc = new KubeConfig();
  kc.loadFromOptions(sim.kubeConfigOptions());
  return { sim, kc, core: kc.makeApiClient(CoreV1Api) };
}

const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

async function waitFor(pred: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface RunningWatch {
  events: Ev[];
  ended: () => boolean;
  stop: () => void;
}

async function watch(h: Harness, path: string, params: Record<string, string>): Promise<RunningWatch> {
  const events: Ev[] = [];
  let done = false;
  const w = new Watch(h.kc);
  const ctrl = await w.watch(
    path,
    params,
    (
      type: string,
      obj: {
        metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> };
        code?: number;
        reason?: string;
        message?: string;
      },
    ) => {
      const ev: Ev = {
        type,
        name: obj.metadata?.name ?? "",
        rv: obj.metadata?.resourceVersion ?? "",
        labels: obj.metadata?.labels,
      };
      if (obj.code !== undefined) ev.code = obj.code;
      if (obj.reason !== undefined) ev.reason = obj.reason;
      if (obj.message !== undefined) ev.message = obj.message;
      events.push(ev);
    },
    () => {
      done = true;
    },
  );
  return { events, ended: () => done, stop: () => ctrl.abort() };
}

async function apiError(p: Promise<unknown>): Promise<{ code: number; status: Status }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException) return { code: e.code, status: JSON.parse(String(e.body)) as Status };
    throw e;
  }
  throw new Error("expected failure");
}

function names(items: readonly { metadata?: { name?: string } }[]): string[] {
  return items.map((i) => i.metadata?.name ?? "");
}

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.sim.close();
});

describe("watch stream", () => {
  test("HTTP 200, chunked, one compact JSON event per line", async () => {
    h.sim.create("Node", { metadata: { name: "raw-1", labels: { raw: "yes" } } });
    const ctrl = new AbortController();
    const r = await fetch(`${h.sim.url}/api/v1/nodes?watch=1&labelSelector=raw%3Dyes`, {
      signal: ctrl.signal,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.headers.get("transfer-encoding")).toBe("chunked");
    const reader = r.body?.getReader();
    if (reader === undefined) throw new Error("no body");
    let text = "";
    const decoder = new TextDecoder();
    h.sim.patch("Node", undefined, "raw-1", "merge", { metadata: { annotations: { a: "1" } } });
    while ((text.match(/\n/g) ?? []).length < 2) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += decoder.decode(chunk.value);
    }
    ctrl.abort();
    const lines = text.split("\n").filter((l) => l !== "");
    expect(lines).toHaveLength(2);
    const parsed = lines.map((l) => JSON.parse(l) as { type: string; object: KubeObject });
    expect(parsed.map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    expect(parsed[0]?.object.kind).toBe("Node");
    expect(parsed[0]?.object.apiVersion).toBe("v1");
    for (const l of lines) expect(l).toBe(JSON.stringify(JSON.parse(l)));
    await waitFor(() => h.sim.watchCount() === 0);
  });

  test("watch from a list RV delivers exactly the later changes; reconnect from the last RV misses nothing", async () => {
    const { core, sim } = h;
    await core.createNode({ body: { metadata: { name: "seq-0", labels: { seq: "y" } } } });
    const list = await core.listNode({ labelSelector: "seq=y" });
    const listRV = list.metadata?.resourceVersion ?? "";
    expect(names(list.items)).toEqual(["seq-0"]);
    // changes made before the watch starts must be replayed from the history
    await core.createNode({ body: { metadata: { name: "seq-1", labels: { seq: "y" } } } });
    const w1 = await watch(h, "/api/v1/nodes", { resourceVersion: listRV, labelSelector: "seq=y" });
    await core.patchNode({ name: "seq-0", body: { metadata: { annotations: { step: "2" } } } }, merge);
    await core.createNode({ body: { metadata: { name: "seq-2", labels: { seq: "y" } } } });
    await waitFor(() => w1.events.length === 3);
    w1.stop();
    await waitFor(() => sim.watchCount() === 0);
    const lastRV = w1.events[w1.events.length - 1]?.rv ?? "";
    // while disconnected
    await core.deleteNode({ name: "seq-1" });
    await core.patchNode({ name: "seq-2", body: { metadata: { annotations: { step: "5" } } } }, merge);
    await core.createNode({ body: { metadata: { name: "other" } } }); // not selected
    const w2 = await watch(h, "/api/v1/nodes", { resourceVersion: lastRV, labelSelector: "seq=y" });
    await core.createNode({ body: { metadata: { name: "seq-3", labels: { seq: "y" } } } });
    await waitFor(() => w2.events.length === 3);
    await new Promise((r) => setTimeout(r, 50));
    w2.stop();
    const all = [...w1.events, ...w2.events];
    expect(all.map((e) => `${e.type} ${e.name}`)).toEqual([
      "ADDED seq-1",
      "MODIFIED seq-0",
      "ADDED seq-2",
      "DELETED seq-1",
      "MODIFIED seq-2",
      "ADDED seq-3",
    ]);
    const rvs = all.map((e) => Number(e.rv));
    expect([...rvs].sort((a, b) => a - b)).toEqual(rvs);
    expect(new Set(rvs).size).toBe(rvs.length);
    expect(rvs[0]).toBeGreaterThan(Number(listRV));
  });

  test("RV unset or 0 → synthetic ADDED for every matching object, then changes", async () => {
    const { sim } = h;
    sim.create("Node", { metadata: { name: "syn-a", labels: { syn: "1" } } });
    sim.create("Node", { metadata: { name: "syn-b", labels: { syn: "1" } } });
    const variants: Record<string, string>[] = [{}, { resourceVersion: "0" }];
    for (const params of variants) {
      const w = await watch(h, "/api/v1/nodes", { ...params, labelSelector: "syn=1" });
      await waitFor(() => w.events.length === 2);
      expect(w.events.map((e) => `${e.type} ${e.name}`)).toEqual(["ADDED syn-a", "ADDED syn-b"]);
      w.stop();
    }
  });

  test("DELETED carries the last object with the deletion RV", async () => {
    const { core, sim } = h;
    const n = await core.createNode({ body: { metadata: { name: "del-ev", labels: { delev: "1" } } } });
    const w = await watch(h, "/api/v1/nodes", {
      resourceVersion: n.metadata?.resourceVersion ?? "",
      labelSelector: "delev=1",
    });
    await core.deleteNode({ name: "del-ev" });
    await waitFor(() => w.events.length === 1);
    w.stop();
    expect(w.events[0]?.type).toBe("DELETED");
    expect(w.events[0]?.labels).toEqual({ delev: "1" });
    expect(Number(w.events[0]?.rv)).toBeGreaterThan(Number(n.metadata?.resourceVersion));
    expect(w.events[0]?.rv).toBe(sim.resourceVersion());
  });

  test("selector transitions: leaving the selector → DELETED, entering → ADDED", async () => {
    const { core } = h;
    await core.createNode({ body: { metadata: { name: "sel-1" } } });
    const w = await watch(h, "/api/v1/nodes", { labelSelector: "role in (lb,edge)" });
    await core.patchNode({ name: "sel-1", body: { metadata: { labels: { role: "lb" } } } }, merge);
    await core.patchNode({ name: "sel-1", body: { metadata: { labels: { role: "edge", x: "1" } } } }, merge);
    await core.patchNode({ name: "sel-1", body: { metadata: { labels: { role: "worker" } } } }, merge);
    await waitFor(() => w.events.length === 3);
    w.stop();
    expect(w.events.map((e) => `${e.type} ${e.labels?.["role"]}`)).toEqual([
      "ADDED lb",
      "MODIFIED edge",
      "DELETED edge",
    ]);
    const current = await core.readNode({ name: "sel-1" });
    expect(w.events[2]?.rv).toBe(current.metadata?.resourceVersion);
  });

  test("field selector on all-namespace services watch (spec.type)", async () => {
    const { core } = h;
    const w = await watch(h, "/api/v1/services", { fieldSelector: "spec.type=LoadBalancer" });
    await core.createNamespacedService({
      namespace: "team-a",
      body: { metadata: { name: "s1" }, spec: { type: "LoadBalancer", ports: [{ port: 80 }] } },
    });
    await core.createNamespacedService({
      namespace: "team-b",
      body: { metadata: { name: "s2" }, spec: { ports: [{ port: 80 }] } },
    });
    await core.patchNamespacedService(
      { name: "s2", namespace: "team-b", body: { spec: { type: "LoadBalancer" } } },
      merge,
    );
    await core.patchNamespacedService(
      { name: "s1", namespace: "team-a", body: { spec: { type: "ClusterIP" } } },
      merge,
    );
    await waitFor(() => w.events.length === 3);
    w.stop();
    expect(w.events.map((e) => `${e.type} ${e.name}`)).toEqual(["ADDED s1", "ADDED s2", "DELETED s1"]);
    const all = await core.listServiceForAllNamespaces({ fieldSelector: "spec.type=LoadBalancer" });
    expect(names(all.items)).toEqual(["s2"]);
  });

  test("no-op writes emit no watch event", async () => {
    const { core } = h;
    await core.createNode({ body: { metadata: { name: "quiet", labels: { quiet: "1" } } } });
    const w = await watch(h, "/api/v1/nodes", { labelSelector: "quiet=1" });
    await waitFor(() => w.events.length === 1);
    await core.patchNode({ name: "quiet", body: { metadata: { labels: { quiet: "1" } } } }, merge);
    await core.patchNode({ name: "quiet", body: { metadata: { labels: { loud: "1" } } } }, merge);
    await waitFor(() => w.events.length === 2);
    w.stop();
    expect(w.events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    expect(w.events[1]?.labels).toEqual({ quiet: "1", loud: "1" });
  });

  test("finalizer flow on the wire: DELETE → MODIFIED with deletionTimestamp; last finalizer removed → DELETED", async () => {
    const { core, sim } = h;
    const svc = await core.createNamespacedService({
      namespace: "fin",
      body: {
        metadata: { name: "lb", finalizers: ["service.kubernetes.io/load-balancer-cleanup"] },
        spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
      },
    });
    const raw: { type: string; object: KubeObject }[] = [];
    const w = new Watch(h.kc);
    const ctrl = await w.watch(
      "/api/v1/namespaces/fin/services",
      { resourceVersion: svc.metadata?.resourceVersion ?? "" },
      (type: string, object: KubeObject) => raw.push({ type, object }),
      () => undefined,
    );
    await core.deleteNamespacedService({ name: "lb", namespace: "fin" });
    await core.patchNamespacedService({
      name: "lb",
      namespace: "fin",
      body: [{ op: "remove", path: "/metadata/finalizers" }],
    });
    await waitFor(() => raw.length === 2);
    ctrl.abort();
    expect(raw.map((e) => e.type)).toEqual(["MODIFIED", "DELETED"]);
    expect(typeof raw[0]?.object.metadata?.deletionTimestamp).toBe("string");
    expect(raw[0]?.object.metadata?.deletionGracePeriodSeconds).toBe(0);
    // watchers see the last stored state (still listing the finalizer) at the deletion revision
    expect(raw[1]?.object.metadata?.finalizers).toEqual(["service.kubernetes.io/load-balancer-cleanup"]);
    expect(raw[1]?.object.metadata?.resourceVersion).toBe(sim.resourceVersion());
    expect(sim.get("Service", "fin", "lb")).toBeUndefined();
  });

  test("sendInitialEvents streams the state then a bookmark marking the end of initial events", async () => {
    h.sim.create("Node", { metadata: { name: "wl-1", labels: { wl: "1" } } });
    const ctrl = new AbortController();
    const r = await fetch(
      `${h.sim.url}/api/v1/nodes?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&labelSelector=wl%3D1`,
      { signal: ctrl.signal },
    );
    const reader = r.body?.getReader();
    if (reader === undefined) throw new Error("no body");
    let text = "";
    while ((text.match(/\n/g) ?? []).length < 2) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    ctrl.abort();
    const [added, bookmark] = text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { type: string; object: KubeObject });
    expect(added?.type).toBe("ADDED");
    expect(bookmark).toEqual({
      type: "BOOKMARK",
      object: {
        kind: "Node",
        apiVersion: "v1",
        metadata: {
          resourceVersion: h.sim.resourceVersion(),
          annotations: { "k8s.io/initial-events-end": "true" },
        },
      },
    });
    const bad = await fetch(`${h.sim.url}/api/v1/nodes?watch=1&resourceVersionMatch=NotOlderThan`);
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as Status).message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    );
  });

  test("timeoutSeconds ends the stream cleanly", async () => {
    const started = Date.now();
    const r = await fetch(`${h.sim.url}/api/v1/nodes?watch=true&timeoutSeconds=1&labelSelector=none%3Dnone`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe("");
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(3000);
  });
});

describe("expired resource versions", () => {
  test("WATCH → 200 + one ERROR 410 event then close; LIST Exact → HTTP 410; LIST Exact in window = old state", async () => {
    const small = await harness({ watchHistory: 5 });
    try {
      const n = small.sim.create("Node", { metadata: { name: "old" } });
      const firstRV = n.metadata?.resourceVersion ?? "";
      const mid = small.sim.resourceVersion();
      for (let i = 0; i < 3; i++)
        small.sim.patch("Node", undefined, "old", "merge", { metadata: { labels: { i: String(i) } } });
      const recent = small.sim.resourceVersion();
      for (let i = 0; i < 3; i++) small.sim.create("Node", { metadata: { name: `new-${i}` } });
      const exact = await small.core.listNode({ resourceVersion: recent, resourceVersionMatch: "Exact" });
      expect(exact.metadata?.resourceVersion).toBe(recent);
      expect(names(exact.items)).toEqual(["old"]);
      expect(exact.items[0]?.metadata?.labels).toEqual({ i: "2" });
      const oldest = Number(small.sim.resourceVersion()) - 5;
      const w = await watch(small, "/api/v1/nodes", { resourceVersion: mid });
      await waitFor(() => w.ended());
      expect(w.events).toEqual([
        {
          type: "ERROR",
          name: "",
          rv: "",
          labels: undefined,
          code: 410,
          reason: "Expired",
          message: `too old resource version: ${mid} (${oldest})`,
        },
      ]);
      const r = await fetch(`${small.sim.url}/api/v1/nodes?watch=true&resourceVersion=${firstRV}`);
      expect(r.status).toBe(200);
      expect(JSON.parse(await r.text())).toEqual({
        type: "ERROR",
        object: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: `too old resource version: ${firstRV} (${oldest})`,
          reason: "Expired",
          code: 410,
        },
      });
      const gone = await apiError(
        small.core.listNode({ resourceVersion: firstRV, resourceVersionMatch: "Exact" }),
      );
      expect(gone.code).toBe(410);
      expect(gone.status).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `too old resource version: ${firstRV} (${oldest})`,
        reason: "Expired",
        code: 410,
      });
    } finally {
      await small.sim.close();
    }
  });

  test("expired continue token → 410 with a fresh token to continue inconsistently", async () => {
    const small = await harness({ watchHistory: 3 });
    try {
      for (let i = 0; i < 4; i++) small.sim.create("Node", { metadata: { name: `p-${i}` } });
      const page1 = await small.core.listNode({ limit: 2 });
      const token = page1.metadata?._continue ?? "";
      expect(token).not.toBe("");
      for (let i = 0; i < 4; i++) small.sim.create("Node", { metadata: { name: `q-${i}` } });
      const err = await apiError(small.core.listNode({ limit: 2, _continue: token }));
      expect(err.code).toBe(410);
      expect(err.status.reason).toBe("Expired");
      expect(err.status.message).toMatch(
        /^The provided continue parameter is too old to display a consistent list result\./,
      );
      const fresh = err.status.metadata.continue ?? "";
      expect(fresh).not.toBe("");
      const rest = await small.core.listNode({ limit: 100, _continue: fresh });
      expect(names(rest.items)).toEqual(["p-2", "p-3", "q-0", "q-1", "q-2", "q-3"]);
    } finally {
      await small.sim.close();
    }
  });
});

describe("list", () => {
  test("limit/continue paginate with a constant list RV; last page has no continue", async () => {
    const own = await harness();
    try {
      for (let i = 0; i < 7; i++)
        own.sim.create("Node", { metadata: { name: `page-${i}`, labels: { page: "yes" } } });
      const p1 = await own.core.listNode({ limit: 3 });
      const rv = p1.metadata?.resourceVersion;
      expect(names(p1.items)).toEqual(["page-0", "page-1", "page-2"]);
      expect(p1.metadata?.remainingItemCount).toBe(4);
      // writes between pages do not leak into the paginated (snapshot) list
      own.sim.create("Node", { metadata: { name: "page-00" } });
      own.sim.delete("Node", undefined, "page-5");
      const p2 = await own.core.listNode({ limit: 3, _continue: p1.metadata?._continue ?? "" });
      expect(p2.metadata?.resourceVersion).toBe(rv);
      expect(names(p2.items)).toEqual(["page-3", "page-4", "page-5"]);
      const p3 = await own.core.listNode({ limit: 3, _continue: p2.metadata?._continue ?? "" });
      expect(p3.metadata?.resourceVersion).toBe(rv);
      expect(names(p3.items)).toEqual(["page-6"]);
      expect(p3.metadata?._continue).toBeUndefined();
      expect(p3.metadata?.remainingItemCount).toBeUndefined();
      const rvWithContinue = await apiError(
        own.core.listNode({ limit: 3, _continue: p1.metadata?._continue ?? "", resourceVersion: "5" }),
      );
      expect(rvWithContinue.status.message).toBe(
        "specifying resource version is not allowed when using continue",
      );
      const badToken = await apiError(own.core.listNode({ _continue: "garbage!" }));
      expect(badToken.code).toBe(400);
      expect(badToken.status.message).toMatch(/^continue key is not valid/);
    } finally {
      await own.sim.close();
    }
  });

  test("label and field selectors", async () => {
    const own = await harness();
    try {
      own.sim.create("Node", { metadata: { name: "a", labels: { tier: "web", zone: "z1" } } });
      own.sim.create("Node", { metadata: { name: "b", labels: { tier: "db", zone: "z2" } } });
      own.sim.create("Node", {
        metadata: { name: "c", labels: { tier: "web" } },
        spec: { unschedulable: true },
      });
      const sel = async (labelSelector?: string, fieldSelector?: string): Promise<string[]> =>
        names((await own.core.listNode({ labelSelector, fieldSelector })).items);
      expect(await sel("tier=web")).toEqual(["a", "c"]);
      expect(await sel("tier==db")).toEqual(["b"]);
      expect(await sel("tier!=web")).toEqual(["b"]);
      expect(await sel("zone in (z1, z2)")).toEqual(["a", "b"]);
      expect(await sel("zone notin (z1)")).toEqual(["b", "c"]);
      expect(await sel("zone")).toEqual(["a", "b"]);
      expect(await sel("!zone")).toEqual(["c"]);
      expect(await sel("tier=web,zone")).toEqual(["a"]);
      expect(await sel(undefined, "metadata.name=b")).toEqual(["b"]);
      expect(await sel(undefined, "metadata.name!=b,spec.unschedulable=false")).toEqual(["a"]);
      expect(await sel(undefined, "spec.unschedulable=true")).toEqual(["c"]);
      const badField = await apiError(own.core.listNode({ fieldSelector: "spec.foo=bar" }));
      expect(badField.code).toBe(400);
      expect(badField.status).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "field label not supported: spec.foo",
        reason: "BadRequest",
        code: 400,
      });
      const badLabel = await apiError(own.core.listNode({ labelSelector: "tier in (web" }));
      expect(badLabel.code).toBe(400);
      expect(badLabel.status.reason).toBe("BadRequest");
      const match = await apiError(own.core.listNode({ resourceVersionMatch: "NotOlderThan" }));
      expect(match.code).toBe(422);
      expect(match.status.message).toBe(
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
      );
    } finally {
      await own.sim.close();
    }
  });
});

describe("client-node informer", () => {
  test("sees add/update/delete, re-watches after a clean close and relists after 410", async () => {
    const own = await harness({ watchHistory: 4 });
    try {
      own.sim.create("Node", { metadata: { name: "pre" } });
      const informer = makeInformer<V1Node>(own.kc, "/api/v1/nodes", () => own.core.listNode());
      const log: string[] = [];
      const errors: unknown[] = [];
      informer.on("add", (n) => log.push(`add ${n.metadata?.name}`));
      informer.on("update", (n) => log.push(`update ${n.metadata?.name} ${n.metadata?.labels?.["v"] ?? ""}`));
      informer.on("delete", (n) => log.push(`delete ${n.metadata?.name}`));
      informer.on("error", (e) => errors.push(e));
      await informer.start();
      await waitFor(() => log.includes("add pre"));
      await own.core.createNode({ body: { metadata: { name: "inf-1" } } });
      await own.core.patchNode({ name: "inf-1", body: { metadata: { labels: { v: "1" } } } }, merge);
      await own.core.deleteNode({ name: "pre" });
      await waitFor(() => log.length === 4);
      expect(log).toEqual(["add pre", "add inf-1", "update inf-1 1", "delete pre"]);

      // clean close: informer re-watches from its last RV, no duplicate callbacks
      own.sim.closeWatches();
      await waitFor(() => own.sim.watchCount() === 1);
      await own.core.patchNode({ name: "inf-1", body: { metadata: { labels: { v: "2" } } } }, merge);
      await waitFor(() => log.length === 5);
      expect(log[4]).toBe("update inf-1 2");

      // history overrun while disconnected: ERROR 410 → relist (missing object → delete callback)
      own.sim.setLatencyMs(300);
      own.sim.closeWatches();
      own.sim.delete("Node", undefined, "inf-1");
      for (let i = 0; i < 6; i++) own.sim.create("Node", { metadata: { name: `burst-${i}` } });
      await waitFor(() => informer.list().length === 6, 8000);
      own.sim.setLatencyMs(0);
      expect(names(informer.list()).sort()).toEqual([
        "burst-0",
        "burst-1",
        "burst-2",
        "burst-3",
        "burst-4",
        "burst-5",
      ]);
      expect(log).toContain("delete inf-1");
      expect(log.filter((l) => l.startsWith("add burst"))).toHaveLength(6);
      expect(errors).toEqual([]);
      await informer.stop();
    } finally {
      await own.sim.close();
    }
  });
});
