// What kube-apiserver answers at the HTTP level where kubectl and other clients rely on it: Tables and
// their options, Accept negotiation, boolean query parameters, fieldValidation and /openapi/v3.

import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { type KubeApiServer, startKubeApiServer } from "./index.js";
import { boolParam } from "./server.js";

let sim: KubeApiServer;

const TABLE_ACCEPT =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

beforeAll(async () => {
  sim = await startKubeApiServer();
  sim.create("Node", { metadata: { name: "n1", labels: { a: "b" } } });
});

afterAll(async () => {
  await sim.close();
});

async function get(
  path: string,
  accept?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = accept === undefined ? {} : { Accept: accept };
  const r = await fetch(`${sim.url}${path}`, { headers });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

interface TableRow {
  cells: unknown[];
  object: Record<string, unknown> | null;
}

describe("Tables", () => {
  test("a list as Table: ListMeta, column definitions, rows with PartialObjectMetadata by default", async () => {
    const { status, body } = await get("/api/v1/nodes", TABLE_ACCEPT);
    expect(status).toBe(200);
    expect(body["kind"]).toBe("Table");
    expect(body["apiVersion"]).toBe("meta.k8s.io/v1");
    expect(body["metadata"]).toEqual({ resourceVersion: sim.resourceVersion() });
    const cols = body["columnDefinitions"] as { name: string; priority: number; format: string }[];
    expect(cols.map((c) => [c.name, c.priority])).toEqual([
      ["Name", 0],
      ["Status", 0],
      ["Roles", 0],
      ["Age", 0],
      ["Version", 0],
      ["Internal-IP", 1],
      ["External-IP", 1],
      ["OS-Image", 1],
      ["Kernel-Version", 1],
      ["Container-Runtime", 1],
    ]);
    expect(cols[0]?.format).toBe("name");
    const row = (body["rows"] as TableRow[])[0];
    expect(row?.cells[0]).toBe("n1");
    expect(row?.object).toMatchObject({
      kind: "PartialObjectMetadata",
      apiVersion: "meta.k8s.io/v1",
      metadata: { name: "n1", labels: { a: "b" } },
    });
    expect(row?.object).not.toHaveProperty("spec");
  });

  test("includeObject=Object embeds the object, None leaves it out, anything else is a 400", async () => {
    const full = await get("/api/v1/nodes?includeObject=Object", TABLE_ACCEPT);
    expect((full.body["rows"] as TableRow[])[0]?.object).toMatchObject({ kind: "Node", apiVersion: "v1" });
    const none = await get("/api/v1/nodes?includeObject=None", TABLE_ACCEPT);
    expect((none.body["rows"] as TableRow[])[0]?.object).toBeNull();
    const bad = await get("/api/v1/nodes?includeObject=All", TABLE_ACCEPT);
    expect(bad.status).toBe(400);
    expect(bad.body["message"]).toBe(
      'Unable to convert to Table as requested: includeObject: Unsupported value: "All": supported values: "Metadata", "None", "Object"',
    );
  });

  test("GET of one object as Table carries its resourceVersion; v1beta1 is the first fallback", async () => {
    const node = sim.get("Node", undefined, "n1");
    const one = await get("/api/v1/nodes/n1", TABLE_ACCEPT);
    expect(one.body["metadata"]).toEqual({ resourceVersion: node?.metadata?.resourceVersion });
    expect((one.body["rows"] as TableRow[]).map((r) => r.cells[0])).toEqual(["n1"]);
    const beta = await get("/api/v1/nodes/n1", "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
    expect(beta.body["apiVersion"]).toBe("meta.k8s.io/v1beta1");
  });

  test("only untransformable representations accepted → 406; plain JSON otherwise", async () => {
    const r = await get("/api/v1/nodes", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io");
    expect(r.status).toBe(406);
    expect(r.body["reason"]).toBe("NotAcceptable");
    const plain = await get("/api/v1/nodes", "application/json;as=Table;v=v1;g=other.io,application/json");
    expect(plain.body["kind"]).toBe("NodeList");
  });

  test("a Table watch sends the column definitions in the first event only", async () => {
    const ctrl = new AbortController();
    const r = await fetch(`${sim.url}/api/v1/nodes?watch=true`, {
      headers: { Accept: TABLE_ACCEPT },
      signal: ctrl.signal,
    });
    const reader = r.body?.getReader();
    if (reader === undefined) throw new Error("no body");
    let text = "";
    const dec = new TextDecoder();
    const lines = async (n: number): Promise<string[]> => {
      while (text.split("\n").length <= n) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value);
      }
      return text.split("\n").slice(0, n);
    };
    await lines(1);
    sim.patch("Node", undefined, "n1", "merge", { metadata: { labels: { c: "d" } } });
    const evs = (await lines(2)).map(
      (l) => JSON.parse(l) as { type: string; object: Record<string, unknown> },
    );
    ctrl.abort();
    expect(evs.map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    expect(evs[0]?.object["kind"]).toBe("Table");
    expect(evs[0]?.object["columnDefinitions"]).toHaveLength(10);
    expect(evs[1]?.object["columnDefinitions"]).toBeNull();
    expect(((evs[1]?.object["rows"] ?? []) as TableRow[])[0]?.object).toMatchObject({
      metadata: { labels: { a: "b", c: "d" } },
    });
  });
});

describe("Pods", () => {
  test("namespaced and all-namespace Pod lists with the field selectors kubectl describe node sends", async () => {
    const sel = encodeURIComponent("spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded");
    for (const path of [
      `/api/v1/pods?fieldSelector=${sel}`,
      `/api/v1/namespaces/default/pods?fieldSelector=${sel}`,
    ]) {
      const r = await get(path);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ kind: "PodList", apiVersion: "v1", items: [] });
    }
    const bad = await get("/api/v1/pods?fieldSelector=spec.bogus%3Dx");
    expect(bad.status).toBe(400);
    expect(bad.body["message"]).toBe("field label not supported: spec.bogus");
  });
});

