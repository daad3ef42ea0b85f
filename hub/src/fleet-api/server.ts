import { createHash, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

/** The page's files (plain HTML, CSS and JS), next to the package's dist/ and src/. */
const UI_DIR = fileURLToPath(new URL("../../ui/", import.meta.url));
const UI_FILES: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "style.css": "text/css; charset=utf-8",
};

export interface FleetApiViews {
  fleet(): Promise<unknown>;
  /** undefined: no such cluster in the configuration. */
  cluster(name: string): Promise<unknown | undefined>;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * The fleet API and page: read-only JSON under /api/v1/ behind a bearer token of its own (never
 * a cluster's), the page's static files under /ui/ (they hold no data: every figure they show
 * comes from the API with the token).
 */
export function fleetApiHandler(token: string | (() => string), views: FleetApiViews) {
  const current = typeof token === "string" ? () => token : token;
  let expected = { token: "", digest: digest("") };
  const authorized = (req: IncomingMessage): boolean => {
    const t = current();
    if (t !== expected.token) expected = { token: t, digest: digest(t) };
    const header = req.headers.authorization ?? "";
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    // Digests make the comparison constant-time whatever the lengths.
    return m?.[1] !== undefined && t !== "" && timingSafeEqual(digest(m[1]), expected.digest);
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res
      .writeHead(status, {
        "content-type": "application/json; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
      })
      .end(`${JSON.stringify(body, null, 2)}\n`);
  };

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/" || path === "/ui") {
      res.writeHead(302, { location: "/ui/" }).end();
      return;
    }
    if (path.startsWith("/ui/")) {
      const file = path === "/ui/" ? "index.html" : path.slice("/ui/".length);
      const type = UI_FILES[file];
      if (type === undefined) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        return;
      }
      const body = await readFile(UI_DIR + file).catch(() => undefined);
      if (body === undefined) {
        res
          .writeHead(500, { "content-type": "text/plain" })
          .end(`the page's ${extname(file)} file is missing\n`);
        return;
      }
      res
        .writeHead(200, {
          "content-type": type,
          "cache-control": "no-cache",
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer",
          "x-frame-options": "DENY",
          "content-security-policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        })
        .end(body);
      return;
    }
    if (!path.startsWith("/api/")) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    if (!authorized(req)) {
      res.setHeader("www-authenticate", 'Bearer realm="fleet-ccm"');
      json(res, 401, { error: "missing or wrong bearer token (the fleet API's token, api.token)" });
      return;
    }
    try {
      if (path === "/api/v1/fleet") {
        json(res, 200, await views.fleet());
        return;
      }
      const m = /^\/api\/v1\/clusters\/([^/]+)$/.exec(path);
      if (m?.[1] !== undefined) {
        const name = decodeURIComponent(m[1]);
        const view = await views.cluster(name);
        if (view === undefined)
          json(res, 404, { error: `no cluster "${name.slice(0, 64)}" in the hub's configuration` });
        else json(res, 200, view);
        return;
      }
      json(res, 404, { error: "unknown API path; see /api/v1/fleet and /api/v1/clusters/<name>" });
    } catch (err) {
      json(res, 500, { error: (err as Error).message });
    }
  };
}
