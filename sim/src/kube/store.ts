// The object store: the create/update/patch/delete semantics of k8s.io/apiserver's generic registry,
// committing to one Table per resource and recording each commit in the History, from which the
// Watches fan it out. Service allocation and the simulated controllers hook into the commits.

import { randomUUID } from "node:crypto";
import { ServiceAllocator } from "./allocation.js";
import { canonicalize } from "./canonical.js";
import { SimulatedControllers, shouldDeleteDuringUpdate } from "./controllers.js";
import {
  type DeleteOptionsInput,
  gcFinalizers,
  namespaceGCFinalizers,
  normalizeDeleteOptions,
  validateDeleteOptions,
} from "./delete-options.js";
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  fieldInvalid,
  type GroupResource,
  groupResourceString,
  internalRaw,
  invalid,
  KubeApiError,
  namespaceTerminating,
  notFound,
  OPTIMISTIC_LOCK_MSG,
  type Status,
  successStatus,
  unsupportedMediaType,
} from "./errors.js";
import { History, type HistoryEvent } from "./history.js";
import {
  deepEqual,
  ensureObject,
  getObject,
  getString,
  getStringArray,
  isObject,
  type JsonObject,
  type JsonValue,
  parseJson,
} from "./json.js";
import { listBody, listWaitTarget } from "./list.js";
import { compileFilter, type ListOptions, matches, validateListOptions } from "./list-options.js";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch } from "./patch.js";
import {
  ALL_RESOURCES,
  NAMESPACES,
  type NodePortRange,
  type ResourceDef,
  SERVICES,
  type Subresource,
} from "./resources.js";
import { KIND_SCHEMAS, unknownFields } from "./schema.js";
import { type Entry, keyOf, makeEntry, metaOf, parseObject, Table } from "./table.js";
import {
  pathSegmentName,
  validateObjectMeta,
  validateObjectMetaUpdate as validateObjectMetaUpdateGeneric,
} from "./validation.js";
import {
  planWatch,
  type Watcher,
  Watches,
  type WatchOptions,
  type WatchPlan,
  type WatchSink,
} from "./watch.js";

export interface WriteResult {
  /** Response body (JSON text). */
  readonly json: string;
  /** HTTP status: 200 or 201. */
  readonly code: number;
  /** Texts for `Warning: 299 - "..."` response headers (fieldValidation=Warn). */
  readonly warnings?: readonly string[];
}

export type FieldValidation = "Ignore" | "Warn" | "Strict";

export interface WriteOptions {
  dryRun?: boolean;
  /** What to do about fields the kind does not declare (default Warn, as kube-apiserver). */
  fieldValidation?: FieldValidation;
}

export interface StoreOptions {
  watchHistory: number;
  requireNamespaces: boolean;
  simulateGarbageCollector: boolean;
  eventTTLSeconds: number;
  /** How long a LIST/WATCH for a resourceVersion newer than the store waits before failing (ms). */
  futureResourceVersionWaitMs: number;
  /** kube-apiserver --service-node-port-range. */
  nodePortRange: NodePortRange;
}

export const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
] as const;

export function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

function gr(def: ResourceDef): GroupResource {
  return { group: def.group, resource: def.plural };
}

export class KubeStore {
  private readonly tables = new Map<ResourceDef, Table>();
  private readonly history: History;
  private readonly watches: Watches;
  private readonly serviceAllocator: ServiceAllocator;
  private readonly controllers: SimulatedControllers;

  constructor(readonly opts: StoreOptions) {
    this.history = new History(opts.watchHistory);
    this.watches = new Watches(ALL_RESOURCES, opts.futureResourceVersionWaitMs);
    this.serviceAllocator = new ServiceAllocator(opts.nodePortRange);
    for (const def of ALL_RESOURCES) {
      this.tables.set(def, new Table(def));
    }
    this.controllers = new SimulatedControllers(opts, {
      current: (def, key) => this.table(def).get(key),
      entries: (def, namespace) => this.entries(def, namespace),
      delete: (def, namespace, name) => {
        this.delete(def, namespace, name, {});
      },
      commitUpdate: (def, prev, obj) => this.commitUpdate(def, prev, obj),
      commitDelete: (def, prev) => this.commitDelete(def, prev),
    });
  }

  get resourceVersion(): number {
    return this.history.current;
  }

  get oldestResourceVersion(): number {
    return this.history.oldest;
  }

