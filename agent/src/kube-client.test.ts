// The agent's core/v1 client against the Kubernetes API simulator, over real HTTP.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { type KubeApiServer, startFaultProxy, startKubeApiServer } from "@fleet-ccm/sim";
import { afterEach, describe, expect, test } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { apiFailure } from "./apply/errors.js";
import { KubeClient, KubeRequestError } from "./kube-client.js";

let sim: KubeApiServer | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function client(
  opts: Parameters<typeof startKubeApiServer>[0] = {},
): Promise<[KubeApiServer, KubeClient]> {
  sim = await startKubeApiServer(opts);
  const kc = new KubeConfig();
  kc.loadFromOptions(sim.kubeConfigOptions());
  return [sim, new KubeClient(kc)];
}

function addNodes(s: KubeApiServer, from: number, count: number): void {
  for (let i = from; i < from + count; i++) s.create("Node", { metadata: { name: `n-${i}` } });
}

describe("KubeClient", () => {
  test("lists in pages of 500 with one resourceVersion, and sees every item", async () => {
    const [s, api] = await client();
    addNodes(s, 0, 1234);
    const before = s.requestCount("GET");
    const seen: string[] = [];
    const list = await api.listNodes((n) => {
      seen.push(n.metadata?.name ?? "");
      return n;
    });
    expect(s.requestCount("GET") - before).toBe(3);
    expect(list.items).toHaveLength(1234);
    expect(new Set(list.items.map((n) => n.metadata?.name)).size).toBe(1234);
    expect(seen).toEqual(list.items.map((n) => n.metadata?.name));
    expect(list.metadata?.resourceVersion).toBe(s.resourceVersion());
  });

  test("an expired continue token starts the list over, paged, never mixing two points in time", async () => {
    const [s, api] = await client({ watchHistory: 5 });
    addNodes(s, 0, 600);
    let wrote = false;
    const before = s.requestCount("GET");
    const list = await api.listNodes((n) => {
      // Between the first and the second page: enough writes to compact the token's revision.
      if (!wrote) addNodes(s, 600, 20);
      wrote = true;
      return n;
    });
    expect(list.items).toHaveLength(620);
    expect(new Set(list.items.map((n) => n.metadata?.name)).size).toBe(620);
    expect(list.metadata?.resourceVersion).toBe(s.resourceVersion());
    // Page 1, the expired page 2, then the fresh start in two pages of 500: no unpaged LIST.
    expect(s.requestCount("GET") - before).toBe(4);
  });

  test("tokens that keep expiring end in one unpaged LIST, as client-go's pager", async () => {
    const [s, api] = await client({ watchHistory: 5 });
    addNodes(s, 0, 600);
    let pageStarts = 0;
    let n = 600;
    const list = await api.listNodes((node) => {
      // Every paged start is compacted under its token; the unpaged answer is one page.
      if (node.metadata?.name === "n-0" && ++pageStarts <= 3) {
        addNodes(s, n, 10);
        n += 10;
      }
      return node;
    });
    expect(pageStarts).toBe(4);
    expect(list.items).toHaveLength(630);
    expect(list.metadata?.resourceVersion).toBe(s.resourceVersion());
  });

  test("a failed page or an answer that is not a list is an error, never a partial or empty list", async () => {
    const [s] = await client();
    addNodes(s, 0, 700);
    const proxy = await startFaultProxy({ target: s.url });
    try {
      const kc = new KubeConfig();
      const opts = s.kubeConfigOptions();
      kc.loadFromOptions({ ...opts, clusters: opts.clusters.map((c) => ({ ...c, server: proxy.url })) });
      const api = new KubeClient(kc);
      proxy.setFaults([{ method: "GET", path: "/api/v1/nodes", query: /continue=/, status: 500 }]);
      await expect(api.listNodes((n) => n)).rejects.toMatchObject({ code: 500 });
      proxy.setFaults([{ method: "GET", path: "/api/v1/nodes", status: 200, body: "{}" }]);
      await expect(api.listNodes((n) => n)).rejects.toThrow(/not a list/);
      proxy.clearFaults();
      expect((await api.listNodes((n) => n)).items).toHaveLength(700);
    } finally {
      await proxy.close();
    }
  });

  test("patches, reads and deletes with preconditions; refusals carry the API's Status", async () => {
    const [s, api] = await client();
    const created = s.create("Node", { metadata: { name: "a" } });
    const uid = created.metadata?.uid ?? "";
    await api.patchNode("a", { metadata: { uid, labels: { x: "1" } } });
    expect((await api.readNode("a")).metadata?.labels).toEqual({ x: "1" });
    const status = await api.patchNodeStatus("a", {
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.1" }] },
    });
    expect(status.status?.addresses).toEqual([{ type: "InternalIP", address: "10.0.0.1" }]);
    const stale = await api
      .patchNode("a", { metadata: { resourceVersion: created.metadata?.resourceVersion } })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(KubeRequestError);
    expect(apiFailure(stale)).toMatchObject({ code: 409, reason: "Conflict" });
    const otherUid = await api.patchNode("a", { metadata: { uid: "other" } }).catch((e: unknown) => e);
    expect(apiFailure(otherUid)).toMatchObject({ code: 422, reason: "Invalid" });
    await expect(api.deleteNode("a", "other")).rejects.toMatchObject({ code: 409 });
    await api.deleteNode("a", uid);
    const gone = await api.readNode("a").catch((e: unknown) => e);
    expect(apiFailure(gone)).toMatchObject({ code: 404, reason: "NotFound" });
  });

  test("Service status, Events and the bearer token from the kubeconfig", async () => {
    const [s, api] = await client({ token: "t0ken" });
    const svc = s.create("Service", {
      metadata: { name: "web", namespace: "default" },
      spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
    });
    await api.patchServiceStatus("default", "web", {
      metadata: { uid: svc.metadata?.uid },
      status: { loadBalancer: { ingress: [{ ip: "203.0.113.7" }] } },
    });
    expect((await api.readService("default", "web")).status?.loadBalancer?.ingress).toEqual([
      { ip: "203.0.113.7", ipMode: "VIP" },
    ]);
    await api.createEvent("default", {
      metadata: { name: "web.1", namespace: "default" },
      involvedObject: { kind: "Service", apiVersion: "v1", name: "web", namespace: "default" },
      reason: "EnsuredLoadBalancer",
      message: "Ensured load balancer",
      type: "Normal",
      count: 1,
    });
    await api.patchEvent("default", "web.1", { count: 2 });
    expect(s.get("Event", "default", "web.1")?.["count"]).toBe(2);
    expect((await api.version()).gitVersion).toMatch(/^v1\./);
  });

  test("a wrong token is a 401 KubeRequestError, not a hang or a crash", async () => {
    sim = await startKubeApiServer({ token: "right" });
    const kc = new KubeConfig();
    const opts = sim.kubeConfigOptions();
    kc.loadFromOptions({ ...opts, users: opts.users.map((u) => ({ ...u, token: "wrong" })) });
    const err = await new KubeClient(kc).listNodes((n) => n).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 401 });
  });

  test("asks for gzip and reads a gzip answer, as kube-apiserver sends large ones (> 128 KiB)", async () => {
    const node = { metadata: { name: "n-1", labels: { big: "x".repeat(200_000) } } };
    let asked: string | undefined;
    const server = createServer((req, res) => {
      asked = req.headers["accept-encoding"];
      res.writeHead(200, { "Content-Type": "application/json", "Content-Encoding": "gzip" });
      res.end(gzipSync(JSON.stringify(node)));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as AddressInfo;
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: "u" }],
        contexts: [{ name: "c", cluster: "c", user: "u" }],
        currentContext: "c",
      });
      const got = await new KubeClient(kc).readNode("n-1");
      expect(asked).toBe("gzip");
      expect(got).toEqual(node);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
