/**
 * Linode API parts newer than the spec file (v4.189.0), added by hand to the parsed document
 * before the checker reads it, each marked `x-fleet-ccm-hand-added`: NodeBalancer types
 * (`type`), creating a NodeBalancer on a reserved IPv4 (`ipv4` in the POST body), and
 * deleting a reserved IP (`DELETE /networking/reserved/ips/{address}`), and the newer Linode
 * interfaces (`interface_generation` on a Linode, `GET /linode/instances/{id}/interfaces`,
 * `PUT /linode/instances/{id}/interfaces/{interfaceId}`) in the parts routes use, and VPC
 * backends and frontends (`backend_vpcs`, `frontend_vpcs` in the create body, `subnet_id` on
 * nodes, `frontend_address_type` and `frontend_vpc_subnet_id` on NodeBalancers), and UDP configs (the
 * `udp` protocol, its algorithms and stickiness, `udp_check_port`). Everything
 * else is checked against the published spec as it is.
 */

type Obj = Record<string, unknown>;

const MARK = { "x-fleet-ccm-hand-added": true };

const NB_TYPE = { type: "string", enum: ["common", "premium", "premium_40gb"], ...MARK };

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Every schema titled `title` gains the property `name`. */
function addProperty(node: unknown, title: string, name: string, schema: Obj): void {
  if (Array.isArray(node)) {
    for (const n of node) addProperty(n, title, name, schema);
    return;
  }
  if (!isObj(node)) return;
  if (node["title"] === title && isObj(node["properties"])) (node["properties"] as Obj)[name] = schema;
  for (const v of Object.values(node)) addProperty(v, title, name, schema);
}

/** Every NodeBalancer node schema (address, weight, mode) gains `subnet_id` (a VPC backend's subnet). */
function addNodeSubnet(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) addNodeSubnet(n);
    return;
  }
  if (!isObj(node)) return;
  const p = node["properties"];
  if (isObj(p) && isObj(p["address"]) && isObj(p["weight"]) && isObj(p["mode"]))
    p["subnet_id"] = { type: "integer", nullable: true, ...MARK };
  for (const v of Object.values(node)) addNodeSubnet(v);
}

/** Every NodeBalancer config schema (it has check_attempts) learns UDP. */
function addUdpConfig(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) addUdpConfig(n);
    return;
  }
  if (!isObj(node)) return;
  const p = node["properties"];
  if (isObj(p) && isObj(p["check_attempts"]) && isObj(p["protocol"])) {
    const widen = (key: string, values: string[]) => {
      const prop = p[key];
      if (isObj(prop) && Array.isArray(prop["enum"]))
        prop["enum"] = [...(prop["enum"] as string[]), ...values];
    };
    widen("protocol", ["udp"]);
    widen("algorithm", ["ring_hash"]);
    widen("stickiness", ["session", "source_ip"]);
    p["udp_check_port"] = { type: "integer", minimum: 1, maximum: 65535, ...MARK };
  }
  for (const v of Object.values(node)) addUdpConfig(v);
}

const RANGES = {
  type: "array",
  items: {
    type: "object",
    additionalProperties: false,
    required: ["range"],
    properties: { range: { type: "string" } },
  },
};

/** A Linode interface of the newer API, as far as routes read it. */
const LINODE_INTERFACE = {
  type: "object",
  ...MARK,
  required: ["id"],
  properties: {
    id: { type: "integer" },
    vpc: {
      type: "object",
      nullable: true,
      properties: {
        vpc_id: { type: "integer" },
        subnet_id: { type: "integer" },
        ipv4: {
          type: "object",
          properties: {
            addresses: {
              type: "array",
              items: { type: "object", properties: { address: { type: "string" } } },
            },
            ranges: RANGES,
          },
        },
      },
    },
  },
};

export function withHandAddedLinodeOperations(doc: unknown): unknown {
  if (!isObj(doc) || !isObj(doc["paths"])) throw new Error("not the Linode OpenAPI document");
  const paths = doc["paths"] as Obj;
  addProperty(paths, "NodeBalancer", "type", { ...NB_TYPE, readOnly: true });
  addProperty(paths, "NodeBalancer", "frontend_address_type", {
    type: "string",
    enum: ["public", "vpc"],
    readOnly: true,
    ...MARK,
  });
  addProperty(paths, "NodeBalancer", "frontend_vpc_subnet_id", {
    type: "integer",
    nullable: true,
    readOnly: true,
    ...MARK,
  });
  addNodeSubnet(paths);
  addUdpConfig(paths);
  addProperty(paths, "Linode", "interface_generation", {
    type: "string",
    enum: ["legacy_config", "linode"],
    readOnly: true,
    ...MARK,
  });
  const create = ((paths["/{apiVersion}/nodebalancers"] as Obj)["post"] as Obj)["requestBody"] as Obj;
  const body = ((create["content"] as Obj)["application/json"] as Obj)["schema"] as Obj;
  const props = body["properties"] as Obj;
  props["type"] = NB_TYPE;
  props["ipv4"] = { type: "string", format: "ip", ...MARK };
  props["frontend_vpcs"] = {
    type: "array",
    ...MARK,
    items: {
      type: "object",
      additionalProperties: false,
      required: ["subnet_id"],
      properties: {
        subnet_id: { type: "integer" },
        ipv4_range: { type: "string" },
        ipv6_range: { type: "string" },
      },
    },
  };
  props["backend_vpcs"] = {
    type: "array",
    ...MARK,
    items: {
      type: "object",
      additionalProperties: false,
      required: ["subnet_id"],
      properties: { subnet_id: { type: "integer" }, ipv4_range: { type: "string" } },
    },
  };
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
  const linodePath = paths["/{apiVersion}/linode/instances/{linodeId}"] as Obj;
  const linodeParams = linodePath["parameters"] as Obj[];
  const errorDefault = (del["responses"] as Obj)["default"];
  paths["/{apiVersion}/linode/instances/{linodeId}/interfaces"] = {
    ...MARK,
    parameters: linodeParams,
    get: {
      operationId: "get-linode-interfaces",
      ...MARK,
      responses: {
        "200": {
          description: "The Linode's interfaces.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: false,
                properties: { interfaces: { type: "array", items: LINODE_INTERFACE } },
              },
            },
          },
        },
        default: errorDefault,
      },
    },
  };
  paths["/{apiVersion}/linode/instances/{linodeId}/interfaces/{interfaceId}"] = {
    ...MARK,
    parameters: [
      ...linodeParams,
      { in: "path", name: "interfaceId", required: true, schema: { type: "integer" } },
    ],
    put: {
      operationId: "put-linode-interface",
      ...MARK,
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              additionalProperties: false,
              properties: {
                vpc: {
                  type: "object",
                  additionalProperties: false,
                  properties: {
                    ipv4: { type: "object", additionalProperties: false, properties: { ranges: RANGES } },
                  },
                },
              },
            },
          },
        },
      },
      responses: {
        "200": {
          description: "The interface.",
          content: { "application/json": { schema: LINODE_INTERFACE } },
        },
        default: errorDefault,
      },
    },
  };
  return doc;
}
