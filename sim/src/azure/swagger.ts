/**
 * Azure's swagger (Swagger 2.0, many files joined by relative `$ref`s) as one OpenAPI 3.0
 * document for the kit's OpenApiChecker: every definition of every file becomes
 * `components.schemas.<file>__<name>`, parameters are inlined, a body parameter becomes the
 * requestBody, a response's schema its JSON content. Nothing of the vendor's text is changed
 * but where the two formats differ. The files are sim/fixtures/azure/ (scripts/vendor-specs.mjs).
 *
 * One operation is added by hand: ARM's asynchronous-operation status
 * (`GET .../locations/{location}/operations/{operationId}`, learn.microsoft.com "Track
 * asynchronous Azure operations"), which ARM serves for every provider but no swagger file
 * describes; its body is `{id?, name?, status, startTime?, endTime?, error?}`. And one gap is
 * filled: the Disk RP's swagger (DiskRP 2024-03-02) declares no error response, while ARM answers
 * its errors (a 404 ResourceNotFound, say) with the envelope of every provider: an operation
 * that declares no `default` response gets Compute's common `CloudError`.
 *
 * Scale-set VMs' network interfaces (vmssNetworkInterface.json) and public IPs
 * (vmssPublicIpAddress.json) come from the 2023-11-01 and 2024-05-01 folders, the nearest to
 * 2024-01-01 of which the source index holds a copy: their relative `$ref`s (network.json,
 * networkInterface.json, publicIpAddress.json) are read from the 2024-01-01 folder, the version
 * `@azure/arm-network` is generated from and whose models the SDK applies to those answers
 * (BORROWED_REFS). Their api-version parameter enumerates `2017-03-30` only, while the SDK (and
 * cloud-provider-azure) send `2018-10-01`, which ARM serves: that version is allowed too
 * (VMSS_API_VERSIONS).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { fixtureSpecPath, OpenApiChecker, type OpenApiOptions } from "../fake-kit/index.js";

type Json = Record<string, unknown>;

/** The folder of the Azure swagger files, under sim/fixtures. */
export const AZURE_SPEC = "azure/specification";

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith(".json")) out.push(p);
  }
  return out;
}

/** A folder whose relative `$ref`s are read from another folder (a file missing beside them). */
const BORROWED_REFS: Readonly<Record<string, string>> = {
  "network/resource-manager/Microsoft.Network/stable/2023-11-01":
    "network/resource-manager/Microsoft.Network/stable/2024-01-01",
  "network/resource-manager/Microsoft.Network/stable/2024-05-01":
    "network/resource-manager/Microsoft.Network/stable/2024-01-01",
};
/** What the scale-set NIC operations' api-version (swagger: 2017-03-30) may be. */
const VMSS_API_VERSIONS = ["2017-03-30", "2018-10-01"];

const schemaName = (file: string, def: string) => `${basename(file, ".json")}__${def}`;

