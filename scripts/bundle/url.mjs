// Stands in for `url` in the agent bundle (scripts/build.sh). node-fetch 2 (the HTTP client of
// @kubernetes/client-node and of the agent's own API calls) turns every request URL into
// http.request options with the legacy `url.parse()`. Node.js 24 and later warn about that
// (DEP0169) for callers outside node_modules, which a bundle is, so every agent on the current
// LTS logged a deprecation at start. node-fetch first normalizes absolute URLs with WHATWG URL,
// so here those are parsed by WHATWG URL into the same legacy fields (test/bundle-url.test.ts
// compares them with url.parse); anything else still goes to url.parse.
import * as nodeUrl from "node:url";

export * from "node:url";

export function parse(input, ...rest) {
  if (rest.length === 0 && typeof input === "string" && /^https?:\/\//i.test(input)) {
    let u;
    try {
      u = new URL(input);
    } catch {
      return nodeUrl.parse(input);
    }
    // url.parse keeps these as given; WHATWG URL would re-encode or reject some of them.
    if (u.href === input) return legacyFields(u);
  }
  return nodeUrl.parse(input, ...rest);
}

function legacyFields(u) {
  const auth =
    u.username === "" && u.password === ""
      ? null
      : decodeURIComponent(u.username) + (u.password === "" ? "" : `:${decodeURIComponent(u.password)}`);
  const legacy = new nodeUrl.Url();
  Object.assign(legacy, {
    protocol: u.protocol,
    slashes: true,
    auth,
    host: u.host,
    port: u.port === "" ? null : u.port,
    hostname: u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname,
    hash: u.hash === "" ? null : u.hash,
    search: u.search === "" ? null : u.search,
    query: u.search === "" ? null : u.search.slice(1),
    pathname: u.pathname,
    path: u.pathname + u.search,
    href: u.href,
  });
  return legacy;
}

export default { ...nodeUrl, parse };
