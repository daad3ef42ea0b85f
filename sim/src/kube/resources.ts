// Per-resource strategies: defaulting, PrepareForCreate/Update, validation, field selectors, SMP schemas.

import {
  badRequest,
  type FieldError,
  fieldDuplicate,
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type KubeApiError,
} from "./errors.js";
import {
  ensureObject,
  getArray,
  getNumber,
  getObject,
  getString,
  isObject,
  type JsonObject,
  type JsonValue,
} from "./json.js";
import type { SmpSchema } from "./patch.js";
import {
  defaultPersistentVolume,
  validatePersistentVolume,
  validatePersistentVolumeUpdate,
} from "./persistent-volumes.js";
import {
  CIDR_ERROR,
  coreValidateObjectMeta,
  coreValidateObjectMetaUpdate,
  IP_ERROR,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidCIDR,
  isValidIP,
  type NameValidator,
  nameIsDNS1035Label,
  nameIsDNSLabel,
  nameIsDNSSubdomain,
  pathSegmentName,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validateTaints,
} from "./validation.js";

export type KindName =
  | "Node"
  | "Service"
  | "Event"
  | "Namespace"
  | "Lease"
  | "Pod"
  | "Secret"
  | "PersistentVolume";
export type Subresource = "" | "status";

export interface ResourceDef {
  readonly kind: KindName;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly namespaced: boolean;
  readonly hasStatus: boolean;
  readonly allowCreateOnUpdate: boolean;
  readonly allowUnconditionalUpdate: boolean;
  /** Services return the deleted object; the others a Status. */
  readonly returnDeletedObject: boolean;
  /** false = GarbageCollectionPolicy Unsupported (no orphan/foregroundDeletion finalizers). */
  readonly gcSupported: boolean;
  /** etcd key prefix, used in StorageError messages. */
  readonly storagePrefix: string;
  readonly smp: SmpSchema;
  readonly fieldLabels: readonly string[];
  readonly nameValidator: NameValidator;
  unsupportedFieldError(label: string): KubeApiError;
  fieldsOf(obj: JsonObject): Record<string, string>;
  /** Decode-time defaulting (SetDefaults_* and v1 conversions). */
  defaults(obj: JsonObject): void;
  prepareForCreate(obj: JsonObject): void;
  prepareForUpdate(newObj: JsonObject, oldObj: JsonObject, sub: Subresource): void;
  validateCreate(obj: JsonObject): FieldError[];
  validateUpdate(newObj: JsonObject, oldObj: JsonObject, sub: Subresource): FieldError[];
}

// ---------------------------------------------------------------------------------------------
// Shared SMP schema pieces (patchStrategy / patchMergeKey tags of k8s.io/api)

const META_SMP: SmpSchema = {
  fields: {
    finalizers: { mergeList: true },
    ownerReferences: { mergeList: true, mergeKey: "uid" },
  },
};

const CONDITIONS_SMP: SmpSchema = { mergeList: true, mergeKey: "type" };

function coreFieldError(label: string): KubeApiError {
  return badRequest(`field label not supported: ${label}`);
}

function meta(obj: JsonObject): JsonObject {
  return getObject(obj, "metadata") ?? {};
}

function nameOf(obj: JsonObject): string {
  return getString(meta(obj), "name") ?? "";
}

function nsOf(obj: JsonObject): string {
  return getString(meta(obj), "namespace") ?? "";
}

function str(v: JsonValue | undefined): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

// ---------------------------------------------------------------------------------------------
// Nodes

function podCIDRs(obj: JsonObject): string[] {
  const spec = getObject(obj, "spec");
  const list = getArray(spec, "podCIDRs");
  return list ? list.map((x) => str(x)) : [];
}

function validateNode(obj: JsonObject): FieldError[] {
  const errs = coreValidateObjectMeta(obj, false, nameIsDNSSubdomain);
  const spec = getObject(obj, "spec") ?? {};
  errs.push(...validateTaints(spec["taints"], "metadata.taints"));
  const cidrs = podCIDRs(obj);
  if (cidrs.length > 0) {
    cidrs.forEach((c, i) => {
      if (!isValidCIDR(c)) errs.push(fieldInvalid(`spec.podCIDRs[${i}]`, c, CIDR_ERROR));
    });
    if (cidrs.length > 2) {
      errs.push({
        type: "FieldValueInvalid",
        field: "spec.podCIDRs",
        value: JSON.stringify(cidrs),
        detail: "may specify no more than one CIDR for each IP family",
      });
    }
  }
  return errs;
}

