/**
 * A running fleet with the hub's fleet API on, in a known state: cluster-001 with 3 initialized
 * nodes and 2 ready load balancers, cluster-002 with 1 node and a node whose instance does not
 * exist (it waits with InstanceNotFound), cluster-003 whose agent never connects.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubeletNode } from "@fleet-ccm/sim";
import { pino } from "pino";
import { LocalFleet, waitFor } from "../cli/src/local-fleet.js";

export interface ApiFleet {
  readonly fleet: LocalFleet;
  readonly url: string;
  readonly token: string;
  readonly tokenFile: string;
  readonly dir: string;
  /** GET with the API's token, another one, or (null) none. */
  get(path: string, token?: string | null): Promise<{ status: number; text: string; body: unknown }>;
  stop(): Promise<void>;
}

export const GHOST = "ghost-node-1";

export async function startApiFleet(): Promise<ApiFleet> {
  const dir = mkdtempSync(join(tmpdir(), "fleet-api-"));
  const token = randomBytes(24).toString("base64url");
  const tokenFile = join(dir, "api-token");
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const fleet = await LocalFleet.start({
    clusters: 3,
    nodesPerCluster: 0,
    logger: pino({ level: process.env["E2E_LOG_LEVEL"] ?? "silent" }),
    convergeDeadlineMs: 2000,
    hubConfig: { api: { listen: "127.0.0.1:0", token: { file: tokenFile } } },
  });
  const hub = await fleet.startHub();
  await fleet.startAgent("cluster-001");
  await fleet.startAgent("cluster-002");
  fleet.addNodes("cluster-001", 3);
  fleet.addServices("cluster-001", 2);
  fleet.addNodes("cluster-002", 1);
  fleet.cluster("cluster-002").kube.create("Node", kubeletNode(GHOST));
  const done = () => {
    const p = fleet.progress();
    const s = fleet.serviceProgress();
    return p.initialized === 4 && s.withIngress === 2;
  };
  if (!(await waitFor(done, 30_000))) throw new Error("the fleet did not converge");
  const url = `http://127.0.0.1:${hub.apiPort()}`;
  const get = async (path: string, t: string | null = token) => {
    const res = await fetch(url + path, { headers: t === null ? {} : { authorization: `Bearer ${t}` } });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, text, body };
  };
  return {
    fleet,
    url,
    token,
    tokenFile,
    dir,
    get,
    async stop() {
      await fleet.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { waitFor };
