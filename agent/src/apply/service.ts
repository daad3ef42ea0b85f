import { ApplyOutcome, type ApplyResult, ObjectKind, type ServiceDesired } from "@fleet-ccm/proto";
import { type CoreV1Api, PatchStrategy, setHeaderOptions, type V1Service } from "@kubernetes/client-node";
import { apiFailure } from "./errors.js";

const MERGE = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const MAX_ATTEMPTS = 8;

type Body = Record<string, unknown>;

/**
 * Finalizers and status.loadBalancer.ingress as one merge patch on the status subresource (as
 * upstream's PatchService does), with uid and resourceVersion preconditions; null when the
 * Service already matches.
 */
export function serviceStatusPatch(svc: V1Service, d: ServiceDesired): Body | null {
  const have = svc.metadata?.finalizers ?? [];
  const remove = new Set(d.removeFinalizers);
  const finalizers = have.filter((f) => !remove.has(f));
  for (const f of d.addFinalizers) if (!finalizers.includes(f)) finalizers.push(f);
  const finalizersChanged = finalizers.length !== have.length || finalizers.some((f, i) => f !== have[i]);
  const metadata: Body = { uid: svc.metadata?.uid, resourceVersion: svc.metadata?.resourceVersion };
  if (finalizersChanged) metadata["finalizers"] = finalizers;
  const body: Body = { metadata };
  if (d.ingress !== undefined) {
    const current = svc.status?.loadBalancer?.ingress ?? [];
    const want = d.ingress.items.map((i) => {
      const e: Record<string, string> = {};
      if (i.ip !== "") e["ip"] = i.ip;
      if (i.hostname !== "") e["hostname"] = i.hostname;
      return e;
    });
    const same =
      current.length === want.length &&
      current.every(
        (c, idx) =>
          (c.ip ?? "") === (want[idx]?.["ip"] ?? "") &&
          (c.hostname ?? "") === (want[idx]?.["hostname"] ?? ""),
      );
    if (!same) body["status"] = { loadBalancer: want.length === 0 ? {} : { ingress: want } };
  }
  if (!finalizersChanged && body["status"] === undefined) return null;
  return body;
}

/** Applies one desired Service state to exactly the Service with that uid; retries conflicts on a fresh read. */
export async function applyServiceDesired(
  core: CoreV1Api,
  d: ServiceDesired,
  cached: V1Service | undefined,
): Promise<ApplyResult> {
  const result = (outcome: ApplyOutcome, httpStatus = 0, reason = "", message = ""): ApplyResult => ({
    kind: ObjectKind.OBJECT_KIND_SERVICE,
    namespace: d.namespace,
    name: d.name,
    uid: d.uid,
    generation: d.generation,
    outcome,
    httpStatus,
    reason,
    message,
  });
  let svc = cached;
  let last = { code: 0, reason: "", message: "" };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      if (svc === undefined || attempt > 0)
        svc = await core.readNamespacedService({ name: d.name, namespace: d.namespace });
      if (svc.metadata?.uid !== d.uid)
        return result(
          ApplyOutcome.APPLY_OUTCOME_STALE,
          0,
          "UIDMismatch",
          `service ${d.namespace}/${d.name} now has another uid`,
        );
      const body = serviceStatusPatch(svc, d);
      if (body !== null)
        await core.patchNamespacedServiceStatus({ name: d.name, namespace: d.namespace, body }, MERGE);
      return result(ApplyOutcome.APPLY_OUTCOME_APPLIED);
    } catch (err) {
      last = apiFailure(err);
      if (last.code === 404) return result(ApplyOutcome.APPLY_OUTCOME_STALE, 404, last.reason, last.message);
      if (last.code !== 409) break;
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 50 * (attempt + 1)));
    }
  }
  return result(ApplyOutcome.APPLY_OUTCOME_FAILED, last.code, last.reason, last.message);
}