function validateNodeUpdate(node: JsonObject, old: JsonObject): FieldError[] {
  const errs = coreValidateObjectMetaUpdate(node, old);
  const status = getObject(node, "status");
  const addrs = getArray(status, "addresses") ?? [];
  const seen = new Set<string>();
  addrs.forEach((a, i) => {
    const o = isObject(a) ? a : {};
    const rendered: JsonObject = { type: getString(o, "type") ?? "", address: getString(o, "address") ?? "" };
    const k = JSON.stringify(rendered);
    if (seen.has(k)) errs.push(fieldDuplicate(`status.addresses[${i}]`, rendered));
    seen.add(k);
  });
  const oldCidrs = podCIDRs(old);
  const newCidrs = podCIDRs(node);
  if (oldCidrs.length > 0) {
    const msg = 'node updates may not change podCIDR except from "" to valid';
    if (oldCidrs.length !== newCidrs.length) errs.push(fieldForbidden("spec.podCIDRs", msg));
    else
      oldCidrs.forEach((v, i) => {
        if (v !== newCidrs[i]) errs.push(fieldForbidden("spec.podCIDRs", msg));
      });
  }
  const oldProvider = getString(getObject(old, "spec"), "providerID") ?? "";
  const newProvider = getString(getObject(node, "spec"), "providerID") ?? "";
  if (oldProvider !== "" && oldProvider !== newProvider) {
    errs.push(
      fieldForbidden("spec.providerID", 'node updates may not change providerID except from "" to valid'),
    );
  }
  const oldExt = getString(getObject(old, "spec"), "externalID") ?? "";
  const newExt = getString(getObject(node, "spec"), "externalID") ?? "";
  if (oldExt !== newExt) errs.push(fieldForbidden("spec.externalID", "may not be updated"));
  return errs;
}

const NODE_INFO_KEYS = [
  "machineID",
  "systemUUID",
  "bootID",
  "kernelVersion",
  "osImage",
  "containerRuntimeVersion",
  "kubeletVersion",
  "kubeProxyVersion",
  "operatingSystem",
  "architecture",
] as const;

export const NODES: ResourceDef = {
  kind: "Node",
  listKind: "NodeList",
  plural: "nodes",
  singular: "node",
  shortNames: ["no"],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: false,
  hasStatus: true,
  allowCreateOnUpdate: false,
  allowUnconditionalUpdate: true,
  returnDeletedObject: false,
  gcSupported: true,
  storagePrefix: "/registry/minions/",
  smp: {
    fields: {
      metadata: META_SMP,
      spec: { fields: { podCIDRs: { mergeList: true } } },
      status: {
        fields: {
          conditions: CONDITIONS_SMP,
          addresses: { mergeList: true, mergeKey: "type" },
        },
      },
    },
  },
  fieldLabels: ["metadata.name", "spec.unschedulable"],
  nameValidator: nameIsDNSSubdomain,
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    return {
      "metadata.name": nameOf(obj),
      "spec.unschedulable": getObject(obj, "spec")?.["unschedulable"] === true ? "true" : "false",
    };
  },
  defaults(obj) {
    const spec = ensureObject(obj, "spec");
    // v1 → internal → v1 round trip keeps podCIDR and podCIDRs[0] in sync.
    const cidrs = getArray(spec, "podCIDRs");
    const single = getString(spec, "podCIDR");
    if (cidrs !== undefined && cidrs.length > 0) spec["podCIDR"] = cidrs[0] ?? "";
    else if (single) spec["podCIDRs"] = [single];
    const status = ensureObject(obj, "status");
    const daemon = ensureObject(status, "daemonEndpoints");
    const kubelet = ensureObject(daemon, "kubeletEndpoint");
    if (typeof kubelet["Port"] !== "number") kubelet["Port"] = 0;
    const info = ensureObject(status, "nodeInfo");
    for (const k of NODE_INFO_KEYS) if (typeof info[k] !== "string") info[k] = "";
  },
  prepareForCreate() {
    // Nodes allow all fields, including status, to be set on create.
  },
  prepareForUpdate(newObj, oldObj, sub) {
    if (sub === "status") newObj["spec"] = oldObj["spec"] ?? {};
    else newObj["status"] = oldObj["status"] ?? {};
  },
  validateCreate: validateNode,
  validateUpdate(newObj, oldObj, sub) {
    if (sub === "status") return validateNodeUpdate(newObj, oldObj);
    return [...validateNode(newObj), ...validateNodeUpdate(newObj, oldObj)];
  },
};

// ---------------------------------------------------------------------------------------------
// Services

export interface NodePortRange {
  readonly min: number;
  readonly max: number;
}

/** kube-apiserver's default --service-node-port-range. */
export const NODE_PORT_RANGE: NodePortRange = { min: 30000, max: 32767 };

const SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

export function serviceType(obj: JsonObject): string {
  return getString(getObject(obj, "spec"), "type") ?? "ClusterIP";
}

export function needsNodePorts(obj: JsonObject): boolean {
  const t = serviceType(obj);
  if (t === "NodePort") return true;
  if (t === "LoadBalancer") return getObject(obj, "spec")?.["allocateLoadBalancerNodePorts"] !== false;
  return false;
}

export function needsHealthCheckNodePort(obj: JsonObject): boolean {
  const spec = getObject(obj, "spec");
  return serviceType(obj) === "LoadBalancer" && getString(spec, "externalTrafficPolicy") === "Local";
}

function servicePorts(obj: JsonObject): JsonObject[] {
  const ports = getArray(getObject(obj, "spec"), "ports") ?? [];
  return ports.filter(isObject);
}