  watcherCount(): number {
    return this.watches.size;
  }

  private table(def: ResourceDef): Table {
    const t = this.tables.get(def);
    if (t === undefined) throw new Error(`no table for ${def.kind}`);
    return t;
  }

  /** Resolves true once the store reached `rv`, false after `ms`. */
  waitForResourceVersion(rv: number, ms: number): Promise<boolean> {
    return this.history.waitFor(rv, ms);
  }

  // ---------------------------------------------------------------------------------------------
  // Commits (the only places that bump the resourceVersion)

  private commitCreate(def: ResourceDef, obj: JsonObject): Entry {
    const rv = this.history.next();
    metaOf(obj)["resourceVersion"] = String(rv);
    const entry = makeEntry(def, obj, rv);
    this.table(def).insert(entry);
    this.afterWrite(def, entry.key, obj);
    this.emit({ rv, def, type: "ADDED", entry, prev: undefined });
    return entry;
  }

  private commitUpdate(def: ResourceDef, prev: Entry, obj: JsonObject): Entry {
    const rv = this.history.next();
    metaOf(obj)["resourceVersion"] = String(rv);
    const entry = makeEntry(def, obj, rv);
    this.table(def).replace(entry);
    this.afterWrite(def, entry.key, obj);
    this.emit({ rv, def, type: "MODIFIED", entry, prev });
    return entry;
  }

  private commitDelete(def: ResourceDef, prev: Entry): Entry {
    const rv = this.history.next();
    const obj = parseObject(prev.json);
    metaOf(obj)["resourceVersion"] = String(rv);
    const entry = makeEntry(def, obj, rv);
    this.table(def).remove(prev.key);
    this.afterWrite(def, prev.key, undefined);
    this.emit({ rv, def, type: "DELETED", entry, prev });
    return entry;
  }

  private afterWrite(def: ResourceDef, key: string, obj: JsonObject | undefined): void {
    if (def === SERVICES) this.serviceAllocator.record(key, obj);
    this.controllers.afterWrite(def, key, obj);
  }

