/**
 * Long-running operations, never waited on by a worker and never kept only in memory: a
 * mutation's Operation that is not DONE answers InProgress; the next pass finds the pending
 * operation again from the cloud (the newest operation on the resource's targetLink) or the
 * resource itself. An operation that ended with `error` is reported once (and dismissed, so
 * the next pass builds anew): quota → ThrottledError, RESOURCE_NOT_READY → InProgress,
 * alreadyExists on an insert → the resource is adopted, anything else → OperationFailedError.
 */
import { OperationFailedError, ThrottledError } from "../../errors.js";
import { type InProgress, inProgress } from "../../provider.js";
import type { GcpApi, Operation } from "./api.js";
import { isNotFound } from "./errors.js";

export type Step = undefined | InProgress;

/** Where an operation lives: "global", "regions/<r>" or "zones/<z>" (from its own links). */
export function operationScope(op: Operation): string {
  const m = /\/(regions|zones)\/([^/]+)$/.exec(op.region ?? op.zone ?? "");
  return m === null ? "global" : `${m[1]}/${m[2]}`;
}

async function listOps(
  api: GcpApi,
  scope: string,
  filter: string,
  signal?: AbortSignal,
): Promise<Operation[]> {
  const [kind, name = ""] = scope.split("/");
  return api.listAll(
    "operations.list",
    (c, o, pageToken) => {
      const q = { project: api.project, filter, ...(pageToken !== undefined && { pageToken }) };
      if (scope === "global") return c.globalOperations.list(q, o);
      return kind === "regions"
        ? c.regionOperations.list({ ...q, region: name }, o)
        : c.zoneOperations.list({ ...q, zone: name }, o);
    },
    signal,
  );
}

export class Operations {
  constructor(
    private readonly api: GcpApi,
    private readonly pollMs: number,
  ) {}

  /** The newest operation on `targetLink` in `scope`, if any. */
  async latest(scope: string, targetLink: string, signal?: AbortSignal): Promise<Operation | undefined> {
    const ops = await listOps(this.api, scope, `targetLink = "${targetLink}"`, signal);
    return ops.sort((a, b) => String(b.insertTime ?? "").localeCompare(String(a.insertTime ?? "")))[0];
  }

  /**
   * What the newest operation on a resource means for the next step: InProgress while it runs,
   * a thrown contract error if it ended with one (dismissed first), undefined otherwise.
   */
  async pending(scope: string, targetLink: string, signal?: AbortSignal): Promise<Step> {
    const op = await this.latest(scope, targetLink, signal);
    if (op === undefined) return undefined;
    return this.outcome(op, scope, signal);
  }

  /**
   * InProgress while any operation in `scopes` that is not DONE targets a resource `mine`
   * accepts (by its name), else undefined: one aggregated listing of the project's operations
   * not DONE (every scope at once, paged; a scope that cannot be read fails the whole call, so
   * the answer is never a partial view).
   */
  async running(
    scopes: readonly string[],
    mine: (name: string) => boolean,
    signal?: AbortSignal,
  ): Promise<Step> {
    const wanted = new Set(scopes);
    const found = await this.api.call(
      "operations.aggregatedList",
      async (c, o) => {
        for await (const [scope, list] of c.globalOperations.aggregatedListAsync(
          { project: this.api.project, filter: 'status != "DONE"', maxResults: 500 },
          // The call's options: autoPaginate off, the async iterator pages itself (gax warns on true).
          o,
        )) {
          if (!wanted.has(scope)) continue;
          const op = (list.operations ?? []).find(
            (x) => x.status !== "DONE" && mine(String(x.targetLink ?? "").replace(/^.*\//, "")),
          );
          if (op !== undefined) return { op, scope };
        }
        return undefined;
      },
      signal,
    );
    return found === undefined ? undefined : this.outcome(found.op, found.scope, signal);
  }

  /** The meaning of an Operation as Compute answered it (an insert's, a poll's). */
  async outcome(op: Operation, scope: string, signal?: AbortSignal): Promise<Step> {
    if (op.status !== "DONE")
      return inProgress(
        this.pollMs,
        `${op.operationType ?? "operation"} ${op.name ?? ""} ${op.status ?? ""}`.trim(),
      );
    const errors = op.error?.errors ?? [];
    if (errors.length === 0) return undefined;
    const codes = errors.map((e) => e.code ?? "");
    // An insert that found its resource made (our own earlier, lost answer) is adopted.
    if (codes.every((c) => c === "RESOURCE_ALREADY_EXISTS" || c === "alreadyExists")) return undefined;
    await this.dismiss(op, scope, signal);
    const text = `${op.operationType ?? "operation"} of ${op.targetLink ?? "?"} failed: ${errors.map((e) => `${e.code}: ${e.message}`).join("; ")}`;
    if (codes.includes("RESOURCE_NOT_READY")) return inProgress(this.pollMs, text);
    if (codes.some((c) => c === "QUOTA_EXCEEDED" || c === "RATE_LIMIT_EXCEEDED"))
      throw new ThrottledError(text, undefined);
    throw new OperationFailedError(text);
  }

  /** A mutation's answer: undefined once DONE without error, else InProgress or a thrown error. */
  async after(op: Operation, signal?: AbortSignal): Promise<Step> {
    return this.outcome(op, operationScope(op), signal);
  }

  /** Forgets a failed operation so that it is reported once, by whichever replica reads it first. */
  private async dismiss(op: Operation, scope: string, signal?: AbortSignal): Promise<void> {
    const name = op.name ?? "";
    const [kind, where = ""] = scope.split("/");
    await this.api
      .call(
        "operations.dismiss",
        (c, o) =>
          scope === "global"
            ? c.globalOperations.delete({ project: this.api.project, operation: name }, o)
            : kind === "regions"
              ? c.regionOperations.delete({ project: this.api.project, region: where, operation: name }, o)
              : c.zoneOperations.delete({ project: this.api.project, zone: where, operation: name }, o),
        signal,
      )
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
}

/** A get that answers undefined on Compute's 404. */
export async function getOrUndefined<T>(get: () => Promise<T>): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
