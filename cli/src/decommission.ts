/**
 * `unregister --delete-cloud-resources` before it revokes the cluster: the running hub, told by
 * `clusters[].decommission` in its configuration, deletes the load balancer of each of the
 * cluster's Services and then clears the Service's finalizer and ingress through the agent, as
 * its ordinary uid-preconditioned desired patches. This follows that through the hub's fleet
 * API until the agent's reports show nothing left, or the bound passes. The credentials stay in
 * the hub; the hub publishes only on the cluster's own subjects.
 */
import type { DecommissionJson, DecommissionServiceJson, HubConfig } from "@fleet-ccm/hub";
import { resolveSecret } from "@fleet-ccm/hub";
import type { Progress } from "./progress.js";
import { fetchJson } from "./status-command.js";

const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

export type FleetApiAccess = { readonly url: string; readonly token: string } | { readonly problem: string };

/** The fleet API of the hub running on `config`: `hub` (a URL) or api.listen, with api.token. */
export function fleetApiAccess(
  config: HubConfig,
  hub: string | undefined,
  env = process.env,
): FleetApiAccess {
  const api = config.api;
  if (api === undefined) return { problem: "the hub configuration has no api section (the fleet API)" };
  let token: string;
  try {
    token = resolveSecret(api.token, "api.token", env);
  } catch (err) {
    return { problem: (err as Error).message };
  }
  if (hub !== undefined) return { url: hub.replace(/\/+$/, ""), token };
  const at = api.listen.lastIndexOf(":");
  const host = api.listen.slice(0, at);
  const port = api.listen.slice(at + 1);
  if (port === "0") return { problem: `api.listen ${api.listen} has no fixed port: pass --hub URL` };
  const local = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host;
  return { url: `http://${local}:${port}`, token };
}

export interface Clearing {
  /** The agent's reports show every Service cleared. */
  readonly done: boolean;
  /** What the hub last reported left (undefined: it never answered for the cluster). */
  readonly left: readonly DecommissionServiceJson[] | undefined;
  /** Why it is not done, when it is not. */
  readonly why?: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls the hub until the cluster's Services are cleared or `timeoutMs` passes, with a progress line. */
export async function awaitCleared(
  access: FleetApiAccess,
  cluster: string,
  timeoutMs: number,
  progress: Progress,
  pollMs = 500,
): Promise<Clearing> {
  if ("problem" in access) return { done: false, left: undefined, why: access.problem };
  const url = `${access.url}/api/v1/clusters/${encodeURIComponent(cluster)}`;
  const deadline = Date.now() + timeoutMs;
  let left: readonly DecommissionServiceJson[] | undefined;
  let most = 0;
  let why = "the hub has not taken the change yet";
  for (;;) {
    const got = await fetchJson(url, access.token);
    const secondsLeft = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    if (!got.ok) why = got.error;
    else {
      const d = (got.body as { decommission?: DecommissionJson }).decommission;
      if (d === undefined) why = "the hub has not loaded the configuration change yet";
      else {
        left = d.pending;
        most = Math.max(most, d.pending.length);
        if (d.current && d.pending.length === 0) return { done: true, left: [] };
        why = d.current
          ? `${d.pending.length} Service(s) still have their finalizer or ingress`
          : `${cluster}'s agent is not connected (or has not sent its snapshot)`;
      }
    }
    if (Date.now() >= deadline) return { done: false, left, why };
    const cleared = left === undefined ? "" : `${most - left.length}/${most} cleared; `;
    progress.update(
      `hub clearing ${cluster}'s Services (load balancer, then finalizer and ingress): ${cleared}${why} (${secondsLeft} s left)`,
    );
    await sleep(pollMs);
  }
}

/** The kubectl commands that clear what the hub could not, for one Service. */
export function kubectlClearCommands(cluster: string, svc: DecommissionServiceJson): string[] {
  const at = `kubectl --context ${cluster} -n ${svc.namespace}`;
  const out: string[] = [];
  const i = svc.finalizers.indexOf(FINALIZER);
  if (i >= 0) {
    const path = `/metadata/finalizers/${i}`;
    // The test op makes it a no-op error rather than a wrong removal if the list changed since.
    out.push(
      `${at} patch svc ${svc.name} --type=json -p '[{"op":"test","path":"${path}","value":"${FINALIZER}"},{"op":"remove","path":"${path}"}]'`,
    );
  }
  if (svc.ingress.length > 0)
    out.push(
      `${at} patch svc ${svc.name} --subresource=status --type=merge -p '{"status":{"loadBalancer":{"ingress":null}}}'`,
    );
  return out;
}

/** What to do by hand when the hub never said which Services are left. */
export function kubectlFindCommand(cluster: string): string {
  return `kubectl --context ${cluster} get svc -A -o jsonpath='{range .items[?(@.metadata.finalizers)]}{.metadata.namespace}/{.metadata.name}: {.metadata.finalizers}{"\\n"}{end}'`;
}

/** Why the finalizers stay without --delete-cloud-resources, and how another CCM takes over. */
export function finalizersStayNotice(cluster: string): string {
  return [
    `${cluster}'s LoadBalancer Services keep their ${FINALIZER} finalizer and their ingress: their load balancers still exist, and whatever CCM runs the cluster next must delete them when the Services go (deleting such a Service waits until one does).`,
    `To hand ${cluster} to the vendor's CCM: install it in the cluster with the same cloud account; it finds each Service's load balancer as it finds its own (cloud-provider-aws by name and cluster tag, the Linode CCM by the ingress IP: README, "Providers"), and removes the finalizer once it has deleted a Service's.`,
  ].join("\n");
}
