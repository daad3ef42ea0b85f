// Service ClusterIP, nodePort and healthCheckNodePort allocation for one simulated cluster
// (the service registry's IP and port allocators).

import { type FieldError, fieldInvalid } from "./errors.js";
import { ensureObject, getArray, getObject, getString, isObject, type JsonObject } from "./json.js";
import { type NodePortRange, needsHealthCheckNodePort, needsNodePorts, serviceType } from "./resources.js";
import { IP_ERROR, isValidIP } from "./validation.js";

interface ServiceAllocation {
  ip: string | undefined;
  ports: number[];
}

export class ServiceAllocator {
  private readonly nodePortOwner = new Map<number, string>();
  private readonly clusterIPOwner = new Map<string, string>();
  private readonly serviceAllocations = new Map<string, ServiceAllocation>();
  private nextClusterIP = 10;
  private nextNodePort: number;

  /** `range`: kube-apiserver --service-node-port-range. */
  constructor(private readonly range: NodePortRange) {
    this.nextNodePort = range.min;
  }

  /** Records what a stored Service (undefined: a deleted one) holds, releasing what it held before. */
  record(key: string, obj: JsonObject | undefined): void {
    const prev = this.serviceAllocations.get(key);
    if (prev !== undefined) {
      if (prev.ip !== undefined && this.clusterIPOwner.get(prev.ip) === key)
        this.clusterIPOwner.delete(prev.ip);
      for (const p of prev.ports) if (this.nodePortOwner.get(p) === key) this.nodePortOwner.delete(p);
      this.serviceAllocations.delete(key);
    }
    if (obj === undefined) return;
    const spec = getObject(obj, "spec") ?? {};
    const ip = getString(spec, "clusterIP");
    const alloc: ServiceAllocation = { ip: ip && ip !== "None" ? ip : undefined, ports: [] };
    for (const p of (Array.isArray(spec["ports"]) ? spec["ports"] : []).filter(isObject)) {
      const np = p["nodePort"];
      if (typeof np === "number" && np > 0) alloc.ports.push(np);
    }
    const hc = spec["healthCheckNodePort"];
    if (typeof hc === "number" && hc > 0) alloc.ports.push(hc);
    if (alloc.ip !== undefined) this.clusterIPOwner.set(alloc.ip, key);
    for (const p of alloc.ports) this.nodePortOwner.set(p, key);
    this.serviceAllocations.set(key, alloc);
  }

  private pickNodePort(taken: ReadonlySet<number>): number | undefined {
    const { min, max } = this.range;
    const span = max - min + 1;
    for (let i = 0; i < span; i++) {
      const p = min + ((this.nextNodePort - min + i) % span);
      if (!this.nodePortOwner.has(p) && !taken.has(p)) {
        this.nextNodePort = p + 1 > max ? min : p + 1;
        return p;
      }
    }
    return undefined;
  }

  private pickClusterIP(): string | undefined {
    // 10.96.0.0/12; .1 is reserved for the kubernetes service.
    for (let i = 0; i < 1 << 20; i++) {
      const n = this.nextClusterIP + i;
      const ip = `10.${96 + ((n >> 16) & 0x0f)}.${(n >> 8) & 0xff}.${n & 0xff}`;
      if ((n & 0xff) === 0 || (n & 0xff) === 255) continue;
      if (!this.clusterIPOwner.has(ip)) {
        this.nextClusterIP = n + 1;
        return ip;
      }
    }
    return undefined;
  }

