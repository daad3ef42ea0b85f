// PersistentVolumes (core/v1), as pkg/registry/core/persistentvolume and
// pkg/apis/core/validation ValidatePersistentVolume(Update) treat them: exactly one volume
// source, immutable after creation; spec.nodeAffinity may be set once, never changed; status.phase
// Pending on create; persistentVolumeReclaimPolicy Retain and volumeMode Filesystem by default.

import { type FieldError, fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired } from "./errors.js";
import {
  deepEqual,
  ensureObject,
  getArray,
  getObject,
  getString,
  isObject,
  type JsonObject,
} from "./json.js";
import { coreValidateObjectMeta, coreValidateObjectMetaUpdate, pathSegmentName } from "./validation.js";

/** Every PersistentVolumeSource member (k8s.io/api core/v1). */
const VOLUME_SOURCES = [
  "gcePersistentDisk",
  "awsElasticBlockStore",
  "hostPath",
  "glusterfs",
  "nfs",
  "rbd",
  "iscsi",
  "cinder",
  "cephfs",
  "fc",
  "flocker",
  "flexVolume",
  "azureFile",
  "vsphereVolume",
  "quobyte",
  "azureDisk",
  "photonPersistentDisk",
  "portworxVolume",
  "scaleIO",
  "local",
  "storageos",
  "csi",
] as const;

/** The required field of the sources whose one key identifies the disk. */
const REQUIRED_ID: Readonly<Record<string, readonly string[]>> = {
  awsElasticBlockStore: ["volumeID"],
  gcePersistentDisk: ["pdName"],
  cinder: ["volumeID"],
  azureDisk: ["diskName", "diskURI"],
  csi: ["driver", "volumeHandle"],
};

const ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
const RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"];
const SELECTOR_OPERATORS = ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"];

function spec(obj: JsonObject): JsonObject {
  return getObject(obj, "spec") ?? {};
}

function validateNodeAffinity(affinity: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const path = "spec.nodeAffinity.required";
  const required = getObject(affinity, "required");
  if (required === undefined) return errs;
  const terms = getArray(required, "nodeSelectorTerms") ?? [];
  if (terms.length === 0)
    errs.push(fieldRequired(`${path}.nodeSelectorTerms`, "must have at least one node selector term"));
  terms.forEach((t, i) => {
    const exprs = getArray(isObject(t) ? t : {}, "matchExpressions") ?? [];
    exprs.forEach((e, j) => {
      const r = isObject(e) ? e : {};
      const at = `${path}.nodeSelectorTerms[${i}].matchExpressions[${j}]`;
      const op = getString(r, "operator") ?? "";
      const values = getArray(r, "values") ?? [];
      if (!SELECTOR_OPERATORS.includes(op))
        errs.push(fieldNotSupported(`${at}.operator`, op, SELECTOR_OPERATORS));
      if ((op === "In" || op === "NotIn") && values.length === 0)
        errs.push(fieldRequired(`${at}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
      if ((getString(r, "key") ?? "") === "") errs.push(fieldRequired(`${at}.key`));
    });
  });
  return errs;
}

export function validatePersistentVolume(obj: JsonObject): FieldError[] {
  const errs = coreValidateObjectMeta(obj, false, pathSegmentName);
  const s = spec(obj);
  const modes = getArray(s, "accessModes") ?? [];
  if (modes.length === 0) errs.push(fieldRequired("spec.accessModes"));
  for (const m of modes)
    if (typeof m !== "string" || !ACCESS_MODES.includes(m))
      errs.push(fieldNotSupported("spec.accessModes", m, ACCESS_MODES));
  const capacity = getObject(s, "capacity") ?? {};
  if (Object.keys(capacity).length === 0) errs.push(fieldRequired("spec.capacity"));
  for (const k of Object.keys(capacity))
    if (k !== "storage") errs.push(fieldNotSupported("spec.capacity", k, ["storage"]));
  const policy = getString(s, "persistentVolumeReclaimPolicy") ?? "";
  if (policy !== "" && !RECLAIM_POLICIES.includes(policy))
    errs.push(fieldNotSupported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES));
  const present = VOLUME_SOURCES.filter((k) => isObject(s[k]));
  if (present.length === 0) errs.push(fieldRequired("spec", "must specify a volume type"));
  for (const extra of present.slice(1))
    errs.push(fieldForbidden(`spec.${extra}`, "may not specify more than 1 volume type"));
  for (const k of present)
    for (const f of REQUIRED_ID[k] ?? [])
      if ((getString(getObject(s, k), f) ?? "") === "") errs.push(fieldRequired(`spec.${k}.${f}`));
  const affinity = getObject(s, "nodeAffinity");
  if (affinity !== undefined) errs.push(...validateNodeAffinity(affinity));
  return errs;
}

function sourceOf(obj: JsonObject): JsonObject {
  const s = spec(obj);
  const out: JsonObject = {};
  for (const k of VOLUME_SOURCES) if (s[k] !== undefined) out[k] = s[k];
  return out;
}

export function validatePersistentVolumeUpdate(newObj: JsonObject, oldObj: JsonObject): FieldError[] {
  const errs = [...validatePersistentVolume(newObj), ...coreValidateObjectMetaUpdate(newObj, oldObj)];
  if (!deepEqual(sourceOf(newObj), sourceOf(oldObj)))
    errs.push(
      fieldForbidden(
        "spec.persistentvolumesource",
        "spec.persistentvolumesource is immutable after creation",
      ),
    );
  // Allowed to be set once (upstream: only an oldPv NodeAffinity is immutable).
  const oldAffinity = spec(oldObj)["nodeAffinity"];
  if (oldAffinity !== undefined && !deepEqual(spec(newObj)["nodeAffinity"], oldAffinity))
    errs.push(fieldInvalid("spec.nodeAffinity", spec(newObj)["nodeAffinity"] ?? null, "field is immutable"));
  return errs;
}

/** Decode-time defaulting (SetDefaults_PersistentVolume). */
export function defaultPersistentVolume(obj: JsonObject): void {
  const s = ensureObject(obj, "spec");
  if (!getString(s, "persistentVolumeReclaimPolicy")) s["persistentVolumeReclaimPolicy"] = "Retain";
  if (!getString(s, "volumeMode")) s["volumeMode"] = "Filesystem";
  const status = ensureObject(obj, "status");
  if (!getString(status, "phase")) status["phase"] = "Pending";
}