function validateLoadBalancerStatus(obj: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const lb = getObject(getObject(obj, "status"), "loadBalancer");
  const ingress = getArray(lb, "ingress") ?? [];
  if (ingress.length === 0) return errs;
  if (serviceType(obj) !== "LoadBalancer") {
    errs.push(
      fieldForbidden("status.loadBalancer.ingress", "may only be used when `spec.type` is 'LoadBalancer'"),
    );
    return errs;
  }
  ingress.forEach((raw, i) => {
    const ing = isObject(raw) ? raw : {};
    const p = `status.loadBalancer.ingress[${i}]`;
    const ip = getString(ing, "ip") ?? "";
    if (ip !== "" && !isValidIP(ip)) errs.push(fieldInvalid(`${p}.ip`, ip, IP_ERROR));
    const mode = ing["ipMode"];
    if (mode !== undefined && mode !== null) {
      if (ip === "") errs.push(fieldForbidden(`${p}.ipMode`, "may not be specified when `ip` is not"));
      else if (mode !== "VIP" && mode !== "Proxy")
        errs.push(fieldNotSupported(`${p}.ipMode`, mode, ["Proxy", "VIP"]));
    }
    const hostname = getString(ing, "hostname") ?? "";
    if (hostname !== "") {
      for (const m of isDNS1123Subdomain(hostname)) errs.push(fieldInvalid(`${p}.hostname`, hostname, m));
      if (isValidIP(hostname))
        errs.push(fieldInvalid(`${p}.hostname`, hostname, "must be a DNS name, not an IP address"));
    }
    const ports = getArray(ing, "ports") ?? [];
    ports.forEach((pr, j) => {
      const po = isObject(pr) ? pr : {};
      const proto = getString(po, "protocol") ?? "";
      if (proto === "") errs.push(fieldRequired(`${p}.ports[${j}].protocol`));
      else if (!["SCTP", "TCP", "UDP"].includes(proto))
        errs.push(fieldNotSupported(`${p}.ports[${j}].protocol`, proto, ["SCTP", "TCP", "UDP"]));
    });
  });
  return errs;
}

function validateService(obj: JsonObject): FieldError[] {
  const errs = coreValidateObjectMeta(obj, true, nameIsDNS1035Label);
  const spec = getObject(obj, "spec") ?? {};
  const type = getString(spec, "type") ?? "";
  if (!SERVICE_TYPES.includes(type)) errs.push(fieldNotSupported("spec.type", type, SERVICE_TYPES));
  const ports = getArray(spec, "ports") ?? [];
  const clusterIP = getString(spec, "clusterIP") ?? "";
  const headless = clusterIP === "None";
  if (type === "ExternalName") {
    const ext = getString(spec, "externalName") ?? "";
    if (ext === "") errs.push(fieldRequired("spec.externalName"));
    else
      for (const m of isDNS1123Subdomain(ext.replace(/\.$/, "")))
        errs.push(fieldInvalid("spec.externalName", ext, m));
    if (clusterIP !== "") {
      errs.push(fieldForbidden("spec.clusterIPs", "may not be set for ExternalName services"));
    }
  } else if (ports.length === 0 && !headless) {
    errs.push(fieldRequired("spec.ports"));
  }
  const names = new Set<string>();
  const portProto = new Set<string>();
  ports.forEach((raw, i) => {
    const p = `spec.ports[${i}]`;
    const port = isObject(raw) ? raw : {};
    const name = getString(port, "name") ?? "";
    if (ports.length > 1 && name === "") errs.push(fieldRequired(`${p}.name`));
    else if (name !== "") {
      for (const m of isDNS1123Label(name)) errs.push(fieldInvalid(`${p}.name`, name, m));
      if (names.has(name)) errs.push(fieldDuplicate(`${p}.name`, name));
      names.add(name);
    }
    const num = port["port"];
    if (typeof num !== "number" || !Number.isInteger(num) || num < 1 || num > 65535) {
      errs.push(fieldInvalid(`${p}.port`, num ?? 0, "must be between 1 and 65535, inclusive"));
    }
    const proto = getString(port, "protocol") ?? "";
    if (proto === "") errs.push(fieldRequired(`${p}.protocol`));
    else if (!["SCTP", "TCP", "UDP"].includes(proto))
      errs.push(fieldNotSupported(`${p}.protocol`, proto, ["SCTP", "TCP", "UDP"]));
    const key = `${String(num)}/${proto}`;
    if (portProto.has(key)) {
      errs.push(fieldDuplicate(p, { port: num ?? 0, protocol: proto }));
    }
    portProto.add(key);
    const target = port["targetPort"];
    if (typeof target === "number") {
      if (!Number.isInteger(target) || target < 1 || target > 65535)
        errs.push(fieldInvalid(`${p}.targetPort`, target, "must be between 1 and 65535, inclusive"));
    } else if (typeof target === "string" && target !== "") {
      if (target.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(target) || !/[a-z]/.test(target)) {
        errs.push(
          fieldInvalid(
            `${p}.targetPort`,
            target,
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
          ),
        );
      }
    }
    const nodePort = port["nodePort"];
    if (typeof nodePort === "number" && nodePort !== 0) {
      if (type === "ClusterIP" || type === "ExternalName") {
        errs.push(fieldForbidden(`${p}.nodePort`, `may not be used when \`type\` is '${type}'`));
      }
    }
  });
  const etp = getString(spec, "externalTrafficPolicy") ?? "";
  if (etp !== "") {
    if (type !== "NodePort" && type !== "LoadBalancer") {
      errs.push(
        fieldInvalid(
          "spec.externalTrafficPolicy",
          etp,
          "may only be set when `type` is 'NodePort' or 'LoadBalancer'",
        ),
      );
    } else if (etp !== "Cluster" && etp !== "Local") {
      errs.push(fieldNotSupported("spec.externalTrafficPolicy", etp, ["Cluster", "Local"]));
    }
  } else if (type === "NodePort" || type === "LoadBalancer") {
    errs.push(fieldRequired("spec.externalTrafficPolicy"));
  }
  const affinity = getString(spec, "sessionAffinity") ?? "";
  if (affinity !== "None" && affinity !== "ClientIP") {
    errs.push(fieldNotSupported("spec.sessionAffinity", affinity, ["ClientIP", "None"]));
  }
  if (clusterIP !== "" && clusterIP !== "None" && !isValidIP(clusterIP)) {
    errs.push(fieldInvalid("spec.clusterIPs[0]", clusterIP, IP_ERROR));
  }
  const hcnp = spec["healthCheckNodePort"];
  if (typeof hcnp === "number" && hcnp !== 0 && !needsHealthCheckNodePort(obj)) {
    errs.push(
      fieldInvalid(
        "spec.healthCheckNodePort",
        hcnp,
        "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
      ),
    );
  }
  const lbip = getString(spec, "loadBalancerIP") ?? "";
  if (lbip !== "" && type !== "LoadBalancer") {
    errs.push(fieldForbidden("spec.loadBalancerIP", "may only be used when `type` is 'LoadBalancer'"));
  }
  return errs;
}

