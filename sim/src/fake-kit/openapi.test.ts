import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import type { ErrorRenderer } from "./errors.js";
import { FakeError } from "./errors.js";
import { FaultInjector } from "./faults.js";
import { Exchange, FakeHttpServer, Router } from "./http.js";
import { OpenApiChecker } from "./openapi.js";
import { numberedPage, parsePageSize } from "./pagination.js";
import { seededRandom } from "./random.js";
import { RequestLog } from "./request-log.js";
import { type SpecHook, specHook } from "./spec.js";
import { fixtureSpecPath } from "./specs.js";
import { ResourceTable } from "./table.js";

/** Linode's date-times carry no offset ("2018-01-01T00:01:01"). */
const LINODE_FORMATS = { "date-time": /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$/ };

/** A Linode as GET /v4/linode/instances/{id} answers it. */
function linode(id: number, label: string): Record<string, unknown> {
  return {
    alerts: { cpu: 180, io: 10000, network_in: 10, network_out: 10, transfer_quota: 80 },
    backups: {
      available: true,
      enabled: false,
      last_successful: "2024-09-30T03:00:00",
      schedule: { day: null, window: null },
    },
    capabilities: [],
    created: "2024-10-01T10:00:00",
    group: "",
    has_user_data: false,
    host_uuid: "0b3ad4f2-0c9c-4c2c-9a7f-6f0a5b1c2d3e",
    hypervisor: "kvm",
    id,
    image: "linode/ubuntu22.04",
    ipv4: ["203.0.113.1", "192.168.128.3"],
    ipv6: "2600:3c03::f03c:91ff:fe24:3a2f/128",
    label,
    lke_cluster_id: null,
    placement_group: null,
    region: "us-east",
    specs: { disk: 81920, gpus: 0, memory: 4096, transfer: 4000, vcpus: 2 },
    status: "running",
    tags: ["fleet-ccm"],
    type: "g6-standard-2",
    updated: "2024-10-01T10:00:00",
    watchdog_enabled: true,
  };
}

const LINODE_SPEC = "linode/linode-openapi-v4.189.0.ccm-subset.yaml";
let checker: OpenApiChecker;

beforeAll(() => {
  checker = OpenApiChecker.fromFile(fixtureSpecPath(LINODE_SPEC), { formats: LINODE_FORMATS });
});

