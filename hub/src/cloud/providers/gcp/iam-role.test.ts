// The custom IAM role of docs/providers/gcp.md names exactly the Compute Engine permissions the
// gcp provider needs: the permission of every Compute method its sources call (an SDK client's
// `<collection>.<method>(`, or a plain-REST `api.rest("<collection>.<method>", …)`), plus the
// `use`/`updatePolicy` permissions Compute checks on the resources those requests reference.
// The methods come from the code, so a new call without its permission fails here instead of
// with a 403 in a user's project; a permission nothing calls fails here too.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "@jest/globals";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..", "..", "..", "..");
const SOURCES = readdirSync(HERE).filter((f) => f.endsWith(".ts") && !/\.test(kit)?\.ts$/.test(f));
const read = (f: string) => readFileSync(join(HERE, f), "utf8");

/** The SDK clients the provider holds (api.ts `interface Clients`): collection names. */
function clientCollections(): Set<string> {
  const block = /export interface Clients \{([\s\S]*?)\n\}/.exec(read("api.ts"))?.[1] ?? "";
  return new Set([...block.matchAll(/readonly (\w+): Compute\.\w+Client;/g)].map((m) => m[1] ?? ""));
}

/** Every Compute method the sources call, as `collection.method` (the discovery document's names). */
function methodsCalled(): Set<string> {
  const clients = clientCollections();
  const out = new Set<string>();
  for (const file of SOURCES) {
    const text = read(file);
    // `c.instances.get(`, `clients.routes.listAsync(`: never `this.instances` (the provider's own).
    for (const m of text.matchAll(/\b(\w+)\.(\w+)\.(\w+?)(?:Async)?\(/g))
      if (m[1] !== "this" && clients.has(m[2] ?? "")) out.add(`${m[2]}.${m[3]}`);
    // Plain REST beside the SDK (api.ts `rest`): its op is the method's name.
    for (const m of text.matchAll(/\.rest(?:<[^>]*>)?\(\s*"(\w+)\.(\w+)"/g)) out.add(`${m[1]}.${m[2]}`);
  }
  return out;
}

/** Compute's permission verb for each method (compute.<collection>.<verb>). */
const VERB: Record<string, string> = {
  get: "get",
  list: "list",
  aggregatedList: "list",
  wait: "get",
  insert: "create",
  delete: "delete",
  patch: "update",
  update: "update",
  addInstance: "addInstance",
  removeInstance: "removeInstance",
  // Instance groups: membership changes are updates of the group; listing members is a list.
  addInstances: "update",
  removeInstances: "update",
  listInstances: "list",
  // Attaching or detaching a target pool's health check is an update of the pool.
  addHealthCheck: "update",
  removeHealthCheck: "update",
  setTarget: "setTarget",
  setLabels: "setLabels",
};

/**
 * Permissions Compute checks on the resources a request references, by the method that sends
 * them: a firewall or route changes its network's policy; a route's next hop, a target pool's
 * or an instance group's members are instances used; a forwarding rule uses its address and
 * target (pool, or backend service on a subnetwork); a target pool uses its legacy health
 * check; a backend service uses its instance groups and health check.
 */
function referenced(method: string, called: Set<string>): string[] {
  const has = (collection: string) => [...called].some((m) => m.startsWith(`${collection}.`));
  switch (method) {
    case "firewalls.insert":
    case "firewalls.patch":
    case "firewalls.update":
      return ["compute.networks.updatePolicy"];
    case "routes.insert":
      return ["compute.networks.updatePolicy", "compute.instances.use"];
    case "targetPools.insert":
      return [
        "compute.instances.use",
        ...(has("httpHealthChecks") ? ["compute.httpHealthChecks.useReadOnly"] : []),
      ];
    case "targetPools.addHealthCheck":
      return ["compute.httpHealthChecks.useReadOnly"];
    case "targetPools.addInstance":
    case "instanceGroups.addInstances":
      return ["compute.instances.use"];
    // An internal load balancer's address is INTERNAL: Compute checks the *Internal verbs for it.
    case "addresses.insert":
      return has("subnetworks") ? ["compute.addresses.createInternal"] : [];
    case "addresses.delete":
      return has("subnetworks") ? ["compute.addresses.deleteInternal"] : [];
    case "forwardingRules.insert":
      return [
        ...(has("addresses") ? ["compute.addresses.use"] : []),
        ...(has("addresses") && has("subnetworks") ? ["compute.addresses.useInternal"] : []),
        ...(has("targetPools") ? ["compute.targetPools.use"] : []),
        ...(has("regionBackendServices") ? ["compute.regionBackendServices.use"] : []),
        ...(has("subnetworks") ? ["compute.subnetworks.use", "compute.networks.use"] : []),
      ];
    case "regionBackendServices.insert":
    case "regionBackendServices.update":
    case "regionBackendServices.patch":
      return [
        ...(has("instanceGroups") ? ["compute.instanceGroups.use"] : []),
        ...(has("healthChecks") ? ["compute.healthChecks.useReadOnly"] : []),
        ...(has("regionHealthChecks") ? ["compute.regionHealthChecks.useReadOnly"] : []),
      ];
    case "instanceGroups.insert":
      return has("subnetworks")
        ? ["compute.subnetworks.use", "compute.networks.use"]
        : ["compute.networks.use"];
    default:
      return [];
  }
}

function permissionsNeeded(): { permissions: Set<string>; unknown: string[] } {
  const called = methodsCalled();
  const permissions = new Set<string>();
  const unknown: string[] = [];
  for (const method of called) {
    const [collection = "", name = ""] = method.split(".");
    const verb = VERB[name];
    if (verb === undefined) unknown.push(method);
    else permissions.add(`compute.${collection}.${verb}`);
    for (const p of referenced(method, called)) permissions.add(p);
  }
  return { permissions, unknown };
}

/** The permissions of the role documented in docs/providers/gcp.md (its `includedPermissions`). */
function documentedRole(): { permissions: string[]; text: string } {
  const text = readFileSync(join(ROOT, "docs", "providers", "gcp.md"), "utf8");
  const block = /^### The IAM role\n[\s\S]*?```yaml\n([\s\S]*?)```/m.exec(text)?.[1] ?? "";
  const list = /includedPermissions:\n((?:\s*- \S+\n)+)/.exec(block)?.[1] ?? "";
  return { permissions: [...list.matchAll(/- (\S+)/g)].map((m) => m[1] ?? ""), text };
}

test("the documented role is exactly the permissions of the Compute methods the provider calls", () => {
  const { permissions, unknown } = permissionsNeeded();
  // A method with no verb above is new: say which permission Compute checks for it.
  expect(unknown).toEqual([]);
  const role = documentedRole().permissions;
  expect(new Set(role).size).toBe(role.length);
  expect([...role].sort()).toEqual([...permissions].sort());
});

test("every method the scan finds is one of Compute's (a typo or a wrapper cannot hide a call)", () => {
  const spec = JSON.parse(
    readFileSync(join(ROOT, "sim", "fixtures", "gcp", "compute.v1.ccm-subset.json"), "utf8"),
  ) as { resources: Record<string, { methods: Record<string, unknown> }> };
  const called = methodsCalled();
  for (const m of called) {
    const [collection = "", name = ""] = m.split(".");
    expect({ method: m, known: spec.resources[collection]?.methods[name] !== undefined }).toEqual({
      method: m,
      known: true,
    });
  }
  // The scan sees the calls (a change to how they are written must not empty it).
  expect(called.size).toBeGreaterThan(20);
  for (const m of ["instances.get", "instances.aggregatedList", "routes.insert", "httpHealthChecks.insert"])
    expect(called).toContain(m);
});

test("workload identity federation: the docs grant the role to the federated principal, or impersonation", () => {
  const { text } = documentedRole();
  const credentials = read("credentials.ts");
  expect(credentials).toContain("service_account_impersonation_url");
  // Impersonation needs the pool's principals to hold this on the service account.
  expect(text).toContain("iam.serviceAccounts.getAccessToken");
  expect(text).toContain("roles/iam.workloadIdentityUser");
  expect(text).toMatch(/principal(Set)?:\/\/iam\.googleapis\.com\//);
});
