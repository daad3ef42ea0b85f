/**
 * `fleet-ccm demo --provider <vendor>` converges for every vendor fake: the built CLI as its own
 * process, every node initialized and every LoadBalancer Service given an ingress. Needs
 * `npm run build`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "@jest/globals";

const CLI = fileURLToPath(new URL("../bin/fleet-ccm.js", import.meta.url));

test.each(["linode", "aws", "digitalocean", "hetzner", "gcp", "openstack", "azure"])(
  "fleet-ccm demo --provider %s converges against the vendor's fake",
  async (provider) => {
    const dir = mkdtempSync(join(tmpdir(), `fleet-ccm-${provider}-demo-`));
    const child = spawn(
      process.execPath,
      [
        CLI,
        "demo",
        "--provider",
        provider,
        "--clusters",
        "2",
        "--nodes",
        "3",
        "--services",
        "1",
        "--exit-when-converged",
        "--json",
        "--timeout",
        "75",
        "--log-level",
        "error",
        "--kubeconfig-dir",
        dir,
      ],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    let out = "";
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
    expect(code).toBe(0);
    const summary = JSON.parse(out.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
    expect(summary).toMatchObject({
      converged: true,
      nodes: 6,
      nodesInitialized: 6,
      services: 2,
      servicesWithIngress: 2,
    });
    expect(summary["cloudCalls"]).toBeGreaterThan(0);
  },
  100_000,
);
