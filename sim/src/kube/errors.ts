// metav1.Status error bodies and field errors, reproducing k8s.io/apimachinery's wording.

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: { continue?: string };
  status: "Failure" | "Success";
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code?: number;
}

/** An API error carrying the exact Status body and HTTP code the real apiserver would send. */
export class KubeApiError extends Error {
  readonly status: Status;
  readonly code: number;
  constructor(status: Status) {
    super(status.message ?? status.reason ?? "error");
    this.name = "KubeApiError";
    this.status = status;
    this.code = status.code ?? 500;
  }
  get reason(): string | undefined {
    return this.status.reason;
  }
}

export interface GroupResource {
  group: string;
  resource: string;
}

export function groupResourceString(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}

function details(name: string | undefined, group: string, kind: string): StatusDetails {
  const d: StatusDetails = {};
  if (name) d.name = name;
  if (group) d.group = group;
  if (kind) d.kind = kind;
  return d;
}

function failure(
  code: number,
  reason: string | undefined,
  message: string,
  det: StatusDetails | undefined,
): KubeApiError {
  const s: Status = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message };
  if (reason) s.reason = reason;
  if (det !== undefined) s.details = det;
  s.code = code;
  return new KubeApiError(s);
}

export function notFound(gr: GroupResource, name: string): KubeApiError {
  return failure(
    404,
    "NotFound",
    `${groupResourceString(gr)} "${name}" not found`,
    details(name, gr.group, gr.resource),
  );
}

export function alreadyExists(gr: GroupResource, name: string): KubeApiError {
  return failure(
    409,
    "AlreadyExists",
    `${groupResourceString(gr)} "${name}" already exists`,
    details(name, gr.group, gr.resource),
  );
}

export function conflict(gr: GroupResource, name: string, cause: string): KubeApiError {
  return failure(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${groupResourceString(gr)} "${name}": ${cause}`,
    details(name, gr.group, gr.resource),
  );
}

export const OPTIMISTIC_LOCK_MSG =
  "the object has been modified; please apply your changes to the latest version and try again";

export function expired(message: string): KubeApiError {
  return failure(410, "Expired", message, undefined);
}

export function tooOldResourceVersion(requested: number, oldest: number): KubeApiError {
  return expired(`too old resource version: ${requested} (${oldest})`);
}

export function badRequest(message: string): KubeApiError {
  return failure(400, "BadRequest", message, undefined);
}

export function unauthorized(): KubeApiError {
  return failure(401, "Unauthorized", "Unauthorized", undefined);
}

export function unsupportedMediaType(accepted: readonly string[]): KubeApiError {
  return failure(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
    undefined,
  );
}

export function methodNotAllowed(): KubeApiError {
  return failure(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
    {},
  );
}

export function notFoundRoute(): KubeApiError {
  return failure(404, "NotFound", "the server could not find the requested resource", {});
}

/** NamespaceLifecycle admission: creating `name` (of resource `gr`) in a namespace being deleted. */
export function namespaceTerminating(gr: GroupResource, name: string, namespace: string): KubeApiError {
  const det = details(name, gr.group, gr.resource);
  det.causes = [
    {
      reason: "NamespaceTerminating",
      message: `namespace ${namespace} is being terminated`,
      field: "metadata.namespace",
    },
  ];
  return failure(
    403,
    "Forbidden",
    `${groupResourceString(gr)} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
    det,
  );
}

export function notAcceptable(message: string): KubeApiError {
  return failure(406, "NotAcceptable", message, undefined);
}

export function requestEntityTooLarge(message: string): KubeApiError {
  return failure(413, "RequestEntityTooLarge", message, undefined);
}

/** A plain (non-API) server error: 500 with no reason, message = raw error text. */
export function internalRaw(message: string): KubeApiError {
  return failure(500, undefined, message, undefined);
}

