// What a LIST or WATCH asks for: the ListOptions, their validation, resourceVersion parsing and the
// compiled namespace / label / field filter.

import {
  badRequest,
  type FieldError,
  fieldForbidden,
  fieldNotSupported,
  invalid,
  type KubeApiError,
} from "./errors.js";
import type { ResourceDef } from "./resources.js";
import {
  type FieldSelector,
  type LabelSelector,
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector,
} from "./selectors.js";
import type { Entry } from "./table.js";

export interface ListOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  limit?: number | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
  resourceVersionMatch?: string | undefined;
  sendInitialEvents?: boolean | undefined;
}

export function listOptionsInvalid(errs: FieldError[]): KubeApiError {
  return invalid("meta.k8s.io", "ListOptions", "", errs);
}

export function parseRV(value: string): number {
  if (!/^\d+$/.test(value)) {
    throw badRequest(
      `resourceVersion: Invalid value: ${JSON.stringify(value)}: strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`,
    );
  }
  return Number(value);
}

/** Validation of the options of a LIST (WATCH has its own in watch planning). */
export function validateListOptions(o: ListOptions): void {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch ?? "";
  if (match !== "") {
    if (!o.resourceVersion) {
      errs.push(
        fieldForbidden(
          "resourceVersionMatch",
          "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
      );
    }
    if (o.continue) {
      errs.push(
        fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"),
      );
    }
    if (match !== "Exact" && match !== "NotOlderThan") {
      errs.push(fieldNotSupported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]));
    }
    if (match === "Exact" && o.resourceVersion === "0") {
      errs.push(
        fieldForbidden(
          "resourceVersionMatch",
          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
      );
    }
  }
  if (o.sendInitialEvents !== undefined) {
    errs.push(fieldForbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  }
  if (errs.length > 0) throw listOptionsInvalid(errs);
}

/** A compiled list/watch filter. */
export interface Filter {
  readonly namespace: string | undefined;
  readonly labels: LabelSelector;
  readonly fields: FieldSelector;
  readonly trivial: boolean;
}

export function compileFilter(def: ResourceDef, o: ListOptions): Filter {
  const labels = parseLabelSelector(o.labelSelector ?? "");
  const fields = parseFieldSelector(o.fieldSelector ?? "");
  for (const f of fields) {
    if (!def.fieldLabels.includes(f.field)) throw def.unsupportedFieldError(f.field);
  }
  const namespace = def.namespaced && o.namespace ? o.namespace : undefined;
  return { namespace, labels, fields, trivial: labels.length === 0 && fields.length === 0 };
}

export function matches(f: Filter, e: Entry): boolean {
  if (f.namespace !== undefined && e.namespace !== f.namespace) return false;
  if (f.labels.length > 0 && !matchLabels(f.labels, e.labels)) return false;
  if (f.fields.length > 0 && !matchFields(f.fields, e.fields)) return false;
  return true;
}