function validateServiceUpdate(svc: JsonObject, old: JsonObject): FieldError[] {
  const errs = coreValidateObjectMetaUpdate(svc, old);
  const oldIP = getString(getObject(old, "spec"), "clusterIP") ?? "";
  const newIP = getString(getObject(svc, "spec"), "clusterIP") ?? "";
  if (
    oldIP !== "" &&
    serviceType(old) !== "ExternalName" &&
    serviceType(svc) !== "ExternalName" &&
    newIP !== oldIP
  ) {
    errs.push(fieldInvalid("spec.clusterIPs[0]", newIP, "may not change once set"));
  }
  errs.push(...validateService(svc));
  return errs;
}

function defaultIngressIPMode(obj: JsonObject): void {
  if (serviceType(obj) !== "LoadBalancer") return;
  const lb = getObject(getObject(obj, "status"), "loadBalancer");
  for (const ing of getArray(lb, "ingress") ?? []) {
    if (
      isObject(ing) &&
      (getString(ing, "ip") ?? "") !== "" &&
      (ing["ipMode"] === undefined || ing["ipMode"] === null)
    ) {
      ing["ipMode"] = "VIP";
    }
  }
}

export const SERVICES: ResourceDef = {
  kind: "Service",
  listKind: "ServiceList",
  plural: "services",
  singular: "service",
  shortNames: ["svc"],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: true,
  hasStatus: true,
  allowCreateOnUpdate: true,
  allowUnconditionalUpdate: true,
  returnDeletedObject: true,
  gcSupported: true,
  storagePrefix: "/registry/services/specs/",
  smp: {
    fields: {
      metadata: META_SMP,
      spec: { fields: { ports: { mergeList: true, mergeKey: "port" } } },
      status: { fields: { conditions: CONDITIONS_SMP } },
    },
  },
  fieldLabels: ["metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"],
  nameValidator: nameIsDNS1035Label,
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    const spec = getObject(obj, "spec");
    return {
      "metadata.name": nameOf(obj),
      "metadata.namespace": nsOf(obj),
      "spec.clusterIP": getString(spec, "clusterIP") ?? "",
      "spec.type": getString(spec, "type") ?? "",
    };
  },
  defaults(obj) {
    const spec = ensureObject(obj, "spec");
    if (!getString(spec, "type")) spec["type"] = "ClusterIP";
    const type = getString(spec, "type") ?? "ClusterIP";
    if (!getString(spec, "sessionAffinity")) spec["sessionAffinity"] = "None";
    if (spec["sessionAffinity"] === "ClientIP" && !isObject(spec["sessionAffinityConfig"])) {
      spec["sessionAffinityConfig"] = { clientIP: { timeoutSeconds: 10800 } };
    }
    for (const port of getArray(spec, "ports") ?? []) {
      if (!isObject(port)) continue;
      if (!getString(port, "protocol")) port["protocol"] = "TCP";
      const t = port["targetPort"];
      if (t === undefined || t === null || t === 0 || t === "") port["targetPort"] = port["port"] ?? 0;
    }
    if ((type === "NodePort" || type === "LoadBalancer") && !getString(spec, "externalTrafficPolicy")) {
      spec["externalTrafficPolicy"] = "Cluster";
    }
    if (type !== "ExternalName" && !getString(spec, "internalTrafficPolicy")) {
      spec["internalTrafficPolicy"] = "Cluster";
    }
    if (type === "LoadBalancer" && typeof spec["allocateLoadBalancerNodePorts"] !== "boolean") {
      spec["allocateLoadBalancerNodePorts"] = true;
    }
    const status = ensureObject(obj, "status");
    ensureObject(status, "loadBalancer");
    defaultIngressIPMode(obj);
  },
  prepareForCreate(obj) {
    obj["status"] = { loadBalancer: {} };
  },
  prepareForUpdate(newObj, oldObj, sub) {
    if (sub === "status") {
      newObj["spec"] = oldObj["spec"] ?? {};
      defaultIngressIPMode(newObj);
      return;
    }
    newObj["status"] = oldObj["status"] ?? { loadBalancer: {} };
    if (serviceType(oldObj) === "LoadBalancer" && serviceType(newObj) !== "LoadBalancer") {
      newObj["status"] = { ...ensureObject(newObj, "status"), loadBalancer: {} };
    }
    // dropTypeDependentFields: clear node ports / health check port the type no longer needs, when unchanged.
    const newSpec = ensureObject(newObj, "spec");
    const oldSpec = getObject(oldObj, "spec") ?? {};
    if (needsNodePorts(oldObj) && !needsNodePorts(newObj)) {
      const oldPorts = servicePorts(oldObj);
      for (const p of servicePorts(newObj)) {
        const match = oldPorts.find((o) => o["port"] === p["port"] && o["protocol"] === p["protocol"]);
        if (match !== undefined && match["nodePort"] === p["nodePort"]) delete p["nodePort"];
      }
    }
    if (
      needsHealthCheckNodePort(oldObj) &&
      !needsHealthCheckNodePort(newObj) &&
      newSpec["healthCheckNodePort"] === oldSpec["healthCheckNodePort"]
    ) {
      delete newSpec["healthCheckNodePort"];
    }
    const newType = serviceType(newObj);
    if (newType !== "LoadBalancer") {
      for (const k of ["allocateLoadBalancerNodePorts", "loadBalancerClass"]) {
        if (newSpec[k] !== undefined && newSpec[k] === oldSpec[k]) delete newSpec[k];
      }
    }
    if (
      newType !== "NodePort" &&
      newType !== "LoadBalancer" &&
      newSpec["externalTrafficPolicy"] !== undefined &&
      newSpec["externalTrafficPolicy"] === oldSpec["externalTrafficPolicy"]
    ) {
      delete newSpec["externalTrafficPolicy"];
    }
  },
  validateCreate: validateService,
  validateUpdate(newObj, oldObj, sub) {
    if (sub === "status")
      return [...coreValidateObjectMetaUpdate(newObj, oldObj), ...validateLoadBalancerStatus(newObj)];
    return validateServiceUpdate(newObj, oldObj);
  },
};

