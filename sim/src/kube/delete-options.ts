// DeleteOptions: validation, and the finalizers a delete adds for the garbage collector's propagation policy.

import { type FieldError, fieldInvalid, fieldNotSupported, invalid } from "./errors.js";
import type { ResourceDef } from "./resources.js";

export interface DeleteOptionsInput {
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
  propagationPolicy?: string | undefined;
  orphanDependents?: boolean | undefined;
  gracePeriodSeconds?: number | undefined;
  dryRun?: boolean | undefined;
}

export function validateDeleteOptions(o: DeleteOptionsInput): void {
  const errs: FieldError[] = [];
  const policy = o.propagationPolicy;
  if (policy !== undefined) {
    if (o.orphanDependents !== undefined) {
      errs.push(
        fieldInvalid(
          "propagationPolicy",
          policy,
          "orphanDependents and deletionPropagation cannot be both set",
        ),
      );
    }
    if (policy !== "Foreground" && policy !== "Background" && policy !== "Orphan") {
      errs.push(
        fieldNotSupported("propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"]),
      );
    }
  }
  if (errs.length > 0) throw invalid("meta.k8s.io", "DeleteOptions", "", errs);
}

/**
 * rest.BeforeDelete: a negative gracePeriodSeconds is not an error but read as 1 s. None of the served
 * kinds deletes gracefully (Pods here have no kubelet to wait for), so the period has no further effect.
 */
export function normalizeDeleteOptions(o: DeleteOptionsInput): DeleteOptionsInput {
  if (o.gracePeriodSeconds !== undefined && o.gracePeriodSeconds < 0) return { ...o, gracePeriodSeconds: 1 };
  return o;
}

/** deletionFinalizersForGarbageCollection from the generic registry. */
export function gcFinalizers(
  def: ResourceDef,
  current: readonly string[],
  o: DeleteOptionsInput,
): { changed: boolean; finalizers: string[] } {
  if (!def.gcSupported) return { changed: false, finalizers: [...current] };
  let orphan: boolean;
  let foreground: boolean;
  if (o.orphanDependents !== undefined) {
    orphan = o.orphanDependents;
    foreground = false;
  } else if (o.propagationPolicy !== undefined) {
    orphan = o.propagationPolicy === "Orphan";
    foreground = o.propagationPolicy === "Foreground";
  } else {
    orphan = current.includes("orphan") && !current.includes("foregroundDeletion");
    foreground = current.includes("foregroundDeletion") && !current.includes("orphan");
  }
  const next = current.filter((f) => f !== "orphan" && f !== "foregroundDeletion");
  if (orphan) next.push("orphan");
  if (foreground) next.push("foregroundDeletion");
  const a = new Set(current);
  const b = new Set(next);
  const same = a.size === b.size && [...a].every((x) => b.has(x));
  return same ? { changed: false, finalizers: [...current] } : { changed: true, finalizers: next };
}

/**
 * The GC finalizers the namespace registry puts on a namespace at its first DELETE: orphanDependents
 * decides both (true → orphan, false → foregroundDeletion), else propagationPolicy, else what is there.
 */
export function namespaceGCFinalizers(current: readonly string[], o: DeleteOptionsInput): string[] {
  let orphan = current.includes("orphan");
  let foreground = current.includes("foregroundDeletion");
  if (o.orphanDependents !== undefined) {
    orphan = o.orphanDependents;
    foreground = !o.orphanDependents;
  } else if (o.propagationPolicy !== undefined) {
    orphan = o.propagationPolicy === "Orphan";
    foreground = o.propagationPolicy === "Foreground";
  }
  const next = current.filter((f) => f !== "orphan" && f !== "foregroundDeletion");
  if (orphan) next.push("orphan");
  if (foreground) next.push("foregroundDeletion");
  return next;
}