describe("boolean query parameters (apimachinery Convert_Slice_string_To_bool)", () => {
  test.each([
    ["true", true],
    ["True", true],
    ["1", true],
    ["yes", true],
    ["", true],
    ["false", false],
    ["FALSE", false],
    ["0", false],
  ])("%j → %s", (v, want) => {
    expect(boolParam(v)).toBe(want);
  });

  test("watch=True opens a watch; watch=False lists", async () => {
    const ctrl = new AbortController();
    const r = await fetch(`${sim.url}/api/v1/nodes?watch=True`, { signal: ctrl.signal });
    expect(r.status).toBe(200);
    expect(r.headers.get("transfer-encoding")).toBe("chunked");
    ctrl.abort();
    const list = await get("/api/v1/nodes?watch=False");
    expect(list.body["kind"]).toBe("NodeList");
  });
});

describe("fieldValidation", () => {
  const body = JSON.stringify({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "fv" },
    spec: { extra: true },
  });
  const post = (q: string) =>
    fetch(`${sim.url}/api/v1/namespaces${q}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body,
    });

  test("Strict: 400 with the strict decoding error, nothing stored", async () => {
    const r = await post("?fieldValidation=Strict");
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({
      reason: "BadRequest",
      message:
        'Namespace in version "v1" cannot be handled as a Namespace: strict decoding error: unknown field "spec.extra"',
    });
    expect(sim.get("Namespace", undefined, "fv")).toBeUndefined();
  });

  test("an unsupported value → 422 on CreateOptions", async () => {
    const r = await post("?fieldValidation=Loud");
    expect(r.status).toBe(422);
    expect(((await r.json()) as { message: string }).message).toBe(
      'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"',
    );
  });

  test("Warn (the default): a Warning header per unknown field, the field dropped", async () => {
    const r = await post("");
    expect(r.status).toBe(201);
    expect(r.headers.get("warning")).toBe('299 - "unknown field \\"spec.extra\\""');
    expect(sim.get("Namespace", undefined, "fv")?.["spec"]).toEqual({ finalizers: ["kubernetes"] });
  });

  test("a merge patch adding an unknown field under Strict: the patch handler's message", async () => {
    const r = await fetch(`${sim.url}/api/v1/nodes/n1?fieldValidation=Strict`, {
      method: "PATCH",
      headers: { "Content-Type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { unschedulable: true, bogus: 1 } }),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { message: string }).message).toBe(
      'strict decoding error: unknown field "spec.bogus"',
    );
  });
});

describe("/openapi/v3", () => {
  test("the index points at one document per group version, whose PATCH operations take fieldValidation", async () => {
    const index = (await get("/openapi/v3")).body as { paths: Record<string, { serverRelativeURL: string }> };
    expect(Object.keys(index.paths).sort()).toEqual(["api/v1", "apis/coordination.k8s.io/v1"]);
    const url = index.paths["api/v1"]?.serverRelativeURL ?? "";
    expect(url).toMatch(/^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
    const doc = (await get(url)).body as {
      paths: Record<
        string,
        Record<string, { parameters?: { name: string }[]; "x-kubernetes-group-version-kind"?: unknown }>
      >;
      components: { schemas: Record<string, Record<string, unknown>> };
    };
    const patch = doc.paths["/api/v1/nodes/{name}"]?.["patch"];
    expect(patch?.["x-kubernetes-group-version-kind"]).toEqual({ group: "", version: "v1", kind: "Node" });
    expect(patch?.parameters?.map((p) => p.name)).toContain("fieldValidation");
    expect(doc.components.schemas["io.k8s.api.core.v1.Service"]?.["x-kubernetes-group-version-kind"]).toEqual(
      [{ group: "", version: "v1", kind: "Service" }],
    );
    const spec = doc.components.schemas["io.k8s.api.core.v1.ServiceSpec"] as {
      properties: Record<string, Record<string, unknown>>;
    };
    expect(spec.properties["ports"]).toMatchObject({
      "x-kubernetes-patch-strategy": "merge",
      "x-kubernetes-patch-merge-key": "port",
    });
  });

  test("/openapi/v2 in protobuf only → 406 (client-go then falls back); JSON when accepted", async () => {
    const pb = await get("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
    expect(pb.status).toBe(406);
    const json = await get("/openapi/v2", "application/json");
    expect(json.body["swagger"]).toBe("2.0");
  });
});
