/** Public API routes of load balancers, their sub-resources, networks and routes (see api.ts). */

import type { TablePage } from "../fake-kit/table.js";
import type { ApiCall, ApiRoute, ListAnswer, ListParams } from "./api.js";
import { invalid } from "./checks.js";
import { kindOfId, type LbListFilter, notFound } from "./lb-store.js";
import { routeNotFound } from "./route-store.js";
import type {
  SimFirewallRuleSpec,
  SimHealthCheckSpec,
  SimLbResourceKind,
  SimListenerSpec,
  SimLoadBalancerSpec,
  SimPoolSpec,
  SimRouteSpec,
} from "./types.js";
import {
  toWireFirewallRule,
  toWireHealthCheck,
  toWireListener,
  toWireLoadBalancer,
  toWireNetwork,
  toWirePool,
  toWireRoute,
} from "./wire.js";

/** Wire field → in-process field, for the fields a body may carry. */
type FieldMap = Readonly<Record<string, string>>;

const LB_CREATE: FieldMap = { name: "name", network: "network", internal: "internal", tags: "tags" };
const LB_UPDATE: FieldMap = { tags: "tags" };
const LISTENER_UPDATE: FieldMap = {
  protocol: "protocol",
  port: "port",
  pool_id: "poolId",
  proxy_protocol: "proxyProtocol",
  idle_timeout_seconds: "idleTimeoutSeconds",
  tags: "tags",
};
const LISTENER_CREATE: FieldMap = { ...LISTENER_UPDATE, name: "name", lb_id: "lbId" };
const POOL_UPDATE: FieldMap = {
  target_port: "targetPort",
  members: "members",
  session_affinity: "sessionAffinity",
  health_check_id: "healthCheckId",
  tags: "tags",
};
const POOL_CREATE: FieldMap = { ...POOL_UPDATE, name: "name", lb_id: "lbId", protocol: "protocol" };
const HC_UPDATE: FieldMap = {
  protocol: "protocol",
  port: "port",
  path: "path",
  interval_seconds: "intervalSeconds",
  timeout_seconds: "timeoutSeconds",
  healthy_threshold: "healthyThreshold",
  unhealthy_threshold: "unhealthyThreshold",
  tags: "tags",
};
const HC_CREATE: FieldMap = { ...HC_UPDATE, name: "name" };
const FW_UPDATE: FieldMap = { protocol: "protocol", port: "port", source_cidrs: "sourceCidrs", tags: "tags" };
const FW_CREATE: FieldMap = { ...FW_UPDATE, name: "name", lb_id: "lbId" };
const ROUTE_CREATE: FieldMap = {
  destination_cidr: "destinationCidr",
  target_instance_id: "targetInstanceId",
  description: "description",
  tags: "tags",
};

/** The body in in-process field names; unknown or read-only fields are refused (400). */
function fromWire(body: Record<string, unknown>, fields: FieldMap, what: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (!Object.hasOwn(fields, k)) throw invalid(`${what}: unknown or read-only field "${k}"`);
    const key = fields[k] ?? k;
    // JSON null means "unset" for optional references (a pool's health check).
    if (v === null && key !== "healthCheckId") throw invalid(`${what}: ${k} must not be null`);
    out[key] = v;
  }
  return out;
}

function filterOf(list: ListParams): LbListFilter {
  return {
    ...(list.name !== undefined && { name: list.name }),
    ...(list.tags !== undefined && { tags: list.tags }),
    ...(list.lbId !== undefined && { lbId: list.lbId }),
  };
}

function listAnswer<T>(page: TablePage<T>, toWire: (t: T) => unknown): ListAnswer {
  return {
    items: page.items.map(toWire),
    ...(page.nextAfterSeq !== undefined && { nextAfterSeq: page.nextAfterSeq }),
  };
}

interface Collection<T> {
  readonly kind: SimLbResourceKind;
  /** URL segment, e.g. "load-balancers". */
  readonly path: string;
  /** Stats prefix, e.g. "lb". */
  readonly op: string;
  /** The list answer's array field. */
  readonly collection: string;
  readonly filters: readonly ("name" | "tag" | "lb_id")[];
  page(c: ApiCall, filter: LbListFilter, list: ListParams): TablePage<T>;
  read(c: ApiCall, id: string): T | undefined;
  create(c: ApiCall): T;
  update(c: ApiCall, id: string): T;
  toWire(t: T): unknown;
}