// ---------------------------------------------------------------------------------------------
// Events (core/v1)

function legacyValidateEvent(obj: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const involved = getObject(obj, "involvedObject") ?? {};
  const involvedNs = getString(involved, "namespace") ?? "";
  const ns = nsOf(obj);
  const eventTime = obj["eventTime"];
  if (eventTime === undefined || eventTime === null || eventTime === "") {
    if (involvedNs === "") {
      if (ns !== "" && ns !== "default") {
        errs.push(fieldInvalid("involvedObject.namespace", involvedNs, "does not match event.namespace"));
      }
    } else if (ns !== involvedNs) {
      errs.push(fieldInvalid("involvedObject.namespace", involvedNs, "does not match event.namespace"));
    }
  } else {
    if (involvedNs === "" && ns !== "default" && ns !== "kube-system") {
      errs.push(fieldInvalid("involvedObject.namespace", involvedNs, "does not match event.namespace"));
    }
    const controller = getString(obj, "reportingComponent") ?? "";
    if (controller === "") errs.push(fieldRequired("reportingComponent"));
    for (const m of isQualifiedName(controller)) errs.push(fieldInvalid("reportingComponent", controller, m));
    const instance = getString(obj, "reportingInstance") ?? "";
    if (instance === "") errs.push(fieldRequired("reportingInstance"));
    if (instance.length > 128)
      errs.push(fieldInvalid("reportingInstance", "", "can have at most 128 characters"));
    const action = getString(obj, "action") ?? "";
    if (action === "") errs.push(fieldRequired("action"));
    if (action.length > 128) errs.push(fieldInvalid("action", "", "can have at most 128 characters"));
    const reason = getString(obj, "reason") ?? "";
    if (reason === "") errs.push(fieldRequired("reason"));
    if (reason.length > 128) errs.push(fieldInvalid("reason", "", "can have at most 128 characters"));
    const message = getString(obj, "message") ?? "";
    if (message.length > 1024) errs.push(fieldInvalid("message", "", "can have at most 1024 characters"));
  }
  for (const m of isDNS1123Subdomain(ns)) errs.push(fieldInvalid("namespace", ns, m));
  return errs;
}

