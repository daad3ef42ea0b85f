import { type ApplyResult, ObjectKind, type ServiceDesired } from "@fleet-ccm/proto";
import type { V1Service } from "@kubernetes/client-node";
import type { KubeClient } from "../kube-client.js";
import { applyGuarded } from "./guarded.js";

type Body = Record<string, unknown>;

/**
 * Finalizers, the vendor CCM's annotations and status.loadBalancer.ingress as one merge patch on
 * the status subresource (as upstream's PatchService does: metadata changes persist through it),
 * with uid and resourceVersion preconditions; null when the Service already matches.
 */
export function serviceStatusPatch(svc: V1Service, d: ServiceDesired): Body | null {
  const have = svc.metadata?.finalizers ?? [];
  const remove = new Set(d.removeFinalizers);
  const finalizers = have.filter((f) => !remove.has(f));
  for (const f of d.addFinalizers) if (!finalizers.includes(f)) finalizers.push(f);
  const finalizersChanged = finalizers.length !== have.length || finalizers.some((f, i) => f !== have[i]);
  const metadata: Body = { uid: svc.metadata?.uid, resourceVersion: svc.metadata?.resourceVersion };
  if (finalizersChanged) metadata["finalizers"] = finalizers;
  const current = svc.metadata?.annotations ?? {};
  const annotations = Object.entries(d.setAnnotations).filter(([key, value]) => current[key] !== value);
  if (annotations.length > 0) metadata["annotations"] = Object.fromEntries(annotations);
  const body: Body = { metadata };
  if (d.ingress !== undefined) {
    const shown = svc.status?.loadBalancer?.ingress ?? [];
    const want = d.ingress.items.map((i) => {
      const e: Record<string, string> = {};
      if (i.ip !== "") e["ip"] = i.ip;
      if (i.hostname !== "") e["hostname"] = i.hostname;
      if (i.ip !== "" && i.ipMode !== "") e["ipMode"] = i.ipMode;
      return e;
    });
    // An ipMode left out is the API server's VIP; one it does not show (no LoadBalancerIPMode
    // feature) matches any, as the hub compares.
    const same =
      shown.length === want.length &&
      shown.every((c, idx) => {
        const w = want[idx] ?? {};
        return (
          (c.ip ?? "") === (w["ip"] ?? "") &&
          (c.hostname ?? "") === (w["hostname"] ?? "") &&
          (c.ipMode === undefined || c.ipMode === (w["ipMode"] ?? (w["ip"] ? "VIP" : undefined)))
        );
      });
    // A merge patch removes a field only by null: `loadBalancer: {}` would leave the old ingress.
    if (!same) body["status"] = { loadBalancer: { ingress: want.length === 0 ? null : want } };
  }
  if (!finalizersChanged && annotations.length === 0 && body["status"] === undefined) return null;
  return body;
}

/** Applies one desired Service state to exactly the Service with that uid. */
export function applyServiceDesired(
  api: KubeClient,
  d: ServiceDesired,
  cached: V1Service | undefined,
): Promise<ApplyResult> {
  const { name, namespace } = d;
  return applyGuarded(
    { kind: ObjectKind.OBJECT_KIND_SERVICE, namespace, name, uid: d.uid, generation: d.generation },
    cached,
    () => api.readService(namespace, name),
    async (svc) => {
      const body = serviceStatusPatch(svc, d);
      if (body !== null) await api.patchServiceStatus(namespace, name, body);
    },
  );
}
