// Server-side printing: the columns kube-apiserver's TableConvertor produces for each resource (the
// printers of pkg/printers/internalversion, always generated "wide": kubectl hides priority > 0 columns
// unless `-o wide`), and the meta.k8s.io Table built from them for GET, LIST and WATCH.

import { badRequest, fieldErrorString, fieldNotSupported } from "./errors.js";
import {
  getArray,
  getNumber,
  getObject,
  getString,
  getStringMap,
  isObject,
  type JsonObject,
  type JsonValue,
} from "./json.js";
import type { ResourceDef } from "./resources.js";

export interface ColumnDefinition {
  readonly name: string;
  readonly type: string;
  readonly format: string;
  readonly description: string;
  readonly priority: number;
}

interface Printer {
  readonly columns: readonly ColumnDefinition[];
  cells(obj: JsonObject, now: number): JsonValue[];
}

function col(
  name: string,
  description: string,
  extra: { format?: string; priority?: number; type?: string } = {},
): ColumnDefinition {
  return {
    name,
    type: extra.type ?? "string",
    format: extra.format ?? "",
    description,
    priority: extra.priority ?? 0,
  };
}

const NAME_COL = col("Name", "Name of the object, unique within its namespace.", { format: "name" });
const AGE_COL = col("Age", "Time since the object's creationTimestamp.");

/** duration.HumanDuration of k8s.io/apimachinery: the short form kubectl shows in AGE columns. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 365 * 8) {
    const dy = days % 365;
    return dy === 0 ? `${Math.trunc(days / 365)}y` : `${Math.trunc(days / 365)}y${dy}d`;
  }
  return `${Math.trunc(days / 365)}y`;
}

/** translateTimestampSince: "<unknown>" for an unset time. */
function since(ts: JsonValue | undefined, now: number): string {
  if (typeof ts !== "string" || ts === "") return "<unknown>";
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return "<unknown>";
  return humanDuration(now - t);
}

function meta(obj: JsonObject): JsonObject {
  return getObject(obj, "metadata") ?? {};
}

function name(obj: JsonObject): string {
  return getString(meta(obj), "name") ?? "";
}

function age(obj: JsonObject, now: number): string {
  return since(meta(obj)["creationTimestamp"], now);
}

function objects(v: JsonValue[] | undefined): JsonObject[] {
  return (v ?? []).filter(isObject);
}

// ---------------------------------------------------------------------------------------------
// Per resource

function nodeAddress(status: JsonObject | undefined, type: string): string {
  const a = objects(getArray(status, "addresses")).find((x) => getString(x, "type") === type);
  return a === undefined ? "<none>" : (getString(a, "address") ?? "<none>");
}

function nodeRoles(labels: Readonly<Record<string, string>>): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(labels)) {
    if (k.startsWith("node-role.kubernetes.io/")) {
      const role = k.slice("node-role.kubernetes.io/".length);
      if (role !== "") roles.add(role);
    } else if (k === "kubernetes.io/role" && v !== "") roles.add(v);
  }
  return roles.size === 0 ? "<none>" : [...roles].sort().join(",");
}

const NODE_PRINTER: Printer = {
  columns: [
    NAME_COL,
    col("Status", "The status of the node"),
    col("Roles", "The roles of the node"),
    AGE_COL,
    col("Version", "Kubelet version reported by the node."),
    col("Internal-IP", "The node's first InternalIP address.", { priority: 1 }),
    col("External-IP", "The node's first ExternalIP address.", { priority: 1 }),
    col("OS-Image", "OS image reported by the node.", { priority: 1 }),
    col("Kernel-Version", "Kernel version reported by the node.", { priority: 1 }),
    col("Container-Runtime", "Container runtime version reported by the node.", { priority: 1 }),
  ],
  cells(obj, now) {
    const status = getObject(obj, "status");
    const ready = objects(getArray(status, "conditions")).find((c) => getString(c, "type") === "Ready");
    const states: string[] = [];
    if (ready !== undefined) states.push(getString(ready, "status") === "True" ? "Ready" : "NotReady");
    else states.push("Unknown");
    if (getObject(obj, "spec")?.["unschedulable"] === true) states.push("SchedulingDisabled");
    const info = getObject(status, "nodeInfo");
    const orUnknown = (k: string): string => {
      const v = getString(info, k) ?? "";
      return v === "" ? "<unknown>" : v;
    };
    return [
      name(obj),
      states.join(","),
      nodeRoles(getStringMap(meta(obj), "labels")),
      age(obj, now),
      getString(info, "kubeletVersion") ?? "",
      nodeAddress(status, "InternalIP"),
      nodeAddress(status, "ExternalIP"),
      orUnknown("osImage"),
      orUnknown("kernelVersion"),
      orUnknown("containerRuntimeVersion"),
    ];
  },
};

