// Validation rules copied from k8s.io/apimachinery (content/, api/validation) and pkg/apis/core/validation.

import { isIP } from "node:net";
import {
  type FieldError,
  fieldDuplicate,
  fieldForbidden,
  fieldInvalid,
  fieldInvalidRaw,
  fieldRequired,
  fieldTooLong,
  goStringSlice,
} from "./errors.js";
import {
  deepEqual,
  getObject,
  getString,
  getStringArray,
  getStringMap,
  type JsonObject,
  type JsonValue,
} from "./json.js";

// ---------------------------------------------------------------------------------------------
// Message helpers (content/errors.go)

export function maxLenError(n: number): string {
  return `must be no more than ${n} bytes`;
}

export function regexError(msg: string, re: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${re}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((ex, i) => {
    if (i > 0) out += " or ";
    out += `'${ex}', `;
  });
  return `${out}regex used for validation is '${re}')`;
}

const EMPTY_ERROR = "must be non-empty";

function byteLen(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

// ---------------------------------------------------------------------------------------------
// DNS names

const DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_RE = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const DNS1035_LABEL_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLen(value) > 63) errs.push(maxLenError(63));
  if (!DNS1123_LABEL_RE.test(value)) {
    if (DNS1123_SUBDOMAIN_RE.test(value)) errs.push("must not contain dots");
    else errs.push(regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"));
  }
  return errs;
}

export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLen(value) > 253) errs.push(maxLenError(253));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) {
    errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"));
  }
  return errs;
}

export function isDNS1035Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLen(value) > 63) errs.push(maxLenError(63));
  if (!DNS1035_LABEL_RE.test(value)) {
    errs.push(regexError(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"));
  }
  return errs;
}

/** A name validator: (name, isPrefix) → messages. isPrefix=true validates a generateName (trailing '-' allowed). */
export type NameValidator = (name: string, prefix: boolean) => string[];

function maskTrailingDash(name: string): string {
  if (name.length > 1 && name.endsWith("-")) return `${name.slice(0, -2)}a`;
  return name;
}

export const nameIsDNSSubdomain: NameValidator = (name, prefix) =>
  isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);
export const nameIsDNSLabel: NameValidator = (name, prefix) =>
  isDNS1123Label(prefix ? maskTrailingDash(name) : name);
export const nameIsDNS1035Label: NameValidator = (name, prefix) =>
  isDNS1035Label(prefix ? maskTrailingDash(name) : name);

/** path.ValidatePathSegmentName */
export const pathSegmentName: NameValidator = (name, prefix) => {
  const errs: string[] = [];
  if (!prefix) {
    if (name === "." || name === "..") errs.push(`may not be '${name}'`);
  }
  for (const illegal of ["/", "%"]) {
    if (name.includes(illegal)) errs.push(`may not contain '${illegal}'`);
  }
  return errs;
};

// ---------------------------------------------------------------------------------------------
// Label keys / values (content/kube.go)

const LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_RE = new RegExp(`^${LABEL_KEY_FMT}$`);
const LABEL_KEY_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split("/");
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? "";
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? "";
    name = parts[1] ?? "";
    if (prefix.length === 0) errs.push(`prefix part ${EMPTY_ERROR}`);
    else for (const m of isDNS1123Subdomain(prefix)) errs.push(`prefix part ${m}`);
  } else {
    errs.push(
      `a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    );
    return errs;
  }
  if (name.length === 0) errs.push(`name part ${EMPTY_ERROR}`);
  else if (byteLen(name) > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!LABEL_KEY_RE.test(name)) {
    errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")}`);
  }
  return errs;
}

export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLen(value) > 63) errs.push(maxLenError(63));
  if (!LABEL_VALUE_RE.test(value)) {
    errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"));
  }
  return errs;
}

export function validateLabelName(key: string, field: string): FieldError[] {
  return isQualifiedName(key).map((m) => fieldInvalid(field, key, m));
}