function collectionRoutes<T>(col: Collection<T>): ApiRoute[] {
  const list = new RegExp(`^\\/v1\\/regions\\/([^/]+)\\/${col.path}\\/?$`);
  const item = new RegExp(`^\\/v1\\/regions\\/([^/]+)\\/${col.path}\\/([^/]+)\\/?$`);
  const idOf = (c: ApiCall): string => {
    const id = c.params[0] ?? "";
    if (kindOfId(id) !== col.kind) throw notFound(col.kind, id);
    return id;
  };
  return [
    {
      method: "GET",
      pattern: list,
      op: `${col.op}.list`,
      kind: "list",
      collection: col.collection,
      filters: col.filters,
      handle: (c, params) => listAnswer(col.page(c, filterOf(params), params), col.toWire),
    },
    {
      method: "POST",
      pattern: list,
      op: `${col.op}.create`,
      kind: "mutate",
      handle: (c) => ({ status: 201, body: col.toWire(col.create(c)) }),
    },
    {
      method: "GET",
      pattern: item,
      op: `${col.op}.get`,
      kind: "get",
      handle: (c) => {
        const id = idOf(c);
        const found = col.read(c, id);
        if (found === undefined) throw notFound(col.kind, id);
        return col.toWire(found);
      },
    },
    {
      method: "PATCH",
      pattern: item,
      op: `${col.op}.update`,
      kind: "mutate",
      handle: (c) => ({ status: 200, body: col.toWire(col.update(c, idOf(c))) }),
    },
    {
      method: "DELETE",
      pattern: item,
      op: `${col.op}.delete`,
      kind: "mutate",
      handle: (c) => {
        c.deps.lbs.delete(idOf(c), c.account.name, c.region);
        return { status: 204 };
      },
    },
  ];
}

const loadBalancerRoutes = collectionRoutes({
  kind: "load-balancer",
  path: "load-balancers",
  op: "lb",
  collection: "load_balancers",
  filters: ["name", "tag"],
  page: (c, filter, list) =>
    c.deps.lbs.pageLoadBalancers(c.account.name, c.region, filter, list.pageSize, list.afterSeq),
  read: (c, id) => c.deps.lbs.readLoadBalancer(c.account.name, c.region, id, c.view),
  create: (c) =>
    c.deps.lbs.createLoadBalancer(
      c.account.name,
      { ...fromWire(c.body, LB_CREATE, "load balancer"), region: c.region } as unknown as SimLoadBalancerSpec,
      "api",
    ),
  update: (c, id) =>
    c.deps.lbs.updateLoadBalancer(c.account.name, c.region, id, fromWire(c.body, LB_UPDATE, "load balancer")),
  toWire: toWireLoadBalancer,
});

const listenerRoutes = collectionRoutes({
  kind: "listener",
  path: "listeners",
  op: "listener",
  collection: "listeners",
  filters: ["name", "tag", "lb_id"],
  page: (c, filter, list) =>
    c.deps.lbs.pageListeners(c.account.name, c.region, filter, list.pageSize, list.afterSeq),
  read: (c, id) => c.deps.lbs.readListener(c.account.name, c.region, id, c.view),
  create: (c) =>
    c.deps.lbs.createListener(
      c.account.name,
      fromWire(c.body, LISTENER_CREATE, "listener") as unknown as SimListenerSpec,
      c.region,
    ),
  update: (c, id) =>
    c.deps.lbs.updateListener(c.account.name, c.region, id, fromWire(c.body, LISTENER_UPDATE, "listener")),
  toWire: toWireListener,
});

const poolRoutes = collectionRoutes({
  kind: "pool",
  path: "pools",
  op: "pool",
  collection: "pools",
  filters: ["name", "tag", "lb_id"],
  page: (c, filter, list) =>
    c.deps.lbs.pagePools(c.account.name, c.region, filter, list.pageSize, list.afterSeq),
  read: (c, id) => c.deps.lbs.readPool(c.account.name, c.region, id, c.view),
  create: (c) => {
    const { healthCheckId, ...rest } = fromWire(c.body, POOL_CREATE, "pool");
    const spec = healthCheckId === null || healthCheckId === undefined ? rest : { ...rest, healthCheckId };
    return c.deps.lbs.createPool(c.account.name, spec as unknown as SimPoolSpec, c.region);
  },
  update: (c, id) =>
    c.deps.lbs.updatePool(c.account.name, c.region, id, fromWire(c.body, POOL_UPDATE, "pool")),
  toWire: toWirePool,
});

