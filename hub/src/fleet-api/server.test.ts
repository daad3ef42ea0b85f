import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { parseHubConfig } from "../config/load.js";
import { rotatingSecret } from "./index.js";
import { fleetApiHandler } from "./server.js";

const TOKEN = "s3cret-api-token";

describe("fleet API handler", () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const handler = fleetApiHandler(TOKEN, {
      fleet: async () => ({ health: "ok" }),
      cluster: async (name) => (name === "a" ? { name } : undefined),
    });
    server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const get = (path: string, auth?: string, method = "GET") =>
    fetch(url + path, { method, headers: auth === undefined ? {} : { authorization: auth } });

  test("the API needs the bearer token; the answer never echoes it", async () => {
    for (const auth of [undefined, "", "Bearer", "Bearer wrong", `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
      const res = await get("/api/v1/fleet", auth);
      expect(res.status).toBe(401);
      expect(await res.text()).not.toContain(TOKEN);
    }
    const ok = await get("/api/v1/fleet", `Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
    expect(await ok.json()).toEqual({ health: "ok" });
    expect(await (await get("/api/v1/clusters/a", `bearer ${TOKEN}`)).json()).toEqual({ name: "a" });
    expect((await get("/api/v1/clusters/b", `Bearer ${TOKEN}`)).status).toBe(404);
    expect((await get("/api/v1/other", `Bearer ${TOKEN}`)).status).toBe(404);
  });

  test("read-only; the page is static and under a strict CSP", async () => {
    expect((await get("/api/v1/fleet", `Bearer ${TOKEN}`, "POST")).status).toBe(405);
    const root = await fetch(`${url}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/ui/");
    const page = await get("/ui/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script src="app.js"');
    expect((await get("/ui/app.js")).headers.get("content-type")).toContain("javascript");
    for (const p of ["/ui/../package.json", "/ui/%2e%2e/package.json", "/ui/nope.js"])
      expect((await get(p)).status).toBe(404);
  });
});

describe("the API token", () => {
  test("a rotated token file takes effect within seconds; a failed read keeps the last token", () => {
    const file = join(mkdtempSync(join(tmpdir(), "api-token-")), "token");
    writeFileSync(file, "first\n");
    let now = 0;
    const token = rotatingSecret({ file }, "api.token", {}, () => now);
    expect(token()).toBe("first");
    writeFileSync(file, "second\n");
    expect(token()).toBe("first");
    now += 5000;
    expect(token()).toBe("second");
    writeFileSync(file, "");
    now += 5000;
    expect(token()).toBe("second");
    expect(() => rotatingSecret({ env: "NOPE" }, "api.token", {}, () => now)).toThrow(/api.token/);
  });
});

describe("api config", () => {
  const base = {
    grpc: { insecure: true },
    nats: { servers: ["nats://127.0.0.1:4222"] },
    accounts: [{ name: "a", provider: "simulated", region: "r", credentials: { env: "X" } }],
    clusters: [],
  };

  test("off without a section; loopback by default; the token only by reference", () => {
    expect(parseHubConfig(JSON.stringify(base), "t").api).toBeUndefined();
    const cfg = parseHubConfig(JSON.stringify({ ...base, api: { token: { file: "/t" } } }), "t");
    expect(cfg.api).toEqual({
      listen: "127.0.0.1:9091",
      token: { file: "/t" },
      waitingUnhealthyAfterMs: 300_000,
    });
    expect(() => parseHubConfig(JSON.stringify({ ...base, api: { token: "inline" } }), "t")).toThrow(
      /by reference/,
    );
  });
});
