/**
 * A fake Compute Engine v1 API on the fake kit: instances (get, list, aggregatedList), persistent
 * disks (zonal: get, list, aggregatedList with the regional ones; regional: get, list), zones,
 * regional addresses, forwarding rules and target pools (addInstance/removeInstance), global
 * firewalls, legacy HTTP health checks and routes, and the Operation resource (zonal, regional,
 * global: get, wait, list, delete; aggregatedList across every scope). Every mutation answers an
 * Operation that goes PENDING → RUNNING → DONE over `operationMs` and takes effect when DONE (or
 * ends with `error`); the error envelope carries Compute's reasons (notFound, alreadyExists,
 * resourceInUseByAnotherResource, rateLimitExceeded, …). OAuth: a token endpoint serves the
 * service-account JWT-bearer flow (RS256 assertions checked against the account's key) and the
 * API accepts only the bearer tokens it issued, until they expire. With `spec`, every request and
 * answer is checked against the discovery subset in sim/fixtures/gcp/.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, verify } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type ErrorRenderer, FakeError } from "../fake-kit/errors.js";
import { type FaultConfig, FaultInjector } from "../fake-kit/faults.js";
import { Exchange, FakeHttpServer, Router, readBody, sendJson, sleep, startFake } from "../fake-kit/http.js";
import { seededRandom } from "../fake-kit/random.js";
import { RequestLog } from "../fake-kit/request-log.js";
import { type SpecHook, specHook } from "../fake-kit/spec.js";
import { fixtureSpecPath } from "../fake-kit/specs.js";
import { DiscoveryChecker } from "./discovery.js";
import { GcpStsFake } from "./sts.js";

/** The spec fixture (sim/fixtures/README.md). */
export const GCP_SPEC = "gcp/compute.v1.ccm-subset.json";
/** Where Compute's selfLinks point, whatever address the fake listens on. */
export const GCE_BASE = "https://www.googleapis.com/compute/v1/";
/** The audience of service-account assertions (google-auth-library signs for this). */
const TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token";
const MAX_BODY_BYTES = 1024 * 1024;

let cachedChecker: DiscoveryChecker | undefined;
export function gcpSpecChecker(): DiscoveryChecker {
  cachedChecker ??= DiscoveryChecker.fromFile(fixtureSpecPath(GCP_SPEC));
  return cachedChecker;
}

export type Json = Record<string, unknown>;

/** Compute's reasons by status, for errors that name none. */
const REASONS: Record<number, string> = {
  400: "invalid",
  401: "authError",
  403: "forbidden",
  404: "notFound",
  409: "alreadyExists",
  429: "rateLimitExceeded",
  500: "backendError",
  503: "backendError",
  504: "backendError",
};