  /** Records a commit, lets the watchers see it, then wakes the waits for its revision. */
  private emit(ev: HistoryEvent): void {
    this.history.append(ev);
    this.watches.deliver(ev);
    this.history.wakeWaiters();
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  get(def: ResourceDef, namespace: string | undefined, name: string): Entry | undefined {
    return this.table(def).get(keyOf(def, namespace ?? "", name));
  }

  validateListOptions(o: ListOptions): void {
    validateListOptions(o);
  }

  /** The minimum resourceVersion a LIST must wait for (NotOlderThan semantics), or undefined. */
  listWaitTarget(o: ListOptions): number | undefined {
    return listWaitTarget(o, this.history.current);
  }

  /** Serves a LIST; returns the full response body. */
  list(def: ResourceDef, o: ListOptions): string {
    return listBody(def, o, this.table(def), this.history);
  }

  /** Current entries in key order (optionally one namespace). */
  entries(def: ResourceDef, namespace?: string): Entry[] {
    return this.table(def).list(namespace);
  }

  // ---------------------------------------------------------------------------------------------
  // Watch

  planWatch(def: ResourceDef, o: WatchOptions): WatchPlan {
    return planWatch(def, o);
  }

  /** Starts a planned watch: writes the initial events (or the 410 ERROR) synchronously and registers. */
  startWatch(plan: WatchPlan, sink: WatchSink): Watcher | undefined {
    return this.watches.start(plan, sink, this.table(plan.def), this.history);
  }

  // ---------------------------------------------------------------------------------------------
  // Create

  private checkTypeMeta(def: ResourceDef, obj: JsonObject): void {
    const kind = obj["kind"];
    const apiVersion = obj["apiVersion"];
    if (typeof apiVersion === "string" && apiVersion !== "" && apiVersion !== def.apiVersion) {
      throw badRequest(
        `the API version in the data (${apiVersion}) does not match the expected API version (${def.apiVersion})`,
      );
    }
    if (typeof kind === "string" && kind !== "" && kind !== def.kind) {
      throw badRequest(`the kind in the data (${kind}) does not match the expected kind (${def.kind})`);
    }
    obj["kind"] = def.kind;
    obj["apiVersion"] = def.apiVersion;
  }

  /**
   * Decoding into the kind's type: unknown fields are dropped, and reported (Warn) or refused (Strict)
   * with the strict-decoding message of the create/update handlers, or of the patch handler.
   */
  private decodeFields(def: ResourceDef, obj: JsonObject, opts: WriteOptions, patch: boolean): string[] {
    const directive = opts.fieldValidation ?? "Warn";
    const unknown = unknownFields(KIND_SCHEMAS[def.kind], obj, directive !== "Strict");
    if (unknown.length === 0 || directive === "Ignore") return [];
    const errs = unknown.map((p) => `unknown field ${JSON.stringify(p)}`);
    if (directive === "Warn") return errs;
    const strict = `strict decoding error: ${errs.join(", ")}`;
    throw badRequest(
      patch
        ? strict
        : `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: ${strict}`,
    );
  }

  private static withWarnings(r: WriteResult, warnings: readonly string[]): WriteResult {
    return warnings.length === 0 ? r : { ...r, warnings };
  }

  private requireObject(body: JsonValue): JsonObject {
    if (!isObject(body)) {
      throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`);
    }
    return body;
  }

  create(
    def: ResourceDef,
    urlNamespace: string | undefined,
    body: JsonValue,
    opts: WriteOptions = {},
  ): WriteResult {
    const obj = this.requireObject(body);
    this.checkTypeMeta(def, obj);
    const warnings = this.decodeFields(def, obj, opts, false);
    const m = metaOf(obj);
    if (def.namespaced) {
      const ns = getString(m, "namespace") ?? "";
      if (ns === "") m["namespace"] = urlNamespace ?? "";
      else if (urlNamespace !== undefined && ns !== urlNamespace) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
    } else {
      delete m["namespace"];
    }
    return KubeStore.withWarnings(this.createPrepared(def, obj, opts), warnings);
  }

  /** The NamespaceLifecycle admission plugin: no new content in a terminating (or, if required, missing) namespace. */
  private checkNamespaceExists(def: ResourceDef, obj: JsonObject): void {
    if (!def.namespaced) return;
    const m = getObject(obj, "metadata");
    const ns = getString(m, "namespace") ?? "";
    if (ns === "") return;
    const entry = this.get(NAMESPACES, undefined, ns);
    if (entry === undefined) {
      if (this.opts.requireNamespaces) throw notFound(gr(NAMESPACES), ns);
      return;
    }
    if (entry.deleting) throw namespaceTerminating(gr(def), getString(m, "name") ?? "", ns);
  }

  private createPrepared(def: ResourceDef, obj: JsonObject, opts: WriteOptions): WriteResult {
    this.checkNamespaceExists(def, obj);
    def.defaults(obj);
    const m = metaOf(obj);
    // rest.BeforeCreate
    delete m["uid"];
    delete m["creationTimestamp"];
    delete m["deletionTimestamp"];
    delete m["deletionGracePeriodSeconds"];
    delete m["selfLink"];
    delete m["managedFields"];
    const generateName = getString(m, "generateName") ?? "";
    const generated = generateName !== "" && (getString(m, "name") ?? "") === "";
    if (generated) m["name"] = generateNameFrom(generateName);
    def.prepareForCreate(obj);
    def.defaults(obj);
    m["uid"] = randomUUID();
    m["creationTimestamp"] = nowTimestamp();
    const name = getString(m, "name") ?? "";
    const errs = def.validateCreate(obj);
    if (errs.length > 0) throw invalid(def.group, def.kind, name, errs);
    const common = validateObjectMeta(obj, def.namespaced, pathSegmentName, true);
    if (common.length > 0) throw invalid(def.group, def.kind, name, common);
    if (def === SERVICES) {
      const allocErrs = this.serviceAllocator.allocate(
        obj,
        undefined,
        keyOf(def, getString(m, "namespace") ?? "", name),
      );
      if (allocErrs.length > 0) throw invalid(def.group, def.kind, name, allocErrs);
    }
    const rvText = getString(m, "resourceVersion") ?? "";
    if (/^\d+$/.test(rvText) && Number(rvText) !== 0) {
      throw internalRaw("resourceVersion should not be set on objects to be created");
    }
    delete m["resourceVersion"];
    let key = keyOf(def, getString(m, "namespace") ?? "", name);
    let existing = this.table(def).get(key);
    for (let attempt = 0; existing !== undefined && generated && attempt < 8; attempt++) {
      m["name"] = generateNameFrom(generateName);
      key = keyOf(def, getString(m, "namespace") ?? "", getString(m, "name") ?? "");
      existing = this.table(def).get(key);
    }
    if (existing !== undefined) {
      const err = alreadyExists(gr(def), getString(m, "name") ?? "");
      if (generated) {
        err.status.message = `${err.status.message}, the server was not able to generate a unique name for the object`;
        if (err.status.details) err.status.details.retryAfterSeconds = 1;
      }
      if (existing.deleting) err.status.message = `object is being deleted: ${err.status.message}`;
      throw new KubeApiError(err.status);
    }
    const canon = canonicalize(def, obj);
    if (opts.dryRun) return { json: JSON.stringify(canon), code: 201 };
    const entry = this.commitCreate(def, canon);
    return { json: entry.json, code: 201 };
  }

  // ---------------------------------------------------------------------------------------------
  // Update (PUT) and the shared update pipeline

  private checkName(def: ResourceDef, obj: JsonObject, name: string, urlNamespace: string | undefined): void {
    const m = metaOf(obj);
    const objName = getString(m, "name") ?? "";
    if (objName !== name) {
      throw badRequest(`the name of the object (${objName}) does not match the name on the URL (${name})`);
    }
    const objNs = getString(m, "namespace") ?? "";
    if (def.namespaced && urlNamespace) {
      if (objNs !== "" && objNs !== urlNamespace) {
        throw badRequest(
          `the namespace of the object (${objNs}) does not match the namespace on the request (${urlNamespace})`,
        );
      }
      if (objNs === "") m["namespace"] = urlNamespace;
    }
    if (!def.namespaced) delete m["namespace"];
  }

  update(
    def: ResourceDef,
    urlNamespace: string | undefined,
    name: string,
    body: JsonValue,
    sub: Subresource,
    opts: WriteOptions = {},
  ): WriteResult {
    const obj = this.requireObject(body);
    this.checkTypeMeta(def, obj);
    const warnings = this.decodeFields(def, obj, opts, false);
    this.checkName(def, obj, name, urlNamespace);
    def.defaults(obj);
    const key = keyOf(def, urlNamespace ?? "", name);
    const existing = this.table(def).get(key);
    const uid = getString(metaOf(obj), "uid") ?? "";
    return KubeStore.withWarnings(
      this.updatePipeline(def, key, name, existing, obj, sub, uid, opts),
      warnings,
    );
  }

  private updatePipeline(
    def: ResourceDef,
    key: string,
    name: string,
    existing: Entry | undefined,
    obj: JsonObject,
    sub: Subresource,
    uidPrecondition: string,
    opts: WriteOptions,
  ): WriteResult {
    const m = metaOf(obj);
    if (uidPrecondition !== "" && uidPrecondition !== (existing?.uid ?? "")) {
      throw conflict(
        gr(def),
        name,
        `StorageError: invalid object, Code: 4, Key: ${def.storagePrefix}${key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${uidPrecondition}, UID in object meta: ${existing?.uid ?? ""}`,
      );
    }
    if (existing === undefined) {
      if (!def.allowCreateOnUpdate || sub !== "") throw notFound(gr(def), name);
      delete m["resourceVersion"];
      return this.createPrepared(def, obj, opts);
    }
    const old = parseObject(existing.json);
    const bodyRV = getString(m, "resourceVersion") ?? "";
    if (bodyRV === "") {
      if (!def.allowUnconditionalUpdate) {
        throw invalid(def.group, def.plural, name, [
          fieldInvalid("metadata.resourceVersion", 0, "must be specified for an update"),
        ]);
      }
      m["resourceVersion"] = String(existing.rv);
    } else if (bodyRV !== String(existing.rv)) {
      throw conflict(gr(def), name, OPTIMISTIC_LOCK_MSG);
    }
    // rest.BeforeUpdate
    const om = metaOf(old);
    if (om["generation"] !== undefined) m["generation"] = om["generation"];
    else delete m["generation"];
    def.prepareForUpdate(obj, old, sub);
    if ((getString(m, "uid") ?? "") === "") m["uid"] = existing.uid;
    if (om["creationTimestamp"] !== undefined) m["creationTimestamp"] = om["creationTimestamp"];
    if (om["deletionTimestamp"] !== undefined) m["deletionTimestamp"] = om["deletionTimestamp"];
    if (om["deletionGracePeriodSeconds"] !== undefined && m["deletionGracePeriodSeconds"] === undefined) {
      m["deletionGracePeriodSeconds"] = om["deletionGracePeriodSeconds"];
    }
    delete m["selfLink"];
    delete m["managedFields"];
    if (def === SERVICES && sub === "") {
      const allocErrs = this.serviceAllocator.allocate(obj, old, key);
      if (allocErrs.length > 0) throw invalid(def.group, def.kind, name, allocErrs);
    }
    const errs: FieldError[] = [
      ...validateObjectMeta(obj, def.namespaced, pathSegmentName, true),
      ...validateObjectMetaUpdateGeneric(obj, old),
      ...def.validateUpdate(obj, old, sub),
    ];
    if (errs.length > 0) throw invalid(def.group, def.kind, name, errs);
    const canon = canonicalize(def, obj);
    if (deepEqual(canon, old)) return { json: existing.json, code: 200 };
    if (existing.deleting && shouldDeleteDuringUpdate(def, canon)) {
      // ShouldDeleteDuringUpdate: the last finalizer is gone → delete; reply with the submitted object.
      if (!opts.dryRun) this.commitDelete(def, existing);
      return { json: JSON.stringify(canon), code: 200 };
    }
    if (opts.dryRun) return { json: JSON.stringify(canon), code: 200 };
    const entry = this.commitUpdate(def, existing, canon);
    return { json: entry.json, code: 200 };
  }

  // ---------------------------------------------------------------------------------------------
  // Patch

  patch(
    def: ResourceDef,
    urlNamespace: string | undefined,
    name: string,
    contentType: string,
    patchText: string,
    sub: Subresource,
    opts: WriteOptions = {},
  ): WriteResult {
    const ct = (contentType.split(";")[0] ?? "").trim().toLowerCase();
    if (ct === "application/apply-patch+yaml") throw unsupportedMediaType(PATCH_TYPES);
    if (!(PATCH_TYPES as readonly string[]).includes(ct)) {
      throw unsupportedMediaType([...PATCH_TYPES, "application/apply-patch+yaml"]);
    }
    const key = keyOf(def, urlNamespace ?? "", name);
    const existing = this.table(def).get(key);
    if (existing === undefined) throw notFound(gr(def), name);
    let patch: JsonValue;
    try {
      patch = parseJson(patchText);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw badRequest(`error decoding patch: ${msg}`);
    }
    const current = parseObject(existing.json);
    let result: JsonValue;
    if (ct === "application/json-patch+json") result = applyJsonPatch(current, patch);
    else if (ct === "application/merge-patch+json") result = applyMergePatch(current, patch);
    else result = applyStrategicMergePatch(current, patch, def.smp);
    if (!isObject(result)) {
      throw badRequest("the body of the request was in an unknown format: the patch result is not an object");
    }
    this.checkTypeMeta(def, result);
    const warnings = this.decodeFields(def, result, opts, true);
    this.checkName(def, result, name, urlNamespace);
    def.defaults(result);
    return KubeStore.withWarnings(
      this.updatePipeline(def, key, name, existing, result, sub, "", opts),
      warnings,
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Delete

  delete(
    def: ResourceDef,
    urlNamespace: string | undefined,
    name: string,
    requested: DeleteOptionsInput = {},
  ): WriteResult {
    validateDeleteOptions(requested);
    const options = normalizeDeleteOptions(requested);
    const key = keyOf(def, urlNamespace ?? "", name);
    const existing = this.table(def).get(key);
    if (existing === undefined) throw notFound(gr(def), name);
    const result = this.deleteExisting(def, existing, name, options);
    // 202 when the object is not gone yet and cascading deletion was asked for with orphanDependents=false.
    if (!result.deleted && options.orphanDependents === false) return { json: result.json, code: 202 };
    return { json: result.json, code: 200 };
  }

  private deleteExisting(
    def: ResourceDef,
    existing: Entry,
    name: string,
    options: DeleteOptionsInput,
  ): { json: string; deleted: boolean } {
    if (def === NAMESPACES) {
      const pending = this.namespaceDeletePending(existing, name, options);
      if (pending !== undefined) return { json: pending, deleted: false };
    }
    const kindGR: GroupResource = { group: def.group, resource: def.kind };
    const pre = options.preconditions;
    if (pre?.uid !== undefined && pre.uid !== existing.uid) {
      throw conflict(
        kindGR,
        name,
        `the UID in the precondition (${pre.uid}) does not match the UID in record (${existing.uid}). The object might have been deleted and then recreated`,
      );
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== String(existing.rv)) {
      throw conflict(
        kindGR,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${existing.rv}). The object might have been modified`,
      );
    }
    const gc = gcFinalizers(def, existing.finalizers, options);
    const finalizers = gc.changed ? gc.finalizers : [...existing.finalizers];
    if (finalizers.length > 0) {
      const obj = parseObject(existing.json);
      const m = metaOf(obj);
      m["finalizers"] = finalizers;
      if (m["deletionTimestamp"] === undefined || m["deletionTimestamp"] === null) {
        m["deletionTimestamp"] = nowTimestamp();
      }
      m["deletionGracePeriodSeconds"] = 0;
      const canon = canonicalize(def, obj);
      if (deepEqual(canon, parseObject(existing.json))) return { json: existing.json, deleted: false };
      if (options.dryRun) return { json: JSON.stringify(canon), deleted: false };
      const entry = this.commitUpdate(def, existing, canon);
      this.controllers.deletionPending(def, entry, finalizers);
      return { json: entry.json, deleted: false };
    }
    const deleted = options.dryRun ? existing : this.commitDelete(def, existing);
    if (def.returnDeletedObject) return { json: deleted.json, deleted: true };
    const det: Status["details"] = { name };
    if (def.group !== "") det.group = def.group;
    det.kind = def.plural;
    det.uid = existing.uid;
    return { json: JSON.stringify(successStatus(det)), deleted: true };
  }

  /**
   * The namespace registry's delete: the first DELETE only marks the namespace (deletionTimestamp, phase
   * Terminating, the GC finalizers the options ask for) and hands it to the namespace controller, which
   * deletes its content and then its `kubernetes` finalizer; while spec.finalizers is not empty every
   * DELETE returns the namespace unchanged. Undefined: the namespace may be deleted now.
   */
  private namespaceDeletePending(
    existing: Entry,
    name: string,
    options: DeleteOptionsInput,
  ): string | undefined {
    const pre = options.preconditions;
    const gr = { group: "", resource: "namespaces" };
    if (pre?.uid !== undefined && pre.uid !== existing.uid) {
      throw conflict(
        gr,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.uid}`,
      );
    }
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== String(existing.rv)) {
      throw conflict(
        gr,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.rv}`,
      );
    }
    const obj = parseObject(existing.json);
    if (existing.deleting) {
      return getStringArray(getObject(obj, "spec"), "finalizers").length > 0 ? existing.json : undefined;
    }
    const finalizers = namespaceGCFinalizers(existing.finalizers, options);
    const m = metaOf(obj);
    m["deletionTimestamp"] = nowTimestamp();
    if (finalizers.length > 0) m["finalizers"] = finalizers;
    else delete m["finalizers"];
    ensureObject(obj, "status")["phase"] = "Terminating";
    const canon = canonicalize(NAMESPACES, obj);
    if (options.dryRun) return JSON.stringify(canon);
    const entry = this.commitUpdate(NAMESPACES, existing, canon);
    this.controllers.deletionPending(NAMESPACES, entry, finalizers);
    this.controllers.namespaceTerminating(entry.name);
    return entry.json;
  }