function serviceExternalIP(obj: JsonObject): string {
  const spec = getObject(obj, "spec");
  const externalIPs = (getArray(spec, "externalIPs") ?? []).filter((x): x is string => typeof x === "string");
  switch (getString(spec, "type") ?? "ClusterIP") {
    case "ClusterIP":
    case "NodePort":
      return externalIPs.length > 0 ? externalIPs.join(",") : "<none>";
    case "LoadBalancer": {
      const lb = new Set<string>();
      for (const ing of objects(getArray(getObject(getObject(obj, "status"), "loadBalancer"), "ingress"))) {
        const ip = getString(ing, "ip") ?? "";
        const host = getString(ing, "hostname") ?? "";
        if (ip !== "") lb.add(ip);
        else if (host !== "") lb.add(host);
      }
      const all = [...[...lb].sort(), ...externalIPs];
      return all.length > 0 ? all.join(",") : "<pending>";
    }
    case "ExternalName":
      return getString(spec, "externalName") ?? "";
    default:
      return "<unknown>";
  }
}

function servicePorts(obj: JsonObject): string {
  const pieces = objects(getArray(getObject(obj, "spec"), "ports")).map((p) => {
    const port = getNumber(p, "port") ?? 0;
    const proto = getString(p, "protocol") ?? "";
    const nodePort = getNumber(p, "nodePort") ?? 0;
    return nodePort > 0 ? `${port}:${nodePort}/${proto}` : `${port}/${proto}`;
  });
  return pieces.length > 0 ? pieces.join(",") : "<none>";
}

function formatLabels(labels: Readonly<Record<string, string>>): string {
  const keys = Object.keys(labels).sort();
  return keys.length === 0 ? "<none>" : keys.map((k) => `${k}=${labels[k] ?? ""}`).join(",");
}

const SERVICE_PRINTER: Printer = {
  columns: [
    NAME_COL,
    col("Type", "The type of the service: ClusterIP, NodePort, LoadBalancer or ExternalName."),
    col("Cluster-IP", "The service's cluster IP."),
    col("External-IP", "Load-balancer ingress IPs or hostnames, and external IPs."),
    col("Port(s)", "The service's ports, with the node port when there is one."),
    AGE_COL,
    col("Selector", "The labels of the Pods the service routes to.", { priority: 1 }),
  ],
  cells(obj, now) {
    const spec = getObject(obj, "spec");
    const ips = (getArray(spec, "clusterIPs") ?? []).filter((x): x is string => typeof x === "string");
    const clusterIP = ips[0] ?? (getString(spec, "clusterIP") || "<none>");
    return [
      name(obj),
      getString(spec, "type") ?? "",
      clusterIP,
      serviceExternalIP(obj),
      servicePorts(obj),
      age(obj, now),
      formatLabels(getStringMap(spec ?? {}, "selector")),
    ];
  },
};

const EVENT_PRINTER: Printer = {
  columns: [
    col("Last Seen", "When the event was last recorded."),
    col("Type", "Normal or Warning."),
    col("Reason", "Why the event happened, in CamelCase."),
    col("Object", "The object the event is about."),
    col("Subobject", "The part of the object the event is about (fieldPath).", { priority: 1 }),
    col("Source", "The component (and host) that reported the event.", { priority: 1 }),
    col("Message", "Human-readable description of the event."),
    col("First Seen", "When the event was first recorded.", { priority: 1 }),
    col("Count", "How many times the event occurred.", { priority: 1 }),
    col("Name", "Name of the Event object.", { priority: 1, format: "name" }),
  ],
  cells(obj, now) {
    const first =
      typeof obj["firstTimestamp"] === "string" && obj["firstTimestamp"] !== ""
        ? since(obj["firstTimestamp"], now)
        : since(obj["eventTime"], now);
    let last =
      typeof obj["lastTimestamp"] === "string" && obj["lastTimestamp"] !== ""
        ? since(obj["lastTimestamp"], now)
        : first;
    let count = getNumber(obj, "count") ?? 0;
    const series = getObject(obj, "series");
    if (series !== undefined) {
      last = since(series["lastObservedTime"], now);
      count = getNumber(series, "count") ?? 0;
    } else if (count === 0) {
      count = 1;
    }
    const io = getObject(obj, "involvedObject");
    const kind = (getString(io, "kind") ?? "").toLowerCase();
    const ioName = getString(io, "name") ?? "";
    const source = getObject(obj, "source");
    const component = getString(source, "component") || (getString(obj, "reportingComponent") ?? "");
    const host = getString(source, "host") || (getString(obj, "reportingInstance") ?? "");
    return [
      last,
      getString(obj, "type") ?? "",
      getString(obj, "reason") ?? "",
      ioName === "" ? kind : `${kind}/${ioName}`,
      getString(io, "fieldPath") ?? "",
      host === "" ? component : `${component}, ${host}`,
      (getString(obj, "message") ?? "").trim(),
      first,
      count,
      name(obj),
    ];
  },
};