/** Google's JSON error envelope; a throttle also carries RetryInfo (AIP-193) beside Retry-After. */
const renderer: ErrorRenderer = {
  render(e) {
    const reason =
      e.kind === "throttled"
        ? "rateLimitExceeded"
        : /^[a-z][A-Za-z]+$/.test(e.code)
          ? e.code
          : (REASONS[e.status] ?? "invalid");
    const retryAfter = e.headers?.["retry-after"];
    return {
      status: e.status,
      ...(e.headers !== undefined && { headers: e.headers }),
      body: {
        error: {
          code: e.status,
          message: e.message,
          errors: [{ message: e.message, domain: e.kind === "throttled" ? "usageLimits" : "global", reason }],
          ...(e.kind === "throttled" &&
            retryAfter !== undefined && {
              status: "RESOURCE_EXHAUSTED",
              details: [
                { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retryAfter}s` },
              ],
            }),
        },
      },
    };
  },
};

const fail = (status: number, reason: string, message: string) => new FakeError(status, reason, message);
const notFound = (link: string) => fail(404, "notFound", `The resource '${link}' was not found`);
const NAME = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

type Scope = "global" | `regions/${string}` | `zones/${string}`;

interface Project {
  readonly id: string;
  readonly numericId: string;
  readonly email: string;
  readonly publicKey: KeyObject;
  readonly privateKeyPem: string;
  readonly keyId: string;
  readonly regions: Readonly<Record<string, readonly string[]>>;
}

interface Operation {
  readonly wire: Json;
  readonly project: string;
  readonly scope: Scope;
  readonly startMs: number;
  readonly doneMs: number;
  readonly effect: () => void;
  readonly error?: { code: string; message: string; status: number };
  /** Runs instead of `effect` when the operation ends with `error`. */
  readonly onError?: () => void;
  settled: boolean;
}

export interface GcpFakeOptions {
  /** Check every request and answer against the discovery subset. */
  readonly spec?: boolean;
  readonly seed?: number;
  readonly now?: () => number;
}

export interface CreateInstanceSpec {
  readonly name: string;
  readonly zone: string;
  readonly network?: string;
  readonly tags?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
  readonly status?: string;
  readonly machineType?: string;
  /** No external (NAT) address. */
  readonly noExternalIP?: boolean;
  readonly ipv6?: boolean;
}

/** One failure an accepted operation will end with (failNextInserts). */
export interface OperationFailure {
  readonly code: string;
  readonly message: string;
  readonly status: number;
}

/** The collections of load-balancer-related resources (what failNextInserts counts). */
export const LB_COLLECTIONS = [
  "addresses",
  "forwardingRules",
  "targetPools",
  "firewalls",
  "httpHealthChecks",
  "healthChecks",
  "backendServices",
  "instanceGroups",
] as const;

export class GcpComputeFake {
  readonly log: RequestLog;
  readonly faults: FaultInjector;
  readonly spec: SpecHook | undefined;
  /** PENDING → DONE of every operation, in ms (RUNNING from half of it). */
  operationMs = 0;
  /** Most items a list page holds whatever `maxResults` asks (Compute may answer fewer; clients follow nextPageToken). */
  maxPageItems = 500;
  /** Longest a `wait` blocks before answering a not-yet-DONE operation (Compute: 2 minutes). */
  waitMaxMs = 2_000;
  /** Lifetime of issued access tokens (expires_in). */
  tokenLifetimeSeconds = 3600;
  /** Workload identity federation: STS and generateAccessToken on this fake's address (sts.ts). */
  readonly sts: GcpStsFake;
  private readonly server: FakeHttpServer;
  private readonly router: Router<Route>;
  private readonly now: () => number;
  private readonly projects = new Map<string, Project>();
  /** project/scope/collection/name → resource (wire JSON). */
  private readonly resources = new Map<string, Json>();
  /** Names an accepted, not yet DONE insert holds (a second insert is alreadyExists). */
  private readonly pendingNames = new Set<string>();
  private readonly operations = new Map<string, Operation>();
  private readonly tokens = new Map<string, { project: string; expiresAtMs: number }>();
  private readonly failures: OperationFailure[] = [];
  private seq = 1000;
  private requestSeq = 0;
  private ipSeq = 10;
  private subnetSeq = 128;
  /** project/zone/group → the instance links of an unmanaged instance group (not on its wire resource). */
  private readonly members = new Map<string, Set<string>>();

  private constructor(opts: GcpFakeOptions) {
    this.now = opts.now ?? Date.now;
    this.log = new RequestLog(this.now);
    this.faults = new FaultInjector(seededRandom(opts.seed ?? 1));
    const routes = this.routes();
    if (opts.spec) {
      const checker = gcpSpecChecker();
      const missing = routes.filter((r) => r.op !== "oauth.token" && !checker.hasMethod(`compute.${r.op}`));
      if (missing.length > 0)
        throw new Error(
          `the Compute spec fixture (${GCP_SPEC}) has no method ${missing.map((r) => r.op).join(", ")}: ` +
            "add it to GCP_METHODS in scripts/vendor-specs.mjs and run it (sim/fixtures/README.md)",
        );
      this.spec = specHook(checker);
    } else this.spec = undefined;
    this.router = new Router(routes);
    this.server = new FakeHttpServer((req, res) => this.handle(req, res));
    this.sts = new GcpStsFake(
      {
        issue: (project) => ({
          token: this.issueToken(project),
          expiresInSeconds: this.tokenLifetimeSeconds,
        }),
        projectOf: (token) => {
          const t = this.tokens.get(token);
          return t !== undefined && t.expiresAtMs > this.now() ? t.project : undefined;
        },
        serviceAccountProject: (email) => [...this.projects.values()].find((p) => p.email === email)?.id,
        now: this.now,
      },
      () => this.server.url,
    );
  }

  static start(opts: GcpFakeOptions = {}): Promise<GcpComputeFake> {
    const fake = new GcpComputeFake(opts);
    return startFake(fake, fake.server);
  }

  get url(): string {
    return this.server.url;
  }

  /** The token endpoint a key's `token_uri` names. */
  get tokenUri(): string {
    return `${this.server.url}/token`;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  // ---- test and demo controls ---------------------------------------------------------------

  /** A project with one service account; answers its key file (JSON, as the console downloads it). */
  createProject(
    id: string,
    regions: Readonly<Record<string, readonly string[]>>,
  ): { project: string; key: string } {
    const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const email = `fleet-ccm@${id}.iam.gserviceaccount.com`;
    const project: Project = {
      id,
      numericId: String(100_000_000_000 + this.projects.size),
      email,
      publicKey,
      privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      keyId: randomBytes(20).toString("hex"),
      regions,
    };
    this.projects.set(id, project);
    for (const region of Object.keys(regions)) this.ensureSubnetwork(id, region, "default");
    return { project: id, key: this.keyFile(id) };
  }

  /** A service-account key file of the project; `rotate` makes a new key and retires the old one. */
  keyFile(project: string, rotate = false): string {
    let p = this.project(project);
    if (rotate) {
      const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      p = {
        ...p,
        publicKey,
        privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        keyId: randomBytes(20).toString("hex"),
      };
      this.projects.set(project, p);
    }
    return JSON.stringify({
      type: "service_account",
      project_id: p.id,
      private_key_id: p.keyId,
      private_key: p.privateKeyPem,
      client_email: p.email,
      client_id: p.numericId,
      auth_uri: "https://accounts.google.com/o/oauth2/auth",
      token_uri: this.tokenUri,
    });
  }

  /** Every token issued so far is refused from now on (as if expired early: clock skew, revocation). */
  expireTokens(): void {
    for (const t of this.tokens.values()) t.expiresAtMs = 0;
  }

  /** The number of tokens the endpoint has issued. */
  get tokensIssued(): number {
    return this.tokens.size;
  }

  /**
   * A subnetwork of `network` in `region` (an auto-mode network's: named as its network, a /20 of
   * 10.0.0.0/8), made if absent; every instance's interface names one.
   */
  createSubnetwork(project: string, region: string, name: string, network = name): Json {
    return this.ensureSubnetwork(project, region, name, network);
  }

  private ensureSubnetwork(project: string, region: string, name: string, network = name): Json {
    const k = key(project, `regions/${region}`, "subnetworks", name);
    const have = this.resources.get(k);
    if (have !== undefined) return have;
    const n = ++this.subnetSeq;
    const wire: Json = {
      kind: "compute#subnetwork",
      id: String(6_000_000_000_000 + n),
      creationTimestamp: new Date(this.now()).toISOString(),
      name,
      network: `${GCE_BASE}projects/${project}/global/networks/${network}`,
      ipCidrRange: `10.${n & 255}.0.0/20`,
      gatewayAddress: `10.${n & 255}.0.1`,
      region: `${GCE_BASE}projects/${project}/regions/${region}`,
      selfLink: this.link(project, `regions/${region}`, "subnetworks", name),
      stackType: "IPV4_ONLY",
    };
    this.resources.set(k, wire);
    return wire;
  }

  /** A free address of a subnetwork's range (from its top, clear of the instances' addresses). */
  private internalIP(project: string, subnetLink: string): string {
    const sub = [...this.resources.values()].find((r) => r.selfLink === subnetLink);
    if (sub === undefined) throw notFound(subnetLink.replace(GCE_BASE, ""));
    const base = String(sub.ipCidrRange).split("/")[0]?.split(".").slice(0, 2).join(".") ?? "10.0";
    const used = new Set(
      [...this.resources.entries()]
        .filter(([k]) => k.startsWith(`${project}/`))
        .flatMap(([, r]) => [r.address, r.IPAddress].filter((x) => typeof x === "string")),
    );
    for (let n = 4094; n > 1; n--) {
      const ip = `${base}.${n >> 8}.${n & 255}`;
      if (!used.has(ip)) return ip;
    }
    throw fail(400, "ipSpaceExhausted", `IP space of '${subnetLink.replace(GCE_BASE, "")}' is exhausted`);
  }

  /** Sets the members of an unmanaged instance group put in place (instance ids `<zone>/<name>`). */
  setGroupMembers(project: string, zone: string, group: string, instances: readonly string[]): void {
    const g = this.resources.get(key(project, `zones/${zone}`, "instanceGroups", group));
    if (g === undefined) throw new Error(`no instance group ${zone}/${group}`);
    const links = instances.map((id) => {
      const [z, n] = id.split("/");
      return `${GCE_BASE}projects/${project}/zones/${z}/instances/${n}`;
    });
    this.members.set(`${project}/${zone}/${group}`, new Set(links));
    g.size = links.length;
  }

  /** The instance links of an unmanaged instance group (test control). */
  groupMembers(project: string, zone: string, group: string): string[] {
    this.settle();
    return [...(this.members.get(`${project}/${zone}/${group}`) ?? [])].sort();
  }

  createInstance(project: string, spec: CreateInstanceSpec): Json {
    this.project(project);
    const n = ++this.seq;
    const network = spec.network ?? "default";
    this.ensureSubnetwork(project, regionOf(spec.zone), network);
    const nic: Json = {
      kind: "compute#networkInterface",
      name: "nic0",
      network: `${GCE_BASE}projects/${project}/global/networks/${network}`,
      subnetwork: `${GCE_BASE}projects/${project}/regions/${regionOf(spec.zone)}/subnetworks/${network}`,
      networkIP: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
      ...(spec.noExternalIP !== true && {
        accessConfigs: [
          {
            kind: "compute#accessConfig",
            type: "ONE_TO_ONE_NAT",
            name: "External NAT",
            natIP: this.freshIP(),
            networkTier: "PREMIUM",
          },
        ],
      }),
      ...(spec.ipv6 === true && { ipv6Address: `fd20::${n.toString(16)}`, stackType: "IPV4_IPV6" }),
    };
    const wire: Json = {
      kind: "compute#instance",
      id: String(7_000_000_000_000 + n),
      creationTimestamp: new Date(this.now()).toISOString(),
      name: spec.name,
      zone: `${GCE_BASE}projects/${project}/zones/${spec.zone}`,
      machineType: `${GCE_BASE}projects/${project}/zones/${spec.zone}/machineTypes/${spec.machineType ?? "e2-standard-2"}`,
      status: spec.status ?? "RUNNING",
      networkInterfaces: [nic],
      tags: { items: [...(spec.tags ?? [])], fingerprint: "42WmSpB8rSM=" },
      labels: { ...(spec.labels ?? {}) },
      selfLink: `${GCE_BASE}projects/${project}/zones/${spec.zone}/instances/${spec.name}`,
    };
    this.resources.set(key(project, `zones/${spec.zone}`, "instances", spec.name), wire);
    return wire;
  }

  setInstanceStatus(project: string, zone: string, name: string, status: string): void {
    const i = this.resources.get(key(project, `zones/${zone}`, "instances", name));
    if (i === undefined) throw new Error(`no instance ${zone}/${name}`);
    i.status = status;
  }

  deleteInstance(project: string, zone: string, name: string): void {
    this.resources.delete(key(project, `zones/${zone}`, "instances", name));
  }

  /**
   * A persistent disk as the PD CSI driver or the in-tree provisioner left it: zonal (`zone`) or
   * regional (`region` with two `replicaZones`), attached to `users` ("<zone>/<instance>").
   */
  createDisk(
    project: string,
    spec: {
      readonly name: string;
      readonly sizeGb: number;
      readonly zone?: string;
      readonly region?: string;
      readonly replicaZones?: readonly string[];
      readonly users?: readonly string[];
      readonly labels?: Readonly<Record<string, string>>;
      readonly description?: string;
      readonly status?: string;
    },
  ): Json {
    const scope: Scope = spec.zone !== undefined ? `zones/${spec.zone}` : `regions/${spec.region ?? ""}`;
    const n = ++this.seq;
    const base = `${GCE_BASE}projects/${project}/`;
    const wire: Json = {
      kind: "compute#disk",
      id: String(5_000_000_000_000 + n),
      creationTimestamp: new Date(this.now()).toISOString(),
      name: spec.name,
      sizeGb: String(spec.sizeGb),
      status: spec.status ?? "READY",
      type: `${base}${scope}/diskTypes/pd-balanced`,
      ...(spec.zone !== undefined
        ? { zone: `${base}zones/${spec.zone}` }
        : {
            region: `${base}regions/${spec.region}`,
            replicaZones: (spec.replicaZones ?? []).map((z) => `${base}zones/${z}`),
          }),
      ...(spec.users !== undefined &&
        spec.users.length > 0 && {
          users: spec.users.map((u) => {
            const [z, i] = u.split("/");
            return `${base}zones/${z}/instances/${i}`;
          }),
        }),
      labels: { ...(spec.labels ?? {}) },
      labelFingerprint: labelFingerprint({ ...(spec.labels ?? {}) }),
      ...(spec.description !== undefined && { description: spec.description }),
      physicalBlockSizeBytes: "4096",
      selfLink: this.link(project, scope, "disks", spec.name),
    };
    this.resources.set(key(project, scope, "disks", spec.name), wire);
    return wire;
  }

  /** Puts a resource in place at once, as another client made it (no operation). */
  put(project: string, scope: Scope, collection: string, body: Json): Json {
    const name = String(body.name);
    const wire = this.materialize(project, scope, collection, body);
    this.resources.set(key(project, scope, collection, name), wire);
    return wire;
  }

  /** Every resource of a collection in the project (any scope), operations settled first. */
  list(project: string, collection: string): Json[] {
    this.settle();
    const prefix = `${project}/`;
    return [...this.resources.entries()]
      .filter(([k]) => k.startsWith(prefix) && k.split("/").at(-2) === collection)
      .map(([, v]) => v);
  }

  /** The next `n` load-balancer inserts the fake accepts end with `failure` (quota, say). */
  failNextInserts(
    n: number,
    failure: OperationFailure = {
      code: "QUOTA_EXCEEDED",
      message: "Quota 'FORWARDING_RULES' exceeded. Limit: 15.0 in region.",
      status: 403,
    },
  ): void {
    for (let i = 0; i < n; i++) this.failures.push(failure);
  }

  /** Operations not yet DONE. */
  pendingOperations(): Json[] {
    this.settle();
    return [...this.operations.values()].filter((o) => !o.settled).map((o) => o.wire);
  }

  setFaults(faults: Partial<FaultConfig>, project?: string): void {
    this.faults.set(faults, project);
  }

  resetFaults(): void {
    this.faults.reset();
    this.failures.length = 0;
  }

  // ---- the pipeline ---------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const method = req.method ?? "GET";
    if (url.pathname === "/token" && method === "POST") return this.token(req, res);
    if (this.sts.handles(method, url.pathname)) return this.sts.handle(req, res, url.pathname);
    const m = this.router.match(method, url.pathname);
    const op = m.kind === "found" ? m.route.op : m.kind === "method" ? m.op : "unknown";
    const ex = new Exchange(req, res, {
      log: this.log,
      renderer,
      inFlight: this.server.inFlight,
      operation: op,
      requestId: `req-${++this.requestSeq}`,
      ...(this.spec !== undefined && { spec: this.spec }),
    });
    let body: unknown;
    if (method === "POST" || method === "PATCH" || method === "PUT") {
      const raw = (await readBody(req, MAX_BODY_BYTES)).toString("utf8");
      try {
        body = raw === "" ? undefined : JSON.parse(raw);
      } catch {
        ex.fail(fail(400, "parseError", "This API does not support parsing form-encoded input."));
        return;
      }
    }
    this.spec?.checkRequest(op, {
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      ...(body !== undefined && { body }),
    });
    const bearer = /^Bearer\s+(\S+)$/i.exec((req.headers.authorization ?? "").trim())?.[1];
    const token = bearer === undefined ? undefined : this.tokens.get(bearer);
    if (token === undefined || token.expiresAtMs <= this.now()) {
      ex.fail(
        new FakeError(
          401,
          "authError",
          "Request had invalid authentication credentials. Expected OAuth 2 access token.",
          {
            kind: "auth",
          },
        ),
      );
      return;
    }
    ex.account = token.project;
    if (m.kind !== "found") {
      ex.fail(
        m.kind === "method"
          ? fail(405, "httpMethodNotAllowed", "Method not allowed")
          : fail(404, "notFound", "Not Found"),
      );
      return;
    }
    const [project = "", ...params] = m.params;
    if (project !== token.project) {
      ex.fail(fail(403, "forbidden", `Required permission denied on project '${project}'`));
      return;
    }
    const faults = this.faults.config(token.project);
    const injected = await this.faults.beforeCall(faults, ex.clientGone);
    if (injected.kind === "abandoned") return;
    if (injected.kind === "error") {
      ex.fault = injected.fault;
      ex.fail(injected.error);
      return;
    }
    try {
      this.settle();
      const answer = await m.route.handle({
        project,
        params,
        query: url.searchParams,
        body: typeof body === "object" && body !== null ? (body as Json) : {},
        signal: ex.clientGone,
      });
      if (method !== "GET" && m.route.mutation) {
        const lost = this.faults.lostResponse(faults);
        if (lost !== undefined) {
          ex.fault = "lost-response";
          ex.fail(lost);
          return;
        }
      }
      ex.answer(200, answer);
    } catch (err) {
      if (!(err instanceof FakeError)) throw err;
      ex.fail(err);
    }
  }

  /** The OAuth 2.0 token endpoint: grant_type jwt-bearer with an RS256 assertion of a project's key. */
  private async token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = new URLSearchParams((await readBody(req, MAX_BODY_BYTES)).toString("utf8"));
    const refuse = (error: string, description: string) =>
      sendJson(res, 400, { error, error_description: description });
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer")
      return refuse("unsupported_grant_type", "Invalid grant_type");
    const parts = (form.get("assertion") ?? "").split(".");
    if (parts.length !== 3) return refuse("invalid_grant", "Invalid JWT");
    const [h = "", p = "", s = ""] = parts;
    let header: Json;
    let claims: Json;
    try {
      header = JSON.parse(Buffer.from(h, "base64url").toString("utf8")) as Json;
      claims = JSON.parse(Buffer.from(p, "base64url").toString("utf8")) as Json;
    } catch {
      return refuse("invalid_grant", "Invalid JWT");
    }
    const project = [...this.projects.values()].find((x) => x.email === claims.iss);
    if (project === undefined) return refuse("invalid_grant", "Invalid JWT Signature.");
    const signed = verify(
      "RSA-SHA256",
      Buffer.from(`${h}.${p}`),
      project.publicKey,
      Buffer.from(s, "base64url"),
    );
    const nowS = Math.floor(this.now() / 1000);
    if (header.alg !== "RS256" || !signed) return refuse("invalid_grant", "Invalid JWT Signature.");
    if (claims.aud !== TOKEN_AUDIENCE) return refuse("invalid_grant", "Invalid JWT: audience");
    if (
      typeof claims.exp !== "number" ||
      claims.exp < nowS - 60 ||
      typeof claims.iat !== "number" ||
      claims.iat > nowS + 60
    )
      return refuse(
        "invalid_grant",
        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.",
      );
    const access = this.issueToken(project.id);
    sendJson(res, 200, { access_token: access, expires_in: this.tokenLifetimeSeconds, token_type: "Bearer" });
  }

  /** A new access token the API accepts for the project until it expires. */
  private issueToken(project: string): string {
    const access = `ya29.fake-${randomBytes(16).toString("hex")}`;
    this.tokens.set(access, { project, expiresAtMs: this.now() + this.tokenLifetimeSeconds * 1000 });
    return access;
  }

  // ---- operations -----------------------------------------------------------------------------

  /** Applies every operation whose time is up, in the order they were accepted. */
  private settle(): void {
    const now = this.now();
    for (const op of this.operations.values()) {
      if (op.settled) {
        continue;
      }
      if (now < op.doneMs) {
        if (now >= op.startMs + (op.doneMs - op.startMs) / 2) {
          op.wire.status = "RUNNING";
          op.wire.progress = 50;
          op.wire.startTime ??= new Date(now).toISOString();
        }
        continue;
      }
      op.settled = true;
      if (op.error === undefined) op.effect();
      else {
        op.onError?.();
        op.wire.error = { errors: [{ code: op.error.code, message: op.error.message }] };
        op.wire.httpErrorStatusCode = op.error.status;
        op.wire.httpErrorMessage = op.error.status === 403 ? "FORBIDDEN" : "BAD REQUEST";
      }
      op.wire.status = "DONE";
      op.wire.progress = 100;
      op.wire.startTime ??= new Date(op.doneMs).toISOString();
      op.wire.endTime = new Date(Math.max(now, op.doneMs)).toISOString();
    }
  }

  /** Accepts a mutation: an Operation on `targetLink` that applies `effect` when DONE. */
  private operation(
    project: string,
    scope: Scope,
    type: string,
    targetLink: string,
    effect: () => void,
    failure?: OperationFailure,
    onError?: () => void,
  ): Json {
    const now = this.now();
    const id = ++this.seq;
    const name = `operation-${now}-${createHash("sha1").update(String(id)).digest("hex").slice(0, 13)}`;
    const base = `${GCE_BASE}projects/${project}/${scope}`;
    const wire: Json = {
      kind: "compute#operation",
      id: String(9_000_000_000_000 + id),
      name,
      operationType: type,
      targetLink,
      targetId: String(8_000_000_000_000 + id),
      status: "PENDING",
      user: this.project(project).email,
      progress: 0,
      insertTime: new Date(now).toISOString(),
      selfLink: `${base}/operations/${name}`,
      ...(scope.startsWith("regions/") && { region: base }),
      ...(scope.startsWith("zones/") && { zone: base }),
    };
    const op: Operation = {
      wire,
      project,
      scope,
      startMs: now,
      doneMs: now + this.operationMs,
      effect,
      ...(failure !== undefined && { error: failure }),
      ...(onError !== undefined && { onError }),
      settled: false,
    };
    this.operations.set(`${project}/${scope}/${name}`, op);
    this.settle();
    return wire;
  }

  private getOperation(project: string, scope: Scope, name: string): Operation {
    const op = this.operations.get(`${project}/${scope}/${name}`);
    if (op === undefined) throw notFound(`projects/${project}/${scope}/operations/${name}`);
    return op;
  }

  // ---- resources --------------------------------------------------------------------------------

  private project(id: string): Project {
    const p = this.projects.get(id);
    if (p === undefined) throw new Error(`no project ${id}`);
    return p;
  }

  private freshIP(): string {
    const n = ++this.ipSeq;
    return `34.${100 + ((n >> 16) & 63)}.${(n >> 8) & 255}.${n & 255}`;
  }

  private link(project: string, scope: Scope, collection: string, name: string): string {
    return `${GCE_BASE}projects/${project}/${scope}/${collection}/${name}`;
  }

  /** The wire resource as Compute stores it: id, selfLink, kind, creationTimestamp, defaults. */
  private materialize(project: string, scope: Scope, collection: string, body: Json): Json {
    const kinds: Record<string, string> = {
      addresses: "compute#address",
      forwardingRules: "compute#forwardingRule",
      targetPools: "compute#targetPool",
      firewalls: "compute#firewall",
      httpHealthChecks: "compute#httpHealthCheck",
      healthChecks: "compute#healthCheck",
      backendServices: "compute#backendService",
      instanceGroups: "compute#instanceGroup",
      routes: "compute#route",
    };
    const wire: Json = {
      ...body,
      kind: kinds[collection] ?? "compute#resource",
      id: String(5_000_000_000_000 + ++this.seq),
      creationTimestamp: new Date(this.now()).toISOString(),
      selfLink: this.link(project, scope, collection, String(body.name)),
    };
    if (scope.startsWith("regions/")) wire.region = `${GCE_BASE}projects/${project}/${scope}`;
    if (scope.startsWith("zones/")) wire.zone = `${GCE_BASE}projects/${project}/${scope}`;
    switch (collection) {
      case "addresses":
        wire.addressType ??= "EXTERNAL";
        wire.address ??=
          wire.addressType === "INTERNAL"
            ? this.internalIP(project, String(wire.subnetwork ?? ""))
            : this.freshIP();
        if (wire.addressType === "EXTERNAL") wire.networkTier ??= "PREMIUM";
        wire.status = "RESERVED";
        break;
      case "forwardingRules":
        wire.loadBalancingScheme ??= "EXTERNAL";
        wire.IPAddress ??=
          wire.loadBalancingScheme === "INTERNAL"
            ? this.internalIP(project, String(wire.subnetwork ?? ""))
            : this.freshIP();
        if (wire.loadBalancingScheme === "EXTERNAL") wire.networkTier ??= "PREMIUM";
        wire.labels ??= {};
        wire.labelFingerprint = labelFingerprint(wire.labels as Json);
        break;
      case "healthChecks":
        wire.type ??= "TCP";
        wire.checkIntervalSec ??= 5;
        wire.timeoutSec ??= 5;
        wire.healthyThreshold ??= 2;
        wire.unhealthyThreshold ??= 2;
        break;
      case "backendServices":
        wire.protocol ??= "TCP";
        wire.sessionAffinity ??= "NONE";
        wire.loadBalancingScheme ??= "EXTERNAL";
        wire.backends ??= [];
        wire.healthChecks ??= [];
        wire.fingerprint = randomBytes(8).toString("base64");
        break;
      case "instanceGroups":
        wire.size = 0;
        wire.fingerprint = "42WmSpB8rSM=";
        break;
      case "targetPools":
        wire.instances ??= [];
        wire.healthChecks ??= [];
        wire.sessionAffinity ??= "NONE";
        break;
      case "firewalls":
        wire.network ??= `${GCE_BASE}projects/${project}/global/networks/default`;
        wire.direction ??= "INGRESS";
        wire.priority ??= 1000;
        break;
      case "httpHealthChecks":
        wire.port ??= 80;
        wire.requestPath ??= "/";
        wire.checkIntervalSec ??= 5;
        wire.timeoutSec ??= 5;
        wire.healthyThreshold ??= 2;
        wire.unhealthyThreshold ??= 2;
        break;
      case "routes":
        wire.priority ??= 1000;
        break;
    }
    return wire;
  }

  private get(project: string, scope: Scope, collection: string, name: string): Json {
    const r = this.resources.get(key(project, scope, collection, name));
    if (r === undefined) throw notFound(`projects/${project}/${scope}/${collection}/${name}`);
    return r;
  }

  private insert(project: string, scope: Scope, collection: string, body: Json): Json {
    const name = body.name;
    if (typeof name !== "string" || !NAME.test(name))
      throw fail(
        400,
        "invalid",
        `Invalid value for field 'resource.name': '${String(name)}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`,
      );
    const k = key(project, scope, collection, name);
    const link = this.link(project, scope, collection, name);
    if (this.resources.has(k) || this.pendingNames.has(k))
      throw fail(
        409,
        "alreadyExists",
        `The resource 'projects/${project}/${scope}/${collection}/${name}' already exists`,
      );
    this.validateInsert(project, scope, collection, body);
    const failure = (LB_COLLECTIONS as readonly string[]).includes(collection)
      ? this.failures.shift()
      : undefined;
    this.pendingNames.add(k);
    return this.operation(
      project,
      scope,
      "insert",
      link,
      () => {
        this.pendingNames.delete(k);
        const wire = this.materialize(project, scope, collection, body);
        this.resources.set(k, wire);
        if (collection === "forwardingRules") this.markAddress(project, scope, String(wire.IPAddress), link);
        // An address reserved with the IP a forwarding rule holds: the ephemeral IP promoted.
        if (collection === "addresses")
          for (const f of this.scoped(project, scope, "forwardingRules"))
            if (f.IPAddress === wire.address)
              this.markAddress(project, scope, String(wire.address), String(f.selfLink));
      },
      failure === undefined ? undefined : { ...failure },
      () => this.pendingNames.delete(k),
    );
  }

  /** An operation that failed leaves its name free again. */
  private validateInsert(project: string, scope: Scope, collection: string, body: Json): void {
    if (collection === "addresses" && typeof body.address === "string") {
      const ip = body.address;
      if (this.addressesIn(project, scope).some((a) => a.address === ip))
        throw fail(
          400,
          "invalid",
          `Invalid value for field 'resource.address': '${ip}'. Specified IP address is already reserved.`,
        );
    }
    if (collection === "addresses" && body.addressType === "INTERNAL")
      this.mustExist(String(body.subnetwork ?? ""));
    if (collection === "backendServices") this.checkBackendService(body);
    if (collection === "forwardingRules" && body.backendService !== undefined) {
      this.mustExist(String(body.backendService));
      const scheme = body.loadBalancingScheme ?? "EXTERNAL";
      if (scheme === "INTERNAL") this.mustExist(String(body.subnetwork ?? ""));
      const bs = this.byLink(String(body.backendService));
      if ((bs?.loadBalancingScheme ?? "EXTERNAL") !== scheme)
        throw fail(
          400,
          "invalid",
          `Invalid value for field 'resource.backendService': '${String(body.backendService)}'. The backend service's load balancing scheme (${String(bs?.loadBalancingScheme)}) must be the forwarding rule's (${String(scheme)}).`,
        );
      const ip = body.IPAddress;
      // An external rule's IP must be reserved in its region (as a target pool's rule).
      if (
        scheme === "EXTERNAL" &&
        typeof ip === "string" &&
        !this.addressesIn(project, scope).some((a) => a.address === ip)
      )
        throw fail(
          400,
          "invalid",
          `Invalid value for field 'resource.IPAddress': '${ip}'. Specified IP address is not reserved in this region.`,
        );
      if (
        typeof ip === "string" &&
        this.list(project, "forwardingRules").some(
          (f) => f.IPAddress === ip && f.IPProtocol === body.IPProtocol,
        )
      )
        throw fail(400, "ipInUseByAnotherResource", `IP '${ip}' is already being used by another resource.`);
    }
    if (collection === "forwardingRules" && body.backendService === undefined) {
      const target = String(body.target ?? "");
      const pool = /\/projects\/([^/]+)\/(regions\/[^/]+)\/targetPools\/([^/]+)$/.exec(target);
      if (
        pool === null ||
        !this.resources.has(key(pool[1] ?? "", pool[2] as Scope, "targetPools", pool[3] ?? ""))
      )
        throw notFound(target.replace(GCE_BASE, ""));
      const ip = body.IPAddress;
      if (typeof ip === "string") {
        const reserved = this.addressesIn(project, scope).find((a) => a.address === ip);
        const taken = this.list(project, "forwardingRules").some(
          (f) => f.IPAddress === ip && f.IPProtocol === body.IPProtocol,
        );
        if (reserved === undefined)
          throw fail(
            400,
            "invalid",
            `Invalid value for field 'resource.IPAddress': '${ip}'. Specified IP address is not reserved in this region.`,
          );
        if (taken)
          throw fail(
            400,
            "ipInUseByAnotherResource",
            `IP '${ip}' is already being used by another resource.`,
          );
      }
    }
    if (collection === "targetPools")
      for (const hc of (body.healthChecks as string[] | undefined) ?? []) {
        const m = /\/projects\/([^/]+)\/global\/httpHealthChecks\/([^/]+)$/.exec(hc);
        if (m === null || !this.resources.has(key(m[1] ?? "", "global", "httpHealthChecks", m[2] ?? "")))
          throw notFound(hc.replace(GCE_BASE, ""));
      }
  }

  /**
   * A regional backend service's references: its health checks and instance groups exist, and
   * an EXTERNAL one (the backend-service based network load balancer) takes regional health
   * checks only, as Compute refuses a global one there.
   */
  private checkBackendService(body: Json): void {
    const external = (body.loadBalancingScheme ?? "EXTERNAL") === "EXTERNAL";
    for (const [n, hc] of ((body.healthChecks as string[] | undefined) ?? []).entries()) {
      this.mustExist(hc);
      if (external && !/\/regions\/[^/]+\/healthChecks\//.test(hc))
        throw fail(
          400,
          "invalid",
          `Invalid value for field 'resource.healthChecks[${n}]': '${hc}'. A backend service with the EXTERNAL load balancing scheme and a regional scope requires a regional health check.`,
        );
    }
    for (const b of (body.backends as { group?: string }[] | undefined) ?? [])
      this.mustExist(String(b.group ?? ""));
  }

  /** The resource a link names, if it exists. */
  private byLink(link: string): Json | undefined {
    const m = /(?:^|\/)projects\/([^/]+)\/((?:regions|zones)\/[^/]+|global)\/([A-Za-z]+)\/([^/]+)$/.exec(
      link,
    );
    return m === null ? undefined : this.resources.get(key(m[1] ?? "", m[2] ?? "", m[3] ?? "", m[4] ?? ""));
  }

  /** A referenced resource (by its link) must exist. */
  private mustExist(link: string): void {
    const m = /(?:^|\/)projects\/([^/]+)\/((?:regions|zones)\/[^/]+|global)\/([A-Za-z]+)\/([^/]+)$/.exec(
      link,
    );
    if (m === null || !this.resources.has(key(m[1] ?? "", m[2] ?? "", m[3] ?? "", m[4] ?? "")))
      throw notFound(link.replace(GCE_BASE, ""));
  }

  private addressesIn(project: string, scope: Scope): Json[] {
    return [...this.resources.entries()]
      .filter(([k]) => k.startsWith(`${project}/${scope}/addresses/`))
      .map(([, v]) => v);
  }

  private markAddress(project: string, scope: Scope, ip: string, user: string | undefined): void {
    const a = this.addressesIn(project, scope).find((x) => x.address === ip);
    if (a === undefined) return;
    const users = new Set((a.users as string[] | undefined) ?? []);
    if (user === undefined) users.clear();
    else users.add(user);
    if (users.size === 0) {
      delete a.users;
      a.status = "RESERVED";
    } else {
      a.users = [...users];
      a.status = "IN_USE";
    }
  }

  private remove(project: string, scope: Scope, collection: string, name: string): Json {
    const k = key(project, scope, collection, name);
    const r = this.get(project, scope, collection, name);
    const link = String(r.selfLink);
    const inUse = (by: string) =>
      fail(
        400,
        "resourceInUseByAnotherResource",
        `The ${collection.replace(/s$/, "")} resource '${link.replace(GCE_BASE, "")}' is already being used by '${by.replace(GCE_BASE, "")}'`,
      );
    if (collection === "targetPools") {
      const fr = this.list(project, "forwardingRules").find((f) => f.target === link);
      if (fr !== undefined) throw inUse(String(fr.selfLink));
    }
    if (collection === "httpHealthChecks") {
      const pool = this.list(project, "targetPools").find((p) =>
        ((p.healthChecks as string[]) ?? []).includes(link),
      );
      if (pool !== undefined) throw inUse(String(pool.selfLink));
    }
    if (collection === "backendServices") {
      const fr = this.list(project, "forwardingRules").find((f) => f.backendService === link);
      if (fr !== undefined) throw inUse(String(fr.selfLink));
    }
    if (collection === "healthChecks") {
      const bs = this.list(project, "backendServices").find((b) =>
        ((b.healthChecks as string[]) ?? []).includes(link),
      );
      if (bs !== undefined) throw inUse(String(bs.selfLink));
    }
    if (collection === "instanceGroups") {
      const bs = this.list(project, "backendServices").find((b) =>
        ((b.backends as { group?: string }[]) ?? []).some((x) => x.group === link),
      );
      if (bs !== undefined) throw inUse(String(bs.selfLink));
    }
    // An address a forwarding rule uses is released as ephemeral: the rule keeps the IP.
    return this.operation(project, scope, "delete", link, () => {
      if (collection === "instanceGroups") this.members.delete(`${project}/${scope.slice(6)}/${name}`);
      if (!this.resources.has(k)) return;
      this.resources.delete(k);
      if (collection === "forwardingRules") {
        const others = this.list(project, "forwardingRules").filter((f) => f.IPAddress === r.IPAddress);
        if (others.length === 0) this.markAddress(project, scope, String(r.IPAddress), undefined);
      }
    });
  }

  private change(
    project: string,
    scope: Scope,
    collection: string,
    name: string,
    type: string,
    apply: (r: Json) => void,
  ): Json {
    const r = this.get(project, scope, collection, name);
    return this.operation(project, scope, type, String(r.selfLink), () => {
      const now = this.resources.get(key(project, scope, collection, name));
      if (now !== undefined) apply(now);
    });
  }

  // ---- lists ------------------------------------------------------------------------------------

  /** Compute's list envelope: items by name, `filter`, `maxResults` (0..500), `pageToken`. */
  private page(kind: string, self: string, items: Json[], query: URLSearchParams): Json {
    const filtered = items
      .filter(computeFilter(query.get("filter") ?? ""))
      .sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const { slice, next } = paginate(filtered, (i) => String(i.name), query, this.maxPageItems);
    return {
      kind,
      id: self,
      items: slice,
      selfLink: self,
      ...(next !== undefined && { nextPageToken: next }),
    };
  }

  private scoped(project: string, scope: Scope, collection: string): Json[] {
    return [...this.resources.entries()]
      .filter(([k]) => k.startsWith(`${project}/${scope}/${collection}/`))
      .map(([, v]) => v);
  }

  /** The operations of one scope, as Compute answers them. */
  private operationsIn(project: string, scope: Scope): Json[] {
    return [...this.operations.values()]
      .filter((o) => o.project === project && o.scope === scope)
      .map((o) => o.wire);
  }

  private zonesOf(project: string): string[] {
    return Object.values(this.project(project).regions).flat();
  }

  // ---- routes -----------------------------------------------------------------------------------

  private routes(): Route[] {
    const P = String.raw`^\/compute\/v1\/projects\/([^/]+)`;
    const R = (
      method: Route["method"],
      path: string,
      op: string,
      handle: Handler,
      mutation = method !== "GET",
    ): Route => ({
      method,
      pattern: new RegExp(`${P}${path}$`),
      op,
      handle,
      mutation,
    });
    const Z = String.raw`\/zones\/([^/]+)`;
    const G = String.raw`\/regions\/([^/]+)`;
    const N = "([^/]+)";
    const zs = (z: string): Scope => `zones/${z}`;
    const rs = (r: string): Scope => `regions/${r}`;
    const first = (c: Call) => c.params[0] ?? "";
    const second = (c: Call) => c.params[1] ?? "";
    const regional = (collection: string, kind: string): Route[] => [
      R("GET", `${G}\\/${collection}\\/${N}`, `${collection}.get`, (c) =>
        this.get(c.project, rs(first(c)), collection, second(c)),
      ),
      R("DELETE", `${G}\\/${collection}\\/${N}`, `${collection}.delete`, (c) =>
        this.remove(c.project, rs(first(c)), collection, second(c)),
      ),
      R("POST", `${G}\\/${collection}`, `${collection}.insert`, (c) =>
        this.insert(c.project, rs(first(c)), collection, c.body),
      ),
      R("GET", `${G}\\/${collection}`, `${collection}.list`, (c) =>
        this.page(
          kind,
          this.link(c.project, rs(first(c)), collection, "").slice(0, -1),
          this.scoped(c.project, rs(first(c)), collection),
          c.query,
        ),
      ),
    ];
    const global = (collection: string, kind: string): Route[] => [
      R("GET", `\\/global\\/${collection}\\/${N}`, `${collection}.get`, (c) =>
        this.get(c.project, "global", collection, first(c)),
      ),
      R("DELETE", `\\/global\\/${collection}\\/${N}`, `${collection}.delete`, (c) =>
        this.remove(c.project, "global", collection, first(c)),
      ),
      R("POST", `\\/global\\/${collection}`, `${collection}.insert`, (c) =>
        this.insert(c.project, "global", collection, c.body),
      ),
      R("GET", `\\/global\\/${collection}`, `${collection}.list`, (c) =>
        this.page(
          kind,
          `${GCE_BASE}projects/${c.project}/global/${collection}`,
          this.scoped(c.project, "global", collection),
          c.query,
        ),
      ),
    ];
    const operations = (
      path: string,
      resource: string,
      scope: (c: Call) => Scope,
      nameAt: number,
    ): Route[] => [
      R(
        "GET",
        `${path}\\/operations\\/${N}`,
        `${resource}.get`,
        (c) => this.getOperation(c.project, scope(c), c.params[nameAt] ?? "").wire,
      ),
      R(
        "DELETE",
        `${path}\\/operations\\/${N}`,
        `${resource}.delete`,
        (c) => {
          const op = this.getOperation(c.project, scope(c), c.params[nameAt] ?? "");
          this.operations.delete(`${c.project}/${scope(c)}/${String(op.wire.name)}`);
          return {};
        },
        false,
      ),
      R(
        "POST",
        `${path}\\/operations\\/${N}\\/wait`,
        `${resource}.wait`,
        async (c) => {
          const op = this.getOperation(c.project, scope(c), c.params[nameAt] ?? "");
          const until = this.now() + this.waitMaxMs;
          while (!op.settled && this.now() < until) {
            this.settle();
            if (op.settled) break;
            if (!(await sleep(Math.min(25, Math.max(1, op.doneMs - this.now())), c.signal))) break;
          }
          this.settle();
          return op.wire;
        },
        false,
      ),
      R("GET", `${path}\\/operations`, `${resource}.list`, (c) => {
        const s = scope(c);
        const ops = this.operationsIn(c.project, s);
        return this.page(
          "compute#operationList",
          `${GCE_BASE}projects/${c.project}/${s}/operations`,
          ops,
          c.query,
        );
      }),
    ];
    return [
      R("GET", `${Z}\\/instances\\/${N}`, "instances.get", (c) =>
        this.get(c.project, zs(first(c)), "instances", second(c)),
      ),
      R("GET", `${Z}\\/instances`, "instances.list", (c) =>
        this.page(
          "compute#instanceList",
          `${GCE_BASE}projects/${c.project}/zones/${first(c)}/instances`,
          this.scoped(c.project, zs(first(c)), "instances"),
          c.query,
        ),
      ),
      R("GET", String.raw`\/aggregated\/instances`, "instances.aggregatedList", (c) =>
        this.aggregated(c, "instances", "compute#instanceAggregatedList", this.zonesOf(c.project).map(zs)),
      ),
      R("GET", `${Z}\\/disks\\/${N}`, "disks.get", (c) =>
        this.get(c.project, zs(first(c)), "disks", second(c)),
      ),
      R("GET", `${Z}\\/disks`, "disks.list", (c) =>
        this.page(
          "compute#diskList",
          `${GCE_BASE}projects/${c.project}/zones/${first(c)}/disks`,
          this.scoped(c.project, zs(first(c)), "disks"),
          c.query,
        ),
      ),
      R("GET", String.raw`\/aggregated\/disks`, "disks.aggregatedList", (c) =>
        this.aggregated(c, "disks", "compute#diskAggregatedList", [
          ...this.zonesOf(c.project).map(zs),
          ...Object.keys(this.project(c.project).regions).map(rs),
        ]),
      ),
      R("GET", `${G}\\/disks\\/${N}`, "regionDisks.get", (c) =>
        this.get(c.project, rs(first(c)), "disks", second(c)),
      ),
      R("GET", `${G}\\/disks`, "regionDisks.list", (c) =>
        this.page(
          "compute#diskList",
          `${GCE_BASE}projects/${c.project}/regions/${first(c)}/disks`,
          this.scoped(c.project, rs(first(c)), "disks"),
          c.query,
        ),
      ),
      R("GET", String.raw`\/zones`, "zones.list", (c) => {
        const p = this.project(c.project);
        const zones = Object.entries(p.regions).flatMap(([region, zs]) =>
          zs.map((z) => ({
            kind: "compute#zone",
            id: String(2000 + zs.indexOf(z)),
            name: z,
            region: `${GCE_BASE}projects/${c.project}/regions/${region}`,
            status: "UP",
            selfLink: `${GCE_BASE}projects/${c.project}/zones/${z}`,
          })),
        );
        return this.page("compute#zoneList", `${GCE_BASE}projects/${c.project}/zones`, zones, c.query);
      }),
      ...regional("addresses", "compute#addressList"),
      R("GET", `${G}\\/subnetworks\\/${N}`, "subnetworks.get", (c) =>
        this.get(c.project, rs(first(c)), "subnetworks", second(c)),
      ),
      R("GET", `${G}\\/subnetworks`, "subnetworks.list", (c) =>
        this.page(
          "compute#subnetworkList",
          this.link(c.project, rs(first(c)), "subnetworks", "").slice(0, -1),
          this.scoped(c.project, rs(first(c)), "subnetworks"),
          c.query,
        ),
      ),
      ...regional("backendServices", "compute#backendServiceList").map((r) => ({
        ...r,
        op: r.op.replace(/^backendServices/, "regionBackendServices"),
      })),
      R("PUT", `${G}\\/backendServices\\/${N}`, "regionBackendServices.update", (c) =>
        this.replace(c, rs(first(c)), "backendServices", second(c)),
      ),
      ...global("healthChecks", "compute#healthCheckList").filter((r) => r.op !== "healthChecks.list"),
      // Regional health checks (what an EXTERNAL backend service takes): the same resource in a region.
      ...regional("healthChecks", "compute#healthCheckList")
        .filter((r) => r.op !== "healthChecks.list")
        .map((r) => ({ ...r, op: r.op.replace(/^healthChecks/, "regionHealthChecks") })),
      R("PUT", `${G}\\/healthChecks\\/${N}`, "regionHealthChecks.update", (c) =>
        this.replace(c, rs(first(c)), "healthChecks", second(c)),
      ),
      R("PUT", String.raw`\/global\/healthChecks\/${N}`, "healthChecks.update", (c) =>
        this.replace(c, "global", "healthChecks", first(c)),
      ),
      R("GET", `${Z}\\/instanceGroups\\/${N}`, "instanceGroups.get", (c) =>
        this.get(c.project, zs(first(c)), "instanceGroups", second(c)),
      ),
      R("DELETE", `${Z}\\/instanceGroups\\/${N}`, "instanceGroups.delete", (c) =>
        this.remove(c.project, zs(first(c)), "instanceGroups", second(c)),
      ),
      R("POST", `${Z}\\/instanceGroups`, "instanceGroups.insert", (c) =>
        this.insert(c.project, zs(first(c)), "instanceGroups", c.body),
      ),
      R("GET", `${Z}\\/instanceGroups`, "instanceGroups.list", (c) =>
        this.page(
          "compute#instanceGroupList",
          this.link(c.project, zs(first(c)), "instanceGroups", "").slice(0, -1),
          this.scoped(c.project, zs(first(c)), "instanceGroups"),
          c.query,
        ),
      ),
      R("POST", `${Z}\\/instanceGroups\\/${N}\\/addInstances`, "instanceGroups.addInstances", (c) =>
        this.groupInstances(c, first(c), second(c), true),
      ),
      R("POST", `${Z}\\/instanceGroups\\/${N}\\/removeInstances`, "instanceGroups.removeInstances", (c) =>
        this.groupInstances(c, first(c), second(c), false),
      ),
      R(
        "POST",
        `${Z}\\/instanceGroups\\/${N}\\/listInstances`,
        "instanceGroups.listInstances",
        (c) => {
          const g = this.get(c.project, zs(first(c)), "instanceGroups", second(c));
          const items = [...(this.members.get(`${c.project}/${first(c)}/${second(c)}`) ?? [])]
            .sort()
            .map((instance) => ({ instance, status: "RUNNING", name: instance.split("/").pop() }));
          const { slice, next } = paginate(items, (i) => i.instance, c.query, this.maxPageItems);
          return {
            kind: "compute#instanceGroupsListInstances",
            id: String(g.selfLink),
            items: slice.map(({ instance, status }) => ({ instance, status })),
            selfLink: `${String(g.selfLink)}/listInstances`,
            ...(next !== undefined && { nextPageToken: next }),
          };
        },
        false,
      ),
      ...regional("forwardingRules", "compute#forwardingRuleList"),
      R("POST", `${G}\\/forwardingRules\\/${N}\\/setLabels`, "forwardingRules.setLabels", (c) =>
        this.setLabels(c, rs(first(c)), "forwardingRules", second(c)),
      ),
      ...regional("targetPools", "compute#targetPoolList"),
      R("POST", `${G}\\/targetPools\\/${N}\\/addInstance`, "targetPools.addInstance", (c) =>
        this.poolInstances(c, rs(first(c)), second(c), "addInstance"),
      ),
      R("POST", `${G}\\/targetPools\\/${N}\\/removeInstance`, "targetPools.removeInstance", (c) =>
        this.poolInstances(c, rs(first(c)), second(c), "removeInstance"),
      ),
      R("POST", `${G}\\/targetPools\\/${N}\\/addHealthCheck`, "targetPools.addHealthCheck", (c) =>
        this.poolHealthChecks(c, rs(first(c)), second(c), true),
      ),
      R("POST", `${G}\\/targetPools\\/${N}\\/removeHealthCheck`, "targetPools.removeHealthCheck", (c) =>
        this.poolHealthChecks(c, rs(first(c)), second(c), false),
      ),
      ...global("firewalls", "compute#firewallList"),
      R("PATCH", String.raw`\/global\/firewalls\/${N}`, "firewalls.patch", (c) =>
        this.change(c.project, "global", "firewalls", first(c), "patch", (r) => {
          for (const [k, v] of Object.entries(c.body)) if (k !== "name") r[k] = v;
        }),
      ),
      ...global("httpHealthChecks", "compute#httpHealthCheckList").filter(
        (r) => r.op !== "httpHealthChecks.list",
      ),
      R("PUT", String.raw`\/global\/httpHealthChecks\/${N}`, "httpHealthChecks.update", (c) =>
        this.change(c.project, "global", "httpHealthChecks", first(c), "update", (r) => {
          const keep = {
            id: r.id,
            selfLink: r.selfLink,
            creationTimestamp: r.creationTimestamp,
            kind: r.kind,
          };
          for (const k of Object.keys(r)) delete r[k];
          Object.assign(r, this.materialize(c.project, "global", "httpHealthChecks", c.body), keep);
        }),
      ),
      ...global("routes", "compute#routeList"),
      ...operations(Z, "zoneOperations", (c) => zs(first(c)), 1),
      ...operations(G, "regionOperations", (c) => rs(first(c)), 1),
      ...operations(String.raw`\/global`, "globalOperations", () => "global", 0),
      // Every scope of the project: global, each region, each of their zones.
      R("GET", String.raw`\/aggregated\/operations`, "globalOperations.aggregatedList", (c) =>
        this.aggregated(
          c,
          "operations",
          "compute#operationAggregatedList",
          [
            "global",
            ...Object.keys(this.project(c.project).regions).map(rs),
            ...this.zonesOf(c.project).map(zs),
          ],
          (scope) => this.operationsIn(c.project, scope),
        ),
      ),
    ];
  }

  private poolInstances(c: Call, scope: Scope, name: string, type: "addInstance" | "removeInstance"): Json {
    const refs = ((c.body.instances as { instance?: string }[] | undefined) ?? []).map((i) =>
      String(i.instance ?? ""),
    );
    for (const ref of refs) {
      const m = /(?:^|\/)projects\/([^/]+)\/zones\/([^/]+)\/instances\/([^/]+)$/.exec(ref);
      if (m === null || !this.resources.has(key(m[1] ?? "", `zones/${m[2]}`, "instances", m[3] ?? "")))
        throw notFound(ref.replace(GCE_BASE, ""));
    }
    return this.change(c.project, scope, "targetPools", name, type, (r) => {
      const now = new Set((r.instances as string[]) ?? []);
      for (const ref of refs) {
        const full = ref.startsWith("https://") ? ref : `${GCE_BASE}${ref.replace(/^\//, "")}`;
        if (type === "addInstance") now.add(full);
        else now.delete(full);
      }
      r.instances = [...now].sort();
    });
  }

  /**
   * setLabels: the labels replaced whole, guarded by the fingerprint of the labels read (a stale
   * or missing one is 412 / 400, as Compute answers); keys and values in Compute's alphabet.
   */
  private setLabels(c: Call, scope: Scope, collection: string, name: string): Json {
    const r = this.get(c.project, scope, collection, name);
    const labels = (c.body.labels ?? {}) as Json;
    const given = c.body.labelFingerprint;
    if (typeof given !== "string" || given === "")
      throw fail(400, "required", "Required field 'labelFingerprint' not specified");
    if (given !== r.labelFingerprint)
      throw fail(412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed");
    for (const [k, v] of Object.entries(labels))
      if (!LABEL_KEY.test(k) || typeof v !== "string" || !LABEL_VALUE.test(v))
        throw fail(400, "invalid", `Invalid value for field 'labels': '${k}=${String(v)}'.`);
    return this.change(c.project, scope, collection, name, "setLabels", (now) => {
      now.labels = { ...labels };
      now.labelFingerprint = labelFingerprint(labels);
    });
  }

  /** targetPools.addHealthCheck / removeHealthCheck: a pool holds at most one legacy HTTP check. */
  private poolHealthChecks(c: Call, scope: Scope, name: string, add: boolean): Json {
    const refs = ((c.body.healthChecks as { healthCheck?: string }[] | undefined) ?? []).map((h) => {
      const ref = String(h.healthCheck ?? "");
      return ref.startsWith("https://") ? ref : `${GCE_BASE}${ref.replace(/^\//, "")}`;
    });
    if (add) for (const ref of refs) this.mustExist(ref);
    const pool = this.get(c.project, scope, "targetPools", name);
    const have = (pool.healthChecks as string[] | undefined) ?? [];
    if (add && have.length + refs.filter((r) => !have.includes(r)).length > 1)
      throw fail(
        400,
        "invalid",
        "Invalid value for field 'resource.healthChecks': a target pool takes one health check.",
      );
    return this.change(
      c.project,
      scope,
      "targetPools",
      name,
      add ? "addHealthCheck" : "removeHealthCheck",
      (r) => {
        const now = new Set((r.healthChecks as string[]) ?? []);
        for (const ref of refs)
          if (add) now.add(ref);
          else now.delete(ref);
        r.healthChecks = [...now];
      },
    );
  }

  /** An update (PUT): the whole resource replaced, its identity kept; a stale fingerprint is 412. */
  private replace(c: Call, scope: Scope, collection: string, name: string): Json {
    const r = this.get(c.project, scope, collection, name);
    if (
      r.fingerprint !== undefined &&
      c.body.fingerprint !== undefined &&
      c.body.fingerprint !== r.fingerprint
    )
      throw fail(412, "conditionNotMet", "Supplied fingerprint does not match current metadata fingerprint.");
    if (collection === "backendServices") this.checkBackendService(c.body);
    return this.change(c.project, scope, collection, name, "update", (now) => {
      const keep = {
        id: now.id,
        selfLink: now.selfLink,
        creationTimestamp: now.creationTimestamp,
        kind: now.kind,
      };
      for (const k of Object.keys(now)) delete now[k];
      Object.assign(now, this.materialize(c.project, scope, collection, { ...c.body, name }), keep);
    });
  }

  /** instanceGroups.addInstances / removeInstances of an unmanaged group; its size follows. */
  private groupInstances(c: Call, zone: string, name: string, add: boolean): Json {
    const g = this.get(c.project, `zones/${zone}`, "instanceGroups", name);
    const refs = ((c.body.instances as { instance?: string }[] | undefined) ?? []).map((i) => {
      const ref = String(i.instance ?? "");
      return ref.startsWith("https://") ? ref : `${GCE_BASE}${ref.replace(/^\//, "")}`;
    });
    const k = `${c.project}/${zone}/${name}`;
    const have = this.members.get(k) ?? new Set<string>();
    for (const ref of refs) {
      const m = /\/projects\/([^/]+)\/zones\/([^/]+)\/instances\/([^/]+)$/.exec(ref);
      const inst =
        m === null
          ? undefined
          : this.resources.get(key(m[1] ?? "", `zones/${m[2]}`, "instances", m[3] ?? ""));
      if (add && (inst === undefined || m?.[2] !== zone)) throw notFound(ref.replace(GCE_BASE, ""));
      if (add && have.has(ref))
        throw fail(
          400,
          "memberAlreadyExists",
          `The resource '${ref.replace(GCE_BASE, "")}' is already a member of '${String(g.selfLink).replace(GCE_BASE, "")}'`,
        );
      if (!add && !have.has(ref))
        throw fail(
          400,
          "memberNotFound",
          `The resource '${ref.replace(GCE_BASE, "")}' is not a member of '${String(g.selfLink).replace(GCE_BASE, "")}'`,
        );
    }
    return this.change(
      c.project,
      `zones/${zone}`,
      "instanceGroups",
      name,
      add ? "addInstances" : "removeInstances",
      (r) => {
        const now = this.members.get(k) ?? new Set<string>();
        for (const ref of refs)
          if (add) now.add(ref);
          else now.delete(ref);
        this.members.set(k, now);
        r.size = now.size;
      },
    );
  }

  /**
   * An aggregatedList: `items` keyed by scope ("zones/<zone>", "regions/<region>"), a warning for
   * a scope without any on the page; one filter and one paging across all scopes.
   */
  private aggregated(
    c: Call,
    collection: string,
    kind: string,
    scopes: readonly Scope[],
    itemsOf: (s: Scope) => Json[] = (s) => this.scoped(c.project, s, collection),
  ): Json {
    const sorted = [...scopes].sort();
    const all = sorted.flatMap((s) =>
      itemsOf(s)
        .filter(computeFilter(c.query.get("filter") ?? ""))
        .sort((a, b) => String(a.name).localeCompare(String(b.name)))
        .map((i) => ({ scope: s, i })),
    );
    const { slice, next } = paginate(
      all,
      (x) => `${x.scope}/${String(x.i.name)}`,
      c.query,
      this.maxPageItems,
    );
    const items: Json = {};
    for (const s of sorted) {
      const here = slice.filter((x) => x.scope === s).map((x) => x.i);
      items[s] =
        here.length > 0
          ? { [collection]: here }
          : {
              warning: {
                code: "NO_RESULTS_ON_PAGE",
                message: `There are no results for scope '${s}' on this page.`,
                data: [{ key: "scope", value: s }],
              },
            };
    }
    return {
      kind,
      id: `projects/${c.project}/aggregated/${collection}`,
      items,
      selfLink: `${GCE_BASE}projects/${c.project}/aggregated/${collection}`,
      ...(next !== undefined && { nextPageToken: next }),
    };
  }
}

interface Call {
  readonly project: string;
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  readonly body: Json;
  readonly signal: AbortSignal;
}

type Handler = (c: Call) => Json | Promise<Json>;

interface Route {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  readonly pattern: RegExp;
  readonly op: string;
  readonly handle: Handler;
  /** Changes the cloud (a lost answer applies). */
  readonly mutation: boolean;
}

function key(project: string, scope: string, collection: string, name: string): string {
  return `${project}/${scope}/${collection}/${name}`;
}

export function regionOf(zone: string): string {
  return zone.replace(/-[a-z]$/, "");
}

/** Pages by a sort key: the token is the last key answered, so deletions between pages shift nothing. */
function paginate<T>(
  items: readonly T[],
  keyOf: (t: T) => string,
  query: URLSearchParams,
  cap: number,
): { slice: T[]; next?: string } {
  const raw = query.get("maxResults");
  const max = raw === null ? 500 : Number(raw);
  if (!Number.isInteger(max) || max < 0 || max > 500)
    throw fail(
      400,
      "invalid",
      `Invalid value for field 'maxResults': '${raw}'. Must be less than or equal to 500`,
    );
  const size = Math.min(max === 0 ? 500 : max, cap);
  const token = query.get("pageToken");
  let after: string | undefined;
  if (token !== null && token !== "") {
    try {
      after = Buffer.from(token, "base64url").toString("utf8");
    } catch {
      after = undefined;
    }
    if (after === undefined || !after.startsWith("k:"))
      throw fail(400, "invalid", "Invalid value for field 'pageToken'");
    after = after.slice(2);
  }
  const rest = after === undefined ? [...items] : items.filter((i) => keyOf(i) > (after as string));
  const slice = rest.slice(0, size);
  const last = slice.at(-1);
  return rest.length > size && last !== undefined
    ? { slice, next: Buffer.from(`k:${keyOf(last)}`).toString("base64url") }
    : { slice };
}

/** Compute's label alphabet (https://cloud.google.com/compute/docs/labeling-resources). */
const LABEL_KEY = /^[a-z][-_a-z0-9]{0,62}$/;
const LABEL_VALUE = /^[-_a-z0-9]{0,63}$/;

/** A fingerprint of a label set (Compute's are opaque base64; this one changes with the labels). */
function labelFingerprint(labels: Json): string {
  const text = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return createHash("sha256").update(text).digest("base64").slice(0, 12);
}

/**
 * Compute's list filter, the forms providers use: `field = "value"`, `field != value`,
 * `field eq regex`, `field ne regex` (regular expressions match the whole value), nested
 * fields by dots, terms in parentheses joined by AND (or juxtaposed); an empty filter keeps all.
 */
export function computeFilter(filter: string): (item: Json) => boolean {
  const text = filter.trim();
  if (text === "") return () => true;
  const terms: { field: string; op: string; value: string }[] = [];
  const re =
    /\(?\s*([A-Za-z][\w.-]*)\s*(=|!=|\beq\b|\bne\b)\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s)]+)\s*\)?(?:\s+AND\s+|\s+|$)/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  for (;;) {
    re.lastIndex = at;
    m = re.exec(text);
    if (m === null) break;
    const raw = m[3] ?? "";
    terms.push({
      field: m[1] ?? "",
      op: m[2] ?? "=",
      value: raw.startsWith('"') ? (JSON.parse(raw) as string) : raw.replace(/^'|'$/g, ""),
    });
    at = re.lastIndex;
    if (at >= text.length) break;
  }
  if (at < text.length || terms.length === 0)
    throw fail(
      400,
      "invalid",
      `Invalid value for field 'filter': '${filter}'. Invalid list filter expression.`,
    );
  return (item) =>
    terms.every((t) => {
      const v = t.field.split(".").reduce<unknown>((o, k) => (o as Json | undefined)?.[k], item);
      const s = v === undefined || v === null ? "" : String(v);
      switch (t.op) {
        case "=":
          return s === t.value;
        case "!=":
          return s !== t.value;
        case "eq":
          return new RegExp(`^(?:${t.value})$`).test(s);
        default:
          return !new RegExp(`^(?:${t.value})$`).test(s);
      }
    });
}
