/**
 * The fleet page in a real browser: Debian's headless Chromium loads it from the hub of a running
 * fleet, lets it fetch the API with the token, and the test compares what the page shows (its
 * DOM) with the API's answers; then drives it over the DevTools protocol (a click, the fleet
 * changing under it). Screenshots are saved under a temp dir.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterDetailJson, FleetJson } from "@fleet-ccm/hub";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { HeadlessChromium } from "./cdp-pipe.js";
import { type ApiFleet, GHOST, startApiFleet, waitFor } from "./fleet-api-fixture.js";

const CHROMIUM = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
const SHOTS = mkdtempSync(join(tmpdir(), "fleet-page-"));

/** Runs headless Chromium on `url`: the DOM after the page ran for `budgetMs` of virtual time, or a screenshot. */
function chromium(url: string, opts: { screenshot?: string; budgetMs?: number } = {}): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "fleet-page-profile-"));
  const args = [
    "--headless",
    "--disable-gpu",
    "--no-sandbox",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    `--user-data-dir=${profile}`,
    "--window-size=1280,1100",
    // Virtual time waits for the page's fetches; the page has rendered when it runs out.
    `--virtual-time-budget=${opts.budgetMs ?? 4000}`,
    opts.screenshot === undefined ? "--dump-dom" : `--screenshot=${opts.screenshot}`,
    url,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(CHROMIUM, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`chromium exited ${code}: ${err.slice(-2000)}`));
    });
  });
}

/** [attribute value, other attribute value] of every element carrying both, in document order. */
function pairs(dom: string, a: string, b: string): [string, string][] {
  const out: [string, string][] = [];
  for (const m of dom.matchAll(/<[a-z]+\s[^>]*>/g)) {
    const tag = m[0];
    const x = new RegExp(`\\s${a}="([^"]*)"`).exec(tag)?.[1];
    const y = new RegExp(`\\s${b}="([^"]*)"`).exec(tag)?.[1];
    if (x !== undefined && y !== undefined) out.push([x, y]);
  }
  return out;
}

