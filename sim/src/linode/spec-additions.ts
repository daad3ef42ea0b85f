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
 *
 * Schemas are found wherever they are written: inline under `paths` (v4.189.0 inlines them) or
 * behind a local `$ref` under `components` (linode/linode-api-openapi's `openapi.json` does that).
 * A part the spec fixture already defines is not overwritten: the document fails to load, naming
 * each such part, so a newer fixture shows which additions it makes unnecessary.
 */

type Obj = Record<string, unknown>;

const MARK = { "x-fleet-ccm-hand-added": true };

const NB_TYPE = { type: "string", enum: ["common", "premium", "premium_40gb"], ...MARK };

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The parts the spec already has (by name), collected while adding the others. */
type Found = string[];

/** Sets `target[key]` unless the spec defines it already (then names it in `found`). */
function put(target: Obj, key: string, value: unknown, where: string, found: Found): void {
  const existing = target[key];
  if (existing === undefined) target[key] = value;
  // A schema shared between operations (a YAML alias) is reached again: already ours.
  else if (!(isObj(existing) && existing["x-fleet-ccm-hand-added"] === true)) found.push(where);
}

/** Every schema titled `title` gains the property `name`. */
function addProperty(node: unknown, title: string, name: string, schema: Obj, found: Found): void {
  if (Array.isArray(node)) {
    for (const n of node) addProperty(n, title, name, schema, found);
    return;
  }
  if (!isObj(node)) return;
  if (node["title"] === title && isObj(node["properties"]))
    put(node["properties"] as Obj, name, schema, `${title}.${name}`, found);
  for (const v of Object.values(node)) addProperty(v, title, name, schema, found);
}

/** Every NodeBalancer node schema (address, weight, mode) gains `subnet_id` (a VPC backend's subnet). */
function addNodeSubnet(node: unknown, found: Found): void {
  if (Array.isArray(node)) {
    for (const n of node) addNodeSubnet(n, found);
    return;
  }
  if (!isObj(node)) return;
  const p = node["properties"];
  if (isObj(p) && isObj(p["address"]) && isObj(p["weight"]) && isObj(p["mode"]))
    put(p, "subnet_id", { type: "integer", nullable: true, ...MARK }, "NodeBalancer node subnet_id", found);
  for (const v of Object.values(node)) addNodeSubnet(v, found);
}

/** Every NodeBalancer config schema (it has check_attempts) learns UDP. */
function addUdpConfig(node: unknown, found: Found): void {
  if (Array.isArray(node)) {
    for (const n of node) addUdpConfig(n, found);
    return;
  }
  if (!isObj(node)) return;
  const p = node["properties"];
  if (isObj(p) && isObj(p["check_attempts"]) && isObj(p["protocol"])) {
    const widen = (key: string, values: string[]) => {
      const prop = p[key];
      if (!isObj(prop) || !Array.isArray(prop["enum"])) return;
      const had = prop["enum"] as string[];
      // Values the spec lists already are named, except where this walk added them (an alias).
      if (prop["x-fleet-ccm-widened"] !== true)
        for (const v of values) if (had.includes(v)) found.push(`NodeBalancer config ${key} ${v}`);
      prop["enum"] = [...had, ...values.filter((v) => !had.includes(v))];
      prop["x-fleet-ccm-widened"] = true;
    };
    widen("protocol", ["udp"]);
    widen("algorithm", ["ring_hash"]);
    widen("stickiness", ["session", "source_ip"]);
    put(
      p,
      "udp_check_port",
      { type: "integer", minimum: 1, maximum: 65535, ...MARK },
      "NodeBalancer config udp_check_port",
      found,
    );
  }
  for (const v of Object.values(node)) addUdpConfig(v, found);
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

/** `node`, or the object its local `$ref` (followed repeatedly) points at in `doc`. */
function deref(doc: Obj, node: unknown): Obj {
  let current = node;
  for (let i = 0; i < 20 && isObj(current) && typeof current["$ref"] === "string"; i++) {
    let target: unknown = doc;
    for (const part of (current["$ref"] as string).replace(/^#\//, "").split("/"))
      target = isObj(target) ? target[part.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
    current = target;
  }
  if (!isObj(current)) throw new Error("the Linode OpenAPI document has an unresolvable $ref");
  return current;
}

export function withHandAddedLinodeOperations(doc: unknown): unknown {
  if (!isObj(doc) || !isObj(doc["paths"])) throw new Error("not the Linode OpenAPI document");
  const paths = doc["paths"] as Obj;
  const found: Found = [];
  // The whole document, not only `paths`: a schema may sit under `components`, behind a `$ref`.
  addProperty(doc, "NodeBalancer", "type", { ...NB_TYPE, readOnly: true }, found);
  addProperty(
    doc,
    "NodeBalancer",
    "frontend_address_type",
    { type: "string", enum: ["public", "vpc"], readOnly: true, ...MARK },
    found,
  );
  addProperty(
    doc,
    "NodeBalancer",
    "frontend_vpc_subnet_id",
    { type: "integer", nullable: true, readOnly: true, ...MARK },
    found,
  );
  addNodeSubnet(doc, found);
  addUdpConfig(doc, found);
  addProperty(
    doc,
    "Linode",
    "interface_generation",
    { type: "string", enum: ["legacy_config", "linode"], readOnly: true, ...MARK },
    found,
  );
  const create = deref(doc, ((paths["/{apiVersion}/nodebalancers"] as Obj)["post"] as Obj)["requestBody"]);
  const body = deref(doc, ((create["content"] as Obj)["application/json"] as Obj)["schema"]);
  const props = body["properties"] as Obj;
  const addToCreate = (name: string, schema: Obj) =>
    put(props, name, schema, `post-node-balancer body ${name}`, found);
  addToCreate("type", NB_TYPE);
  addToCreate("ipv4", { type: "string", format: "ip", ...MARK });
  addToCreate("frontend_vpcs", {
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
  });
  addToCreate("backend_vpcs", {
    type: "array",
    ...MARK,
    items: {
      type: "object",
      additionalProperties: false,
      required: ["subnet_id"],
      properties: { subnet_id: { type: "integer" }, ipv4_range: { type: "string" } },
    },
  });
  const nbPath = paths["/{apiVersion}/nodebalancers/{nodeBalancerId}"] as Obj;
  const del = nbPath["delete"] as Obj;
  const apiVersion = (nbPath["parameters"] as Obj[])[0];
  const addPath = (path: string, item: Obj) => put(paths, path, item, `path ${path}`, found);
  addPath("/{apiVersion}/networking/reserved/ips/{address}", {
    ...MARK,
    parameters: [apiVersion, { in: "path", name: "address", required: true, schema: { type: "string" } }],
    delete: {
      operationId: "delete-reserved-ip",
      ...MARK,
      responses: del["responses"],
    },
  });
  const linodePath = paths["/{apiVersion}/linode/instances/{linodeId}"] as Obj;
  const linodeParams = linodePath["parameters"] as Obj[];
  const errorDefault = (del["responses"] as Obj)["default"];
  addPath("/{apiVersion}/linode/instances/{linodeId}/interfaces", {
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
  });
  addPath("/{apiVersion}/linode/instances/{linodeId}/interfaces/{interfaceId}", {
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
  });
  if (found.length > 0)
    throw new Error(
      `the Linode spec fixture defines what sim/src/linode/spec-additions.ts adds by hand: ${found.join(", ")}; ` +
        "drop those additions (the fixture's own definitions are the vendor's)",
    );
  return doc;
}
