// watchOverHttp against a plain HTTP server that controls the chunking of the stream.

import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, test } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { watchOverHttp } from "./http-watch.js";

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  server = undefined;
});

async function serve(answer: (res: ServerResponse, url: URL) => void): Promise<KubeConfig> {
  server = createServer((req, res) => answer(res, new URL(req.url ?? "/", "http://x")));
  await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "c", cluster: "c", user: "u" }],
    currentContext: "c",
  });
  return kc;
}

function watchAll(kc: KubeConfig): Promise<{ events: [string, unknown][]; err: unknown }> {
  return new Promise((resolve, reject) => {
    const events: [string, unknown][] = [];
    watchOverHttp(
      kc,
      "/api/v1/nodes",
      { resourceVersion: "7", labelSelector: undefined },
      (phase, obj) => events.push([phase, obj]),
      (err) => resolve({ events, err }),
    ).catch(reject);
  });
}

test("events split anywhere across chunks, a multi-byte character split too; a bad line skipped; done(null) at the end", async () => {
  let query = "";
  const kc = await serve((res, url) => {
    query = url.search;
    res.writeHead(200, { "Content-Type": "application/json" });
    const text = `{"type":"ADDED","object":{"n":"ä1"}}\nnot json\n{"type":"MODIFIED","object":{"n":"2"}}\n{"type":"DELETED","object":{"n":"3"}}`;
    const bytes = Buffer.from(text);
    // One byte at a time: every line and the two-byte ä arrive in pieces.
    let i = 0;
    const next = (): void => {
      if (i >= bytes.length) {
        res.end();
        return;
      }
      res.write(bytes.subarray(i, i + 1));
      i++;
      setImmediate(next);
    };
    next();
  });
  const { events, err } = await watchAll(kc);
  expect(query).toBe("?watch=true&resourceVersion=7");
  expect(err).toBeNull();
  expect(events).toEqual([
    ["ADDED", { n: "ä1" }],
    ["MODIFIED", { n: "2" }],
    ["DELETED", { n: "3" }],
  ]);
});

test("an answer other than 200 is done with its status as statusCode, as client-node's Watch", async () => {
  const kc = await serve((res) => {
    res.writeHead(410, { "Content-Type": "application/json" });
    res.end('{"kind":"Status","code":410}');
  });
  const { events, err } = await watchAll(kc);
  expect(events).toEqual([]);
  expect(err).toMatchObject({ statusCode: 410, message: "Gone" });
});

test("aborting the returned controller ends the watch once", async () => {
  const kc = await serve((res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.write('{"type":"ADDED","object":{"n":"1"}}\n');
  });
  const dones: unknown[] = [];
  let first: () => void = () => {};
  const got = new Promise<void>((r) => {
    first = r;
  });
  const controller = await watchOverHttp(
    kc,
    "/api/v1/nodes",
    {},
    () => first(),
    (err) => dones.push(err),
  );
  await got;
  controller.abort();
  await new Promise((r) => setTimeout(r, 50));
  expect(dones).toHaveLength(1);
});