/** The text of the table row whose opening tag carries `attr="value"`. */
function row(dom: string, attr: string, value: string): string {
  const m = new RegExp(`<tr[^>]*\\s${attr}="${value}"[^>]*>([\\s\\S]*?)</tr>`).exec(dom);
  return (m?.[1] ?? "")
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

describe("the fleet page in headless Chromium", () => {
  let f: ApiFleet;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `${CHROMIUM} is missing: install Debian's chromium (scripts/setup.sh), or set CHROMIUM`,
      );
    f = await startApiFleet();
    await waitFor(async () => {
      const c2 = (await f.get("/api/v1/clusters/cluster-002")).body as ClusterDetailJson;
      return c2.nodeList.some((n) => n.reason === "InstanceNotFound");
    }, 15_000);
  });

  afterAll(async () => {
    await f?.stop();
  });

  test("without the token the page asks for it and shows no data", async () => {
    const dom = await chromium(`${f.url}/ui/`, { budgetMs: 2000 });
    expect(dom).toMatch(/<form id="login"(?![^>]*hidden)/);
    expect(dom).toMatch(/<main id="main" hidden/);
    expect(dom).not.toContain('data-cluster="');
    const wrong = await chromium(`${f.url}/ui/#token=wrong`, { budgetMs: 2000 });
    expect(wrong).toContain("The hub refused this token.");
    expect(wrong).not.toContain('data-cluster="');
  });

  test("the grid, a cluster's nodes and load balancers, and the accounts match the API", async () => {
    const dom = await chromium(`${f.url}/ui/#cluster=cluster-002&token=${encodeURIComponent(f.token)}`);
    const fleet = (await f.get("/api/v1/fleet")).body as FleetJson;
    // Tiles in the API's order (trouble first), coloured by each cluster's health.
    expect(pairs(dom, "data-cluster", "data-health")).toEqual(fleet.clusters.map((c) => [c.name, c.health]));
    expect(dom).toMatch(/id="fleet-health"[^>]*data-health="unhealthy"/);

    const c2 = (await f.get("/api/v1/clusters/cluster-002")).body as ClusterDetailJson;
    expect(pairs(dom, "data-node", "data-state").sort()).toEqual(
      c2.nodeList.map((n) => [n.name, n.state]).sort(),
    );
    const ghost = row(dom, "data-node", GHOST);
    expect(ghost).toContain("waiting");
    expect(ghost).toContain("InstanceNotFound");
    expect(ghost).toMatch(/\d+s ago/);

    const account = fleet.accounts[0];
    expect(row(dom, "data-account", account?.name ?? "")).toContain(
      `/ ${account?.rateLimit.perSecond} per s`,
    );
    expect(dom).not.toContain(f.token);
  });

  test("another cluster: its load balancers with their ingress; screenshots", async () => {
    const url = `${f.url}/ui/#cluster=cluster-001&token=${encodeURIComponent(f.token)}`;
    const dom = await chromium(url);
    const c1 = (await f.get("/api/v1/clusters/cluster-001")).body as ClusterDetailJson;
    expect(pairs(dom, "data-service", "data-state").sort()).toEqual(
      c1.loadBalancerList.map((l) => [`${l.namespace}/${l.name}`, l.state]).sort(),
    );
    for (const l of c1.loadBalancerList)
      expect(row(dom, "data-service", `${l.namespace}/${l.name}`)).toContain(l.ingress[0] ?? "none");
    expect(dom).toMatch(
      /data-cluster="cluster-001"[^>]*aria-current="true"|aria-current="true"[^>]*data-cluster="cluster-001"/,
    );

    for (const [name, target] of [
      ["cluster-001.png", url],
      ["cluster-002.png", `${f.url}/ui/#cluster=cluster-002&token=${encodeURIComponent(f.token)}`],
    ] as const) {
      const file = join(SHOTS, name);
      await chromium(target, { screenshot: file });
      expect(statSync(file).size).toBeGreaterThan(10_000);
    }
    process.stderr.write(`fleet page screenshots: ${SHOTS}\n`);
  });

  test("driven: a click selects a cluster, and the page follows the fleet as it changes", async () => {
    const browser = await HeadlessChromium.launch(CHROMIUM);
    try {
      await browser.navigate(`${f.url}/ui/#token=${encodeURIComponent(f.token)}`);
      const tiles = () =>
        browser.evaluate<string[]>(
          "[...document.querySelectorAll('[data-cluster]')].map((t) => t.dataset.cluster + ':' + t.dataset.health)",
        );
      expect(await waitFor(async () => (await tiles()).length === 3, 10_000)).toBe(true);
      // The token left the address bar; it is kept in the tab only.
      expect(await browser.evaluate<string>("location.href")).not.toContain(f.token);
      expect(await browser.evaluate<string>("sessionStorage.getItem('fleet-ccm-api-token')")).toBe(f.token);
      // Trouble first: the first tile is selected until another is clicked.
      expect(await browser.evaluate<string>("document.getElementById('detail-name').textContent")).toBe(
        "cluster-003",
      );
      await browser.evaluate("document.querySelector('[data-cluster=\"cluster-001\"]').click()");
      const nodes = () => browser.evaluate<number>("document.querySelectorAll('#nodes [data-node]').length");
      expect(
        await waitFor(
          async () =>
            (await browser.evaluate<string>("document.getElementById('detail-name').textContent")) ===
              "cluster-001" && (await nodes()) >= 3,
          10_000,
        ),
      ).toBe(true);
      const before = await nodes();
      // The fleet changes under the page: a new node shows up, initialized, without a reload.
      const [added] = f.fleet.addNodes("cluster-001", 1);
      const state = (n: string) =>
        browser.evaluate<string | null>(
          `document.querySelector('#nodes [data-node="${n}"]')?.dataset.state ?? null`,
        );
      expect(await waitFor(async () => (await state(added ?? "")) === "initialized", 20_000)).toBe(true);
      expect(await nodes()).toBe(before + 1);
      const api = (await f.get("/api/v1/clusters/cluster-001")).body as ClusterDetailJson;
      expect(await nodes()).toBe(api.nodeList.length);
      writeFileSync(join(SHOTS, "driven-cluster-001.png"), await browser.screenshot());
      // Forgetting the token hides the data again.
      await browser.evaluate("document.getElementById('forget').click()");
      expect(await browser.evaluate<boolean>("document.getElementById('main').hidden")).toBe(true);
      expect(
        await browser.evaluate<string | null>("sessionStorage.getItem('fleet-ccm-api-token')"),
      ).toBeNull();
    } finally {
      await browser.close();
    }
  });
});