export const EVENTS: ResourceDef = {
  kind: "Event",
  listKind: "EventList",
  plural: "events",
  singular: "event",
  shortNames: ["ev"],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: true,
  hasStatus: false,
  allowCreateOnUpdate: true,
  allowUnconditionalUpdate: true,
  returnDeletedObject: false,
  gcSupported: false,
  storagePrefix: "/registry/events/",
  smp: { fields: { metadata: META_SMP } },
  fieldLabels: [
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
  ],
  nameValidator: (name, prefix) => {
    const errs: string[] = [];
    if (!prefix && (name === "." || name === "..")) errs.push(`may not be '${name}'`);
    if (name.includes("/")) errs.push("may not contain '/'");
    if (name.includes("%")) errs.push("may not contain '%'");
    return errs;
  },
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    const io = getObject(obj, "involvedObject");
    return {
      "metadata.name": nameOf(obj),
      "metadata.namespace": nsOf(obj),
      "involvedObject.kind": getString(io, "kind") ?? "",
      "involvedObject.namespace": getString(io, "namespace") ?? "",
      "involvedObject.name": getString(io, "name") ?? "",
      "involvedObject.uid": getString(io, "uid") ?? "",
      "involvedObject.apiVersion": getString(io, "apiVersion") ?? "",
      "involvedObject.resourceVersion": getString(io, "resourceVersion") ?? "",
      "involvedObject.fieldPath": getString(io, "fieldPath") ?? "",
      reason: getString(obj, "reason") ?? "",
      reportingComponent: getString(obj, "reportingComponent") ?? "",
      source: getString(getObject(obj, "source"), "component") ?? "",
      type: getString(obj, "type") ?? "",
    };
  },
  defaults(obj) {
    ensureObject(obj, "involvedObject");
    ensureObject(obj, "source");
    for (const k of ["firstTimestamp", "lastTimestamp", "eventTime"]) {
      if (obj[k] === undefined || obj[k] === "") obj[k] = null;
    }
    if (typeof obj["reportingComponent"] !== "string") obj["reportingComponent"] = "";
    if (typeof obj["reportingInstance"] !== "string") obj["reportingInstance"] = "";
  },
  prepareForCreate() {
    // The event strategy adds nothing.
  },
  prepareForUpdate() {
    // Events have no status subresource.
  },
  validateCreate: legacyValidateEvent,
  validateUpdate: (newObj) => legacyValidateEvent(newObj),
};

// ---------------------------------------------------------------------------------------------
// Namespaces (minimal)

export const NAMESPACES: ResourceDef = {
  kind: "Namespace",
  listKind: "NamespaceList",
  plural: "namespaces",
  singular: "namespace",
  shortNames: ["ns"],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: false,
  hasStatus: true,
  allowCreateOnUpdate: false,
  allowUnconditionalUpdate: true,
  returnDeletedObject: true,
  gcSupported: true,
  storagePrefix: "/registry/namespaces/",
  smp: {
    fields: { metadata: META_SMP, status: { fields: { conditions: CONDITIONS_SMP } } },
  },
  fieldLabels: ["metadata.name", "status.phase"],
  nameValidator: nameIsDNSLabel,
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    return {
      "metadata.name": nameOf(obj),
      "status.phase": getString(getObject(obj, "status"), "phase") ?? "",
    };
  },
  defaults(obj) {
    ensureObject(obj, "spec");
    const status = ensureObject(obj, "status");
    if (!getString(status, "phase")) status["phase"] = "Active";
    const name = nameOf(obj);
    if (name !== "") {
      const m = ensureObject(obj, "metadata");
      const labels = ensureObject(m, "labels");
      labels["kubernetes.io/metadata.name"] = name;
    }
  },
  prepareForCreate(obj) {
    obj["spec"] = { finalizers: ["kubernetes"] };
    obj["status"] = { phase: "Active" };
  },
  prepareForUpdate(newObj, oldObj, sub) {
    if (sub === "status") {
      newObj["spec"] = oldObj["spec"] ?? {};
      return;
    }
    newObj["spec"] = oldObj["spec"] ?? {};
    newObj["status"] = oldObj["status"] ?? {};
  },
  validateCreate: (obj) => coreValidateObjectMeta(obj, false, nameIsDNSLabel),
  validateUpdate: (newObj, oldObj) => coreValidateObjectMetaUpdate(newObj, oldObj),
};

// ---------------------------------------------------------------------------------------------
// Leases (coordination.k8s.io/v1)

function validateLeaseSpec(obj: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = getObject(obj, "spec") ?? {};
  const dur = getNumber(spec, "leaseDurationSeconds");
  if (dur !== undefined && dur <= 0)
    errs.push(fieldInvalid("spec.leaseDurationSeconds", dur, "must be greater than 0"));
  const tr = getNumber(spec, "leaseTransitions");
  if (tr !== undefined && tr < 0)
    errs.push(fieldInvalid("spec.leaseTransitions", tr, "must be greater than or equal to 0"));
  return errs;
}

