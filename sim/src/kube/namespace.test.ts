// Namespace deletion as kube-apiserver and the namespace controller do it, and DELETE's status codes.

import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { type KubeApiServer, type KubeObject, startKubeApiServer } from "./index.js";

let sim: KubeApiServer;

beforeAll(async () => {
  sim = await startKubeApiServer();
});

afterAll(async () => {
  await sim.close();
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return cond();
}

async function del(
  path: string,
  body?: object,
): Promise<{ status: number; body: KubeObject & Record<string, unknown> }> {
  const init: RequestInit = { method: "DELETE" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { "Content-Type": "application/json" };
  }
  const r = await fetch(`${sim.url}${path}`, init);
  return { status: r.status, body: (await r.json()) as KubeObject & Record<string, unknown> };
}

function service(ns: string, name: string, finalizers?: string[]): object {
  const metadata: Record<string, unknown> = { name, namespace: ns };
  if (finalizers !== undefined) metadata["finalizers"] = finalizers;
  return { metadata, spec: { ports: [{ port: 80 }] } };
}

describe("deleting a namespace", () => {
  test("DELETE marks it Terminating and returns it; its content goes, then the namespace", async () => {
    sim.create("Namespace", { metadata: { name: "gone" } });
    sim.create("Service", service("gone", "a"));
    const r = await del("/api/v1/namespaces/gone");
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe("Namespace");
    expect(r.body.metadata?.deletionTimestamp).toEqual(expect.any(String));
    expect(r.body["status"]).toEqual({ phase: "Terminating" });
    expect(await waitFor(() => sim.get("Namespace", undefined, "gone") === undefined)).toBe(true);
    expect(sim.list("Service", "gone")).toEqual([]);
  });

  test("while content waits on a finalizer the namespace stays Terminating and refuses new content", async () => {
    sim.create("Namespace", { metadata: { name: "held" } });
    sim.create("Service", service("held", "kept", ["example.com/hold"]));
    expect((await del("/api/v1/namespaces/held")).status).toBe(200);
    expect(
      await waitFor(() => sim.get("Service", "held", "kept")?.metadata?.deletionTimestamp !== undefined),
    ).toBe(true);
    expect(
      (sim.get("Namespace", undefined, "held")?.["status"] as { phase?: string } | undefined)?.phase,
    ).toBe("Terminating");
    const r = await fetch(`${sim.url}/api/v1/namespaces/held/services`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(service("held", "late")),
    });
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        'services "late" is forbidden: unable to create new content in namespace held because it is being terminated',
      reason: "Forbidden",
      details: {
        name: "late",
        kind: "services",
        causes: [
          {
            reason: "NamespaceTerminating",
            message: "namespace held is being terminated",
            field: "metadata.namespace",
          },
        ],
      },
      code: 403,
    });
    sim.patch("Service", "held", "kept", "merge", { metadata: { finalizers: null } });
    expect(await waitFor(() => sim.get("Namespace", undefined, "held") === undefined)).toBe(true);
  });

  test.each([
    ["propagationPolicy=Foreground", "?propagationPolicy=Foreground"],
    ["propagationPolicy=Orphan", "?propagationPolicy=Orphan"],
    ["a finalizer of its own, removed later", ""],
  ])("%s: the content is deleted, and the namespace once its finalizers are gone", async (_, query) => {
    const name = `ns-${query === "" ? "own" : query.slice(query.indexOf("=") + 1).toLowerCase()}`;
    sim.create("Namespace", { metadata: { name, finalizers: ["example.com/keep"] } });
    sim.create("Service", service(name, "content"));
    sim.create("Event", {
      metadata: { name: "ev", namespace: name },
      involvedObject: { kind: "Service", namespace: name, name: "content" },
    });
    expect((await del(`/api/v1/namespaces/${name}${query}`)).status).toBe(200);
    expect(
      await waitFor(() => sim.list("Service", name).length === 0 && sim.list("Event", name).length === 0),
    ).toBe(true);
    // The namespace controller removed spec.finalizers; the namespace waits on example.com/keep.
    expect(
      await waitFor(() => {
        const ns = sim.get("Namespace", undefined, name);
        return (ns?.["spec"] as { finalizers?: string[] } | undefined)?.finalizers === undefined;
      }),
    ).toBe(true);
    expect(sim.get("Namespace", undefined, name)?.metadata?.finalizers).toContain("example.com/keep");
    sim.patch("Namespace", undefined, name, "json", [{ op: "remove", path: "/metadata/finalizers/0" }]);
    expect(await waitFor(() => sim.get("Namespace", undefined, name) === undefined)).toBe(true);
  });
});

describe("the namespace registry's DELETE", () => {
  test("orphanDependents=false: foregroundDeletion added, 202 as the namespace is not gone yet", async () => {
    sim.create("Namespace", { metadata: { name: "ns-fg" } });
    const r = await del("/api/v1/namespaces/ns-fg", { orphanDependents: false });
    expect(r.status).toBe(202);
    expect(r.body.metadata?.finalizers).toEqual(["foregroundDeletion"]);
    expect(await waitFor(() => sim.get("Namespace", undefined, "ns-fg") === undefined)).toBe(true);
  });

  test("a UID precondition that does not match: 409 with the namespace registry's message", async () => {
    const ns = sim.create("Namespace", { metadata: { name: "ns-uid" } });
    const r = await del("/api/v1/namespaces/ns-uid", { preconditions: { uid: "other" } });
    expect(r.status).toBe(409);
    expect(r.body["message"]).toBe(
      `Operation cannot be fulfilled on namespaces "ns-uid": Precondition failed: UID in precondition: other, UID in object meta: ${ns.metadata?.uid}`,
    );
    expect(sim.get("Namespace", undefined, "ns-uid")?.metadata?.deletionTimestamp).toBeUndefined();
  });
});

describe("DELETE status codes and options", () => {
  test("202 when the object stays (finalizers) and orphanDependents=false; 200 otherwise", async () => {
    sim.create("Service", service("default", "fin-202", ["example.com/hold"]));
    const accepted = await del("/api/v1/namespaces/default/services/fin-202?orphanDependents=false");
    expect(accepted.status).toBe(202);
    expect(accepted.body.metadata?.deletionTimestamp).toEqual(expect.any(String));
    const again = await del("/api/v1/namespaces/default/services/fin-202");
    expect(again.status).toBe(200);
    sim.create("Node", { metadata: { name: "n-202" } });
    const gone = await del("/api/v1/nodes/n-202", { orphanDependents: false });
    expect(gone.status).toBe(200);
    expect(gone.body["status"]).toBe("Success");
  });

  test("a negative gracePeriodSeconds is accepted (read as 1 s) and deletes", async () => {
    sim.create("Node", { metadata: { name: "n-grace" } });
    const r = await del("/api/v1/nodes/n-grace?gracePeriodSeconds=-5");
    expect(r.status).toBe(200);
    expect(sim.get("Node", undefined, "n-grace")).toBeUndefined();
  });

  test("an unknown propagationPolicy → 422 listing the supported values", async () => {
    sim.create("Node", { metadata: { name: "n-pp" } });
    const r = await del("/api/v1/nodes/n-pp?propagationPolicy=Later");
    expect(r.status).toBe(422);
    expect(r.body["message"]).toBe(
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Later": supported values: "Foreground", "Background", "Orphan", "nil"',
    );
  });
});