describe("OpenApiChecker against the Linode spec", () => {
  test("finds operations by method and path template", () => {
    expect(checker.findOperation("GET", "/v4/linode/instances")).toEqual({
      operationId: "get-linode-instances",
      template: "/{apiVersion}/linode/instances",
      params: { apiVersion: "v4" },
    });
    expect(checker.findOperation("GET", "/v4/linode/instances/123")?.operationId).toBe("get-linode-instance");
    expect(checker.findOperation("PUT", "/v4/nodebalancers/7")?.operationId).toBe("put-node-balancer");
    expect(checker.findOperation("GET", "/v4/no/such/thing")).toBeUndefined();
  });

  test("a page of Linodes passes; a wrong one is refused field by field", () => {
    const page = { data: [linode(1, "node-a"), linode(2, "node-b")], page: 1, pages: 1, results: 2 };
    const req = { method: "GET", path: "/v4/linode/instances" };
    expect(checker.checkResponse(req, { status: 200, headers: {}, body: page })).toEqual({
      specOperation: "get-linode-instances",
      problems: [],
    });
    const bad = { ...linode(3, "node-c"), ipv4: "203.0.113.1", id: "3", surprise: true };
    const { problems } = checker.checkResponse(req, {
      status: 200,
      headers: {},
      body: { data: [bad], page: "1", pages: 1, results: 1 },
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        "body/page: must be integer",
        "body/data/0: must NOT have additional properties (surprise)",
        "body/data/0/id: must be integer",
        "body/data/0/ipv4: must be array",
      ]),
    );
  });

  test("the vendor's date-times need the vendor's format", () => {
    const strict = OpenApiChecker.fromFile(fixtureSpecPath(LINODE_SPEC));
    const { problems } = strict.checkResponse(
      { method: "GET", path: "/v4/linode/instances/1" },
      { status: 200, headers: {}, body: linode(1, "node-a") },
    );
    expect(problems).toContain('body/created: must match format "date-time"');
  });

  test("the error envelope is Linode's {errors: [{reason, field}]}, for any status", () => {
    const req = { method: "GET", path: "/v4/linode/instances/9" };
    const linodeError = { errors: [{ reason: "Not found" }] };
    expect(checker.checkResponse(req, { status: 404, headers: {}, body: linodeError }).problems).toEqual([]);
    const otherShape = { error: { code: "NotFound", message: "no", request_id: "r1" } };
    expect(checker.checkResponse(req, { status: 404, headers: {}, body: otherShape }).problems).toEqual([
      "body: must NOT have additional properties (error)",
    ]);
  });

  test("requests: parameters, unknown query keys and bodies (readOnly fields not required)", () => {
    const list = checker.checkRequest({
      method: "GET",
      path: "/v4/linode/instances",
      query: new URLSearchParams("page=2&page_size=10&sort=label"),
      headers: {},
    });
    expect(list.problems).toEqual([
      "query page_size: must be >= 25",
      "query parameter sort is not in the spec",
    ]);
    const create = (body: unknown): string[] =>
      checker.checkRequest({
        method: "POST",
        path: "/v4/linode/instances",
        query: new URLSearchParams(),
        headers: {},
        body,
      }).problems;
    expect(create({ region: "us-east", type: "g6-standard-2", label: "node-a", tags: ["x"] })).toEqual([]);
    expect(create({ region: 5, type: "g6-standard-2", colour: "red" })).toEqual([
      "body: must NOT have additional properties (colour)",
      "body/region: must be string",
    ]);
    expect(
      checker.checkRequest({
        method: "GET",
        path: "/v4beta/linode/instances/abc",
        query: new URLSearchParams(),
        headers: {},
      }).problems,
    ).toEqual(["path linodeId: must be integer"]);
  });
});