const NAMESPACE_PRINTER: Printer = {
  columns: [NAME_COL, col("Status", "The lifecycle phase of the namespace."), AGE_COL],
  cells: (obj, now) => [name(obj), getString(getObject(obj, "status"), "phase") ?? "", age(obj, now)],
};

const LEASE_PRINTER: Printer = {
  columns: [NAME_COL, col("Holder", "The current holder of the lease."), AGE_COL],
  cells: (obj, now) => {
    const holder = getString(getObject(obj, "spec"), "holderIdentity");
    return [name(obj), holder ?? "<none>", age(obj, now)];
  },
};

const SECRET_PRINTER: Printer = {
  columns: [
    NAME_COL,
    col("Type", "The type of the secret."),
    col("Data", "The number of keys in the secret.", { type: "integer" }),
    AGE_COL,
  ],
  cells: (obj, now) => [
    name(obj),
    getString(obj, "type") ?? "",
    Object.keys(getObject(obj, "data") ?? {}).length,
    age(obj, now),
  ],
};

/** kubectl's short access modes (helper.GetAccessModesAsString). */
const ACCESS_MODE_SHORT: Readonly<Record<string, string>> = {
  ReadWriteOnce: "RWO",
  ReadOnlyMany: "ROX",
  ReadWriteMany: "RWX",
  ReadWriteOncePod: "RWOP",
};

function persistentVolumeCells(obj: JsonObject, now: number): JsonValue[] {
  const spec = getObject(obj, "spec");
  const status = getObject(obj, "status");
  const claim = getObject(spec, "claimRef");
  const modes = (getArray(spec, "accessModes") ?? []).map((m) => ACCESS_MODE_SHORT[String(m)] ?? "");
  const deleting = meta(obj)["deletionTimestamp"] !== undefined && meta(obj)["deletionTimestamp"] !== null;
  return [
    name(obj),
    getString(getObject(spec, "capacity"), "storage") ?? "",
    [...new Set(modes)].filter((m) => m !== "").join(","),
    getString(spec, "persistentVolumeReclaimPolicy") ?? "",
    deleting ? "Terminating" : (getString(status, "phase") ?? ""),
    claim === undefined ? "" : `${getString(claim, "namespace") ?? ""}/${getString(claim, "name") ?? ""}`,
    getString(spec, "storageClassName") ?? "",
    getString(spec, "volumeAttributesClassName") ?? "<unset>",
    getString(status, "reason") ?? "",
    age(obj, now),
    getString(spec, "volumeMode") ?? "",
  ];
}

/** pkg/printers/internalversion persistentVolumeColumnDefinitions. */
const PERSISTENT_VOLUME_PRINTER: Printer = {
  columns: [
    NAME_COL,
    col("Capacity", "The storage capacity of the persistent volume."),
    col("Access Modes", "The access modes of the persistent volume."),
    col("Reclaim Policy", "What happens to the persistent volume when released from its claim."),
    col("Status", "The phase of the persistent volume."),
    col("Claim", "The namespace/name of the claim bound to the persistent volume."),
    col("StorageClass", "The name of the storage class of the persistent volume."),
    col("VolumeAttributesClass", "The name of the volume attributes class of the persistent volume."),
    col("Reason", "Why the persistent volume is in its phase."),
    AGE_COL,
    col("VolumeMode", "Whether a filesystem or a raw block device is used.", { priority: 1 }),
  ],
  cells: persistentVolumeCells,
};