const healthCheckRoutes = collectionRoutes({
  kind: "health-check",
  path: "health-checks",
  op: "healthcheck",
  collection: "health_checks",
  filters: ["name", "tag"],
  page: (c, filter, list) =>
    c.deps.lbs.pageHealthChecks(c.account.name, c.region, filter, list.pageSize, list.afterSeq),
  read: (c, id) => c.deps.lbs.readHealthCheck(c.account.name, c.region, id, c.view),
  create: (c) =>
    c.deps.lbs.createHealthCheck(c.account.name, {
      ...fromWire(c.body, HC_CREATE, "health check"),
      region: c.region,
    } as unknown as SimHealthCheckSpec),
  update: (c, id) =>
    c.deps.lbs.updateHealthCheck(c.account.name, c.region, id, fromWire(c.body, HC_UPDATE, "health check")),
  toWire: toWireHealthCheck,
});

const firewallRoutes = collectionRoutes({
  kind: "firewall-rule",
  path: "firewall-rules",
  op: "firewall",
  collection: "firewall_rules",
  filters: ["name", "tag", "lb_id"],
  page: (c, filter, list) =>
    c.deps.lbs.pageFirewallRules(c.account.name, c.region, filter, list.pageSize, list.afterSeq),
  read: (c, id) => c.deps.lbs.readFirewallRule(c.account.name, c.region, id, c.view),
  create: (c) =>
    c.deps.lbs.createFirewallRule(
      c.account.name,
      fromWire(c.body, FW_CREATE, "firewall rule") as unknown as SimFirewallRuleSpec,
      c.region,
    ),
  update: (c, id) =>
    c.deps.lbs.updateFirewallRule(c.account.name, c.region, id, fromWire(c.body, FW_UPDATE, "firewall rule")),
  toWire: toWireFirewallRule,
});

const ROUTES_PATH = /^\/v1\/regions\/([^/]+)\/networks\/([^/]+)\/routes\/?$/;
const ROUTE_PATH = /^\/v1\/regions\/([^/]+)\/networks\/([^/]+)\/routes\/([^/]+)\/?$/;

/** The network of a route call; 404 unless it is one of the account's networks in the region. */
function networkOf(c: ApiCall): string {
  const network = c.params[0] ?? "";
  c.deps.routes.checkNetwork(c.account.name, c.region, network);
  return network;
}

const networkRoutes: ApiRoute[] = [
  {
    method: "GET",
    pattern: /^\/v1\/regions\/([^/]+)\/networks\/?$/,
    op: "network.list",
    kind: "list",
    collection: "networks",
    filters: [],
    handle: (c) => ({ items: c.deps.routes.networks(c.account.name, c.region).map(toWireNetwork) }),
  },
  {
    method: "GET",
    pattern: ROUTES_PATH,
    op: "route.list",
    kind: "list",
    collection: "routes",
    filters: ["tag"],
    handle: (c, list) =>
      listAnswer(
        c.deps.routes.page(
          c.account.name,
          c.region,
          networkOf(c),
          list.tags === undefined ? {} : { tags: list.tags },
          list.pageSize,
          list.afterSeq,
        ),
        toWireRoute,
      ),
  },
  {
    method: "POST",
    pattern: ROUTES_PATH,
    op: "route.create",
    kind: "mutate",
    handle: (c) => {
      const network = networkOf(c);
      const spec = { ...fromWire(c.body, ROUTE_CREATE, "route"), region: c.region, network };
      return {
        status: 201,
        body: toWireRoute(c.deps.routes.create(c.account.name, spec as unknown as SimRouteSpec)),
      };
    },
  },
  {
    method: "GET",
    pattern: ROUTE_PATH,
    op: "route.get",
    kind: "get",
    handle: (c) => {
      const network = networkOf(c);
      const id = c.params[1] ?? "";
      const route = c.deps.routes.read(c.account.name, c.region, network, id, c.view);
      if (route === undefined) throw routeNotFound(id);
      return toWireRoute(route);
    },
  },
  {
    method: "DELETE",
    pattern: ROUTE_PATH,
    op: "route.delete",
    kind: "mutate",
    handle: (c) => {
      const network = networkOf(c);
      c.deps.routes.delete(c.params[1] ?? "", { account: c.account.name, region: c.region, network });
      return { status: 204 };
    },
  },
];

export const resourceRoutes: readonly ApiRoute[] = [
  ...loadBalancerRoutes,
  ...listenerRoutes,
  ...poolRoutes,
  ...healthCheckRoutes,
  ...firewallRoutes,
  ...networkRoutes,
];