/** The joined document (exported for the fake's own test). */
export function azureOpenApiDocument(root = fixtureSpecPath(AZURE_SPEC)): Json {
  const files = new Map<string, Json>();
  for (const f of walk(root)) files.set(f, JSON.parse(readFileSync(f, "utf8")) as Json);
  const target = (from: string, ref: string): { file: string; pointer: string[] } => {
    const [path = "", frag = ""] = ref.split("#");
    let file = path === "" ? from : join(dirname(from), path);
    const lent = BORROWED_REFS[relative(root, dirname(from))];
    if (!files.has(file) && lent !== undefined) file = join(root, lent, path);
    if (!files.has(file)) throw new Error(`${relative(root, from)}: $ref to a missing file ${path}`);
    return { file, pointer: frag.split("/").filter((s) => s !== "") };
  };
  const lookup = (file: string, pointer: string[]): unknown =>
    pointer.reduce<unknown>((n, k) => (isObject(n) ? n[k] : undefined), files.get(file));
  // A schema of `file`, its $refs rewritten to component names.
  const schema = (file: string, node: unknown): unknown => {
    if (Array.isArray(node)) return node.map((v) => schema(file, v));
    if (!isObject(node)) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") {
        const t = target(file, v);
        if (t.pointer[0] !== "definitions" || t.pointer.length !== 2)
          throw new Error(`${relative(root, file)}: unexpected schema $ref ${v}`);
        out[k] = `#/components/schemas/${schemaName(t.file, t.pointer[1] as string)}`;
      } else if (k === "x-ms-examples" || k === "example") {
        // examples are not schemas
      } else if (k === "discriminator" && typeof v === "string") {
        // Swagger's discriminator is a property name; OpenAPI 3's an object. Polymorphism is not checked.
      } else out[k] = schema(file, v);
    }
    return out;
  };
  const parameter = (file: string, p: unknown): { file: string; p: Json } => {
    if (isObject(p) && typeof p["$ref"] === "string") {
      const t = target(file, p["$ref"]);
      return parameter(t.file, lookup(t.file, t.pointer));
    }
    if (!isObject(p)) throw new Error(`${relative(root, file)}: a parameter that is not an object`);
    return { file, p };
  };
  const schemas: Json = {};
  const paths: Json = {};
  for (const [file, doc] of files) {
    for (const [name, def] of Object.entries((doc["definitions"] as Json | undefined) ?? {}))
      schemas[schemaName(file, name)] = schema(file, def);
    for (const [template, item] of Object.entries((doc["paths"] as Json | undefined) ?? {})) {
      if (!isObject(item)) continue;
      const converted: Json = {};
      const shared = Array.isArray(item["parameters"]) ? item["parameters"] : [];
      for (const [method, op] of Object.entries(item)) {
        if (method === "parameters" || !isObject(op)) continue;
        const params: Json[] = [];
        let requestBody: Json | undefined;
        for (const raw of [...shared, ...(Array.isArray(op["parameters"]) ? op["parameters"] : [])]) {
          const { file: pf, p } = parameter(file, raw);
          if (p["in"] === "body") {
            requestBody = {
              required: p["required"] === true,
              content: { "application/json": { schema: schema(pf, p["schema"]) } },
            };
            continue;
          }
          const { name, in: where, required, description: _d, ...rest } = p;
          const s: Json = {};
          for (const [k, v] of Object.entries(rest)) if (!k.startsWith("x-ms-")) s[k] = schema(pf, v);
          if (name === "api-version" && JSON.stringify(s["enum"]) === JSON.stringify(["2017-03-30"]))
            s["enum"] = VMSS_API_VERSIONS;
          params.push({ name, in: where, required: required === true || where === "path", schema: s });
        }
        const responses: Json = {};
        for (const [code, r] of Object.entries((op["responses"] as Json | undefined) ?? {})) {
          if (!isObject(r)) continue;
          responses[code] = {
            description: String(r["description"] ?? code),
            ...(r["schema"] !== undefined && {
              content: { "application/json": { schema: schema(file, r["schema"]) } },
            }),
          };
        }
        responses["default"] ??= {
          description: "an ARM error",
          content: { "application/json": { schema: { $ref: "#/components/schemas/common__CloudError" } } },
        };
        converted[method] = {
          operationId: op["operationId"],
          parameters: params,
          ...(requestBody !== undefined && { requestBody }),
          responses,
        };
      }
      paths[template] = converted;
    }
  }
  paths[
    "/subscriptions/{subscriptionId}/providers/{resourceProvider}/locations/{location}/operations/{operationId}"
  ] = {
    get: {
      operationId: "AsyncOperation_Get",
      parameters: [
        ...["subscriptionId", "resourceProvider", "location", "operationId"].map((name) => ({
          name,
          in: "path",
          required: true,
          schema: { type: "string" },
        })),
        { name: "api-version", in: "query", required: true, schema: { type: "string" } },
      ],
      responses: {
        "200": {
          description: "the operation's status",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["status"],
                properties: {
                  id: { type: "string" },
                  name: { type: "string" },
                  status: { type: "string", enum: ["InProgress", "Succeeded", "Failed", "Canceled"] },
                  startTime: { type: "string", format: "date-time" },
                  endTime: { type: "string", format: "date-time" },
                  error: { $ref: "#/components/schemas/network__CloudErrorBody" },
                },
              },
            },
          },
        },
        default: {
          description: "an ARM error",
          content: { "application/json": { schema: { $ref: "#/components/schemas/network__CloudError" } } },
        },
      },
    },
  };
  return {
    openapi: "3.0.3",
    info: {
      title:
        "Azure Resource Manager (Microsoft.Network 2024-01-01, scale-set NICs and public IPs 2018-10-01, Microsoft.Compute 2024-07-01, disks 2024-03-02)",
    },
    paths,
    components: { schemas },
  };
}

let cached: Json | undefined;

/** A checker over the joined document (the document is built once per process). */
export function azureSpecChecker(opts: OpenApiOptions = {}): OpenApiChecker {
  cached ??= azureOpenApiDocument();
  return new OpenApiChecker(cached, opts);
}