export const LEASES: ResourceDef = {
  kind: "Lease",
  listKind: "LeaseList",
  plural: "leases",
  singular: "lease",
  shortNames: [],
  group: "coordination.k8s.io",
  version: "v1",
  apiVersion: "coordination.k8s.io/v1",
  namespaced: true,
  hasStatus: false,
  allowCreateOnUpdate: true,
  allowUnconditionalUpdate: false,
  returnDeletedObject: false,
  gcSupported: true,
  storagePrefix: "/registry/leases/",
  smp: { fields: { metadata: META_SMP } },
  fieldLabels: ["metadata.name", "metadata.namespace"],
  nameValidator: nameIsDNSSubdomain,
  unsupportedFieldError: (label) =>
    badRequest(`"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"`),
  fieldsOf(obj) {
    return { "metadata.name": nameOf(obj), "metadata.namespace": nsOf(obj) };
  },
  defaults(obj) {
    ensureObject(obj, "spec");
  },
  prepareForCreate() {},
  prepareForUpdate() {},
  validateCreate: (obj) => [
    ...validateObjectMeta(obj, true, nameIsDNSSubdomain, true),
    ...validateLeaseSpec(obj),
  ],
  validateUpdate: (newObj, oldObj) => [
    ...validateObjectMetaUpdate(newObj, oldObj),
    ...validateLeaseSpec(newObj),
  ],
};

// ---------------------------------------------------------------------------------------------
// Pods (minimal: enough that clients listing a node's Pods, such as `kubectl describe node`, get
// an answer; nothing runs them)

function validatePod(obj: JsonObject): FieldError[] {
  const errs = coreValidateObjectMeta(obj, true, nameIsDNSSubdomain);
  const containers = getArray(getObject(obj, "spec"), "containers") ?? [];
  if (containers.length === 0) errs.push(fieldRequired("spec.containers"));
  containers.forEach((raw, i) => {
    const c = isObject(raw) ? raw : {};
    const name = getString(c, "name") ?? "";
    if (name === "") errs.push(fieldRequired(`spec.containers[${i}].name`));
    else for (const m of isDNS1123Label(name)) errs.push(fieldInvalid(`spec.containers[${i}].name`, name, m));
    if ((getString(c, "image") ?? "") === "") errs.push(fieldRequired(`spec.containers[${i}].image`));
  });
  return errs;
}

export const PODS: ResourceDef = {
  kind: "Pod",
  listKind: "PodList",
  plural: "pods",
  singular: "pod",
  shortNames: ["po"],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: true,
  hasStatus: true,
  allowCreateOnUpdate: false,
  allowUnconditionalUpdate: true,
  returnDeletedObject: false,
  gcSupported: true,
  storagePrefix: "/registry/pods/",
  smp: {
    fields: {
      metadata: META_SMP,
      spec: { fields: { containers: { mergeList: true, mergeKey: "name" } } },
      status: { fields: { conditions: CONDITIONS_SMP } },
    },
  },
  fieldLabels: [
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
  ],
  nameValidator: nameIsDNSSubdomain,
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    const spec = getObject(obj, "spec");
    const status = getObject(obj, "status");
    return {
      "metadata.name": nameOf(obj),
      "metadata.namespace": nsOf(obj),
      "spec.nodeName": getString(spec, "nodeName") ?? "",
      "spec.restartPolicy": getString(spec, "restartPolicy") ?? "",
      "spec.schedulerName": getString(spec, "schedulerName") ?? "",
      "spec.serviceAccountName": getString(spec, "serviceAccountName") ?? "",
      "spec.hostNetwork": spec?.["hostNetwork"] === true ? "true" : "false",
      "status.phase": getString(status, "phase") ?? "",
      "status.podIP": getString(status, "podIP") ?? "",
      "status.nominatedNodeName": getString(status, "nominatedNodeName") ?? "",
    };
  },
  defaults(obj) {
    const spec = ensureObject(obj, "spec");
    if (!getString(spec, "restartPolicy")) spec["restartPolicy"] = "Always";
    if (!getString(spec, "dnsPolicy")) spec["dnsPolicy"] = "ClusterFirst";
    if (!getString(spec, "schedulerName")) spec["schedulerName"] = "default-scheduler";
    if (typeof spec["terminationGracePeriodSeconds"] !== "number") spec["terminationGracePeriodSeconds"] = 30;
    for (const c of getArray(spec, "containers") ?? []) {
      if (!isObject(c)) continue;
      if (!getString(c, "imagePullPolicy")) {
        const image = getString(c, "image") ?? "";
        c["imagePullPolicy"] =
          image.endsWith(":latest") || !/:[^/]+$/.test(image) ? "Always" : "IfNotPresent";
      }
      if (!getString(c, "terminationMessagePath")) c["terminationMessagePath"] = "/dev/termination-log";
      if (!getString(c, "terminationMessagePolicy")) c["terminationMessagePolicy"] = "File";
    }
    ensureObject(obj, "status");
  },
  prepareForCreate(obj) {
    obj["status"] = { phase: "Pending", qosClass: "BestEffort" };
  },
  prepareForUpdate(newObj, oldObj, sub) {
    if (sub === "status") newObj["spec"] = oldObj["spec"] ?? {};
    else newObj["status"] = oldObj["status"] ?? {};
  },
  validateCreate: validatePod,
  validateUpdate: (newObj, oldObj, sub) => [
    ...coreValidateObjectMetaUpdate(newObj, oldObj),
    ...(sub === "status" ? [] : validatePod(newObj)),
  ],
};

