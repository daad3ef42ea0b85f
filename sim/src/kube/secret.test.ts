// Secrets in the Kubernetes API simulator, over HTTP as the agent reads them: stringData folded
// into base64 data, kubernetes.io/tls requiring its keys, 404 and RBAC 403 as the API server says.
import { afterEach, expect, test } from "@jest/globals";
import { type KubeApiServer, startKubeApiServer } from "./index.js";

let sim: KubeApiServer | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function call(s: KubeApiServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { "content-type": "application/json", accept: "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test("a kubernetes.io/tls Secret: stringData becomes data, both keys required, read back by name", async () => {
  const s = await startKubeApiServer();
  sim = s;
  const path = "/api/v1/namespaces/default/secrets";
  const missing = await call(s, "POST", path, {
    metadata: { name: "half" },
    type: "kubernetes.io/tls",
    stringData: { "tls.crt": "C" },
  });
  expect(missing.status).toBe(422);
  expect(JSON.stringify(missing.body)).toContain("data[tls.key]");
  const created = await call(s, "POST", path, {
    metadata: { name: "web-tls" },
    type: "kubernetes.io/tls",
    stringData: { "tls.crt": "CERT", "tls.key": "KEY" },
  });
  expect(created.status).toBe(201);
  const got = await call(s, "GET", `${path}/web-tls`);
  expect(got.body).toMatchObject({
    kind: "Secret",
    type: "kubernetes.io/tls",
    data: {
      "tls.crt": Buffer.from("CERT").toString("base64"),
      "tls.key": Buffer.from("KEY").toString("base64"),
    },
  });
  expect(got.body["stringData"]).toBeUndefined();
  expect(
    (await call(s, "POST", path, { metadata: { name: "bad" }, data: { k: "not base64!" } })).status,
  ).toBe(422);
  expect((await call(s, "GET", `${path}/nope`)).status).toBe(404);
});

test("under a role with secrets get only, a Secret is read by name but never listed or watched", async () => {
  const s = await startKubeApiServer({
    rbac: { user: "agent", rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }] },
  });
  sim = s;
  s.create("Secret", { metadata: { namespace: "default", name: "x" }, stringData: { a: "b" } });
  expect((await call(s, "GET", "/api/v1/namespaces/default/secrets/x")).status).toBe(200);
  const list = await call(s, "GET", "/api/v1/namespaces/default/secrets");
  expect(list.status).toBe(403);
  expect(list.body["message"]).toContain('cannot list resource "secrets"');
  expect((await call(s, "GET", "/api/v1/secrets?watch=true")).status).toBe(403);
});
