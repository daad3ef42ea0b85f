/**
 * scripts/bundle/url.mjs stands in for `url` in the agent bundle: its parse() must give
 * node-fetch the very fields url.parse() gives, for every URL node-fetch hands it.
 */
import { join } from "node:path";
import * as nodeUrl from "node:url";
import { fileURLToPath, pathToFileURL } from "node:url";
import { expect, test } from "@jest/globals";

const SHIM = join(fileURLToPath(new URL(".", import.meta.url)), "..", "scripts", "bundle", "url.mjs");

type Parse = (input: string, ...rest: unknown[]) => nodeUrl.Url;
const shim = (await import(pathToFileURL(SHIM).href)) as {
  parse: Parse;
  default: { parse: Parse; format: unknown };
};

// What node-fetch passes: absolute URLs as WHATWG URL serializes them.
const URLS = [
  "https://10.96.0.1/api/v1/nodes?limit=500",
  "https://10.96.0.1:443/api/v1/nodes?limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%3D%3D",
  "http://127.0.0.1:40123/api/v1/namespaces/default/services/web/status",
  "https://[fd00::1]:6443/version",
  "https://[::1]/api/v1/watch/nodes?watch=true&resourceVersion=12&allowWatchBookmarks=true",
  "https://kube.example.com/apis/coordination.k8s.io/v1/leases#frag",
  "https://user:p%40ss@proxy.example:3128/path/",
  "https://api.example.com:8443/api/v1/nodes/ip-10-0-0-1.eu-west-1.compute.internal",
  "https://xn--bcher-kva.example/",
].map((u) => new URL(u).toString());

test.each(URLS)("%s: the same fields as url.parse", (u) => {
  expect(shim.parse(u)).toEqual(nodeUrl.parse(u));
  expect(shim.default.parse(u)).toEqual(nodeUrl.parse(u));
  expect(nodeUrl.format(shim.parse(u))).toBe(nodeUrl.format(nodeUrl.parse(u)));
});

test("anything else is url.parse's: relative, other schemes, not normalized, with its extra arguments", () => {
  for (const u of [
    "/api/v1/nodes",
    "unix:/var/run/x.sock",
    "HTTPS://Kube.Example.com",
    "https://a.example/ b",
  ])
    expect(shim.parse(u)).toEqual(nodeUrl.parse(u));
  const q = "https://a.example/x?b=1&c=2";
  expect(shim.parse(q, true)).toEqual(nodeUrl.parse(q, true));
});

test("every other export is node:url's", () => {
  expect(shim.default.format).toBe(nodeUrl.format);
  expect((shim as unknown as { URL: unknown }).URL).toBe(nodeUrl.URL);
});