// ---------------------------------------------------------------------------------------------
// Secrets (core/v1): stringData folded into data on write, data values base64, the
// kubernetes.io/tls type's required keys (pkg/apis/core/validation ValidateSecret)

const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function foldStringData(obj: JsonObject): void {
  const stringData = getObject(obj, "stringData");
  if (stringData === undefined) return;
  const data = ensureObject(obj, "data");
  for (const [k, v] of Object.entries(stringData))
    if (typeof v === "string") data[k] = Buffer.from(v, "utf8").toString("base64");
  delete obj["stringData"];
}

function validateSecret(obj: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const data = getObject(obj, "data") ?? {};
  let total = 0;
  for (const [k, v] of Object.entries(data)) {
    if (!SECRET_KEY.test(k) || k.length > 253)
      errs.push(
        fieldInvalid(
          `data[${k}]`,
          k,
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
        ),
      );
    if (typeof v !== "string" || !BASE64.test(v))
      errs.push(fieldInvalid(`data[${k}]`, "<secret contents redacted>", "illegal base64 data"));
    else total += Buffer.from(v, "base64").length;
  }
  if (total > 1024 * 1024) errs.push(fieldInvalid("data", "", "Too long: must have at most 1048576 bytes"));
  if (getString(obj, "type") === "kubernetes.io/tls")
    for (const k of ["tls.crt", "tls.key"]) if (data[k] === undefined) errs.push(fieldRequired(`data[${k}]`));
  return errs;
}

export const SECRETS: ResourceDef = {
  kind: "Secret",
  listKind: "SecretList",
  plural: "secrets",
  singular: "secret",
  shortNames: [],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: true,
  hasStatus: false,
  allowCreateOnUpdate: false,
  allowUnconditionalUpdate: true,
  returnDeletedObject: false,
  gcSupported: true,
  storagePrefix: "/registry/secrets/",
  smp: { fields: { metadata: META_SMP } },
  fieldLabels: ["metadata.name", "metadata.namespace", "type"],
  nameValidator: nameIsDNSSubdomain,
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    return {
      "metadata.name": nameOf(obj),
      "metadata.namespace": nsOf(obj),
      type: getString(obj, "type") ?? "",
    };
  },
  defaults(obj) {
    if (!getString(obj, "type")) obj["type"] = "Opaque";
    foldStringData(obj);
  },
  prepareForCreate() {},
  prepareForUpdate() {},
  validateCreate: (obj) => [...coreValidateObjectMeta(obj, true, nameIsDNSSubdomain), ...validateSecret(obj)],
  validateUpdate: (newObj, oldObj) => {
    const errs = [...coreValidateObjectMetaUpdate(newObj, oldObj), ...validateSecret(newObj)];
    if (getString(newObj, "type") !== getString(oldObj, "type"))
      errs.push(fieldInvalid("type", getString(newObj, "type") ?? "", "field is immutable"));
    return errs;
  },
};

// ---------------------------------------------------------------------------------------------
// PersistentVolumes (validation and defaults in persistent-volumes.ts)

export const PERSISTENT_VOLUMES: ResourceDef = {
  kind: "PersistentVolume",
  listKind: "PersistentVolumeList",
  plural: "persistentvolumes",
  singular: "persistentvolume",
  shortNames: ["pv"],
  group: "",
  version: "v1",
  apiVersion: "v1",
  namespaced: false,
  hasStatus: true,
  allowCreateOnUpdate: false,
  allowUnconditionalUpdate: true,
  returnDeletedObject: false,
  gcSupported: true,
  storagePrefix: "/registry/persistentvolumes/",
  smp: { fields: { metadata: META_SMP } },
  fieldLabels: ["metadata.name"],
  nameValidator: pathSegmentName,
  unsupportedFieldError: coreFieldError,
  fieldsOf(obj) {
    return { "metadata.name": nameOf(obj) };
  },
  defaults: defaultPersistentVolume,
  prepareForCreate(obj) {
    // The strategy clears status; PersistentVolumeLastPhaseTransitionTime stamps the phase.
    obj["status"] = {
      phase: "Pending",
      lastPhaseTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    };
  },
  prepareForUpdate(newObj, oldObj, sub) {
    if (sub === "status") newObj["spec"] = oldObj["spec"] ?? {};
    else newObj["status"] = oldObj["status"] ?? {};
  },
  validateCreate: validatePersistentVolume,
  validateUpdate(newObj, oldObj, sub) {
    if (sub === "status") return coreValidateObjectMetaUpdate(newObj, oldObj);
    return validatePersistentVolumeUpdate(newObj, oldObj);
  },
};

export const ALL_RESOURCES: readonly ResourceDef[] = [
  NODES,
  SERVICES,
  EVENTS,
  NAMESPACES,
  LEASES,
  PODS,
  SECRETS,
  PERSISTENT_VOLUMES,
];

export function resourceByKind(kind: KindName): ResourceDef {
  const def = ALL_RESOURCES.find((d) => d.kind === kind);
  if (def === undefined) throw new Error(`unknown kind ${kind}`);
  return def;
}
