import http from "node:http";
import https from "node:https";
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  V1Node,
  V1PersistentVolume,
  V1Service,
} from "@kubernetes/client-node";

/**
 * The API server refused a request: `code` is the HTTP status, `body` its answer (a Status
 * JSON). The same shape as client-node's ApiException, so one `apiFailure` reads both.
 */
export class KubeRequestError extends Error {
  constructor(
    readonly code: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${code}`);
    this.name = "KubeRequestError";
  }
}

type Json = Record<string, unknown>;
type PatchType = "merge" | "strategic";

const CONTENT_TYPE: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

/** Items per LIST page: one page is all that is ever parsed at once. */
const PAGE_SIZE = 500;
/** Paged fresh starts after a continue token expired, before one unpaged LIST (listAll). */
const RELIST_PAGED_TIMES = 2;
/** No single API call hangs an apply or a relist for longer than this. */
const REQUEST_TIMEOUT_MS = 30_000;

const seg = encodeURIComponent;

/**
 * The few core/v1 calls the agent makes, with client-node's KubeConfig (credentials, TLS, exec
 * plugins, the keep-alive agent) over node:http(s), as its watches (http-watch.ts). client-node's
 * generated CoreV1Api would do the same calls but loads every model of the Kubernetes API
 * (≈ 55 MiB of the agent's memory before it holds a single object).
 */
export class KubeClient {
  constructor(private readonly kc: KubeConfig) {}

  version(): Promise<{ gitVersion: string }> {
    return this.request("GET", "/version") as Promise<{ gitVersion: string }>;
  }

  /** Every Node, in pages; `keep` maps each item to what is kept of it before the next page is read. */
  listNodes(keep: (n: V1Node) => V1Node): Promise<KubernetesListObject<V1Node>> {
    return this.listAll("/api/v1/nodes", keep);
  }

  /** Every Service of every namespace, in pages. */
  listServices(keep: (s: V1Service) => V1Service): Promise<KubernetesListObject<V1Service>> {
    return this.listAll("/api/v1/services", keep);
  }

  /** Every PersistentVolume, in pages. */
  listPersistentVolumes(
    keep: (pv: V1PersistentVolume) => V1PersistentVolume,
  ): Promise<KubernetesListObject<V1PersistentVolume>> {
    return this.listAll("/api/v1/persistentvolumes", keep);
  }

  readPersistentVolume(name: string): Promise<V1PersistentVolume> {
    return this.request("GET", `/api/v1/persistentvolumes/${seg(name)}`) as Promise<V1PersistentVolume>;
  }

  async patchPersistentVolume(name: string, body: Json): Promise<void> {
    await this.request("PATCH", `/api/v1/persistentvolumes/${seg(name)}`, {
      body,
      patch: "merge",
      discard: true,
    });
  }

  readNode(name: string): Promise<V1Node> {
    return this.request("GET", `/api/v1/nodes/${seg(name)}`) as Promise<V1Node>;
  }

  async patchNode(name: string, body: Json): Promise<void> {
    await this.request("PATCH", `/api/v1/nodes/${seg(name)}`, { body, patch: "merge", discard: true });
  }

  patchNodeStatus(name: string, body: Json): Promise<V1Node> {
    return this.request("PATCH", `/api/v1/nodes/${seg(name)}/status`, {
      body,
      patch: "merge",
    }) as Promise<V1Node>;
  }

  /** Deletes exactly the node with this uid (409 if the name now has another). */
  async deleteNode(name: string, uid: string): Promise<void> {
    await this.request("DELETE", `/api/v1/nodes/${seg(name)}`, {
      body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid } },
      discard: true,
    });
  }

  readService(namespace: string, name: string): Promise<V1Service> {
    return this.request(
      "GET",
      `/api/v1/namespaces/${seg(namespace)}/services/${seg(name)}`,
    ) as Promise<V1Service>;
  }

  /** One Secret, by name: the agent never lists or watches Secrets (RBAC grants `get` only). */
  readSecret(namespace: string, name: string): Promise<{ type?: string; data?: Record<string, string> }> {
    return this.request("GET", `/api/v1/namespaces/${seg(namespace)}/secrets/${seg(name)}`) as Promise<{
      type?: string;
      data?: Record<string, string>;
    }>;
  }

  async patchServiceStatus(namespace: string, name: string, body: Json): Promise<void> {
    await this.request("PATCH", `/api/v1/namespaces/${seg(namespace)}/services/${seg(name)}/status`, {
      body,
      patch: "merge",
      discard: true,
    });
  }

  async createEvent(namespace: string, body: Json): Promise<void> {
    await this.request("POST", `/api/v1/namespaces/${seg(namespace)}/events`, { body, discard: true });
  }

  async patchEvent(namespace: string, name: string, body: Json): Promise<void> {
    await this.request("PATCH", `/api/v1/namespaces/${seg(namespace)}/events/${seg(name)}`, {
      body,
      patch: "strategic",
      discard: true,
    });
  }

  /**
   * A paged LIST. The list's resourceVersion is the first page's (the server keeps it constant
   * across pages). When a continue token expires (410), the list starts over, so the result is
   * never a mix of two points in time: paged again (one unpaged answer of a large cluster
   * could outgrow the agent's heap), and unpaged, as client-go's pager does, only once
   * RELIST_PAGED_TIMES fresh starts have expired too.
   */
  private async listAll<T extends KubernetesObject>(
    path: string,
    keep: (item: T) => T,
  ): Promise<KubernetesListObject<T>> {
    let items: T[] = [];
    let resourceVersion: string | undefined;
    let token = "";
    let expired = 0;
    for (;;) {
      let page: KubernetesListObject<T>;
      try {
        page = (await this.request("GET", path, {
          query: token === "" ? { limit: PAGE_SIZE } : { limit: PAGE_SIZE, continue: token },
        })) as KubernetesListObject<T>;
      } catch (err) {
        if (token === "" || !(err instanceof KubeRequestError) || err.code !== 410) throw err;
        if (++expired <= RELIST_PAGED_TIMES) {
          items = [];
          resourceVersion = undefined;
          token = "";
          continue;
        }
        const full = (await this.request("GET", path)) as KubernetesListObject<T>;
        if (!Array.isArray(full?.items)) throw new Error(`LIST ${path}: the answer is not a list`);
        return { metadata: { resourceVersion: full.metadata?.resourceVersion }, items: full.items.map(keep) };
      }
      if (!Array.isArray(page?.items)) throw new Error(`LIST ${path}: the answer is not a list`);
      resourceVersion ??= page.metadata?.resourceVersion;
      for (const item of page.items) items.push(keep(item));
      // The wire name; client-node's typed models call it _continue.
      token = (page.metadata as { continue?: string } | undefined)?.continue ?? "";
      if (token === "") return { metadata: { resourceVersion }, items };
    }
  }

  private async request(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    path: string,
    opts: {
      query?: Record<string, string | number>;
      body?: Json;
      patch?: PatchType;
      /** The caller needs no answer: the response body is read but not parsed. */
      discard?: boolean;
    } = {},
  ): Promise<unknown> {
    const cluster = this.kc.getCurrentCluster();
    if (cluster === null) throw new Error("the kubeconfig has no current cluster");
    const url = new URL(cluster.server.replace(/\/+$/, "") + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { Accept: "application/json", "Accept-Encoding": "gzip" };
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) {
      headers["Content-Type"] = opts.patch === undefined ? "application/json" : CONTENT_TYPE[opts.patch];
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    // The KubeConfig's credentials, TLS settings and keep-alive agent, as for its own clients.
    const options: https.RequestOptions = { method, headers, timeout: REQUEST_TIMEOUT_MS };
    await this.kc.applyToHTTPSOptions(options);
    const res = await send(url, options, body);
    const text = res.text;
    if (res.status < 200 || res.status > 299)
      throw new KubeRequestError(res.status, text, `${method} ${path}`);
    return text === "" || opts.discard === true ? undefined : JSON.parse(text);
  }
}

const gunzipAsync = promisify(gunzip);

/**
 * One request over node:http(s) with the KubeConfig's agent: node-fetch's Request, Headers and
 * body streams cost the bench's fleet of agents ~4 % of its CPU for nothing the agent uses. The
 * whole exchange has REQUEST_TIMEOUT_MS, as node-fetch's `timeout` had; gzip answers (what
 * client-go asks for too) are inflated.
 */
function send(
  url: URL,
  options: https.RequestOptions,
  body: string | undefined,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === "https:" ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", fail);
      res.on("end", () => {
        clearTimeout(timer);
        const raw = chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks);
        const status = res.statusCode ?? 0;
        if (res.headers["content-encoding"] !== "gzip") resolve({ status, text: raw.toString("utf8") });
        else gunzipAsync(raw).then((b) => resolve({ status, text: b.toString("utf8") }), reject);
      });
    });
    const timer = setTimeout(
      () =>
        req.destroy(
          new Error(`${options.method} ${url.pathname}: no answer within ${REQUEST_TIMEOUT_MS} ms`),
        ),
      REQUEST_TIMEOUT_MS,
    );
    function fail(err: Error): void {
      clearTimeout(timer);
      reject(err);
    }
    req.on("error", fail);
    req.end(body);
  });
}