/** A few lines of a Linode fake on the kit: the seams a real one uses, with the spec hook on. */
describe("a Linode-shaped fake on the kit", () => {
  interface Linode {
    readonly id: string;
    readonly account: string;
    readonly tags: Readonly<Record<string, string>>;
    readonly label: string;
  }
  const linodeErrors: ErrorRenderer = {
    render(error) {
      const reason = error.kind === "throttled" ? "Too many requests" : error.message;
      return {
        status: error.status,
        body: { errors: [{ reason, ...(error.field !== undefined && { field: error.field }) }] },
        ...(error.headers !== undefined && { headers: error.headers }),
      };
    },
  };
  const random = seededRandom(7);
  const log = new RequestLog();
  const faults = new FaultInjector(random);
  let seq = 0;
  const table = new ResourceTable<Linode>(
    () => ++seq,
    () => "acct",
  );
  let spec: SpecHook;
  let server: FakeHttpServer;
  const router = new Router([
    { method: "GET", pattern: /^\/v4\/linode\/instances\/?$/, op: "linodes.list" },
    { method: "GET", pattern: /^\/v4\/linode\/instances\/([^/]+)$/, op: "linodes.get" },
  ]);

  beforeAll(async () => {
    spec = specHook(checker);
    for (let i = 1; i <= 30; i++)
      table.insert({ id: String(i), account: "acct", tags: {}, label: `node-${i}` }, 0);
    server = new FakeHttpServer(async (req, res) => {
      const url = new URL(req.url ?? "/", "http://fake.invalid");
      const m = router.match(req.method ?? "GET", url.pathname);
      const ex = new Exchange(req, res, {
        log,
        renderer: linodeErrors,
        inFlight: server.inFlight,
        operation: m.kind === "found" ? m.route.op : "unknown",
        requestId: `r${log.mark() + 1}`,
        spec,
      });
      spec.checkRequest(ex.operation, {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
      });
      ex.account = "acct";
      const injected = await faults.beforeCall(faults.config("acct"), ex.clientGone);
      if (injected.kind === "abandoned") return;
      if (injected.kind === "error") {
        ex.fault = injected.fault;
        ex.fail(injected.error);
        return;
      }
      try {
        if (m.kind !== "found") throw new FakeError(404, "NotFound", "Not found");
        if (m.route.op === "linodes.get") {
          const found = table.get(m.params[0] ?? "");
          if (found === undefined) throw new FakeError(404, "NotFound", "Not found");
          ex.answer(200, linode(Number(found.id), found.label));
          return;
        }
        const pageSize = parsePageSize(url.searchParams.get("page_size"), {
          param: "page_size",
          defaultSize: 100,
          min: 25,
          max: 500,
          overMax: "refuse",
        });
        const page = Number(url.searchParams.get("page") ?? "1");
        const all = table.all().map((l) => linode(Number(l.id), l.label));
        ex.answer(200, numberedPage(all, page, pageSize));
      } catch (err) {
        if (!(err instanceof FakeError)) throw err;
        ex.fail(err);
      }
    });
    await server.listen();
  });

  afterAll(() => server.close());

  test("pages, errors and throttling in the vendor's shapes, every exchange valid per the spec", async () => {
    const get = async (path: string): Promise<{ status: number; body: unknown; headers: Headers }> => {
      const res = await fetch(`${server.url}${path}`);
      return { status: res.status, body: await res.json(), headers: res.headers };
    };
    const first = await get("/v4/linode/instances?page=1&page_size=25");
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ page: 1, pages: 2, results: 30 });
    expect((first.body as { data: unknown[] }).data).toHaveLength(25);
    const second = await get("/v4/linode/instances?page=2&page_size=25");
    expect((second.body as { data: unknown[] }).data).toHaveLength(5);
    expect((await get("/v4/linode/instances/404")).body).toEqual({ errors: [{ reason: "Not found" }] });
    const refused = await get("/v4/linode/instances?page_size=501");
    expect(refused).toMatchObject({
      status: 400,
      body: { errors: [{ reason: "page_size must be at most 500", field: "page_size" }] },
    });

    faults.set({ throttleRate: 1, throttleRetryAfterSeconds: 3 });
    const throttled = await get("/v4/linode/instances/1");
    faults.reset();
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get("retry-after")).toBe("3");
    expect(throttled.body).toEqual({ errors: [{ reason: "Too many requests" }] });

    expect(log.requests({ fault: "throttled" })).toEqual([
      expect.objectContaining({ operation: "linodes.get", path: "/v4/linode/instances/1", outcome: "429" }),
    ]);
    expect(log.stats().byOutcome).toEqual({ "200": 2, "400": 1, "404": 1, "429": 1 });
    // page_size=501 is outside the spec too: the hook says so (the fake refused it as Linode does).
    expect(spec.problems().map((p) => `${p.where} ${p.message}`)).toEqual([
      "request query page_size: must be <= 500",
    ]);
    spec.reset();
    expect(() => spec.assertClean()).not.toThrow();
  });

  test("an answer outside the spec is caught by the hook", async () => {
    const wrong = new Exchange(
      { method: "GET", url: "/v4/linode/instances/1" } as never,
      { on: () => undefined, headersSent: true } as never,
      {
        log,
        renderer: { render: (e) => ({ status: e.status, body: { error: { code: e.code } } }) },
        inFlight: new Set(),
        operation: "linodes.get",
        requestId: "r-x",
        spec,
      },
    );
    wrong.fail(new FakeError(404, "NotFound", "Not found"));
    expect(() => spec.assertClean()).toThrow(
      /response GET \/v4\/linode\/instances\/1 \(linodes.get\): body: must NOT have additional properties \(error\)/,
    );
    spec.reset();
  });
});