export function internalError(message: string): KubeApiError {
  return failure(500, "InternalError", `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });
}

export function timeoutTooLargeResourceVersion(requested: number, current: number): KubeApiError {
  const e = failure(
    504,
    "Timeout",
    `Timeout: Too large resource version: ${requested}, current: ${current}`,
    {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
      retryAfterSeconds: 1,
    },
  );
  return e;
}

/** The generic 422 the patch handler returns when a JSON patch operation fails (underlying text is discarded). */
export function jsonPatchRejected(): KubeApiError {
  return failure(422, "Invalid", "the server rejected our request due to an error in our request", {});
}

export function successStatus(det: StatusDetails): Status {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: det };
}

// ---------------------------------------------------------------------------------------------
// Field errors (k8s.io/apimachinery/pkg/util/validation/field)

export type FieldErrorType =
  | "FieldValueRequired"
  | "FieldValueInvalid"
  | "FieldValueNotSupported"
  | "FieldValueForbidden"
  | "FieldValueDuplicate"
  | "FieldValueTooLong"
  | "FieldValueNotFound"
  | "FieldValueTypeInvalid"
  | "InternalError";

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueRequired: "Required value",
  FieldValueInvalid: "Invalid value",
  FieldValueNotSupported: "Unsupported value",
  FieldValueForbidden: "Forbidden",
  FieldValueDuplicate: "Duplicate value",
  FieldValueTooLong: "Too long",
  FieldValueNotFound: "Not found",
  FieldValueTypeInvalid: "Invalid value",
  InternalError: "Internal error",
};

/** A raw value as the Go side would print it; `rendered` overrides the default rendering. */
export interface FieldError {
  type: FieldErrorType;
  field: string;
  /** Already-rendered bad value (see renderValue), or undefined when the type does not print a value. */
  value?: string;
  detail: string;
}

/** Renders a bad value like field.Error.ErrorBody: strings quoted, numbers/bools bare, null, others JSON. */
export function renderValue(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

/** Go's %#v rendering of a []string, e.g. []string{"a", "b"}. */
export function goStringSlice(values: readonly string[]): string {
  return `[]string{${values.map((v) => JSON.stringify(v)).join(", ")}}`;
}

export function fieldRequired(field: string, detail = ""): FieldError {
  return { type: "FieldValueRequired", field, detail };
}

export function fieldInvalid(field: string, value: unknown, detail: string): FieldError {
  return { type: "FieldValueInvalid", field, value: renderValue(value), detail };
}

/** Invalid with a value rendered verbatim (for Go-specific renderings such as []string{...}). */
export function fieldInvalidRaw(field: string, rendered: string, detail: string): FieldError {
  return { type: "FieldValueInvalid", field, value: rendered, detail };
}

export function fieldForbidden(field: string, detail: string): FieldError {
  return { type: "FieldValueForbidden", field, detail };
}

export function fieldDuplicate(field: string, value: unknown, detail = ""): FieldError {
  return { type: "FieldValueDuplicate", field, value: renderValue(value), detail };
}

export function fieldNotSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  const detail = supported.length > 0 ? `supported values: ${supported.map((s) => `"${s}"`).join(", ")}` : "";
  return { type: "FieldValueNotSupported", field, value: renderValue(value), detail };
}

export function fieldTooLong(field: string, maxLength: number): FieldError {
  return { type: "FieldValueTooLong", field, detail: `may not be more than ${maxLength} bytes` };
}

export function fieldErrorBody(e: FieldError): string {
  let s = TYPE_TEXT[e.type];
  if (e.value !== undefined && e.type !== "FieldValueRequired" && e.type !== "FieldValueForbidden") {
    s += `: ${e.value}`;
  }
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

export function fieldErrorString(e: FieldError): string {
  return e.field ? `${e.field}: ${fieldErrorBody(e)}` : fieldErrorBody(e);
}

/** Builds errors.NewInvalid(groupKind, name, errs): message aggregates de-duplicated errors, causes keep all. */
export function invalid(
  group: string,
  kind: string,
  name: string,
  errs: readonly FieldError[],
): KubeApiError {
  const causes: StatusCause[] = errs.map((e) => {
    const c: StatusCause = { reason: e.type, message: fieldErrorBody(e) };
    if (e.field) c.field = e.field;
    return c;
  });
  const seen = new Set<string>();
  const msgs: string[] = [];
  for (const e of errs) {
    const m = fieldErrorString(e);
    if (seen.has(m)) continue;
    seen.add(m);
    msgs.push(m);
  }
  const qualified = group === "" ? kind : `${kind}.${group}`;
  let message = `${qualified} "${name}" is invalid`;
  if (msgs.length === 1) message += `: ${msgs[0]}`;
  else if (msgs.length > 1) message += `: [${msgs.join(", ")}]`;
  const det = details(name, group, kind);
  det.causes = causes;
  return failure(422, "Invalid", message, det);
}

/** The authorizer said no (RBAC), with the API server's wording. */
export function forbidden(
  user: string,
  verb: string,
  gr: GroupResource,
  sub: string,
  name: string | undefined,
  namespace: string | undefined,
): KubeApiError {
  const resource = sub === "" ? gr.resource : `${gr.resource}/${sub}`;
  const what = name === undefined ? groupResourceString(gr) : `${groupResourceString(gr)} "${name}"`;
  const scope = namespace === undefined ? " at the cluster scope" : ` in the namespace "${namespace}"`;
  return failure(
    403,
    "Forbidden",
    `${what} is forbidden: User "${user}" cannot ${verb} resource "${resource}" in API group "${gr.group}"${scope}`,
    details(name, gr.group, gr.resource),
  );
}