function podCells(obj: JsonObject, now: number): JsonValue[] {
  const spec = getObject(obj, "spec");
  const status = getObject(obj, "status");
  const containers = objects(getArray(spec, "containers"));
  const statuses = objects(getArray(status, "containerStatuses"));
  let ready = 0;
  let restarts = 0;
  let reason = getString(status, "reason") || (getString(status, "phase") ?? "");
  for (const cs of statuses) {
    if (cs["ready"] === true) ready++;
    restarts += getNumber(cs, "restartCount") ?? 0;
    const waiting = getString(getObject(getObject(cs, "state"), "waiting"), "reason") ?? "";
    if (waiting !== "") reason = waiting;
  }
  const m = meta(obj);
  if (m["deletionTimestamp"] !== undefined && m["deletionTimestamp"] !== null) reason = "Terminating";
  const orNone = (v: string | undefined): string => (v === undefined || v === "" ? "<none>" : v);
  return [
    name(obj),
    `${ready}/${containers.length}`,
    reason,
    String(restarts),
    age(obj, now),
    orNone(getString(status, "podIP")),
    orNone(getString(spec, "nodeName")),
    orNone(getString(status, "nominatedNodeName")),
    "<none>",
  ];
}

const POD_PRINTER: Printer = {
  columns: [
    NAME_COL,
    col("Ready", "Ready containers of all containers."),
    col("Status", "The aggregate status of the containers in this pod."),
    col("Restarts", "The number of times the containers in this pod have been restarted."),
    AGE_COL,
    col("IP", "The pod's IP address.", { priority: 1 }),
    col("Node", "The node the pod is bound to.", { priority: 1 }),
    col("Nominated Node", "The node the scheduler nominated for preemption.", { priority: 1 }),
    col("Readiness Gates", "Readiness gates of the pod.", { priority: 1 }),
  ],
  cells: podCells,
};

/** The default convertor (rest.DefaultTableConvertor) for kinds without a printer. */
const DEFAULT_PRINTER: Printer = {
  columns: [NAME_COL, col("Created At", "When the object was created.", { type: "date" })],
  cells: (obj) => [name(obj), getString(meta(obj), "creationTimestamp") ?? ""],
};

const PRINTERS: Readonly<Record<string, Printer>> = {
  Node: NODE_PRINTER,
  Service: SERVICE_PRINTER,
  Event: EVENT_PRINTER,
  Namespace: NAMESPACE_PRINTER,
  Lease: LEASE_PRINTER,
  Pod: POD_PRINTER,
  Secret: SECRET_PRINTER,
  PersistentVolume: PERSISTENT_VOLUME_PRINTER,
};

// ---------------------------------------------------------------------------------------------
// Tables

export type IncludeObject = "None" | "Metadata" | "Object";

export interface TableOptions {
  /** meta.k8s.io/v1 or meta.k8s.io/v1beta1, as negotiated from the Accept header. */
  readonly apiVersion: string;
  readonly includeObject: IncludeObject;
  /** Leave out the column definitions (watch events after the first). */
  noHeaders: boolean;
}

/** TableOptions from the query (includeObject), validated as ValidateTableOptions does. */
export function tableOptions(apiVersion: string, includeObject: string | null): TableOptions {
  const v = includeObject ?? "";
  if (v !== "" && v !== "None" && v !== "Metadata" && v !== "Object") {
    const err = fieldNotSupported("includeObject", v, ["Metadata", "None", "Object"]);
    throw badRequest(`Unable to convert to Table as requested: ${fieldErrorString(err)}`);
  }
  return { apiVersion, includeObject: v === "" ? "Metadata" : v, noHeaders: false };
}

function rowObject(obj: JsonObject, opts: TableOptions): JsonValue {
  switch (opts.includeObject) {
    case "None":
      return null;
    case "Object":
      return obj;
    default:
      return { kind: "PartialObjectMetadata", apiVersion: opts.apiVersion, metadata: meta(obj) };
  }
}

/** A Table of `items` with the list metadata `listMeta` (for one object: its resourceVersion). */
export function toTable(
  def: ResourceDef,
  items: readonly JsonObject[],
  listMeta: JsonObject,
  opts: TableOptions,
  now = Date.now(),
): JsonObject {
  const printer = PRINTERS[def.kind] ?? DEFAULT_PRINTER;
  const rows: JsonValue[] = items.map((obj) => ({
    cells: printer.cells(obj, now),
    object: rowObject(obj, opts),
  }));
  return {
    kind: "Table",
    apiVersion: opts.apiVersion,
    metadata: listMeta,
    columnDefinitions: opts.noHeaders ? null : printer.columns.map((c) => ({ ...c })),
    rows,
  };
}