export function validateLabels(labels: Record<string, string>, field: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels)) {
    errs.push(...validateLabelName(k, field));
    for (const m of isValidLabelValue(v)) errs.push(fieldInvalid(field, v, m));
  }
  return errs;
}

const TOTAL_ANNOTATION_SIZE = 256 * 1024;

export function validateAnnotations(annotations: Record<string, string>, field: string): FieldError[] {
  const errs: FieldError[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    for (const m of isQualifiedName(k.toLowerCase())) errs.push(fieldInvalid(field, k, m));
    size += byteLen(k) + byteLen(v);
  }
  if (size > TOTAL_ANNOTATION_SIZE) errs.push(fieldTooLong(field, TOTAL_ANNOTATION_SIZE));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Finalizers

const STANDARD_FINALIZERS = new Set(["kubernetes", "orphan", "foregroundDeletion"]);

/** apimachinery ValidateFinalizers: qualified names, and not both orphan + foregroundDeletion. */
export function validateFinalizers(finalizers: readonly string[], field: string): FieldError[] {
  const errs: FieldError[] = [];
  let orphan = false;
  let foreground = false;
  for (const f of finalizers) {
    for (const m of isQualifiedName(f)) errs.push(fieldInvalid(field, f, m));
    if (f === "orphan") orphan = true;
    if (f === "foregroundDeletion") foreground = true;
  }
  if (orphan && foreground) {
    errs.push(
      fieldInvalidRaw(
        field,
        goStringSlice(finalizers),
        "finalizer orphan and foregroundDeletion cannot be both set",
      ),
    );
  }
  return errs;
}

/** core validateKubeFinalizerName, field path metadata.finalizers[i]. */
export function validateKubeFinalizerNames(finalizers: readonly string[], field: string): FieldError[] {
  const errs: FieldError[] = [];
  finalizers.forEach((f, i) => {
    if (!f.includes("/") && !STANDARD_FINALIZERS.has(f)) {
      errs.push(
        fieldInvalid(
          `${field}[${i}]`,
          f,
          "name is neither a standard finalizer name nor is it fully qualified",
        ),
      );
    }
  });
  return errs;
}

// ---------------------------------------------------------------------------------------------
// ObjectMeta

function meta(obj: JsonObject): JsonObject {
  return getObject(obj, "metadata") ?? {};
}

function validateOwnerReferences(m: JsonObject, field: string): FieldError[] {
  const refs = m["ownerReferences"];
  if (!Array.isArray(refs)) return [];
  const errs: FieldError[] = [];
  let firstController = "";
  for (const r of refs) {
    const ref = typeof r === "object" && r !== null && !Array.isArray(r) ? r : {};
    const apiVersion = getString(ref, "apiVersion") ?? "";
    const kind = getString(ref, "kind") ?? "";
    const name = getString(ref, "name") ?? "";
    const uid = getString(ref, "uid") ?? "";
    const version = apiVersion.includes("/") ? (apiVersion.split("/")[1] ?? "") : apiVersion;
    if (version === "")
      errs.push(fieldInvalid(`${field}.apiVersion`, apiVersion, "version must not be empty"));
    if (kind === "") errs.push(fieldInvalid(`${field}.kind`, kind, "must not be empty"));
    if (name === "") errs.push(fieldInvalid(`${field}.name`, name, "must not be empty"));
    if (uid === "") errs.push(fieldInvalid(`${field}.uid`, uid, "must not be empty"));
    if (ref["controller"] === true) {
      const cur = `${kind}/${name}`;
      if (firstController !== "") {
        errs.push(
          fieldInvalid(
            field,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${cur}`,
          ),
        );
      } else firstController = cur;
    }
  }
  return errs;
}

/** apimachinery ValidateObjectMetaAccessor (create-time rules). */
export function validateObjectMeta(
  obj: JsonObject,
  namespaced: boolean,
  nameFn: NameValidator,
  validateNamespaceName: boolean,
): FieldError[] {
  const m = meta(obj);
  const errs: FieldError[] = [];
  const generateName = getString(m, "generateName") ?? "";
  if (generateName !== "") {
    for (const msg of nameFn(generateName, true))
      errs.push(fieldInvalid("metadata.generateName", generateName, msg));
  }
  const name = getString(m, "name") ?? "";
  if (name === "") errs.push(fieldRequired("metadata.name", "name or generateName is required"));
  else for (const msg of nameFn(name, false)) errs.push(fieldInvalid("metadata.name", name, msg));
  errs.push(...validateObjectMetaCommon(m, namespaced, validateNamespaceName));
  return errs;
}

function validateObjectMetaCommon(m: JsonObject, namespaced: boolean, checkNsName: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ns = getString(m, "namespace") ?? "";
  if (namespaced) {
    if (ns === "") errs.push(fieldRequired("metadata.namespace"));
    else if (checkNsName)
      for (const msg of isDNS1123Label(ns)) errs.push(fieldInvalid("metadata.namespace", ns, msg));
  } else if (ns !== "") {
    errs.push(fieldForbidden("metadata.namespace", "not allowed on this type"));
  }
  const gen = m["generation"];
  if (typeof gen === "number" && gen < 0) {
    errs.push(fieldInvalid("metadata.generation", gen, "must be greater than or equal to 0"));
  }
  errs.push(...validateLabels(getStringMap(m, "labels"), "metadata.labels"));
  errs.push(...validateAnnotations(getStringMap(m, "annotations"), "metadata.annotations"));
  errs.push(...validateOwnerReferences(m, "metadata.ownerReferences"));
  errs.push(...validateFinalizers(getStringArray(m, "finalizers"), "metadata.finalizers"));
  return errs;
}

function immutable(newV: JsonValue | undefined, oldV: JsonValue | undefined, field: string): FieldError[] {
  const a = newV === undefined ? null : newV;
  const b = oldV === undefined ? null : oldV;
  if (deepEqual(a, b)) return [];
  return [fieldInvalid(field, a, "field is immutable")];
}

/** apimachinery ValidateObjectMetaAccessorUpdate. */
export function validateObjectMetaUpdate(newObj: JsonObject, oldObj: JsonObject): FieldError[] {
  const nm = meta(newObj);
  const om = meta(oldObj);
  const errs: FieldError[] = [];
  if (om["deletionTimestamp"] !== undefined && om["deletionTimestamp"] !== null) {
    const oldSet = new Set(getStringArray(om, "finalizers"));
    const extra = [...new Set(getStringArray(nm, "finalizers"))].filter((f) => !oldSet.has(f)).sort();
    if (extra.length > 0) {
      errs.push(
        fieldForbidden(
          "metadata.finalizers",
          `no new finalizers can be added if the object is being deleted, found new finalizers ${goStringSlice(extra)}`,
        ),
      );
    }
  }
  if ((getString(nm, "resourceVersion") ?? "") === "") {
    errs.push(fieldInvalid("metadata.resourceVersion", "", "must be specified for an update"));
  }
  const ng = typeof nm["generation"] === "number" ? nm["generation"] : 0;
  const og = typeof om["generation"] === "number" ? om["generation"] : 0;
  if (ng < og) errs.push(fieldInvalid("metadata.generation", ng, "must not be decremented"));
  errs.push(...immutable(getString(nm, "name") ?? "", getString(om, "name") ?? "", "metadata.name"));
  errs.push(
    ...immutable(getString(nm, "namespace") ?? "", getString(om, "namespace") ?? "", "metadata.namespace"),
  );
  errs.push(...immutable(getString(nm, "uid") ?? "", getString(om, "uid") ?? "", "metadata.uid"));
  errs.push(...immutable(nm["creationTimestamp"], om["creationTimestamp"], "metadata.creationTimestamp"));
  errs.push(...immutable(nm["deletionTimestamp"], om["deletionTimestamp"], "metadata.deletionTimestamp"));
  errs.push(
    ...immutable(
      nm["deletionGracePeriodSeconds"],
      om["deletionGracePeriodSeconds"],
      "metadata.deletionGracePeriodSeconds",
    ),
  );
  errs.push(...validateLabels(getStringMap(nm, "labels"), "metadata.labels"));
  errs.push(...validateAnnotations(getStringMap(nm, "annotations"), "metadata.annotations"));
  errs.push(...validateOwnerReferences(nm, "metadata.ownerReferences"));
  return errs;
}

/** core ValidateObjectMeta: generic rules + kube finalizer names. */
export function coreValidateObjectMeta(
  obj: JsonObject,
  namespaced: boolean,
  nameFn: NameValidator,
): FieldError[] {
  const errs = validateObjectMeta(obj, namespaced, nameFn, true);
  errs.push(...validateKubeFinalizerNames(getStringArray(meta(obj), "finalizers"), "metadata.finalizers"));
  return errs;
}

/** core ValidateObjectMetaUpdate: generic update rules + kube finalizer names. */
export function coreValidateObjectMetaUpdate(newObj: JsonObject, oldObj: JsonObject): FieldError[] {
  const errs = validateObjectMetaUpdate(newObj, oldObj);
  errs.push(...validateKubeFinalizerNames(getStringArray(meta(newObj), "finalizers"), "metadata.finalizers"));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// IPs and CIDRs

export function isValidIP(value: string): boolean {
  return isIP(value) !== 0;
}

export function isValidCIDR(value: string): boolean {
  const slash = value.indexOf("/");
  if (slash < 0) return false;
  const ip = value.slice(0, slash);
  const bits = value.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  const n = Number(bits);
  const fam = isIP(ip);
  if (fam === 4) return n <= 32;
  if (fam === 6) return n <= 128;
  return false;
}

export const IP_ERROR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
export const CIDR_ERROR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

// ---------------------------------------------------------------------------------------------
// Taints (validateNodeTaints; path quirk metadata.taints[i])

const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

export function validateTaints(taints: unknown, field: string): FieldError[] {
  if (!Array.isArray(taints)) return [];
  const errs: FieldError[] = [];
  const unique = new Map<string, Set<string>>();
  taints.forEach((t: unknown, i: number) => {
    const taint: JsonObject =
      typeof t === "object" && t !== null && !Array.isArray(t) ? (t as JsonObject) : {};
    const idx = `${field}[${i}]`;
    const key = getString(taint, "key") ?? "";
    const value = getString(taint, "value") ?? "";
    const effect = getString(taint, "effect") ?? "";
    errs.push(...validateLabelName(key, `${idx}.key`));
    const valueErrs = isValidLabelValue(value);
    if (valueErrs.length > 0) errs.push(fieldInvalid(`${idx}.value`, value, valueErrs.join(";")));
    if (effect === "") errs.push(fieldRequired(`${idx}.effect`));
    else if (!(TAINT_EFFECTS as readonly string[]).includes(effect)) {
      errs.push({
        type: "FieldValueNotSupported",
        field: `${idx}.effect`,
        value: JSON.stringify(effect),
        detail: `supported values: ${TAINT_EFFECTS.map((e) => `"${e}"`).join(", ")}`,
      });
    }
    const keys = unique.get(effect);
    if (keys?.has(key)) {
      const rendered: JsonObject = { key };
      if (value !== "") rendered["value"] = value;
      rendered["effect"] = effect;
      const added = taint["timeAdded"];
      if (added !== undefined && added !== null) rendered["timeAdded"] = added;
      errs.push(fieldDuplicate(idx, rendered, "taints must be unique by key and effect pair"));
      return;
    }
    if (keys === undefined) unique.set(effect, new Set([key]));
    else keys.add(key);
  });
  return errs;
}
