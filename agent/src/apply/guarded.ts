import { ApplyOutcome, type ApplyResult, type ObjectKind } from "@fleet-ccm/proto";
import { Backoff, sleep } from "../backoff.js";
import { type ApiFailure, apiFailure } from "./errors.js";

/** Conflicts are retried with a fresh read (upstream UpdateNodeSpecBackoff retries 20 times). */
const MAX_ATTEMPTS = 8;
/** Between conflict retries: 20 ms doubling to 500 ms, jittered. */
const CONFLICT_BACKOFF = { initialMs: 20, maxMs: 500 };

/** Which object, exactly, one desired state is for. */
export interface Target {
  readonly kind: ObjectKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly generation: number;
}

export function applyResult(t: Target, outcome: ApplyOutcome, f?: Partial<ApiFailure>): ApplyResult {
  return {
    kind: t.kind,
    namespace: t.namespace,
    name: t.name,
    uid: t.uid,
    generation: t.generation,
    outcome,
    httpStatus: f?.code ?? 0,
    reason: f?.reason ?? "",
    message: f?.message ?? "",
  };
}

/**
 * Applies a desired state to exactly the object with the target's uid: reads it (the informer's
 * copy first), refuses another uid as STALE, applies, and on 409 (the object changed under us)
 * reads again and retries. 404 is STALE; anything else is FAILED with the API's answer.
 */
export async function applyGuarded<T extends { metadata?: { uid?: string } }>(
  target: Target,
  cached: T | undefined,
  read: () => Promise<T>,
  apply: (obj: T) => Promise<void>,
): Promise<ApplyResult> {
  let obj = cached;
  const conflicts = new Backoff(CONFLICT_BACKOFF);
  let last: ApiFailure = { code: 0, reason: "", message: "" };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      if (obj === undefined || attempt > 0) obj = await read();
      if (obj.metadata?.uid !== target.uid) {
        const what = target.namespace === "" ? target.name : `${target.namespace}/${target.name}`;
        return applyResult(target, ApplyOutcome.APPLY_OUTCOME_STALE, {
          reason: "UIDMismatch",
          message: `${what} now has another uid`,
        });
      }
      await apply(obj);
      return applyResult(target, ApplyOutcome.APPLY_OUTCOME_APPLIED);
    } catch (err) {
      last = apiFailure(err);
      if (last.code === 404) return applyResult(target, ApplyOutcome.APPLY_OUTCOME_STALE, last);
      if (last.code !== 409) break;
      await sleep(conflicts.next());
    }
  }
  return applyResult(target, ApplyOutcome.APPLY_OUTCOME_FAILED, last);
}
