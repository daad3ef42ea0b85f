import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, test } from "@jest/globals";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.js";

let target: Server | undefined;
let proxy: FaultProxy | undefined;

afterEach(async () => {
  await proxy?.close();
  await new Promise((r) => (target ? target.close(r) : r(undefined)));
  target = undefined;
});

/** A target that answers every request with a watch stream kept open (one ADDED event). */
async function start(): Promise<FaultProxy> {
  target = createServer((_, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.write(`${JSON.stringify({ type: "ADDED", object: { kind: "Node", metadata: { name: "n" } } })}\n`);
  });
  await new Promise<void>((r) => target?.listen(0, "127.0.0.1", r));
  proxy = await startFaultProxy({ target: `http://127.0.0.1:${(target.address() as AddressInfo).port}` });
  return proxy;
}

const EXPIRED = {
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  message: "too old resource version: 7 (8)",
  reason: "Expired",
  code: 410,
};

test("410 answers with the Expired Status kube-apiserver sends for a compacted resourceVersion", async () => {
  const p = await start();
  p.setFaults([{ path: "/api/v1/nodes", watch: true, status: 410 }]);
  const res = await fetch(`${p.url}/api/v1/nodes?watch=true&resourceVersion=7`);
  expect(res.status).toBe(410);
  expect(await res.json()).toEqual(EXPIRED);
});

test("watchError: a new watch gets HTTP 200 and one ERROR event, then the end; so does a running one", async () => {
  const p = await start();
  const running = await fetch(`${p.url}/api/v1/nodes?watch=true&resourceVersion=7`);
  const reader = running.body?.getReader();
  // The target's event first, so the watch is open through the proxy.
  const first = await reader?.read();
  expect(new TextDecoder().decode(first?.value)).toContain('"ADDED"');
  p.setFaults([{ path: "/api/v1/nodes", watch: true, watchError: 410 }]);
  let rest = "";
  for (let r = await reader?.read(); r !== undefined && !r.done; r = await reader?.read())
    rest += new TextDecoder().decode(r.value);
  expect(rest).toBe(`${JSON.stringify({ type: "ERROR", object: EXPIRED })}\n`);

  const fresh = await fetch(`${p.url}/api/v1/nodes?watch=true&resourceVersion=7`);
  expect(fresh.status).toBe(200);
  expect(await fresh.text()).toBe(`${JSON.stringify({ type: "ERROR", object: EXPIRED })}\n`);
  // A LIST is not a watch: forwarded.
  expect((await fetch(`${p.url}/api/v1/nodes`)).status).toBe(200);
  expect(p.requests.map((r) => [r.watch, r.status, r.faulted])).toEqual([
    [true, 200, false],
    [true, 200, true],
    [false, 200, false],
  ]);
});