  /**
   * patchAllocatedValues + allocation of clusterIP, nodePorts and healthCheckNodePort on a Service being
   * written (`old`: its stored version on update). Writes the picked values into `obj`; ownership changes only in `record`.
   */
  allocate(obj: JsonObject, old: JsonObject | undefined, key: string): FieldError[] {
    const errs: FieldError[] = [];
    const spec = ensureObject(obj, "spec");
    const oldSpec = old !== undefined ? (getObject(old, "spec") ?? {}) : undefined;
    const type = serviceType(obj);
    if (type === "ExternalName") {
      if (old !== undefined && (getString(spec, "clusterIP") ?? "") === getString(oldSpec, "clusterIP")) {
        delete spec["clusterIP"];
        delete spec["clusterIPs"];
      }
      delete spec["ipFamilies"];
      delete spec["ipFamilyPolicy"];
    } else {
      let ip = getString(spec, "clusterIP") ?? "";
      const oldIP = getString(oldSpec, "clusterIP") ?? "";
      if (ip === "" && oldIP !== "" && old !== undefined && serviceType(old) !== "ExternalName") {
        ip = oldIP;
        spec["clusterIP"] = ip;
      }
      if (ip === "") {
        const picked = this.pickClusterIP();
        if (picked === undefined) {
          errs.push(fieldInvalid("spec.clusterIPs", [], "failed to allocate IP: range is full"));
        } else {
          ip = picked;
          spec["clusterIP"] = ip;
        }
      } else if (ip !== "None") {
        if (!isValidIP(ip)) {
          errs.push(fieldInvalid("spec.clusterIPs[0]", ip, IP_ERROR));
        } else {
          const owner = this.clusterIPOwner.get(ip);
          if (owner !== undefined && owner !== key) {
            errs.push({
              type: "FieldValueInvalid",
              field: "spec.clusterIPs",
              value: `[]string{${JSON.stringify(ip)}}`,
              detail: `failed to allocate IP ${ip}: provided IP is already allocated`,
            });
          }
        }
      }
      if (ip !== "") spec["clusterIPs"] = [ip];
      if (!Array.isArray(spec["ipFamilies"]) && ip !== "None") spec["ipFamilies"] = ["IPv4"];
      if (ip === "None" && !Array.isArray(spec["ipFamilies"])) spec["ipFamilies"] = ["IPv4"];
      if (!getString(spec, "ipFamilyPolicy")) spec["ipFamilyPolicy"] = "SingleStack";
    }
    const taken = new Set<number>();
    const takenBy = new Map<number, string>();
    const oldPorts = (getArray(oldSpec, "ports") ?? []).filter(isObject);
    const ports = (Array.isArray(spec["ports"]) ? spec["ports"] : []).filter(isObject);
    if (needsNodePorts(obj)) {
      // user-specified ports first
      ports.forEach((p, i) => {
        const np = p["nodePort"];
        if (typeof np !== "number" || np === 0) return;
        const { min, max } = this.range;
        if (np < min || np > max) {
          errs.push(
            fieldInvalid(
              `spec.ports[${i}].nodePort`,
              np,
              `provided port is not in the valid range. The range of valid ports is ${min}-${max}`,
            ),
          );
          return;
        }
        const owner = this.nodePortOwner.get(np);
        const proto = getString(p, "protocol") ?? "TCP";
        const sameService = takenBy.get(np);
        if ((owner !== undefined && owner !== key) || (sameService !== undefined && sameService === proto)) {
          errs.push(fieldInvalid(`spec.ports[${i}].nodePort`, np, "provided port is already allocated"));
          return;
        }
        taken.add(np);
        takenBy.set(np, proto);
      });
      for (const p of ports) {
        const np = p["nodePort"];
        if (typeof np === "number" && np !== 0) continue;
        const prev = oldPorts.find((o) => o["port"] === p["port"] && o["protocol"] === p["protocol"]);
        const prevNp = prev?.["nodePort"];
        if (typeof prevNp === "number" && prevNp > 0 && !taken.has(prevNp)) {
          p["nodePort"] = prevNp;
          taken.add(prevNp);
          continue;
        }
        const picked = this.pickNodePort(taken);
        if (picked === undefined) {
          errs.push(fieldInvalid("spec.ports", null, "failed to allocate a nodePort: range is full"));
          break;
        }
        p["nodePort"] = picked;
        taken.add(picked);
      }
    }
    if (needsHealthCheckNodePort(obj)) {
      const hc = spec["healthCheckNodePort"];
      if (typeof hc !== "number" || hc === 0) {
        const prevHc = oldSpec?.["healthCheckNodePort"];
        if (typeof prevHc === "number" && prevHc > 0 && !taken.has(prevHc)) {
          spec["healthCheckNodePort"] = prevHc;
        } else {
          const picked = this.pickNodePort(taken);
          if (picked !== undefined) spec["healthCheckNodePort"] = picked;
        }
      } else {
        const owner = this.nodePortOwner.get(hc);
        if ((owner !== undefined && owner !== key) || taken.has(hc)) {
          errs.push(fieldInvalid("spec.healthCheckNodePort", hc, "provided port is already allocated"));
        }
      }
    }
    return errs;
  }
}