  deleteCollection(def: ResourceDef, o: ListOptions, options: DeleteOptionsInput): string {
    this.validateListOptions(o);
    const filter = compileFilter(def, o);
    const items: string[] = [];
    for (const e of this.entries(def, filter.namespace)) {
      if (!matches(filter, e)) continue;
      try {
        const r = this.delete(def, e.namespace || undefined, e.name, options);
        if (def.returnDeletedObject) items.push(r.json);
        else {
          const cur = this.get(def, e.namespace, e.name);
          items.push(cur?.json ?? e.json);
        }
      } catch (err) {
        if (!(err instanceof KubeApiError) || err.code !== 404) throw err;
      }
    }
    return `{"kind":"${def.listKind}","apiVersion":"${def.apiVersion}","metadata":{"resourceVersion":"${this.history.current}"},"items":[${items.join(",")}]}`;
  }

  close(): void {
    this.watches.closeAll();
    this.controllers.close();
  }

  closeAllWatchers(): void {
    this.watches.closeAll();
  }

  groupResourceString(def: ResourceDef): string {
    return groupResourceString(gr(def));
  }
}

const NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789";

function generateNameFrom(base: string): string {
  const b = base.length > 58 ? base.slice(0, 58) : base;
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)] ?? "x";
  return b + suffix;
}
