/**
 * Linode API parts newer than the spec file (v4.189.0), added by hand to the parsed document
 * before the checker reads it, each marked `x-fleet-ccm-hand-added`: NodeBalancer types
 * (`type`), creating a NodeBalancer on a reserved IPv4 (`ipv4` in the POST body), and
 * deleting a reserved IP (`DELETE /networking/reserved/ips/{address}`). Everything else is
 * checked against the published spec as it is.
 */

type Obj = Record<string, unknown>;

const MARK = { "x-fleet-ccm-hand-added": true };

const NB_TYPE = { type: "string", enum: ["common", "premium", "premium_40gb"], ...MARK };

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Every schema titled NodeBalancer (answers of get, list, create, update) gains `type`. */
function addNodeBalancerType(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) addNodeBalancerType(n);
    return;
  }
  if (!isObj(node)) return;
  if (node["title"] === "NodeBalancer" && isObj(node["properties"]))
    (node["properties"] as Obj)["type"] = { ...NB_TYPE, readOnly: true };
  for (const v of Object.values(node)) addNodeBalancerType(v);
}

export function withHandAddedLinodeOperations(doc: unknown): unknown {
  if (!isObj(doc) || !isObj(doc["paths"])) throw new Error("not the Linode OpenAPI document");
  const paths = doc["paths"] as Obj;
  addNodeBalancerType(paths);
  const create = ((paths["/{apiVersion}/nodebalancers"] as Obj)["post"] as Obj)["requestBody"] as Obj;
  const body = ((create["content"] as Obj)["application/json"] as Obj)["schema"] as Obj;
  const props = body["properties"] as Obj;
  props["type"] = NB_TYPE;
  props["ipv4"] = { type: "string", format: "ip", ...MARK };
  const nbPath = paths["/{apiVersion}/nodebalancers/{nodeBalancerId}"] as Obj;
  const del = nbPath["delete"] as Obj;
  const apiVersion = (nbPath["parameters"] as Obj[])[0];
  paths["/{apiVersion}/networking/reserved/ips/{address}"] = {
    ...MARK,
    parameters: [apiVersion, { in: "path", name: "address", required: true, schema: { type: "string" } }],
    delete: {
      operationId: "delete-reserved-ip",
      ...MARK,
      responses: del["responses"],
    },
  };
  return doc;
}
