/**
 * The admin API under /admin/ (no API key, never counted, never faulted), for tests, the
 * demo and the benchmark. Bodies and answers are JSON in the in-process shapes (camelCase):
 *
 *   GET    /admin/accounts                      → { accounts: SimAccountDetail[] }
 *   POST   /admin/accounts                      { name, apiKey?, rateLimitPerSecond?, rateLimitBurst? } → 201 SimAccountInfo
 *   PATCH  /admin/accounts/{name}               { rateLimitPerSecond?, rateLimitBurst?, suspended?,
 *                                                loadBalancerAsync?: Partial<SimLbAsyncSettings>,
 *                                                failNextLoadBalancerCreates?: number } → SimAccountDetail
 *            loadBalancerAsync { polls, pollMs, failRate }: how the account's load balancers go
 *            through PENDING_CREATE / PENDING_DELETE (lb-store.ts); polls 0 is synchronous
 *   GET    /admin/regions                       → { regions: string[] }
 *   POST   /admin/regions                       { name } → 201 { regions }
 *   GET    /admin/instances[?account=A]         → { instances: SimInstance[] }
 *   POST   /admin/instances                     { account, ...SimInstanceSpec } → 201 SimInstance
 *   POST   /admin/instances/batch               { account, instances: SimInstanceSpec[] } → 201 { instances }
 *   GET    /admin/instances/{id}                → SimInstance
 *   PATCH  /admin/instances/{id}                SimInstanceUpdate → SimInstance
 *   DELETE /admin/instances/{id}                terminate → SimInstance
 *   GET    /admin/faults                        → { global, accounts: { [name]: Partial<CloudFaultConfig> } }
 *   PATCH  /admin/faults                        Partial<CloudFaultConfig>, merged into the global config → same as GET
 *   DELETE /admin/faults                        no faults anywhere → same as GET
 *   PATCH  /admin/faults/accounts/{name}        Partial<CloudFaultConfig>, merged into the override → same as GET
 *   DELETE /admin/faults/accounts/{name}        drop the override → same as GET
 *   GET    /admin/load-balancers[?account=A]    → SimLbInventory (every kind of load-balancer resource)
 *   GET    /admin/load-balancers/audit[?account=A&tag=k=v...] → SimLbAudit (orphans, duplicates)
 *   POST   /admin/{kind}                        { account, ...spec } → 201 the resource
 *   DELETE /admin/{kind}/{id}                   → 204 (dependency rules apply: 409)
 *            kind: load-balancers | listeners | pools | health-checks | firewall-rules
 *   GET    /admin/networks?account=A&region=R   → { networks: SimNetwork[] }
 *   GET    /admin/routes[?network=N]            → { routes: SimRoute[] }
 *   POST   /admin/routes                        { account, ...SimRouteSpec } → 201 SimRoute
 *   DELETE /admin/routes/{id}                   → 204
 *   GET    /admin/stats                         → CloudStats
 *   POST   /admin/stats/reset                   → 204
 *
 * Errors use the public API's body: { error: { code, message, request_id } }.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { FakeError } from "../fake-kit/errors.js";
import type { SimulatedCloudServer } from "./cloud.js";
import { readJsonBody, sendJson } from "./http.js";
import { kindOfId } from "./lb-store.js";
import { SimCloudError } from "./store.js";
import type {
  CloudFaultConfig,
  SimFirewallRuleSpec,
  SimHealthCheckSpec,
  SimInstanceSpec,
  SimInstanceUpdate,
  SimLbResourceKind,
  SimListenerSpec,
  SimLoadBalancerSpec,
  SimPoolSpec,
  SimRouteSpec,
} from "./types.js";

type Handler = (ctx: AdminCall) => Promise<AdminAnswer> | AdminAnswer;

interface AdminCall {
  readonly params: readonly string[];
  readonly url: URL;
  body(): Promise<Record<string, unknown>>;
}

interface AdminAnswer {
  readonly status: number;
  readonly body?: unknown;
}

export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  cloud: SimulatedCloudServer,
): Promise<void> {
  const requestId = cloud.nextRequestId();
  try {
    const { handler, params } = match(req.method ?? "GET", url.pathname, routes(cloud));
    const answer = await handler({
      params,
      url,
      body: async () => asObject(await readJsonBody(req), "request body"),
    });
    sendJson(res, answer.status, answer.body ?? {}, { "x-request-id": requestId });
  } catch (err) {
    const { status, code, message } = describe(err);
    sendJson(res, status, { error: { code, message, request_id: requestId } }, { "x-request-id": requestId });
  }
}

function routes(cloud: SimulatedCloudServer): Array<[method: string, pattern: RegExp, handler: Handler]> {
  const faultsView = (): AdminAnswer => ({ status: 200, body: cloud.faultsView() });
  return [
    ["GET", /^\/admin\/accounts$/, () => ({ status: 200, body: { accounts: cloud.accountList() } })],
    [
      "POST",
      /^\/admin\/accounts$/,
      async ({ body }) => {
        const b = await body();
        const opts = {
          ...(b["apiKey"] !== undefined && { apiKey: str(b["apiKey"], "apiKey") }),
          ...(b["rateLimitPerSecond"] !== undefined && {
            rateLimitPerSecond: num(b["rateLimitPerSecond"], "rateLimitPerSecond"),
          }),
          ...(b["rateLimitBurst"] !== undefined && {
            rateLimitBurst: num(b["rateLimitBurst"], "rateLimitBurst"),
          }),
        };
        return { status: 201, body: cloud.createAccount(str(b["name"], "name"), opts) };
      },
    ],
    [
      "PATCH",
      /^\/admin\/accounts\/([^/]+)$/,
      async ({ params, body }) => {
        const name = params[0]!;
        const b = await body();
        if (b["rateLimitPerSecond"] !== undefined || b["rateLimitBurst"] !== undefined) {
          const current = cloud.accountDetail(name);
          const rate =
            b["rateLimitPerSecond"] === undefined
              ? current.rateLimitPerSecond
              : num(b["rateLimitPerSecond"], "rateLimitPerSecond");
          const burst =
            b["rateLimitBurst"] === undefined ? undefined : num(b["rateLimitBurst"], "rateLimitBurst");
          cloud.setAccountRateLimit(name, rate, burst);
        }
        if (b["suspended"] !== undefined) cloud.setAccountSuspended(name, bool(b["suspended"], "suspended"));
        if (b["loadBalancerAsync"] !== undefined) {
          cloud.setLoadBalancerAsync(name, asObject(b["loadBalancerAsync"], "loadBalancerAsync"));
        }
        if (b["failNextLoadBalancerCreates"] !== undefined) {
          cloud.failNextLoadBalancerCreates(
            name,
            num(b["failNextLoadBalancerCreates"], "failNextLoadBalancerCreates"),
          );
        }
        return { status: 200, body: cloud.accountDetail(name) };
      },
    ],
    ["GET", /^\/admin\/regions$/, () => ({ status: 200, body: { regions: cloud.regionList() } })],
    [
      "POST",
      /^\/admin\/regions$/,
      async ({ body }) => {
        cloud.addRegion(str((await body())["name"], "name"));
        return { status: 201, body: { regions: cloud.regionList() } };
      },
    ],
    [
      "GET",
      /^\/admin\/instances$/,
      ({ url }) => ({
        status: 200,
        body: { instances: cloud.listInstances(url.searchParams.get("account") ?? undefined) },
      }),
    ],
    [
      "POST",
      /^\/admin\/instances$/,
      async ({ body }) => {
        const { account, ...spec } = await body();
        return {
          status: 201,
          body: cloud.createInstance(str(account, "account"), spec as unknown as SimInstanceSpec),
        };
      },
    ],
    [
      "POST",
      /^\/admin\/instances\/batch$/,
      async ({ body }) => {
        const b = await body();
        const account = str(b["account"], "account");
        const specs = b["instances"];
        if (!Array.isArray(specs))
          throw new SimCloudError(400, "InvalidParameter", "instances must be an array");
        // Specs are checked one by one by the store; a bad one stops the batch there.
        const instances = specs.map((s: unknown) => cloud.createInstance(account, s as SimInstanceSpec));
        return { status: 201, body: { instances } };
      },
    ],
    [
      "GET",
      /^\/admin\/instances\/([^/]+)$/,
      ({ params }) => {
        const instance = cloud.getInstance(params[0]!);
        if (instance === undefined)
          throw new SimCloudError(404, "NotFound", `instance ${params[0]} not found`);
        return { status: 200, body: instance };
      },
    ],
    [
      "PATCH",
      /^\/admin\/instances\/([^/]+)$/,
      async ({ params, body }) => ({
        status: 200,
        body: cloud.updateInstance(params[0]!, (await body()) as SimInstanceUpdate),
      }),
    ],
    [
      "DELETE",
      /^\/admin\/instances\/([^/]+)$/,
      ({ params }) => {
        cloud.terminateInstance(params[0]!);
        return { status: 200, body: cloud.getInstance(params[0]!) };
      },
    ],
    ["GET", /^\/admin\/faults$/, faultsView],
    [
      "PATCH",
      /^\/admin\/faults$/,
      async ({ body }) => {
        cloud.setFaults((await body()) as Partial<CloudFaultConfig>);
        return faultsView();
      },
    ],
    [
      "DELETE",
      /^\/admin\/faults$/,
      () => {
        cloud.resetFaults();
        return faultsView();
      },
    ],
    [
      "PATCH",
      /^\/admin\/faults\/accounts\/([^/]+)$/,
      async ({ params, body }) => {
        cloud.setFaults((await body()) as Partial<CloudFaultConfig>, params[0]!);
        return faultsView();
      },
    ],
    [
      "DELETE",
      /^\/admin\/faults\/accounts\/([^/]+)$/,
      ({ params }) => {
        cloud.resetFaults(params[0]!);
        return faultsView();
      },
    ],
    ...lbRoutes(cloud),
    ["GET", /^\/admin\/stats$/, () => ({ status: 200, body: cloud.stats() })],
    [
      "POST",
      /^\/admin\/stats\/reset$/,
      () => {
        cloud.resetStats();
        return { status: 204 };
      },
    ],
  ];
}

const KIND_OF_PATH: Record<string, SimLbResourceKind> = {
  "load-balancers": "load-balancer",
  listeners: "listener",
  pools: "pool",
  "health-checks": "health-check",
  "firewall-rules": "firewall-rule",
};

function lbRoutes(cloud: SimulatedCloudServer): Array<[method: string, pattern: RegExp, handler: Handler]> {
  const creators: Record<string, (account: string, spec: Record<string, unknown>) => unknown> = {
    "load-balancers": (a, spec) => cloud.createLoadBalancer(a, spec as unknown as SimLoadBalancerSpec),
    listeners: (a, spec) => cloud.createListener(a, spec as unknown as SimListenerSpec),
    pools: (a, spec) => cloud.createPool(a, spec as unknown as SimPoolSpec),
    "health-checks": (a, spec) => cloud.createHealthCheck(a, spec as unknown as SimHealthCheckSpec),
    "firewall-rules": (a, spec) => cloud.createFirewallRule(a, spec as unknown as SimFirewallRuleSpec),
  };
  const kinds = /^\/admin\/(load-balancers|listeners|pools|health-checks|firewall-rules)$/;
  const kindItem = /^\/admin\/(load-balancers|listeners|pools|health-checks|firewall-rules)\/([^/]+)$/;
  return [
    [
      "GET",
      /^\/admin\/load-balancers$/,
      ({ url }) => ({ status: 200, body: cloud.inventory(url.searchParams.get("account") ?? undefined) }),
    ],
    [
      "GET",
      /^\/admin\/load-balancers\/audit$/,
      ({ url }) => {
        const account = url.searchParams.get("account") ?? undefined;
        const tags: Record<string, string> = {};
        for (const t of url.searchParams.getAll("tag")) {
          const eq = t.indexOf("=");
          if (eq <= 0)
            throw new SimCloudError(400, "InvalidParameter", `tag ${JSON.stringify(t)} is not k=v`);
          tags[t.slice(0, eq)] = t.slice(eq + 1);
        }
        return {
          status: 200,
          body: cloud.auditLoadBalancers({
            ...(account !== undefined && { account }),
            ...(Object.keys(tags).length > 0 && { tags }),
          }),
        };
      },
    ],
    [
      "POST",
      kinds,
      async ({ params, body }) => {
        const { account, ...spec } = await body();
        const create = creators[params[0]!];
        if (create === undefined) throw new SimCloudError(404, "RouteNotFound", "unknown kind");
        return { status: 201, body: create(str(account, "account"), spec) };
      },
    ],
    [
      "DELETE",
      kindItem,
      ({ params }) => {
        const [kind = "", id = ""] = params;
        if (kindOfId(id) !== KIND_OF_PATH[kind]) throw new SimCloudError(404, "NotFound", `no ${kind} ${id}`);
        cloud.deleteLbResource(id);
        return { status: 204 };
      },
    ],
    [
      "GET",
      /^\/admin\/networks$/,
      ({ url }) => ({
        status: 200,
        body: {
          networks: cloud.networks(
            str(url.searchParams.get("account") ?? undefined, "account"),
            str(url.searchParams.get("region") ?? undefined, "region"),
          ),
        },
      }),
    ],
    [
      "GET",
      /^\/admin\/routes$/,
      ({ url }) => ({
        status: 200,
        body: { routes: cloud.routes(url.searchParams.get("network") ?? undefined) },
      }),
    ],
    [
      "POST",
      /^\/admin\/routes$/,
      async ({ body }) => {
        const { account, ...spec } = await body();
        return {
          status: 201,
          body: cloud.createRoute(str(account, "account"), spec as unknown as SimRouteSpec),
        };
      },
    ],
    [
      "DELETE",
      /^\/admin\/routes\/([^/]+)$/,
      ({ params }) => {
        cloud.deleteRoute(params[0]!);
        return { status: 204 };
      },
    ],
  ];
}

function match(
  method: string,
  pathname: string,
  table: ReadonlyArray<[string, RegExp, Handler]>,
): { handler: Handler; params: string[] } {
  let pathMatched = false;
  for (const [m, pattern, handler] of table) {
    const found = pattern.exec(pathname);
    if (found === null) continue;
    pathMatched = true;
    if (m === method) return { handler, params: found.slice(1).map((p) => decodeURIComponent(p ?? "")) };
  }
  if (pathMatched)
    throw new SimCloudError(405, "MethodNotAllowed", `${method} is not allowed on ${pathname}`);
  throw new SimCloudError(404, "RouteNotFound", `no admin route ${method} ${pathname}`);
}

function describe(err: unknown): { status: number; code: string; message: string } {
  if (err instanceof FakeError) return { status: err.status, code: err.code, message: err.message };
  if (err instanceof RangeError) return { status: 400, code: "InvalidParameter", message: err.message };
  if (err instanceof URIError) return { status: 400, code: "InvalidParameter", message: "bad path encoding" };
  return { status: 500, code: "InternalError", message: err instanceof Error ? err.message : String(err) };
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SimCloudError(400, "InvalidParameter", `${what} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

function str(value: unknown, field: string): string {
  if (typeof value !== "string")
    throw new SimCloudError(400, "InvalidParameter", `${field} must be a string`);
  return value;
}

function num(value: unknown, field: string): number {
  if (typeof value !== "number")
    throw new SimCloudError(400, "InvalidParameter", `${field} must be a number`);
  return value;
}

function bool(value: unknown, field: string): boolean {
  if (typeof value !== "boolean")
    throw new SimCloudError(400, "InvalidParameter", `${field} must be a boolean`);
  return value;
}
